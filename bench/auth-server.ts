// A server for the authentication benchmark. BENCH_AUTH=preresolved swaps credential lookup for a fixed
// principal (the bootstrap user), so the difference to a normal server is what authentication costs.
import { loadConfig } from '../src/config.ts';
import { createServices, startServer } from '../src/server.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { setPrincipal } from '../src/http/pipeline.ts';

export async function main(): Promise<void> {
  const config = loadConfig();
  const services = await createServices(config);
  await bootstrapIfEmpty(services.store, { apiKey: config.bootstrapApiKey });
  let options = {};
  if (process.env.BENCH_AUTH === 'preresolved') {
    const principal = await services.credentials.resolveApiKey(config.bootstrapApiKey!);
    if (!principal) throw new Error('BOOTSTRAP_API_KEY did not resolve');
    options = { authenticate: (_req: unknown, res: Parameters<typeof setPrincipal>[0], next: () => void) => (setPrincipal(res, principal), next()) };
  }
  const server = await startServer(services, options);
  console.log(`Listening on ${server.url}`);
  process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
}

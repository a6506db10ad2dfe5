// `npm start`: serve the API on the embedded SQLite store.
import { ConfigError, loadConfig } from './config.ts';
import { createServices, startServer } from './server.ts';
import { bootstrapIfEmpty } from './identity/admin.ts';

export async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const services = await createServices(config);
  const boot = await bootstrapIfEmpty(services.store, { apiKey: config.bootstrapApiKey });
  if (boot) {
    // Printed once, on the first start; the key is stored only as a hash.
    process.stdout.write(
      [
        'First start: created an admin user, a workspace and a personal API key.',
        `  user:      ${boot.user.email} (${boot.user.id})`,
        `  workspace: ${boot.workspace.name} (${boot.workspace.id})`,
        `  api key:   ${boot.key.key}`,
        'Keep the key now: it is not shown again.',
        '',
      ].join('\n'),
    );
  }
  const server = await startServer(services);
  services.logger.info({ url: server.url, baseUrl: config.baseUrl, database: config.databaseFile }, 'listening');
  process.stdout.write(`Listening on ${server.url}\n`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (err) => {
        services.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

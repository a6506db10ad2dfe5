// `npm start`: serve the API on the embedded SQLite store.
//
// The order matters: configuration, handlers and the port are checked before anything is written to DATA_DIR;
// then the data directory is locked (one server per DATA_DIR), the store opened, a first start bootstrapped,
// and only then does the server recover what a previous process left behind and take requests.
import fs from 'node:fs';
import path from 'node:path';
import type http from 'node:http';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { bindListener, createServices, startServer } from './server.ts';
import { bootstrapIfEmpty } from './identity/admin.ts';
import { newApiKey } from './identity/keys.ts';
import { DataDirLockedError } from './store/data-dir-lock.ts';
import { NewerDatabaseError } from './store/migrations.ts';
import { UnsupportedDatabaseLocaleError } from './store/postgres.ts';
import { BlobStoreUnavailableError } from './files/blob-store.ts';
import { missingHandlers } from './app.ts';
import { handlers } from '../generated/handler-registry.ts';
import { startTracing } from './ops/tracing.ts';
import packageJson from '../package.json' with { type: 'json' };

/** Where a first start keeps the generated key when stdout is not a terminal. */
export const BOOTSTRAP_KEY_FILE = 'bootstrap-api-key.txt';

/**
 * The services' logger, but writing info lines whatever LOG_LEVEL says: where the server listens and what a
 * first start created are always on stdout (as JSON lines like the rest), as they were when they were plain text.
 */
function announcer(logger: Logger): Logger {
  return logger.isLevelEnabled('info') ? logger : logger.child({}, { level: 'info' });
}

/** A database URL fit for a log line: the password left out. */
function redactedUrl(raw: string): string {
  const url = new URL(raw);
  if (url.password) url.password = '***';
  return url.toString();
}

function fail(prefix: string, message: string, code: number): never {
  process.stderr.write(`${prefix}: ${message}\n`);
  process.exit(code);
}

async function listen(config: Config): Promise<http.Server> {
  try {
    return await bindListener(config);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const where = `${config.host}:${config.port}`;
    if (code === 'EADDRINUSE') fail('Configuration error', `PORT ${config.port} is already in use on ${config.host}; stop what listens there or choose another PORT`, 2);
    if (code === 'EACCES') fail('Configuration error', `not allowed to listen on ${where}; choose a PORT above 1023`, 2);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') fail('Configuration error', `HOST ${config.host} is not an address of this machine`, 2);
    throw err;
  }
}

export async function main(): Promise<void> {
  // Everything this process creates is owner-only (the store, blob store and lock also set modes explicitly).
  process.umask(0o077);
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail('Configuration error', err.message, 2);
    throw err;
  }
  // Tracing starts before anything else is built, so the app mounts its request spans (off: nothing is loaded).
  const tracing = await startTracing(config.tracing, { serviceVersion: packageJson.version });
  const missing = missingHandlers(handlers);
  if (missing.length > 0) {
    fail('Cannot start', `no handler for operation ${missing.join(', ')}; export it from its src/handlers/<tag>.ts module (npm run generate -- --scaffold writes a stub)`, 1);
  }
  const listener = await listen(config);
  let services;
  try {
    services = await createServices(config);
  } catch (err) {
    if (err instanceof ConfigError) fail('Configuration error', err.message, 2);
    if (err instanceof DataDirLockedError || err instanceof NewerDatabaseError || err instanceof BlobStoreUnavailableError || err instanceof UnsupportedDatabaseLocaleError) fail('Cannot start', err.message, 1);
    throw err;
  }
  await bootstrap(services, config);
  const server = await startServer(services, { listener });

  // Installed before "Listening on" is printed: whoever waits for that line may signal at once.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, 'shutting down');
    server.close().then(
      // The spans still buffered are exported before the process ends.
      async () => {
        await tracing?.shutdown().catch((err: unknown) => services!.logger.warn({ err }, 'exporting the last spans failed'));
        process.exit(0);
      },
      (err) => {
        services.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Every stdout line is a JSON log line; this message's text is what scripts and tests wait for.
  announcer(services.logger).info({ url: server.url, baseUrl: config.baseUrl, database: config.databaseUrl ? redactedUrl(config.databaseUrl) : config.databaseFile, tracesUrl: config.tracing.tracesUrl }, `Listening on ${server.url}`);
}

/**
 * First start on an empty database: an admin user, a workspace and a personal key. The key is shown on the
 * terminal only when stdout is one; otherwise (logs collected from stdout) it goes to an owner-only file in
 * DATA_DIR, written before the key is stored, so it can never be lost. A key set in BOOTSTRAP_API_KEY is
 * the operator's own and is not repeated.
 */
async function bootstrap(services: Awaited<ReturnType<typeof createServices>>, config: Config): Promise<void> {
  if ((await services.store.users.count()) > 0) return;
  const chosen = config.bootstrapApiKey;
  const key = chosen ?? newApiKey();
  const toTerminal = Boolean(process.stdout.isTTY);
  const keyFile = path.join(config.dataDir, BOOTSTRAP_KEY_FILE);
  const toFile = !chosen && !toTerminal;
  if (toFile) {
    fs.rmSync(keyFile, { force: true });
    fs.writeFileSync(keyFile, key + '\n', { mode: 0o600, flag: 'wx' });
  }
  const boot = await bootstrapIfEmpty(services.store, { apiKey: key });
  if (!boot) {
    // Another server sharing the database (Postgres) bootstrapped it first: this key was never stored.
    if (toFile) fs.rmSync(keyFile, { force: true });
    return;
  }
  const apiKey = chosen ? 'the key set in BOOTSTRAP_API_KEY' : toTerminal ? key : `written to ${keyFile} (mode 0600); move it somewhere safe and delete the file`;
  // One JSON log line like every other on stdout. Signing in on /login (and so `sim login`) needs a password,
  // which a first start cannot choose for the admin: the line says how to set one.
  announcer(services.logger).info(
    {
      user: { email: boot.user.email, id: boot.user.id },
      workspace: { name: boot.workspace.name, id: boot.workspace.id },
      apiKey,
      password: 'none yet; signing in on /login (and `sim login`) needs one (12 to 1024 characters): run setPassword, type it, then Ctrl-D (or pipe it in)',
      setPassword: `npm run -s admin -- user password --email ${boot.user.email} --password-stdin`,
    },
    toTerminal && !chosen
      ? 'First start: created an admin user, a workspace and a personal API key. Keep the key now: it is not shown again.'
      : 'First start: created an admin user, a workspace and a personal API key',
  );
}

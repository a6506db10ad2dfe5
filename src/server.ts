// Opens the store, assembles the services and serves HTTP until told to stop.
import { SecretCipher, loadSecretsKey } from './secrets/cipher.ts';
import { SecretVault } from './secrets/vault.ts';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { openSqliteStore, type Store } from './store/index.ts';
import { CredentialResolver } from './identity/credentials.ts';
import { createApp } from './app.ts';
import type { BinderOptions } from './http/pipeline.ts';
import { createLogger } from './http/logging.ts';
import type { Services } from './services.ts';
import { MemoryRateLimitStore } from './http/rate-limit.ts';
import path from 'node:path';
import { LocalDiskBlobStore } from './files/blob-store.ts';
import { purgeFiles, startPurgeTimer } from './files/purge.ts';
import { createEngine } from './execution/index.ts';
import { RunService } from './runs/service.ts';
import { createToolRegistry } from './tools/index.ts';
import { SandboxBuilder } from './sandboxes/builder.ts';
import { WorkspaceCredentials } from './credentials/service.ts';

export interface RunningServer {
  url: string;
  port: number;
  services: Services;
  /** Stops accepting, lets in-flight requests finish (up to the shutdown timeout), then closes the store. */
  close(): Promise<void>;
}

export async function createServices(config: Config, logger: Logger = createLogger(config.logLevel), store?: Store): Promise<Services> {
  const opened = store ?? (await openSqliteStore(config.databaseFile));
  const signingKey = Buffer.from(
    await opened.transaction((tx) => tx.settings.getOrInit('signing_key', randomBytes(32).toString('base64'))),
    'base64',
  );
  const engine = createEngine(config);
  const secrets = new SecretVault(opened, new SecretCipher(loadSecretsKey(config.secretsKey, config.dataDir)));
  const tools = createToolRegistry({ config, store: opened, engine: engine.engine, logger });
  const blobs = new LocalDiskBlobStore(path.join(config.dataDir, 'files'));
  const workspaceCredentials = new WorkspaceCredentials(opened, secrets, config);
  const sandboxes = new SandboxBuilder(
    opened,
    {
      root: path.join(config.dataDir, 'sandboxes'),
      buildTimeoutMs: config.sandboxBuilds.timeoutMs,
      npmCommand: config.sandboxBuilds.npmCommand,
      python: config.sandboxBuilds.python,
      maxPools: config.sandboxBuilds.maxPools,
      pool: { timeoutMs: config.sandbox.timeoutMs, memoryMb: config.sandbox.memoryMb, fetch: engine.engine.options.egress.sandboxFetch(config.execution.apiTimeoutMs) },
    },
    logger,
  );
  return {
    config,
    store: opened,
    logger,
    signingKey,
    engine: engine.engine,
    runs: new RunService({ store: opened, engine: engine.engine, config, logger, startEngine: engine.start, secrets, tools, blobs, sandboxes, workspaceCredentials }),
    sandboxes,
    workspaceCredentials,
    tools,
    secrets,
    closeEngine: async () => {
      await sandboxes.close();
      await engine.close();
    },
    credentials: new CredentialResolver(opened, config.credentialRecheckMs),
    rateLimits: new MemoryRateLimitStore(),
    blobs,
  };
}

export async function startServer(services: Services, options: BinderOptions = {}): Promise<RunningServer> {
  const { config } = services;
  const app = createApp(services, options);
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  let shuttingDown = false;
  // A keep-alive connection whose last request finishes during shutdown is closed right away.
  server.on('request', (_req, res: http.ServerResponse) => {
    res.on('finish', () => {
      if (shuttingDown) setImmediate(() => server.closeIdleConnections());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  // Links the API hands out (signed upload URLs, share links) must name the port actually bound.
  if (config.port === 0 && config.baseUrl.endsWith(':0')) config.baseUrl = `${config.baseUrl.slice(0, -2)}:${port}`;
  // Runs a previous process left running are failed before the queue's workers pick up what is queued.
  await services.runs.start();
  await services.sandboxes.resume();
  const stopPurge = startPurgeTimer(
    () => purgeFiles(services.store, services.blobs, { archiveRetentionMs: config.files.archiveRetentionMs }),
    config.files.purgeIntervalMs,
    services.logger,
  );
  let closing: Promise<void> | null = null;
  return {
    url: `http://${config.host}:${port}`,
    port,
    services,
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        stopPurge();
        // The queue stops taking work at once; runs in flight get the same grace as in-flight requests.
        const runsClosed = services.runs.close(config.shutdownTimeoutMs);
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
          force.unref();
          server.close(() => {
            clearTimeout(force);
            resolve();
          });
          server.closeIdleConnections();
        });
        await runsClosed;
        await services.closeEngine();
        await services.store.close();
      })();
      return closing;
    },
  };
}

// Opens the store, assembles the services and serves HTTP until told to stop.
import { SecretCipher, loadSecretsKey } from './secrets/cipher.ts';
import { SecretVault } from './secrets/vault.ts';
import { sealPlainShareTokens } from './files/share-tokens.ts';
import { loadSigningKey, signingKeyOpens } from './secrets/signing-key.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { openConfiguredStore, type Store } from './store/index.ts';
import { ConfigError } from './config.ts';
import { CredentialResolver } from './identity/credentials.ts';
import { createApp } from './app.ts';
import { TableJobRunner } from './tables/jobs.ts';
import { GroupRunner } from './tables/group-runs.ts';
import type { AppOptions } from './app.ts';
import { applyServerTimeouts } from './http/request-limits.ts';
import { createLogger } from './http/logging.ts';
import { probeAnswerer } from './http/health.ts';
import type { Services } from './services.ts';
import { rateLimitStoreFor } from './http/rate-limit.ts';
import path from 'node:path';
import { blobStoreSettings, openBlobStore } from './files/blob-store.ts';
import { purgeFiles, startPurgeTimer } from './files/purge.ts';
import { createEngine } from './execution/index.ts';
import { RunProgress } from './runs/progress.ts';
import { RunService } from './runs/service.ts';
import { createToolRegistry } from './tools/index.ts';
import { SandboxBuilder } from './sandboxes/builder.ts';
import { WorkspaceCredentials } from './credentials/service.ts';
import { lockDataDir } from './store/data-dir-lock.ts';
import { createMailer } from './mail/mailer.ts';
import { McpRegistry } from './mcp/registry.ts';
import { mcpToolProvider } from './mcp/tool-provider.ts';
import { workspaceDataToolProvider } from './tools/workspace-data.ts';
import { KnowledgeService } from './knowledge/service.ts';
import { ContentWorkers } from './content/index.ts';
import { CallbackWorker } from './callbacks/worker.ts';
import { observeRequests } from './http/metrics.ts';

export interface RunningServer {
  url: string;
  port: number;
  services: Services;
  /** Where Prometheus scrapes (`http://METRICS_HOST:port/metrics`); null when METRICS_PORT is unset. */
  metricsUrl: string | null;
  /** Stops accepting, lets in-flight requests finish (up to the shutdown timeout), then closes the store. */
  close(): Promise<void>;
}

/**
 * Locks DATA_DIR for this process (DataDirLockedError when another server holds it), then opens the store.
 * The lock is released when the server closes, or when building the services fails. On Postgres (DATABASE_URL)
 * any number of servers share the database, so DATA_DIR is not locked.
 */
export async function createServices(config: Config, logger: Logger = createLogger(config.logLevel), store?: Store): Promise<Services> {
  const dataDirLock = config.databaseUrl ? undefined : lockDataDir(config.dataDir, { port: config.port || null });
  try {
    return await assemble(config, logger, dataDirLock, store);
  } catch (err) {
    dataDirLock?.release();
    throw err;
  }
}

async function assemble(config: Config, logger: Logger, dataDirLock: Services['dataDirLock'], store?: Store): Promise<Services> {
  const blobs = openBlobStore(blobStoreSettings(config));
  // A missing bucket or an unwritable BLOB_DIR stops the start with one line (before the database is opened),
  // not the first upload.
  try {
    await blobs.check();
  } catch (err) {
    blobs.close();
    throw err;
  }
  const opened = store ?? (await openConfiguredStore(config, (m) => logger.info({ version: m.version, name: m.name }, 'migration applied')));
  const engine = createEngine(config);
  const cipher = new SecretCipher(loadSecretsKey(config.secretsKey, config.dataDir));
  const secrets = new SecretVault(opened, cipher);
  const tools = createToolRegistry({ config, store: opened, engine: engine.engine, logger });
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
  // Servers sharing a database must share the secrets key: one whose key cannot open what the others sealed stops
  // here rather than replace the shared signing key (on SQLite a replaced key only invalidates cursors and links).
  if (config.databaseUrl && (await signingKeyOpens(opened, secrets)) === false) {
    if (!store) await opened.close();
    throw new ConfigError('SECRETS_KEY does not open the secrets stored in the database at DATABASE_URL; every server on one database must use the same SECRETS_KEY');
  }
  const signingKey = await loadSigningKey(opened, secrets, logger);
  // Share tokens stored in plain by an older version are sealed before anything can read them.
  await sealPlainShareTokens(opened, secrets);
  const mcp = new McpRegistry({ store: opened, vault: secrets, egress: engine.engine.options.egress });
  // Agents, the catalog and executeTool see the tools of the workspace's registered MCP servers.
  tools.registerTool(mcpToolProvider(mcp));
  const callbacks = new CallbackWorker({ store: opened, vault: secrets, egress: engine.engine.options.egress, settings: config.callbacks, logger });
  // Every run's events also reach whoever follows the run, on this server or another (src/runs/progress.ts).
  const runProgress = new RunProgress(opened.wakes);
  const runs = new RunService({ store: opened, engine: runProgress.reporting(engine.engine), config, logger, startEngine: engine.start, secrets, mcp, tools, blobs, sandboxes, workspaceCredentials });
  // A settled run's callback is sent at once rather than at the worker's next poll.
  runs.observeSettled(() => callbacks.notify());
  const content = new ContentWorkers(config.content);
  const knowledge = new KnowledgeService({ store: opened, blobs, config, logger, cipher, secrets, content });
  // Table, file and knowledge tools over this workspace's own data.
  tools.registerTool(workspaceDataToolProvider({ store: opened, blobs, config, knowledge, content }));
  return {
    config,
    store: opened,
    logger,
    signingKey,
    engine: engine.engine,
    runs,
    runProgress,
    secrets,
    mcp,
    sandboxes,
    workspaceCredentials,
    tools,
    closeEngine: async () => {
      await sandboxes.close();
      await engine.close();
    },
    credentials: new CredentialResolver(opened, config.credentialRecheckMs),
    rateLimits: rateLimitStoreFor(opened.tokenBuckets),
    blobs,
    tableJobs: new TableJobRunner({ store: opened, blobs, config, logger }),
    tableGroups: new GroupRunner({ store: opened, runs, config, logger, egress: engine.engine.options.egress }),
    dataDirLock,
    mailer: createMailer(config.web.mail),
    knowledge,
    callbacks,
    content,
  };
}

/** An HTTP server with this configuration's request, header and body timeouts, not yet answering anything. */
function createHttpServer(limits: Config['http']): http.Server {
  // Node checks request and header timeouts on this interval; keep it well under the shorter one.
  const server = http.createServer({ connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 3))) });
  applyServerTimeouts(server, limits);
  return server;
}

export interface StartOptions extends AppOptions {
  /** A server already listening (bound early by `npm start`, before anything is written); one is bound otherwise. */
  listener?: http.Server;
}

/**
 * Binds HOST:PORT (a port in use rejects with EADDRINUSE, which `npm start` reports in one line). Until
 * startServer takes it over, requests get a 503 saying the server is starting; /healthz already answers 200
 * (the process is alive) and /readyz 503.
 */
export async function bindListener(config: Pick<Config, 'port' | 'host' | 'http'>): Promise<http.Server> {
  const server = createHttpServer(config.http);
  const probes = probeAnswerer(async () => false);
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (probes(req, res)) return;
    res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1' });
    res.end(JSON.stringify({ error: { code: 'SERVICE_UNAVAILABLE', message: 'The server is starting; retry shortly.' } }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

export async function startServer(services: Services, options: StartOptions = {}): Promise<RunningServer> {
  const { config } = services;
  const { listener, ...binderOptions } = options;
  const app = createApp(services, binderOptions);
  const server = listener ?? createHttpServer(config.http);
  // Metrics are off unless METRICS_PORT is set; their own listener is bound first, so a port in use fails the start.
  // prom-client is loaded only then (a few MB of heap no other server needs).
  const metricsModule = config.metrics.port !== null ? await import('./ops/metrics.ts') : null;
  const metrics = metricsModule ? metricsModule.createServerMetrics(services) : null;
  const metricsListener = metricsModule && metrics && config.metrics.port !== null ? await metricsModule.listenForMetrics(metrics, config.metrics.host, config.metrics.port) : null;
  server.removeAllListeners('request'); // the "starting" answer of bindListener
  let shuttingDown = false;
  // Ready while not shutting down and the database answers with this build's schema; probes skip the app.
  const probes = probeAnswerer(
    async () => !shuttingDown && (await services.store.schemaIsCurrent()),
    (path, status) => services.logger.debug({ path, status }, 'probe'),
  );
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!probes(req, res)) app(req, res);
  });
  if (metrics) observeRequests(server, metrics);
  server.keepAliveTimeout = 65_000;
  // A keep-alive connection whose last request finishes during shutdown is closed right away.
  server.on('request', (_req, res: http.ServerResponse) => {
    res.on('finish', () => {
      if (shuttingDown) setImmediate(() => server.closeIdleConnections());
    });
  });
  if (!server.listening) {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
  }
  const port = (server.address() as AddressInfo).port;
  services.dataDirLock?.setPort(port);
  // Links the API hands out (signed upload URLs, share links) must name the port actually bound.
  if (config.port === 0 && config.baseUrl.endsWith(':0')) config.baseUrl = `${config.baseUrl.slice(0, -2)}:${port}`;
  // Nothing is recovered at start: runs a previous process left running are reclaimed by the queue's workers once
  // their lease expires (src/runs/service.ts); uploads it left completing, and its temporary files, are swept by
  // age by the purge job.
  await services.runs.start();
  services.runProgress.start();
  await services.sandboxes.resume();
  await services.tableJobs.start();
  services.tableGroups.start();
  // The knowledge queue's workers start; documents whose worker died are reclaimed when their lease runs out.
  await services.knowledge.start();
  // Callback deliveries: one whose sender died is due again once its lease runs out (no recovery at start).
  await services.callbacks.start();
  const stopPurge = startPurgeTimer(
    () => purgeFiles(services.store, services.blobs, { archiveRetentionMs: config.files.archiveRetentionMs, graceMs: config.files.staleAfterMs, logger: services.logger }),
    config.files.purgeIntervalMs,
    services.logger,
  );
  let closing: Promise<void> | null = null;
  return {
    url: `http://${config.host}:${port}`,
    port,
    services,
    metricsUrl: metricsListener?.url ?? null,
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        stopPurge();
        // The queue stops taking work at once; runs in flight get the same grace as in-flight requests, then
        // async runs still going go back to the queue.
        services.runProgress.stop();
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
        const runs = await runsClosed;
        await metricsListener?.close();
        metrics?.detach();
        await services.callbacks.close();
        await services.tableJobs.close();
        await services.tableGroups.close();
        // The knowledge queue stops claiming at once; parses still running are then stopped, and their documents
        // go back to the queue for the next start.
        const knowledgeClosed = services.knowledge.close();
        await services.content.close();
        await knowledgeClosed;
        await services.closeEngine();
        await services.store.close();
        services.blobs.close();
        services.dataDirLock?.release();
        // The last line a server logs: what became of the runs it had in hand.
        services.logger.info({ runsFinished: runs.finished, runsReturnedToQueue: runs.returnedToQueue, runsInterrupted: runs.interrupted }, 'stopped');
      })();
      return closing;
    },
  };
}

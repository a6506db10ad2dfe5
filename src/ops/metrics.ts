// Prometheus metrics: one registry per server, what the domain services report through their observer hooks
// (run outcomes, callback attempts), gauges read from the store when scraped, and the listener that serves
// them on METRICS_HOST:METRICS_PORT, apart from the API port so they are never public by accident.
// Labels are bounded: operation ids, triggers, statuses, buckets; never paths, ids or user input.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Services } from '../services.ts';

export interface ServerMetrics {
  registry: Registry;
  httpRequests: Counter<'operation' | 'method' | 'status'>;
  httpDuration: Histogram<'operation' | 'method' | 'status_class'>;
  rateLimitRejections: Counter<'operation' | 'bucket'>;
  /** Stops observing the services. */
  detach(): void;
}

/** Seconds; runs last from milliseconds to hours. */
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];

/** A file's size, 0 when it does not exist (no WAL yet, an in-memory database). */
function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * The registry and its metrics. Gauges marked "at scrape" run one indexed query each when Prometheus scrapes
 * (a partial-index lookup or an index-only count), so a scrape costs a handful of cheap reads.
 */
export function createServerMetrics(services: Services): ServerMetrics {
  const { store, logger } = services;
  const registry = new Registry();
  // Event-loop lag, heap, resident memory, CPU, handles: prom-client's standard process and Node.js metrics.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  // A failing store read is logged and leaves that gauge at its previous value rather than failing the whole scrape.
  const atScrape = <T>(name: string, read: (this: T) => Promise<void>) =>
    async function (this: T) {
      try {
        await read.call(this);
      } catch (err) {
        logger.warn({ err, metric: name }, 'a metric could not be read');
      }
    };

  const httpRequests = new Counter({ name: 'owa_http_requests_total', help: 'HTTP requests answered, by operation id (or "unmatched"), method and status code.', labelNames: ['operation', 'method', 'status'] as const, registers });
  const httpDuration = new Histogram({ name: 'owa_http_request_duration_seconds', help: 'Time from request to the end of its response, by operation id, method and status class.', labelNames: ['operation', 'method', 'status_class'] as const, registers });
  const rateLimitRejections = new Counter({ name: 'owa_rate_limit_rejections_total', help: 'Requests refused with 429 by the per-credential rate limits, by operation id and bucket.', labelNames: ['operation', 'bucket'] as const, registers });

  const runsSettled = new Counter({ name: 'owa_runs_settled_total', help: 'Run outcomes recorded by this process (executed, cancelled, or reclaimed from an expired lease and settled here), by trigger and final status.', labelNames: ['trigger', 'status'] as const, registers });
  const runDuration = new Histogram({ name: 'owa_run_duration_seconds', help: 'Execution time of runs executed by this process, by trigger and status.', labelNames: ['trigger', 'status'] as const, buckets: RUN_BUCKETS, registers });
  const stopRuns = services.runs.observeSettled((run) => {
    runsSettled.inc({ trigger: run.trigger, status: run.status });
    if (run.durationMs !== null) runDuration.observe({ trigger: run.trigger, status: run.status }, run.durationMs / 1000);
  });
  new Gauge({ name: 'owa_runs_executing', help: 'Runs executing in this process now.', registers, collect() {
    this.set(services.runs.activeCount);
  } });
  // Depth and age come from one query, shared by both gauges while a scrape is collecting them.
  let queueRead: Promise<{ depth: number; oldestQueuedAt: string | null }> | null = null;
  const queueStats = () => (queueRead ??= store.workflowRuns.queueStats().finally(() => (queueRead = null)));
  new Gauge({ name: 'owa_run_queue_depth', help: 'Runs queued and not yet claimed (at scrape).', registers, collect: atScrape('owa_run_queue_depth', async function (this: Gauge) {
    this.set((await queueStats()).depth);
  }) });
  new Gauge({ name: 'owa_run_queue_oldest_age_seconds', help: 'Age of the oldest queued run, 0 when none is queued (at scrape).', registers, collect: atScrape('owa_run_queue_oldest_age_seconds', async function (this: Gauge) {
    const oldest = (await queueStats()).oldestQueuedAt;
    this.set(oldest ? Math.max(0, (Date.now() - Date.parse(oldest)) / 1000) : 0);
  }) });

  const knowledgeDocuments = new Gauge({
    name: 'owa_knowledge_documents',
    help: 'Knowledge documents by processing state: pending, processing, completed, failed (at scrape).',
    labelNames: ['state'] as const,
    registers,
    collect: atScrape('owa_knowledge_documents', async () => {
      const counts = await store.knowledgeDocuments.countsByState();
      for (const [state, n] of Object.entries(counts)) knowledgeDocuments.set({ state }, n);
    }),
  });
  const tableJobs = new Gauge({
    name: 'owa_table_jobs',
    help: 'Table imports and exports, by kind and status (at scrape).',
    labelNames: ['kind', 'status'] as const,
    registers,
    collect: atScrape('owa_table_jobs', async () => {
      tableJobs.reset();
      for (const [kind, counts] of [['import', await store.tableImports.countsByStatus()], ['export', await store.tableExports.countsByStatus()]] as const) {
        for (const [status, n] of Object.entries(counts)) tableJobs.set({ kind, status }, n);
      }
    }),
  });

  // The engine's pool runs function blocks without a built sandbox; "sandbox" adds up the pools of built sandboxes.
  const sandboxPools = () => [['default', services.engine.options.sandbox.usage()], ['sandbox', services.sandboxes.poolUsage()]] as const;
  const sandboxWorkers = new Gauge({
    name: 'owa_sandbox_workers',
    help: 'Sandbox processes by pool (default, sandbox) and state: busy (running a call), idle (ready), total (starting ones too).',
    labelNames: ['pool', 'state'] as const,
    registers,
    collect() {
      for (const [pool, u] of sandboxPools()) {
        sandboxWorkers.set({ pool, state: 'busy' }, u.busy);
        sandboxWorkers.set({ pool, state: 'idle' }, u.idle);
        sandboxWorkers.set({ pool, state: 'total' }, u.total);
      }
    },
  });
  const sandboxWaiting = new Gauge({
    name: 'owa_sandbox_calls_waiting',
    help: 'Function-block calls waiting for a free sandbox process, by pool.',
    labelNames: ['pool'] as const,
    registers,
    collect() {
      for (const [pool, u] of sandboxPools()) sandboxWaiting.set({ pool }, u.waiting);
    },
  });

  const callbackAttempts = new Counter({ name: 'owa_callback_attempts_total', help: 'Completion-callback delivery attempts recorded by this process, by outcome (delivered, retry, failed).', labelNames: ['outcome'] as const, registers });
  const stopCallbacks = services.callbacks.observeAttempts((outcome) => callbackAttempts.inc({ outcome }));
  new Gauge({ name: 'owa_callback_deliveries_pending', help: 'Completion-callback deliveries still to be sent or retried (at scrape).', registers, collect: atScrape('owa_callback_deliveries_pending', async function (this: Gauge) {
    this.set(await store.runCallbacks.pendingCount());
  }) });

  const databaseFile = services.config.databaseFile;
  new Gauge({ name: 'owa_database_size_bytes', help: 'Size of the database: the SQLite file plus its write-ahead log, or what Postgres reports for the database.', registers, collect: atScrape('owa_database_size_bytes', async function (this: Gauge) {
    const reported = await store.databaseSize();
    this.set(reported ?? (databaseFile === ':memory:' ? 0 : sizeOf(databaseFile) + sizeOf(`${databaseFile}-wal`)));
  }) });

  return {
    registry,
    httpRequests,
    httpDuration,
    rateLimitRejections,
    detach() {
      stopRuns();
      stopCallbacks();
    },
  };
}

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/** Serves `GET /metrics` (Prometheus text exposition) on its own port; anything else is a 404. */
export async function listenForMetrics(metrics: ServerMetrics, host: string, port: number): Promise<MetricsListener> {
  const server = http.createServer(async (req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'The metrics listener serves GET /metrics only.' } }));
      return;
    }
    try {
      const text = await metrics.registry.metrics();
      res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
      res.end(text);
    } catch (err) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'INTERNAL_ERROR', message: `Metrics could not be collected: ${(err as Error).message}` } }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

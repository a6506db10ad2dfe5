// Configuration comes from environment variables only; see the table in README.md.
import { isIP } from 'node:net';
import path from 'node:path';
import { DEFAULT_EXECUTION_POLICIES, DEFAULT_RATE_LIMITS, DEFAULT_TABLE_LIMITS, type ExecutionPolicy, type RateBucket, type RateLimits } from './billing/plans.ts';
import { PLANS, type Plan } from './store/billing-accounts.ts';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Where the SQLite database lives; ':memory:' keeps it in memory (tests). Unused when databaseUrl is set. */
  databaseFile: string;
  /** DATABASE_URL: a Postgres database shared by any number of servers; null keeps SQLite in DATA_DIR. */
  databaseUrl: string | null;
  baseUrl: string;
  logLevel: string;
  bodyLimitBytes: number;
  validateResponses: boolean;
  bootstrapApiKey: string | null;
  /** How often the server looks for credential revocations made by other processes (ms). */
  credentialRecheckMs: number;
  shutdownTimeoutMs: number;
  /** Requests per minute per plan and bucket; RATE_LIMIT_<PLAN>_<BUCKET> overrides one (e.g. RATE_LIMIT_FREE_SYNC=20). */
  rateLimits: Record<Plan, RateLimits>;
  /** Function-block sandbox: warm processes, per-call wall-clock limit, memory cap per process. */
  sandbox: { poolSize: number; timeoutMs: number; memoryMb: number };
  /** Outbound HTTP from API blocks and sandboxed fetch. */
  egress: { allowPrivate: boolean; allowCidrs: string[]; maxResponseBytes: number };
  execution: { maxLoopIterations: number; parallelConcurrency: number; maxChildDepth: number; apiTimeoutMs: number };
  /** OpenAI-compatible provider for agent blocks; null when AGENT_API_BASE_URL is unset. */
  agent: {
    baseUrl: string;
    apiKey: string | null;
    model: string;
    timeoutMs: number;
    inputCostPerMTok: number;
    outputCostPerMTok: number;
  } | null;
  files: FileLimits;
  /** Where committed file bytes live: a directory (shared by every server, BLOB_DIR) or an S3-compatible bucket. */
  blobStore: BlobStoreConfig;
  runs: RunSettings;
  /** Key for secret values at rest (32 bytes, hex or base64); null keeps a generated one in $DATA_DIR/secrets.key. */
  secretsKey: string | null;
  /** The tool registry: default execution timeout and the recorded cost of one tool execution (USD). */
  tools: { timeoutMs: number; executionCostUsd: number };
  /** Sandbox builds: where npm and python come from, how long an install may take, how many sandbox pools stay warm. */
  sandboxBuilds: { npmCommand: string; python: string; timeoutMs: number; maxPools: number };
  /**
   * OAuth client settings per credential provider (or provider family, e.g. `google`), from
   * OAUTH_<ID>_CLIENT_ID / _CLIENT_SECRET and optional _AUTHORIZATION_URL, _TOKEN_URL, _SCOPES, and _API_BASE_URL
   * (where selectors call the provider's API, e.g. a proxy or a test double).
   */
  oauthProviders: Record<string, { clientId: string; clientSecret: string; authorizationUrl?: string; tokenUrl?: string; scopes?: string[]; apiBaseUrl?: string }>;
  tables: TableSettings;
  /** Limits of the HTTP layer itself: how long a request may take to arrive, how deep a JSON body may nest. */
  http: HttpLimits;
  /** Hosted chat pages and browser sign-in (sessions, the CLI's OAuth server and pairing handoff). */
  web: WebSettings;
  knowledge: KnowledgeSettings;
  content: ContentSettings;
  /** Idempotency-Key: how long a key (and the answer it replays) is kept. */
  idempotency: { ttlMs: number };
  callbacks: CallbackSettings;
  /**
   * Work claimed from a queue (runs, knowledge documents, table jobs, callback deliveries) is held under a lease:
   * the holder renews it every `renewMs`; an item whose lease passed `ttlMs` without renewal is reclaimed by
   * whichever process polls next.
   */
  leases: LeaseSettings;
  /**
   * Prometheus metrics, served on a listener of their own (never on the API port): off (null port) unless
   * METRICS_PORT is set; bound to METRICS_HOST, loopback by default.
   */
  metrics: { port: number | null; host: string };
  /**
   * OpenTelemetry traces, off (null URL) unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
   * is set: where spans are sent (OTLP over HTTP, JSON) and the service name they carry.
   */
  tracing: { tracesUrl: string | null; serviceName: string };
  /**
   * Which peers may set the client address and the public scheme and host through X-Forwarded-For,
   * X-Forwarded-Proto and X-Forwarded-Host (TRUST_PROXY): false (nobody), true (any), a hop count, or addresses
   * and CIDR ranges; passed to Express's `trust proxy`.
   */
  trustProxy: boolean | number | string[];
  /** Whether BASE_URL was set: then it is the public URL, whatever a proxy forwards. */
  baseUrlConfigured: boolean;
}

export interface LeaseSettings {
  ttlMs: number;
  renewMs: number;
}

/** Completion callbacks of async runs: retry schedule, per-attempt timeout, signing-secret rotation grace. */
export interface CallbackSettings {
  /** First retry delay (ms); each further retry doubles it (with jitter) up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** How long after the run settled a delivery keeps being retried before it is `failed` (ms). */
  maxDeliveryMs: number;
  /** Longest one POST may take (ms). */
  attemptTimeoutMs: number;
  /** How often the delivery worker looks for due deliveries (ms). */
  pollMs: number;
  /** Deliveries sent at the same time. */
  concurrency: number;
  /** Default time the previous signing secret keeps signing after a rotation (ms). */
  secretGraceMs: number;
}

export interface HttpLimits {
  /** Longest time to receive a whole request, headers and body (Node's requestTimeout; 0 = none). */
  requestTimeoutMs: number;
  /** Longest time to receive the request line and headers (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** Longest a request body may stall (no bytes arriving) before the request is answered 408 (0 = none). */
  bodyTimeoutMs: number;
  /** Deepest nesting of objects and arrays in a JSON request body. */
  bodyMaxDepth: number;
}

export interface WebSettings {
  /** Origin and path prefix of chat pages; null means `{BASE_URL}/chat` (read after the port is bound). */
  chatUrl: string | null;
  /** Password, code and sign-in attempts per minute per client address (and per chat or account). */
  authAttemptsPerMinute: number;
  /** Lifetime of a signed-in browser session and of a chat's auth cookie. */
  sessionTtlMs: number;
  /** Whether `/.well-known/oauth-authorization-server` and the OAuth endpoints answer (off: the CLI pairs instead). */
  oauthEnabled: boolean;
  /** Where mail goes: `smtp` (SMTP_URL) or `outbox` (one JSON file per message in `outboxDir`, for local use and tests). */
  mail: { transport: 'smtp' | 'outbox'; smtpUrl: string | null; from: string; outboxDir: string };
}

/** User tables: per-plan limits (TABLES_LIMIT_<PLAN>, TABLE_ROWS_LIMIT_<PLAN>) and the row size cap. */
export interface TableSettings {
  perPlan: Record<Plan, { tables: number; rowsPerTable: number }>;
  maxRowBytes: number;
  /** How long an ended export (and its file) is kept; then both are deleted. */
  exportRetentionMs: number;
  /** Enrichment providers with an endpoint (ENRICHMENT_<ID>_URL, optional _API_KEY), by upper-case id. */
  enrichmentProviders: Record<string, { url: string; apiKey: string | null }>;
}

/** Knowledge bases: the embedding provider, the processing queue and search defaults. */
/** The content workers that parse untrusted bytes (documents, file text, search, workflow imports) off the event loop. */
export interface ContentSettings {
  /** Worker threads at most; parses beyond them wait. */
  workers: number;
  /** Heap cap of each worker (MB); a parse that needs more is stopped. */
  memoryMb: number;
  /** Longest one parse may take (ms); past it the worker is terminated. */
  timeoutMs: number;
  /** Deepest nesting of JSON/YAML collections and HTML/XML elements in a document. */
  maxDepth: number;
  /** Most bytes a compressed document (DOCX, XLSX, PPTX, PDF streams) may expand to. */
  maxExpandedBytes: number;
}

export interface KnowledgeSettings {
  /** An OpenAI-compatible /v1/embeddings endpoint; null uses the embedded word-vector model. */
  embedding: {
    baseUrl: string;
    apiKey: string | null;
    model: string;
    dimensions: number;
    batchSize: number;
    timeoutMs: number;
    maxRetries: number;
  } | null;
  /** Documents processed at the same time by this process. */
  workers: number;
  /** Search mode when a request names none. */
  defaultSearchMode: 'vector' | 'hybrid';
  /** Largest document accepted (upload or workspace file). */
  maxDocumentBytes: number;
  /** How often due connector syncs are looked for (ms); 0 turns the schedule off. */
  connectorPollMs: number;
  /** A Cohere-compatible rerank endpoint for `rerankerEnabled` searches; null: reranking is unavailable. */
  rerank: { baseUrl: string; apiKey: string | null; timeoutMs: number } | null;
  /** Which vector index a base gets: exact below `minRows` chunks and quantized from there (`auto`), or one kind for all. */
  vectorIndex: { kind: 'auto' | 'exact' | 'quantized'; minRows: number };
}

/** Workflow runs over HTTP and the async queue. */
export interface RunSettings {
  /** Asynchronous runs executed at the same time by this process. */
  workers: number;
  /** Longest a synchronous (or streamed) run may take before it fails with TIMEOUT (ms). */
  syncTimeoutMs: number;
  /** How often idle workers look for runs queued by another process, or left by a process that died (ms). */
  pollIntervalMs: number;
  /** How often a followed run (GET …/runs/{runId}/events) is re-read in case a progress notification was lost (ms). */
  followPollMs: number;
  /** Executions an async run gets when its process dies under it (RUN_MAX_ATTEMPTS); then it fails. */
  maxAttempts: number;
  /** Per-plan async time cap and monthly usage limit; ASYNC_RUN_MAX_SECONDS_<PLAN> and USAGE_LIMIT_USD_<PLAN> override. */
  policies: Record<Plan, ExecutionPolicy>;
}

/** File storage knobs; plan quotas live in src/billing/plans.ts. */
export interface FileLimits {
  /** Multipart part size; files up to this size go in one signed PUT. */
  uploadPartSize: number;
  uploadSessionTtlMs: number;
  /** Overrides every plan's storage quota when set (self-hosting, tests). */
  storageQuotaBytes: number | null;
  /** Overrides every plan's largest file when set. */
  maxFileBytes: number | null;
  archiveRetentionMs: number;
  /** How often the purge job runs; 0 turns the timer off. */
  purgeIntervalMs: number;
  /**
   * Age after which the purge job treats upload leftovers as abandoned: temporary files and staged bytes
   * untouched this long, unreferenced blobs, and sessions left `completing` (their process died).
   */
  staleAfterMs: number;
  unzipMaxEntries: number;
  unzipMaxBytes: number;
  /** Longest one unzip may take (its worker is then terminated). */
  unzipTimeoutMs: number;
  /** Most source bytes text extraction and search read from one file. */
  textMaxBytes: number;
}

/**
 * Where committed file bytes live. Staging and temporary files always stay in $DATA_DIR/files (local to one
 * server); only finished, content-addressed blobs go here.
 */
export type BlobStoreConfig = { kind: 'local-disk'; dir: string } | ({ kind: 's3' } & S3Settings);

export interface S3Settings {
  /** Null: AWS's own endpoint for the region. */
  endpoint: string | null;
  bucket: string;
  region: string;
  /** Both null: the AWS SDK's default credential chain (AWS_* variables, profiles, instance roles). */
  accessKeyId: string | null;
  secretAccessKey: string | null;
  /** Path-style addressing (`endpoint/bucket/key`), which most self-hosted S3-compatible servers need. */
  forcePathStyle: boolean;
  /** Blobs larger than this go up as a multipart upload in parts of this size (at least 5 MiB, S3's minimum). */
  partSize: number;
}

export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function cidrList(env: NodeJS.ProcessEnv, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max))) {
      throw new ConfigError(`${name} must be a comma-separated list of IP addresses or CIDR ranges, got "${entry}"`);
    }
  }
  return entries;
}

function decimal(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new ConfigError(`${name} must be a number of zero or more, got "${raw}"`);
  return n;
}

/** Parses sizes such as 1048576, 512kb, 10mb. */
function byteSize(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const m = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(raw.trim());
  if (!m) throw new ConfigError(`${name} must be a size such as 1048576, 512kb or 10mb, got "${raw}"`);
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(m[2] ?? 'b').toLowerCase() as 'b'];
  return Number(m[1]) * unit;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const baseUrl = (env.BASE_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`).replace(/\/+$/, '');
  try {
    new URL(baseUrl);
  } catch {
    throw new ConfigError(`BASE_URL must be an absolute URL, got "${env.BASE_URL}"`);
  }
  const production = env.NODE_ENV === 'production';
  const databaseUrl = postgresUrl(env);
  const sealKey = secretsKey(env);
  if (databaseUrl && sealKey === null) {
    throw new ConfigError('SECRETS_KEY is required when DATABASE_URL is set: every server sealing and opening secrets in the shared database needs the same key (e.g. `openssl rand -base64 32`)');
  }
  return {
    port,
    host,
    dataDir,
    databaseFile: env.DATABASE_FILE || path.join(dataDir, 'workspace.sqlite'),
    databaseUrl,
    baseUrl,
    logLevel: logLevel(env),
    bodyLimitBytes: byteSize(env, 'BODY_LIMIT', 10 * 1024 * 1024),
    validateResponses: bool(env, 'VALIDATE_RESPONSES', !production),
    bootstrapApiKey: env.BOOTSTRAP_API_KEY || null,
    credentialRecheckMs: integer(env, 'CREDENTIAL_RECHECK_MS', 250, 0, 60_000),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    rateLimits: Object.fromEntries(
      PLANS.map((plan) => [
        plan,
        Object.fromEntries(
          (['api', 'sync', 'async'] as RateBucket[]).map((bucket) => [
            bucket,
            integer(env, `RATE_LIMIT_${plan.toUpperCase()}_${bucket.toUpperCase()}`, DEFAULT_RATE_LIMITS[plan][bucket], 1, 100_000_000),
          ]),
        ),
      ]),
    ) as Record<Plan, RateLimits>,
    sandbox: {
      poolSize: integer(env, 'SANDBOX_POOL_SIZE', 2, 1, 64),
      timeoutMs: integer(env, 'SANDBOX_TIMEOUT_MS', 10_000, 10, 600_000),
      memoryMb: integer(env, 'SANDBOX_MEMORY_MB', 128, 16, 8192),
    },
    egress: {
      allowPrivate: bool(env, 'EGRESS_ALLOW_PRIVATE', false),
      allowCidrs: cidrList(env, 'EGRESS_ALLOW_CIDRS'),
      maxResponseBytes: byteSize(env, 'EGRESS_MAX_RESPONSE', 10 * 1024 * 1024),
    },
    execution: {
      maxLoopIterations: integer(env, 'EXECUTION_MAX_LOOP_ITERATIONS', 1000, 1, 1_000_000),
      parallelConcurrency: integer(env, 'EXECUTION_PARALLEL_CONCURRENCY', 10, 1, 1000),
      maxChildDepth: integer(env, 'EXECUTION_MAX_CHILD_DEPTH', 5, 0, 100),
      apiTimeoutMs: integer(env, 'API_BLOCK_TIMEOUT_MS', 30_000, 10, 600_000),
    },
    agent: agentConfig(env),
    knowledge: knowledgeConfig(env),
    content: {
      workers: integer(env, 'CONTENT_WORKERS', 2, 1, 64),
      memoryMb: integer(env, 'CONTENT_WORKER_MEMORY_MB', 256, 32, 16_384),
      timeoutMs: integer(env, 'CONTENT_TIMEOUT_MS', 30_000, 100, 3_600_000),
      maxDepth: integer(env, 'CONTENT_MAX_DEPTH', 512, 8, 100_000),
      maxExpandedBytes: byteSize(env, 'CONTENT_MAX_EXPANDED_BYTES', 200 * 1024 * 1024),
    },
    secretsKey: sealKey,
    tools: {
      timeoutMs: integer(env, 'TOOL_TIMEOUT_MS', 30_000, 10, 300_000),
      executionCostUsd: decimal(env, 'TOOL_EXECUTION_COST_USD', 0),
    },
    oauthProviders: oauthProviders(env),
    sandboxBuilds: {
      npmCommand: env.SANDBOX_NPM_COMMAND || 'npm',
      python: env.SANDBOX_PYTHON || 'python3',
      timeoutMs: integer(env, 'SANDBOX_BUILD_TIMEOUT_MS', 300_000, 1000, 3_600_000),
      maxPools: integer(env, 'SANDBOX_MAX_POOLS', 8, 1, 256),
    },
    web: webSettings(env, dataDir),
    files: {
      uploadPartSize: byteSize(env, 'UPLOAD_PART_SIZE', 16 * 1024 * 1024),
      uploadSessionTtlMs: integer(env, 'UPLOAD_SESSION_TTL_SECONDS', 24 * 3600, 1, 30 * 24 * 3600) * 1000,
      storageQuotaBytes: env.STORAGE_QUOTA_BYTES ? byteSize(env, 'STORAGE_QUOTA_BYTES', 0) : null,
      maxFileBytes: env.MAX_FILE_SIZE ? byteSize(env, 'MAX_FILE_SIZE', 0) : null,
      archiveRetentionMs: integer(env, 'FILE_ARCHIVE_RETENTION_DAYS', 30, 0, 3650) * 24 * 3600 * 1000,
      purgeIntervalMs: integer(env, 'FILE_PURGE_INTERVAL_SECONDS', 3600, 0, 7 * 24 * 3600) * 1000,
      staleAfterMs: integer(env, 'FILE_STALE_AFTER_SECONDS', 3600, 1, 7 * 24 * 3600) * 1000,
      unzipMaxEntries: integer(env, 'UNZIP_MAX_ENTRIES', 1000, 1, 100_000),
      unzipMaxBytes: byteSize(env, 'UNZIP_MAX_SIZE', 1024 * 1024 * 1024),
      unzipTimeoutMs: integer(env, 'UNZIP_TIMEOUT_MS', 300_000, 1, 3_600_000),
      textMaxBytes: byteSize(env, 'TEXT_EXTRACT_MAX_SIZE', 20 * 1024 * 1024),
    },
    runs: {
      workers: integer(env, 'RUN_WORKERS', 8, 1, 1024),
      syncTimeoutMs: integer(env, 'SYNC_RUN_TIMEOUT_MS', 300_000, 10, 3_600_000),
      pollIntervalMs: integer(env, 'RUN_QUEUE_POLL_MS', 1000, 10, 600_000),
      followPollMs: integer(env, 'RUN_FOLLOW_POLL_MS', 5000, 100, 3_600_000),
      maxAttempts: integer(env, 'RUN_MAX_ATTEMPTS', 3, 1, 100),
      policies: Object.fromEntries(
        PLANS.map((plan) => [
          plan,
          {
            maxAsyncSeconds: integer(env, `ASYNC_RUN_MAX_SECONDS_${plan.toUpperCase()}`, DEFAULT_EXECUTION_POLICIES[plan].maxAsyncSeconds, 1, 604_800),
            usageLimitUsd: decimal(env, `USAGE_LIMIT_USD_${plan.toUpperCase()}`, DEFAULT_EXECUTION_POLICIES[plan].usageLimitUsd),
          },
        ]),
      ) as Record<Plan, ExecutionPolicy>,
    },
    tables: {
      perPlan: Object.fromEntries(
        PLANS.map((plan) => [
          plan,
          {
            tables: integer(env, `TABLES_LIMIT_${plan.toUpperCase()}`, DEFAULT_TABLE_LIMITS[plan].tables, 0, 10_000_000),
            rowsPerTable: integer(env, `TABLE_ROWS_LIMIT_${plan.toUpperCase()}`, DEFAULT_TABLE_LIMITS[plan].rowsPerTable, 0, 1_000_000_000),
          },
        ]),
      ) as Record<Plan, { tables: number; rowsPerTable: number }>,
      maxRowBytes: byteSize(env, 'TABLE_MAX_ROW_SIZE_BYTES', 400 * 1024),
      exportRetentionMs: integer(env, 'TABLE_EXPORT_RETENTION_SECONDS', 24 * 3600, 1, 30 * 24 * 3600) * 1000,
      enrichmentProviders: enrichmentProviders(env),
    },
    http: httpLimits(env),
    idempotency: { ttlMs: integer(env, 'IDEMPOTENCY_TTL_SECONDS', 24 * 3600, 1, 30 * 24 * 3600) * 1000 },
    leases: leaseSettings(env),
    metrics: { port: integer(env, 'METRICS_PORT', 0, 0, 65535) || null, host: env.METRICS_HOST || '127.0.0.1' },
    tracing: tracingConfig(env),
    trustProxy: trustProxy(env),
    baseUrlConfigured: Boolean(env.BASE_URL),
    blobStore: blobStoreConfig(env, dataDir),
    callbacks: {
      retryBaseMs: integer(env, 'CALLBACK_RETRY_BASE_MS', 5000, 1, 3_600_000),
      retryMaxMs: integer(env, 'CALLBACK_RETRY_MAX_MS', 3_600_000, 1, 86_400_000),
      maxDeliveryMs: integer(env, 'CALLBACK_MAX_DELIVERY_SECONDS', 86_400, 1, 7 * 86_400) * 1000,
      attemptTimeoutMs: integer(env, 'CALLBACK_ATTEMPT_TIMEOUT_MS', 10_000, 10, 300_000),
      pollMs: integer(env, 'CALLBACK_POLL_MS', 1000, 10, 600_000),
      concurrency: integer(env, 'CALLBACK_CONCURRENCY', 4, 1, 256),
      secretGraceMs: integer(env, 'CALLBACK_SECRET_GRACE_SECONDS', 86_400, 0, 30 * 86_400) * 1000,
    },
  };
}

const S3_SETTINGS = ['S3_ENDPOINT', 'S3_BUCKET', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_FORCE_PATH_STYLE', 'S3_PART_SIZE'];

function blobStoreConfig(env: NodeJS.ProcessEnv, dataDir: string): BlobStoreConfig {
  const kind = (env.BLOB_STORE ?? '').trim().toLowerCase() || 'disk';
  const blobDir = env.BLOB_DIR?.trim();
  if (kind === 'disk') {
    const stray = S3_SETTINGS.find((name) => env[name]?.trim());
    if (stray) throw new ConfigError(`${stray} is set but BLOB_STORE is not s3; set BLOB_STORE=s3 to keep file bytes in the bucket, or unset ${stray}`);
    // The default is where earlier versions kept blobs, so existing data directories need no move.
    return { kind: 'local-disk', dir: path.resolve(blobDir || path.join(dataDir, 'files', 'blobs')) };
  }
  if (kind !== 's3') throw new ConfigError(`BLOB_STORE must be disk or s3, got "${env.BLOB_STORE}"`);
  if (blobDir) throw new ConfigError('BLOB_DIR is set but BLOB_STORE=s3 keeps file bytes in the bucket; unset one of them');
  const bucket = env.S3_BUCKET?.trim();
  if (!bucket) throw new ConfigError('BLOB_STORE=s3 needs S3_BUCKET, the name of the bucket that holds the file bytes');
  const endpoint = env.S3_ENDPOINT?.trim() || null;
  if (endpoint !== null) {
    let ok = false;
    try {
      ok = /^https?:$/.test(new URL(endpoint).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw new ConfigError(`S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  }
  const accessKeyId = env.S3_ACCESS_KEY_ID?.trim() || null;
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY?.trim() || null;
  if (accessKeyId && !secretAccessKey) throw new ConfigError('S3_ACCESS_KEY_ID is set but S3_SECRET_ACCESS_KEY is not');
  if (secretAccessKey && !accessKeyId) throw new ConfigError('S3_SECRET_ACCESS_KEY is set but S3_ACCESS_KEY_ID is not');
  const partSize = byteSize(env, 'S3_PART_SIZE', 16 * 1024 * 1024);
  if (partSize < 5 * 1024 * 1024 || partSize > 5 * 1024 ** 3) throw new ConfigError(`S3_PART_SIZE must be from 5mb to 5gb (S3's part limits), got "${env.S3_PART_SIZE}"`);
  return {
    kind: 's3',
    endpoint,
    bucket,
    region: env.S3_REGION?.trim() || 'us-east-1',
    accessKeyId,
    secretAccessKey,
    forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', false),
    partSize,
  };
}

function enrichmentProviders(env: NodeJS.ProcessEnv): TableSettings['enrichmentProviders'] {
  const out: TableSettings['enrichmentProviders'] = {};
  for (const key of Object.keys(env)) {
    const m = /^ENRICHMENT_([A-Z0-9_]+)_URL$/.exec(key);
    if (!m || !env[key]) continue;
    const url = env[key]!;
    if (!/^https?:\/\//i.test(url)) throw new ConfigError(`${key} must be an http(s) URL.`);
    out[m[1]!] = { url, apiKey: env[`ENRICHMENT_${m[1]}_API_KEY`] || null };
  }
  return out;
}

function oauthProviders(env: NodeJS.ProcessEnv): Config['oauthProviders'] {
  const out: Config['oauthProviders'] = {};
  for (const key of Object.keys(env)) {
    const m = /^OAUTH_([A-Z0-9_]+)_CLIENT_ID$/.exec(key);
    if (!m || !env[key]) continue;
    const prefix = `OAUTH_${m[1]}`;
    const secret = env[`${prefix}_CLIENT_SECRET`];
    if (!secret) throw new ConfigError(`${key} is set but ${prefix}_CLIENT_SECRET is not`);
    const url = (name: string) => {
      const v = env[`${prefix}_${name}`];
      if (!v) return undefined;
      try {
        const u = new URL(v);
        if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error();
      } catch {
        throw new ConfigError(`${prefix}_${name} must be an http(s) URL, got "${v}"`);
      }
      return v;
    };
    const scopes = env[`${prefix}_SCOPES`];
    out[m[1]!.toLowerCase().replace(/_/g, '-')] = {
      clientId: env[key]!,
      clientSecret: secret,
      authorizationUrl: url('AUTHORIZATION_URL'),
      tokenUrl: url('TOKEN_URL'),
      scopes: scopes ? scopes.split(/[\s,]+/).filter(Boolean) : undefined,
      apiBaseUrl: url('API_BASE_URL')?.replace(/\/+$/, ''),
    };
  }
  return out;
}

function httpLimits(env: NodeJS.ProcessEnv): HttpLimits {
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', 300_000, 0, 3_600_000);
  const headersTimeoutMs = integer(env, 'HEADERS_TIMEOUT_MS', 30_000, 100, 600_000);
  if (requestTimeoutMs > 0 && headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  return {
    requestTimeoutMs,
    headersTimeoutMs,
    bodyTimeoutMs: integer(env, 'BODY_TIMEOUT_MS', 30_000, 0, 3_600_000),
    bodyMaxDepth: integer(env, 'BODY_MAX_DEPTH', 100, 8, 10_000),
  };
}

function tracingConfig(env: NodeJS.ProcessEnv): Config['tracing'] {
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || 'open-workspace-automation';
  if (bool(env, 'OTEL_SDK_DISABLED', false)) return { tracesUrl: null, serviceName };
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter === 'none') return { tracesUrl: null, serviceName };
  if (exporter && exporter !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got "${exporter}"`);
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol && protocol !== 'http/json' && protocol !== 'http/protobuf') {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or http/protobuf (spans are sent over HTTP), got "${protocol}"`);
  }
  const direct = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The signal-specific endpoint is used as it is; the general one gets the traces path appended (OTLP spec).
  const tracesUrl = direct || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : null);
  if (tracesUrl) {
    try {
      const u = new URL(tracesUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new ConfigError(`${direct ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'} must be an http(s) URL, got "${direct || base}"`);
    }
  }
  return { tracesUrl, serviceName };
}

/** TRUST_PROXY: off by default; `true`, a hop count, or a comma-separated list of addresses and CIDR ranges. */
function trustProxy(env: NodeJS.ProcessEnv): Config['trustProxy'] {
  const raw = env.TRUST_PROXY?.trim();
  if (!raw || ['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  if (['true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (/^\d+$/.test(raw)) return integer(env, 'TRUST_PROXY', 0, 0, 100);
  // Express also knows the names loopback, linklocal and uniquelocal for their address ranges.
  const named = new Set(['loopback', 'linklocal', 'uniquelocal']);
  const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const addresses = entries.filter((e) => !named.has(e));
  cidrList({ TRUST_PROXY: addresses.join(',') }, 'TRUST_PROXY');
  return entries;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(env: NodeJS.ProcessEnv): string {
  const raw = env.LOG_LEVEL;
  if (raw === undefined || raw === '') return 'info';
  if (!LOG_LEVELS.includes(raw)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  return raw;
}

/** DATABASE_URL, when set: a postgres:// (or postgresql://) URL. */
function postgresUrl(env: NodeJS.ProcessEnv): string | null {
  const raw = env.DATABASE_URL?.trim();
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_URL must be a postgres://user:password@host:port/database URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_URL must be a postgres:// URL, got a ${url.protocol.replace(/:$/, '')}: URL (unset it to use SQLite in DATA_DIR)`);
  }
  return raw;
}

/** Checked here so a bad key stops the start before anything is written (the vault decodes it the same way). */
function secretsKey(env: NodeJS.ProcessEnv): string | null {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') return null;
  const hex = /^[0-9a-f]{64}$/i.test(raw);
  const base64 = /^[A-Za-z0-9+/]{43}=?$|^[A-Za-z0-9_-]{43}$/.test(raw);
  if (!hex && !(base64 && Buffer.from(raw, 'base64').length === 32)) {
    throw new ConfigError('SECRETS_KEY must be 32 bytes written as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)');
  }
  return raw;
}

function agentConfig(env: NodeJS.ProcessEnv): Config['agent'] {
  const baseUrl = env.AGENT_API_BASE_URL?.trim();
  if (!baseUrl) return null;
  try {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError(`AGENT_API_BASE_URL must be an http(s) URL, got "${baseUrl}"`);
  }
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey: env.AGENT_API_KEY || null,
    model: env.AGENT_MODEL || 'gpt-4o-mini',
    timeoutMs: integer(env, 'AGENT_TIMEOUT_MS', 120_000, 100, 3_600_000),
    inputCostPerMTok: decimal(env, 'AGENT_INPUT_COST_PER_MTOK', 0),
    outputCostPerMTok: decimal(env, 'AGENT_OUTPUT_COST_PER_MTOK', 0),
  };
}

function webSettings(env: NodeJS.ProcessEnv, dataDir: string): WebSettings {
  const chatUrl = env.CHAT_URL?.trim() ? env.CHAT_URL.trim().replace(/\/+$/, '') : null;
  if (chatUrl) {
    try {
      const u = new URL(chatUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new ConfigError(`CHAT_URL must be an http(s) URL, got "${env.CHAT_URL}"`);
    }
  }
  const smtpUrl = env.SMTP_URL?.trim() || null;
  const transport = (env.MAIL_TRANSPORT?.trim() || (smtpUrl ? 'smtp' : 'outbox')) as 'smtp' | 'outbox';
  if (transport !== 'smtp' && transport !== 'outbox') throw new ConfigError(`MAIL_TRANSPORT must be smtp or outbox, got "${env.MAIL_TRANSPORT}"`);
  if (transport === 'smtp' && !smtpUrl) throw new ConfigError('MAIL_TRANSPORT=smtp needs SMTP_URL, e.g. smtps://user:pass@mail.example.com');
  return {
    chatUrl,
    authAttemptsPerMinute: integer(env, 'AUTH_ATTEMPTS_PER_MINUTE', 10, 1, 100_000),
    sessionTtlMs: integer(env, 'SESSION_TTL_SECONDS', 24 * 3600, 60, 90 * 24 * 3600) * 1000,
    oauthEnabled: bool(env, 'OAUTH_ENABLED', true),
    mail: {
      transport,
      smtpUrl,
      from: env.MAIL_FROM?.trim() || 'no-reply@localhost',
      outboxDir: path.resolve(env.MAIL_OUTBOX_DIR?.trim() || path.join(dataDir, 'outbox')),
    },
  };
}

function knowledgeConfig(env: NodeJS.ProcessEnv): KnowledgeSettings {
  const baseUrl = env.KB_EMBEDDING_BASE_URL?.trim();
  if (baseUrl) {
    try {
      const url = new URL(baseUrl);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    } catch {
      throw new ConfigError(`KB_EMBEDDING_BASE_URL must be an http(s) URL, got "${baseUrl}"`);
    }
  }
  const rerankUrl = env.KB_RERANK_BASE_URL?.trim();
  if (rerankUrl) {
    try {
      const url = new URL(rerankUrl);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    } catch {
      throw new ConfigError(`KB_RERANK_BASE_URL must be an http(s) URL, got "${rerankUrl}"`);
    }
  }
  const mode = env.KB_SEARCH_DEFAULT_MODE || 'hybrid';
  if (mode !== 'vector' && mode !== 'hybrid') throw new ConfigError(`KB_SEARCH_DEFAULT_MODE must be vector or hybrid, got "${mode}"`);
  const indexKind = env.KB_VECTOR_INDEX?.trim() || 'auto';
  if (indexKind !== 'auto' && indexKind !== 'exact' && indexKind !== 'quantized') throw new ConfigError(`KB_VECTOR_INDEX must be auto, exact or quantized, got "${indexKind}"`);
  return {
    embedding: baseUrl
      ? {
          baseUrl: baseUrl.replace(/\/+$/, ''),
          apiKey: env.KB_EMBEDDING_API_KEY || null,
          model: env.KB_EMBEDDING_MODEL || 'text-embedding-3-small',
          dimensions: integer(env, 'KB_EMBEDDING_DIMENSIONS', 1536, 1, 16_384),
          batchSize: integer(env, 'KB_EMBEDDING_BATCH_SIZE', 64, 1, 2048),
          timeoutMs: integer(env, 'KB_EMBEDDING_TIMEOUT_MS', 30_000, 100, 600_000),
          maxRetries: integer(env, 'KB_EMBEDDING_MAX_RETRIES', 3, 0, 10),
        }
      : null,
    workers: integer(env, 'KB_PROCESSING_WORKERS', 2, 1, 64),
    defaultSearchMode: mode,
    maxDocumentBytes: byteSize(env, 'KB_MAX_DOCUMENT_SIZE', 100 * 1024 * 1024),
    connectorPollMs: integer(env, 'KB_CONNECTOR_POLL_MS', 30_000, 0, 86_400_000),
    rerank: rerankUrl
      ? { baseUrl: rerankUrl.replace(/\/+$/, ''), apiKey: env.KB_RERANK_API_KEY || null, timeoutMs: integer(env, 'KB_RERANK_TIMEOUT_MS', 10_000, 100, 600_000) }
      : null,
    vectorIndex: { kind: indexKind, minRows: integer(env, 'KB_VECTOR_INDEX_MIN_CHUNKS', 20_000, 1, 1_000_000_000) },
  };
}

/** LEASE_TTL_MS (30 s) and a renewal at a third of it, so two missed renewals still keep the lease. */
function leaseSettings(env: NodeJS.ProcessEnv): LeaseSettings {
  const ttlMs = integer(env, 'LEASE_TTL_MS', 30_000, 300, 3_600_000);
  return { ttlMs, renewMs: Math.max(100, Math.floor(ttlMs / 3)) };
}

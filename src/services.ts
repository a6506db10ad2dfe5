// What a request handler can reach: configuration, the store and the shared domain services.
import type { SecretVault } from './secrets/vault.ts';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Store } from './store/index.ts';
import type { CredentialResolver } from './identity/credentials.ts';
import type { RateLimitStore } from './http/rate-limit.ts';
import type { BlobStore } from './files/blob-store.ts';
import type { Engine } from './execution/index.ts';
import type { RunService } from './runs/service.ts';
import type { RunProgress } from './runs/progress.ts';
import type { ToolRegistry } from './tools/registry.ts';
import type { SandboxBuilder } from './sandboxes/builder.ts';
import type { WorkspaceCredentials } from './credentials/service.ts';
import type { McpRegistry } from './mcp/registry.ts';
import type { TableJobRunner } from './tables/jobs.ts';
import type { GroupRunner } from './tables/group-runs.ts';
import type { DataDirLock } from './store/data-dir-lock.ts';
import type { Mailer } from './mail/mailer.ts';
import type { KnowledgeService } from './knowledge/service.ts';
import type { CallbackWorker } from './callbacks/worker.ts';
import type { ContentWorkers } from './content/index.ts';

export interface Services {
  config: Config;
  store: Store;
  credentials: CredentialResolver;
  logger: Logger;
  /** Server secret for signing cursors and tokens; generated once and kept in the store. */
  signingKey: Buffer;
  rateLimits: RateLimitStore;
  /** Where file content lives (local disk under DATA_DIR by default). */
  blobs: BlobStore;
  /** The workflow executor (its sandbox pool starts lazily, on the first function call). */
  engine: Engine;
  /** Workflow runs: inline execution, the durable async queue and its workers. */
  runs: RunService;
  /** Each run's progress as it happens, from whichever server executes it (followers of a run listen here). */
  runProgress: RunProgress;
  /** Stops the engine's sandbox processes (on shutdown). */
  closeEngine(): Promise<void>;
  /** Encrypted workspace and personal secrets, resolved for {{NAME}} references in runs. */
  secrets: SecretVault;
  /** Every tool this server can run (catalog, executeTool, agent blocks); other modules add providers with registerTool. */
  tools: ToolRegistry;
  /** Builds sandboxes (dependency sets) in the background and runs function blocks inside built ones. */
  sandboxes: SandboxBuilder;
  /** Workspace credentials (OAuth connections, service-account keys): sealing, the OAuth flow, fresh access tokens. */
  workspaceCredentials: WorkspaceCredentials;
  /** Registered external MCP servers: their tools (for MCP tool blocks and agents) and calling them. */
  mcp: McpRegistry;
  /** Table imports and exports running in the background. */
  tableJobs: TableJobRunner;
  /** Workflow groups of tables: dispatches and the runs they queue. */
  tableGroups: GroupRunner;
  /** This process's exclusive lock on DATA_DIR; start-up recovery runs only while it is held. */
  dataDirLock?: DataDirLock;
  /** Outgoing mail (chat one-time codes): SMTP, or the local outbox directory. */
  mailer: Mailer;
  /** Knowledge bases: embedding provider, document processing queue, vector index. */
  knowledge: KnowledgeService;
  /** Completion callbacks of async runs: sends the outbox's due deliveries. */
  callbacks: CallbackWorker;
  /** Worker threads that parse untrusted content (documents, file text, search, workflow imports) off the event loop. */
  content: ContentWorkers;
}

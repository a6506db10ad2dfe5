// The store: repositories bound to the read connection, and the same repositories inside a transaction.
import type { Database, SqlExecutor, StoreConnection, TransactionOptions } from './database.ts';
import { SqliteDatabase } from './sqlite.ts';
import { checkDatabaseLocale, PostgresDatabase } from './postgres.ts';
import { PgvectorStore } from './knowledge-pgvector.ts';
import { localWakes, type TokenBuckets, type Wakes } from './coordination.ts';
import { loadMigrations, migrate, schemaIsCurrent, type MigrationListener } from './migrations.ts';
import { UserRepository } from './users.ts';
import { WorkspaceRepository } from './workspaces.ts';
import { MemberRepository } from './members.ts';
import { ApiKeyRepository } from './api-keys.ts';
import { SettingsRepository } from './settings.ts';
import { BillingAccountRepository } from './billing-accounts.ts';
import { AuditEventRepository } from './audit-events.ts';
import { OAuthRepository } from './oauth.ts';
import { SecretRepository } from './secrets.ts';
import { WorkflowRepository } from './workflows.ts';
import { FolderTreeRepository } from './folders.ts';
import { TableViewRepository, UserTableRepository } from './user-tables.ts';
import { TableRowsRepository } from './table-rows.ts';
import { TableExportRepository, TableImportRepository } from './table-jobs.ts';
import { TableGroupRunRepository } from './table-groups.ts';
import { WorkflowVersionRepository } from './workflow-versions.ts';
import { FileRepository } from './files.ts';
import { FileShareRepository } from './file-shares.ts';
import { FileUploadRepository } from './file-uploads.ts';
import { WorkflowRunRepository } from './workflow-runs.ts';
import { ExecutionLogRepository } from './execution-logs.ts';
import { UsageRepository } from './usage.ts';
import { SkillRepository } from './skills.ts';
import { CustomToolRepository } from './custom-tools.ts';
import { BillingLogRepository } from './billing-logs.ts';
import { RunFileRepository } from './run-files.ts';
import { SandboxRepository } from './sandboxes.ts';
import { CredentialRepository } from './credentials.ts';
import { ChatDeploymentRepository } from './chat-deployments.ts';
import { WebAuthRepository } from './web-auth.ts';
import { WorkflowMcpServerRepository } from './workflow-mcp-servers.ts';
import { McpServerRepository } from './mcp-servers.ts';
import { KnowledgeBaseRepository } from './knowledge-bases.ts';
import { KnowledgeDocumentRepository } from './knowledge-documents.ts';
import { KnowledgeChunkRepository } from './knowledge-chunks.ts';
import { KnowledgeUploadRepository } from './knowledge-uploads.ts';
import { KnowledgeConnectorRepository } from './knowledge-connectors.ts';
import { IdempotencyKeyRepository } from './idempotency-keys.ts';
import { RunCallbackRepository } from './run-callbacks.ts';
import { WorkspaceForkRepository } from './workspace-forks.ts';
import { WorkspaceOperationRepository } from './workspace-operations.ts';
import { OrganizationRepository } from './organizations.ts';
import { InvitationRepository } from './invitations.ts';
import { AgentConversationRepository } from './agent-conversations.ts';
import { PermissionGroupRepository } from './permission-groups.ts';
import { AccessRequestRepository } from './access-requests.ts';

export interface Repositories {
  users: UserRepository;
  workspaces: WorkspaceRepository;
  members: MemberRepository;
  apiKeys: ApiKeyRepository;
  settings: SettingsRepository;
  billingAccounts: BillingAccountRepository;
  auditEvents: AuditEventRepository;
  oauth: OAuthRepository;
  secrets: SecretRepository;
  workflows: WorkflowRepository;
  workflowFolders: FolderTreeRepository;
  workflowVersions: WorkflowVersionRepository;
  files: FileRepository;
  fileFolders: FolderTreeRepository;
  fileShares: FileShareRepository;
  fileUploads: FileUploadRepository;
  workflowRuns: WorkflowRunRepository;
  executionLogs: ExecutionLogRepository;
  usage: UsageRepository;
  skills: SkillRepository;
  customTools: CustomToolRepository;
  billingLogs: BillingLogRepository;
  runFiles: RunFileRepository;
  sandboxes: SandboxRepository;
  credentials: CredentialRepository;
  chatDeployments: ChatDeploymentRepository;
  webAuth: WebAuthRepository;
  workflowMcpServers: WorkflowMcpServerRepository;
  mcpServers: McpServerRepository;
  tableFolders: FolderTreeRepository;
  knowledgeFolders: FolderTreeRepository;
  userTables: UserTableRepository;
  tableRows: TableRowsRepository;
  tableViews: TableViewRepository;
  tableImports: TableImportRepository;
  tableExports: TableExportRepository;
  tableGroupRuns: TableGroupRunRepository;
  knowledgeBases: KnowledgeBaseRepository;
  knowledgeDocuments: KnowledgeDocumentRepository;
  knowledgeChunks: KnowledgeChunkRepository;
  knowledgeUploads: KnowledgeUploadRepository;
  knowledgeConnectors: KnowledgeConnectorRepository;
  idempotencyKeys: IdempotencyKeyRepository;
  runCallbacks: RunCallbackRepository;
  workspaceForks: WorkspaceForkRepository;
  workspaceOperations: WorkspaceOperationRepository;
  organizations: OrganizationRepository;
  invitations: InvitationRepository;
  agentConversations: AgentConversationRepository;
  permissionGroups: PermissionGroupRepository;
  accessRequests: AccessRequestRepository;
}

function repositories(db: SqlExecutor): Repositories {
  return {
    users: new UserRepository(db),
    workspaces: new WorkspaceRepository(db),
    members: new MemberRepository(db),
    apiKeys: new ApiKeyRepository(db),
    settings: new SettingsRepository(db),
    billingAccounts: new BillingAccountRepository(db),
    auditEvents: new AuditEventRepository(db),
    oauth: new OAuthRepository(db),
    secrets: new SecretRepository(db),
    workflows: new WorkflowRepository(db),
    workflowFolders: new FolderTreeRepository(db, 'workflow'),
    workflowVersions: new WorkflowVersionRepository(db),
    files: new FileRepository(db),
    fileFolders: new FolderTreeRepository(db, 'file'),
    fileShares: new FileShareRepository(db),
    fileUploads: new FileUploadRepository(db),
    workflowRuns: new WorkflowRunRepository(db),
    executionLogs: new ExecutionLogRepository(db),
    usage: new UsageRepository(db),
    skills: new SkillRepository(db),
    customTools: new CustomToolRepository(db),
    billingLogs: new BillingLogRepository(db),
    runFiles: new RunFileRepository(db),
    sandboxes: new SandboxRepository(db),
    credentials: new CredentialRepository(db),
    chatDeployments: new ChatDeploymentRepository(db),
    webAuth: new WebAuthRepository(db),
    workflowMcpServers: new WorkflowMcpServerRepository(db),
    mcpServers: new McpServerRepository(db),
    tableFolders: new FolderTreeRepository(db, 'table'),
    knowledgeFolders: new FolderTreeRepository(db, 'knowledge_base'),
    userTables: new UserTableRepository(db),
    tableRows: new TableRowsRepository(db),
    tableViews: new TableViewRepository(db),
    tableImports: new TableImportRepository(db),
    tableExports: new TableExportRepository(db),
    tableGroupRuns: new TableGroupRunRepository(db),
    knowledgeBases: new KnowledgeBaseRepository(db),
    knowledgeDocuments: new KnowledgeDocumentRepository(db),
    knowledgeChunks: new KnowledgeChunkRepository(db),
    knowledgeUploads: new KnowledgeUploadRepository(db),
    knowledgeConnectors: new KnowledgeConnectorRepository(db),
    idempotencyKeys: new IdempotencyKeyRepository(db),
    runCallbacks: new RunCallbackRepository(db),
    workspaceForks: new WorkspaceForkRepository(db),
    workspaceOperations: new WorkspaceOperationRepository(db),
    organizations: new OrganizationRepository(db),
    invitations: new InvitationRepository(db),
    agentConversations: new AgentConversationRepository(db),
    permissionGroups: new PermissionGroupRepository(db),
    accessRequests: new AccessRequestRepository(db),
  };
}

export interface Store extends Repositories {
  /** Runs `fn` atomically; every repository it touches through `tx` commits or rolls back together. */
  transaction<T>(fn: (tx: Repositories) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** How a worker thread opens this same database (openWorkerStore), or null when it cannot (in memory). */
  readonly connection: StoreConnection | null;
  /** The database's size in bytes as the engine reports it; null when it is measured from its files (SQLite). */
  databaseSize(): Promise<number | null>;
  /** True when the database answers and every migration of this build is applied (the readiness probe asks). */
  schemaIsCurrent(): Promise<boolean>;
  /** Wake-ups to and from the other servers of a shared database (a no-op when this process owns it). */
  readonly wakes: Wakes;
  /** Rate-limit buckets shared with the other servers of the database; null when this process owns it (keep them in memory). */
  readonly tokenBuckets: TokenBuckets | null;
  /** Knowledge vectors in pgvector, when the database is a Postgres with the `vector` extension (detected on open); else null. */
  readonly pgvector: PgvectorStore | null;
  close(): Promise<void>;
}

export function createStore(db: Database, pgvector: PgvectorStore | null = null): Store {
  let migrations: ReturnType<typeof loadMigrations> | undefined;
  return {
    ...repositories(db.read),
    transaction: (fn, options) => db.transaction((tx) => fn(repositories(tx)), options),
    connection: db.connection,
    get wakes() {
      return db.wakes ?? localWakes;
    },
    tokenBuckets: db.tokenBuckets ?? null,
    pgvector,
    databaseSize: async () => (db.dialect.databaseSizeSql ? Number((await db.read.get<{ bytes: number }>(db.dialect.databaseSizeSql))?.bytes ?? 0) : null),
    schemaIsCurrent: () => schemaIsCurrent(db, (migrations ??= loadMigrations(db.dialect.name))),
    close: () => db.close(),
  };
}

/**
 * Opens (creating if needed) the SQLite database and brings its schema up to date, telling `onMigration` of each
 * migration applied. A database written by a newer version is refused (NewerDatabaseError).
 */
export async function openSqliteStore(file: string, onMigration?: MigrationListener): Promise<Store> {
  return openMigrated(new SqliteDatabase(file), onMigration);
}

/**
 * Connects to the Postgres database at `url` and brings its schema up to date under a lock (servers starting
 * together migrate once), telling `onMigration` of each migration applied; a newer schema is refused as on SQLite,
 * and so is a database whose encoding or locale cannot sort and fold text as SQLite does (UnsupportedDatabaseLocaleError).
 */
export async function openPostgresStore(url: string, onMigration?: MigrationListener): Promise<Store> {
  const db = new PostgresDatabase(url);
  try {
    await checkDatabaseLocale(db.read);
  } catch (err) {
    await db.close();
    throw err;
  }
  return openMigrated(db, onMigration);
}

/** The configured store: Postgres when DATABASE_URL is set, otherwise the SQLite file in DATA_DIR. */
export function openConfiguredStore(config: { databaseUrl: string | null; databaseFile: string }, onMigration?: MigrationListener): Promise<Store> {
  return config.databaseUrl ? openPostgresStore(config.databaseUrl, onMigration) : openSqliteStore(config.databaseFile, onMigration);
}

async function openMigrated(db: Database, onMigration?: MigrationListener): Promise<Store> {
  try {
    await migrate(db, loadMigrations(db.dialect.name), onMigration);
    return createStore(db, await PgvectorStore.open(db));
  } catch (err) {
    await db.close();
    throw err;
  }
}

/**
 * A second store on a database a server has already opened and migrated, from the description its store gave
 * (`store.connection`): for worker threads that read or write on a connection of their own (a table import's
 * staging rows, an export's reads). Each engine opens its own kind here. Never migrates.
 */
export function openWorkerStore(connection: StoreConnection): Store {
  switch (connection.engine) {
    case 'sqlite':
      return createStore(new SqliteDatabase(connection.file));
    case 'postgres':
      // A worker does one job at a time: a few connections are enough.
      return createStore(new PostgresDatabase(connection.url, { poolSize: 3 }));
  }
}

export type { Database, SqlExecutor, StoreConnection, TransactionOptions } from './database.ts';
export type { SqlDialect } from './dialect.ts';

// Versioned schema changes, applied in order at start-up. Append new versions; never edit an applied one.
import type { Database } from './database.ts';

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'identity',
    sql: `
      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        email TEXT NOT NULL UNIQUE COLLATE NOCASE,
        name TEXT NOT NULL,
        image TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE workspaces (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        color TEXT NOT NULL,
        logo_url TEXT,
        owner_id TEXT NOT NULL REFERENCES users(id),
        allow_personal_keys INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE workspace_members (
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('admin', 'write', 'read')),
        joined_at TEXT NOT NULL,
        PRIMARY KEY (workspace_id, user_id)
      );
      CREATE INDEX workspace_members_by_user ON workspace_members (user_id, workspace_id);
      CREATE INDEX workspace_members_by_join ON workspace_members (workspace_id, joined_at, user_id);
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('personal', 'workspace')),
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        workspace_id TEXT REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        display_suffix TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        CHECK ((kind = 'workspace') = (workspace_id IS NOT NULL))
      );
      CREATE INDEX api_keys_by_user ON api_keys (user_id);
    `,
  },
  {
    version: 2,
    name: 'billing accounts and audit trail',
    sql: `
      CREATE TABLE billing_accounts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        plan TEXT NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro', 'team', 'max', 'enterprise')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      INSERT INTO billing_accounts (id, name, plan, created_at, updated_at)
        SELECT 'ba-' || id, name, 'free', created_at, created_at FROM users;
      ALTER TABLE workspaces ADD COLUMN billing_account_id TEXT REFERENCES billing_accounts(id);
      UPDATE workspaces SET billing_account_id = 'ba-' || owner_id;
      CREATE TABLE audit_events (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        workspace_id TEXT,
        actor_user_id TEXT,
        actor_name TEXT,
        actor_email TEXT,
        credential_kind TEXT,
        credential_id TEXT,
        action TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        resource_id TEXT,
        resource_name TEXT,
        description TEXT,
        metadata TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX audit_events_by_time ON audit_events (created_at, id);
      CREATE INDEX audit_events_by_workspace ON audit_events (workspace_id, created_at, id);
    `,
  },
  {
    version: 3,
    name: 'oauth grants and tokens',
    sql: `
      CREATE TABLE oauth_clients (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE oauth_grants (
        id TEXT PRIMARY KEY,
        client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        scopes TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE INDEX oauth_grants_by_user ON oauth_grants (user_id);
      CREATE TABLE oauth_tokens (
        id TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
        token_hash TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT
      );
      CREATE INDEX oauth_tokens_by_grant ON oauth_tokens (grant_id);
    `,
  },
  {
    version: 4,
    name: 'secrets',
    sql: `
      CREATE TABLE secrets (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        scope TEXT NOT NULL CHECK (scope IN ('workspace', 'personal')),
        owner_user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        ciphertext TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        CHECK ((scope = 'personal') = (owner_user_id IS NOT NULL))
      );
      CREATE UNIQUE INDEX secrets_by_name ON secrets (workspace_id, scope, COALESCE(owner_user_id, ''), name);
    `,
  },
  {
    version: 10,
    name: 'files: folders, files, versions, shares and upload sessions',
    sql: `
      CREATE TABLE file_folders (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        parent_path TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT,
        archive_batch TEXT
      );
      CREATE UNIQUE INDEX file_folders_active_path ON file_folders (workspace_id, path) WHERE deleted_at IS NULL;
      CREATE INDEX file_folders_by_parent ON file_folders (workspace_id, parent_path);
      CREATE TABLE files (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        folder_path TEXT NOT NULL DEFAULT '/',
        name TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        blob_key TEXT NOT NULL,
        current_version INTEGER NOT NULL,
        uploaded_by TEXT NOT NULL,
        uploaded_by_email TEXT NOT NULL,
        uploaded_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT,
        archive_batch TEXT
      );
      CREATE UNIQUE INDEX files_active_name ON files (workspace_id, folder_path, name) WHERE deleted_at IS NULL;
      CREATE INDEX files_by_uploaded ON files (workspace_id, uploaded_at, id);
      CREATE INDEX files_by_deleted ON files (deleted_at) WHERE deleted_at IS NOT NULL;
      CREATE TABLE file_versions (
        file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        blob_key TEXT NOT NULL,
        size INTEGER NOT NULL,
        content_type TEXT NOT NULL,
        source TEXT NOT NULL,
        author_id TEXT,
        author_email TEXT,
        restored_from_version INTEGER,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        superseded_at TEXT,
        PRIMARY KEY (file_id, version)
      );
      CREATE INDEX file_versions_by_blob ON file_versions (blob_key);
      CREATE TABLE file_shares (
        id TEXT PRIMARY KEY,
        file_id TEXT NOT NULL UNIQUE REFERENCES files(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE,
        is_active INTEGER NOT NULL,
        auth_type TEXT NOT NULL,
        password_hash TEXT,
        allowed_emails TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE file_upload_sessions (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        name TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        folder_path TEXT NOT NULL,
        part_size INTEGER NOT NULL,
        part_count INTEGER NOT NULL,
        multipart INTEGER NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        file_id TEXT,
        expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX file_upload_sessions_by_status ON file_upload_sessions (status, expires_at);
      CREATE TABLE file_upload_parts (
        session_id TEXT NOT NULL REFERENCES file_upload_sessions(id) ON DELETE CASCADE,
        part_number INTEGER NOT NULL,
        size INTEGER NOT NULL,
        PRIMARY KEY (session_id, part_number)
      );
    `,
  },
  {
    version: 20,
    name: 'workflows, folders, versions and deployments',
    sql: `
      CREATE TABLE workflow_folders (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        parent_path TEXT NOT NULL,
        name TEXT NOT NULL,
        locked INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        archived_at TEXT
      );
      CREATE UNIQUE INDEX workflow_folders_active_path ON workflow_folders (workspace_id, path) WHERE archived_at IS NULL;
      CREATE INDEX workflow_folders_by_parent ON workflow_folders (workspace_id, parent_path, name, id) WHERE archived_at IS NULL;
      CREATE TABLE workflows (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        folder_path TEXT NOT NULL DEFAULT '/',
        position INTEGER NOT NULL,
        archived INTEGER NOT NULL DEFAULT 0,
        archived_at TEXT,
        locked INTEGER NOT NULL DEFAULT 0,
        is_deployed INTEGER NOT NULL DEFAULT 0,
        deployed_at TEXT,
        active_version_id TEXT,
        is_public_api INTEGER NOT NULL DEFAULT 0,
        run_count INTEGER NOT NULL DEFAULT 0,
        last_run_at TEXT,
        state TEXT NOT NULL,
        state_saved_at TEXT NOT NULL,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX workflows_by_position ON workflows (workspace_id, archived, position, id);
      CREATE INDEX workflows_in_folder_by_position ON workflows (workspace_id, archived, folder_path, position, id);
      CREATE INDEX workflows_by_name ON workflows (workspace_id, archived, name, id);
      CREATE INDEX workflows_in_folder_by_name ON workflows (workspace_id, archived, folder_path, name, id);
      CREATE INDEX workflows_by_created ON workflows (workspace_id, archived, created_at, id);
      CREATE INDEX workflows_in_folder_by_created ON workflows (workspace_id, archived, folder_path, created_at, id);
      CREATE INDEX workflows_by_updated ON workflows (workspace_id, archived, updated_at, id);
      CREATE INDEX workflows_in_folder_by_updated ON workflows (workspace_id, archived, folder_path, updated_at, id);
      CREATE INDEX workflows_by_runs ON workflows (workspace_id, archived, run_count, id);
      CREATE INDEX workflows_in_folder_by_runs ON workflows (workspace_id, archived, folder_path, run_count, id);
      CREATE TABLE workflow_element_ids (
        id TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('block', 'edge'))
      );
      CREATE INDEX workflow_element_ids_by_workflow ON workflow_element_ids (workflow_id);
      CREATE TABLE workflow_versions (
        id TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        name TEXT,
        description TEXT,
        state TEXT NOT NULL,
        deployed_by TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (workflow_id, version)
      );
      CREATE TABLE workflow_deployment_attempts (
        id TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        version_id TEXT NOT NULL REFERENCES workflow_versions(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('deploy', 'activate')),
        status TEXT NOT NULL CHECK (status IN ('preparing', 'activating', 'active', 'failed', 'superseded')),
        requested_at TEXT NOT NULL,
        activated_at TEXT,
        UNIQUE (workflow_id, seq)
      );
    `,
  },
  {
    version: 40,
    name: 'workflow runs, execution logs and usage',
    sql: `
      CREATE TABLE workflow_runs (
        id TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        billing_account_id TEXT NOT NULL,
        deployment_version_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')),
        mode TEXT NOT NULL CHECK (mode IN ('sync', 'async', 'stream')),
        trigger TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('deployment', 'manual')),
        trigger_block_id TEXT,
        input TEXT NOT NULL,
        timeout_ms INTEGER,
        triggered_by TEXT,
        resume_input TEXT,
        checkpoint TEXT,
        pause TEXT,
        resumed_count INTEGER NOT NULL DEFAULT 0,
        output TEXT,
        block_outputs TEXT,
        error TEXT,
        cost_total REAL,
        block_executions INTEGER NOT NULL DEFAULT 0,
        queued_at TEXT NOT NULL,
        started_at TEXT,
        ended_at TEXT,
        duration_ms INTEGER,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow_id, queued_at, id);
      CREATE INDEX workflow_runs_queue ON workflow_runs (queued_at, id) WHERE status = 'queued';
      CREATE INDEX workflow_runs_running ON workflow_runs (status) WHERE status = 'running';
      CREATE TABLE execution_logs (
        run_id TEXT PRIMARY KEY REFERENCES workflow_runs(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        workflow_id TEXT NOT NULL,
        deployment_version_id TEXT,
        trigger TEXT NOT NULL,
        level TEXT NOT NULL CHECK (level IN ('info', 'error')),
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT,
        duration_ms INTEGER,
        cost_total REAL,
        cost TEXT,
        has_handled_errors INTEGER NOT NULL DEFAULT 0,
        error_message TEXT,
        models TEXT,
        executed_by TEXT,
        workflow_input TEXT,
        final_output TEXT,
        trace_spans TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX execution_logs_by_workspace ON execution_logs (workspace_id, started_at, run_id);
      CREATE INDEX execution_logs_by_workflow ON execution_logs (workflow_id, started_at, run_id);
      CREATE TABLE usage_records (
        id TEXT PRIMARY KEY,
        billing_account_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        workflow_id TEXT,
        run_id TEXT,
        user_id TEXT,
        category TEXT NOT NULL,
        cost REAL NOT NULL,
        block_executions INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        recorded_at TEXT NOT NULL
      );
      CREATE INDEX usage_records_by_account ON usage_records (billing_account_id, recorded_at);
      CREATE INDEX usage_records_by_workspace ON usage_records (workspace_id, recorded_at);
      CREATE TABLE usage_totals (
        billing_account_id TEXT NOT NULL,
        period TEXT NOT NULL,
        cost REAL NOT NULL DEFAULT 0,
        runs INTEGER NOT NULL DEFAULT 0,
        block_executions INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (billing_account_id, period)
      );
    `,
  },
  {
    version: 44,
    name: 'caller-chosen run ids scoped per workspace',
    // A run's id as callers see it (`run_key`: X-Run-Id or the generated id) is unique within its workspace
    // only; the primary key stays an internal id, so another workspace's run id is free to reuse and reveals
    // nothing. Existing runs keep their id as their key.
    sql: `
      ALTER TABLE workflow_runs ADD COLUMN run_key TEXT;
      UPDATE workflow_runs SET run_key = id;
      CREATE UNIQUE INDEX workflow_runs_by_key ON workflow_runs (workspace_id, run_key);
      ALTER TABLE execution_logs ADD COLUMN run_key TEXT;
      UPDATE execution_logs SET run_key = run_id;
      CREATE INDEX execution_logs_by_key ON execution_logs (run_key);
    `,
  },
  {
    version: 45,
    name: 'file share tokens stored as a hash and a sealed value',
    // The plain token moves to plain_token only until the first start seals it (SQLite cannot hash or seal):
    // createServices replaces it with token_hash + token_sealed before the server answers a request, so share
    // links made before keep working.
    sql: `
      CREATE TABLE file_shares_v45 (
        id TEXT PRIMARY KEY,
        file_id TEXT NOT NULL UNIQUE REFERENCES files(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        token_hash TEXT UNIQUE,
        token_sealed TEXT,
        plain_token TEXT,
        is_active INTEGER NOT NULL,
        auth_type TEXT NOT NULL,
        password_hash TEXT,
        allowed_emails TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      INSERT INTO file_shares_v45 (id, file_id, workspace_id, plain_token, is_active, auth_type, password_hash, allowed_emails, created_at, updated_at)
        SELECT id, file_id, workspace_id, token, is_active, auth_type, password_hash, allowed_emails, created_at, updated_at FROM file_shares;
      DROP TABLE file_shares;
      ALTER TABLE file_shares_v45 RENAME TO file_shares;
    `,
  },
  {
    version: 85,
    name: 'hosted chat deployments and their one-time codes',
    sql: `
      CREATE TABLE chat_deployments (
        id TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL UNIQUE REFERENCES workflows(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        identifier TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        customizations TEXT NOT NULL DEFAULT '{}',
        auth_type TEXT NOT NULL CHECK (auth_type IN ('public', 'password', 'email', 'sso')),
        password_hash TEXT,
        allowed_emails TEXT NOT NULL DEFAULT '[]',
        output_configs TEXT NOT NULL DEFAULT '[]',
        include_thinking INTEGER NOT NULL DEFAULT 0,
        include_tool_calls INTEGER NOT NULL DEFAULT 0,
        is_active INTEGER NOT NULL DEFAULT 1,
        created_by TEXT NOT NULL REFERENCES users(id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX chat_deployments_by_workspace ON chat_deployments (workspace_id, created_at, id);
      CREATE TABLE chat_codes (
        chat_id TEXT NOT NULL REFERENCES chat_deployments(id) ON DELETE CASCADE,
        email TEXT NOT NULL COLLATE NOCASE,
        code_hash TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (chat_id, email)
      );
    `,
  },
  {
    version: 86,
    name: 'web sign-in: user passwords, OAuth authorization codes, the CLI client and CLI pairing requests',
    sql: `
      CREATE TABLE user_passwords (
        user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
        hash TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE oauth_codes (
        code_hash TEXT PRIMARY KEY,
        client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        redirect_uri TEXT NOT NULL,
        scopes TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at TEXT,
        grant_id TEXT
      );
      INSERT INTO oauth_clients (id, name, created_at) VALUES ('sim-cli', 'Sim CLI', '2026-11-23T00:00:00.000Z');
      CREATE TABLE cli_auth_requests (
        request_hash TEXT PRIMARY KEY,
        challenge TEXT NOT NULL,
        pairing TEXT NOT NULL,
        workspace_id TEXT,
        approved_by TEXT REFERENCES users(id) ON DELETE CASCADE,
        approved_at TEXT,
        completed_at TEXT,
        key_id TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 80,
    name: 'mcp servers',
    sql: `
      CREATE TABLE workflow_mcp_servers (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        is_public INTEGER NOT NULL DEFAULT 0,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX workflow_mcp_servers_by_workspace ON workflow_mcp_servers (workspace_id, created_at, id);
      CREATE TABLE workflow_mcp_tools (
        id TEXT PRIMARY KEY,
        server_id TEXT NOT NULL REFERENCES workflow_mcp_servers(id) ON DELETE CASCADE,
        workflow_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        tool_description TEXT,
        parameter_descriptions TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (server_id, workflow_id),
        UNIQUE (server_id, tool_name)
      );
      CREATE INDEX workflow_mcp_tools_by_workflow ON workflow_mcp_tools (workflow_id);
      CREATE TABLE mcp_servers (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        transport TEXT NOT NULL DEFAULT 'streamable-http',
        url TEXT NOT NULL,
        auth_type TEXT NOT NULL CHECK (auth_type IN ('none', 'headers', 'oauth')),
        headers_sealed TEXT,
        header_names TEXT NOT NULL DEFAULT '[]',
        timeout_ms INTEGER NOT NULL,
        retries INTEGER NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        oauth_client_id TEXT,
        oauth_client_secret_sealed TEXT,
        connection_status TEXT NOT NULL DEFAULT 'disconnected' CHECK (connection_status IN ('connected', 'disconnected', 'error')),
        last_error TEXT,
        tool_count INTEGER NOT NULL DEFAULT 0,
        tools TEXT,
        last_tools_refresh TEXT,
        last_connected TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX mcp_servers_by_workspace ON mcp_servers (workspace_id, created_at, id);
    `,
  },
  {
    version: 50,
    name: 'one folder tree for every kind: workflow and file folders move into folders',
    sql: `
      CREATE TABLE folders (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        parent_path TEXT NOT NULL,
        name TEXT NOT NULL,
        locked INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        archived_at TEXT,
        archive_batch TEXT
      );
      CREATE UNIQUE INDEX folders_active_path ON folders (workspace_id, kind, path) WHERE archived_at IS NULL;
      CREATE INDEX folders_by_parent ON folders (workspace_id, kind, parent_path, name, id) WHERE archived_at IS NULL;
      CREATE INDEX folders_archived ON folders (workspace_id, kind, path, archived_at) WHERE archived_at IS NOT NULL;
      CREATE INDEX folders_by_batch ON folders (archive_batch) WHERE archive_batch IS NOT NULL;
      INSERT INTO folders (id, workspace_id, kind, path, parent_path, name, locked, created_at, updated_at, archived_at, archive_batch)
        SELECT id, workspace_id, 'workflow', path, parent_path, name, locked, created_at, updated_at, archived_at, NULL FROM workflow_folders;
      INSERT INTO folders (id, workspace_id, kind, path, parent_path, name, locked, created_at, updated_at, archived_at, archive_batch)
        SELECT id, workspace_id, 'file', path, parent_path, name, 0, created_at, updated_at, deleted_at, archive_batch FROM file_folders;
      DROP TABLE workflow_folders;
      DROP TABLE file_folders;
    `,
  },
  {
    version: 51,
    name: 'tables: definitions and views (rows live in one SQL table per user table, trows_<id>)',
    sql: `
      CREATE TABLE user_tables (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        folder_path TEXT NOT NULL DEFAULT '/',
        columns TEXT NOT NULL,
        owner_id TEXT,
        owner_email TEXT NOT NULL,
        row_count INTEGER NOT NULL DEFAULT 0,
        max_rows INTEGER NOT NULL,
        schema_locked INTEGER NOT NULL DEFAULT 0,
        insert_locked INTEGER NOT NULL DEFAULT 0,
        update_locked INTEGER NOT NULL DEFAULT 0,
        delete_locked INTEGER NOT NULL DEFAULT 0,
        job TEXT,
        archived_at TEXT,
        archive_batch TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX user_tables_active_name ON user_tables (workspace_id, name) WHERE archived_at IS NULL;
      CREATE INDEX user_tables_by_created ON user_tables (workspace_id, created_at, id);
      CREATE INDEX user_tables_by_name ON user_tables (workspace_id, name, id);
      CREATE INDEX user_tables_by_updated ON user_tables (workspace_id, updated_at, id);
      CREATE INDEX user_tables_by_folder ON user_tables (workspace_id, folder_path);
      CREATE INDEX user_tables_by_batch ON user_tables (archive_batch) WHERE archive_batch IS NOT NULL;
      CREATE TABLE table_views (
        id TEXT PRIMARY KEY,
        table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        config TEXT NOT NULL,
        is_default INTEGER NOT NULL DEFAULT 0,
        created_by_email TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX table_views_one_default ON table_views (table_id) WHERE is_default = 1;
      CREATE INDEX table_views_by_table ON table_views (table_id, created_at, id);
    `,
  },
  {
    version: 52,
    name: 'tables: CSV imports and exports',
    sql: `
      CREATE TABLE table_imports (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        upload_id TEXT,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        options TEXT NOT NULL,
        status TEXT NOT NULL,
        table_id TEXT,
        staging_id TEXT,
        rows_processed INTEGER NOT NULL DEFAULT 0,
        rows_rejected INTEGER NOT NULL DEFAULT 0,
        cells_rejected INTEGER NOT NULL DEFAULT 0,
        rejected_samples TEXT NOT NULL DEFAULT '[]',
        error TEXT,
        expires_at TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        completed_at TEXT
      );
      CREATE INDEX table_imports_by_status ON table_imports (status);
      CREATE TABLE table_exports (
        id TEXT PRIMARY KEY,
        table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        format TEXT NOT NULL,
        status TEXT NOT NULL,
        rows_processed INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        file_name TEXT NOT NULL,
        size INTEGER,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        completed_at TEXT
      );
      CREATE INDEX table_exports_by_status ON table_exports (status);
    `,
  },
  {
    version: 53,
    name: 'tables: workflow groups, their per-row runs and dispatches',
    sql: `
      ALTER TABLE user_tables ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';
      CREATE TABLE table_row_runs (
        table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
        row_id TEXT NOT NULL,
        group_id TEXT NOT NULL,
        status TEXT NOT NULL,
        run_id TEXT,
        workflow_id TEXT NOT NULL,
        dispatch_id TEXT,
        error TEXT,
        running_block_ids TEXT NOT NULL DEFAULT '[]',
        block_errors TEXT NOT NULL DEFAULT '{}',
        canceled_at TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (table_id, row_id, group_id)
      );
      CREATE INDEX table_row_runs_active ON table_row_runs (status, updated_at) WHERE status IN ('queued', 'running');
      CREATE INDEX table_row_runs_by_run ON table_row_runs (run_id);
      CREATE TABLE table_dispatches (
        id TEXT PRIMARY KEY,
        table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        user_id TEXT,
        status TEXT NOT NULL,
        mode TEXT NOT NULL,
        scope TEXT NOT NULL,
        filter TEXT,
        row_limit TEXT,
        processed_count INTEGER NOT NULL DEFAULT 0,
        is_manual INTEGER NOT NULL,
        requested_at TEXT NOT NULL,
        completed_at TEXT,
        canceled_at TEXT
      );
      CREATE INDEX table_dispatches_by_table ON table_dispatches (table_id, requested_at);
      CREATE INDEX table_dispatches_open ON table_dispatches (status) WHERE status IN ('pending', 'dispatching');
    `,
  },
  {
    version: 54,
    name: 'tables: the provider cascade of enrichment cells',
    sql: `ALTER TABLE table_row_runs ADD COLUMN enrichment_details TEXT;`,
  },
  {
    version: 70,
    name: 'secrets: personal secrets follow their owner across workspaces; unredacted workspace secrets',
    sql: `
      CREATE TABLE secrets_v70 (
        id TEXT PRIMARY KEY,
        workspace_id TEXT REFERENCES workspaces(id) ON DELETE CASCADE,
        scope TEXT NOT NULL CHECK (scope IN ('workspace', 'personal')),
        owner_user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        ciphertext TEXT NOT NULL,
        seal_workspace_id TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        unredacted INTEGER NOT NULL DEFAULT 0,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        CHECK ((scope = 'personal') = (owner_user_id IS NOT NULL)),
        CHECK ((scope = 'workspace') = (workspace_id IS NOT NULL))
      );
      INSERT INTO secrets_v70 (id, workspace_id, scope, owner_user_id, name, ciphertext, seal_workspace_id, description, unredacted, created_by, created_at, updated_at)
        SELECT id, CASE WHEN scope = 'workspace' THEN workspace_id END, scope, owner_user_id, name, ciphertext, workspace_id, description, 0, created_by, created_at, updated_at
        FROM secrets s
        WHERE s.scope = 'workspace' OR NOT EXISTS (
          SELECT 1 FROM secrets n WHERE n.scope = 'personal' AND n.owner_user_id = s.owner_user_id AND n.name = s.name
            AND (n.updated_at > s.updated_at OR (n.updated_at = s.updated_at AND n.id > s.id))
        );
      DROP TABLE secrets;
      ALTER TABLE secrets_v70 RENAME TO secrets;
      CREATE UNIQUE INDEX secrets_workspace_name ON secrets (workspace_id, name) WHERE scope = 'workspace';
      CREATE UNIQUE INDEX secrets_personal_name ON secrets (owner_user_id, name) WHERE scope = 'personal';
    `,
  },
  {
    version: 71,
    name: 'skills and their editors',
    sql: `
      CREATE TABLE skills (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        content TEXT NOT NULL,
        created_by TEXT REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX skills_by_name ON skills (workspace_id, name);
      CREATE TABLE skill_editors (
        skill_id TEXT NOT NULL REFERENCES skills(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        granted_by TEXT,
        granted_at TEXT NOT NULL,
        PRIMARY KEY (skill_id, user_id)
      );
    `,
  },
  {
    version: 72,
    name: 'custom tools',
    sql: `
      CREATE TABLE custom_tools (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        title TEXT NOT NULL,
        schema TEXT NOT NULL,
        code TEXT NOT NULL,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX custom_tools_by_title ON custom_tools (workspace_id, title);
    `,
  },
  {
    version: 73,
    name: 'files produced by runs',
    sql: `
      CREATE TABLE run_files (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
        workflow_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        block_id TEXT,
        name TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        blob_key TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX run_files_by_run ON run_files (run_id, created_at);
    `,
  },
  {
    version: 74,
    name: 'sandboxes (dependency sets for function blocks) and their builds',
    sql: `
      CREATE TABLE sandboxes (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        language TEXT NOT NULL CHECK (language IN ('javascript', 'python')),
        dependencies TEXT NOT NULL,
        cli_tools TEXT NOT NULL,
        system_packages TEXT NOT NULL,
        spec_hash TEXT NOT NULL,
        build_status TEXT CHECK (build_status IN ('pending', 'building', 'ready', 'failed')),
        error_code TEXT,
        error_message TEXT,
        error_detail TEXT,
        built_at TEXT,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandboxes_by_name ON sandboxes (workspace_id, name);
      CREATE INDEX sandboxes_by_hash ON sandboxes (spec_hash);
    `,
  },
  {
    version: 75,
    name: 'credentials (service accounts and OAuth connections) and pending OAuth connection states',
    sql: `
      CREATE TABLE credentials (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        type TEXT NOT NULL CHECK (type IN ('oauth', 'service_account')),
        provider_id TEXT NOT NULL,
        display_name TEXT NOT NULL,
        description TEXT,
        account_id TEXT,
        sealed_secret TEXT NOT NULL,
        access_expires_at TEXT,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX credentials_by_workspace ON credentials (workspace_id, created_at);
      CREATE TABLE oauth_connection_states (
        state_hash TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        provider_id TEXT NOT NULL,
        display_name TEXT NOT NULL,
        credential_id TEXT,
        sealed_verifier TEXT NOT NULL,
        redirect_uri TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at TEXT
      );
    `,
  },
  {
    version: 60,
    name: 'knowledge bases',
    sql: `
      CREATE TABLE knowledge_bases (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        folder_path TEXT NOT NULL DEFAULT '/',
        chunking_config TEXT NOT NULL,
        embedding_model TEXT NOT NULL,
        embedding_dimension INTEGER NOT NULL,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
      );
      CREATE INDEX knowledge_bases_by_workspace ON knowledge_bases (workspace_id, created_at, id);
      CREATE TABLE knowledge_documents (
        id TEXT PRIMARY KEY,
        knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        filename TEXT NOT NULL,
        file_size INTEGER NOT NULL,
        mime_type TEXT NOT NULL,
        blob_key TEXT,
        source_file_id TEXT,
        processing_status TEXT NOT NULL CHECK (processing_status IN ('pending', 'processing', 'completed', 'failed')),
        processing_error TEXT,
        processing_started_at TEXT,
        processing_completed_at TEXT,
        processing_attempt INTEGER NOT NULL DEFAULT 0,
        processing_options TEXT,
        chunk_count INTEGER NOT NULL DEFAULT 0,
        token_count INTEGER NOT NULL DEFAULT 0,
        character_count INTEGER NOT NULL DEFAULT 0,
        enabled INTEGER NOT NULL DEFAULT 1,
        connector_id TEXT,
        connector_type TEXT,
        source_url TEXT,
        external_id TEXT,
        content_hash TEXT,
        user_excluded INTEGER NOT NULL DEFAULT 0,
        tag1 TEXT, tag2 TEXT, tag3 TEXT, tag4 TEXT, tag5 TEXT, tag6 TEXT, tag7 TEXT,
        number1 REAL, number2 REAL, number3 REAL, number4 REAL, number5 REAL,
        date1 TEXT, date2 TEXT,
        boolean1 INTEGER, boolean2 INTEGER, boolean3 INTEGER,
        uploaded_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX knowledge_documents_by_base ON knowledge_documents (knowledge_base_id, uploaded_at, id);
      CREATE INDEX knowledge_documents_queue ON knowledge_documents (uploaded_at, id) WHERE processing_status IN ('pending', 'processing');
      CREATE TABLE knowledge_chunks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        document_id TEXT NOT NULL REFERENCES knowledge_documents(id) ON DELETE CASCADE,
        knowledge_base_id TEXT NOT NULL,
        chunk_index INTEGER NOT NULL,
        content TEXT NOT NULL,
        content_length INTEGER NOT NULL,
        token_count INTEGER NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        start_offset INTEGER NOT NULL,
        end_offset INTEGER NOT NULL,
        embedding BLOB,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX knowledge_chunks_by_document ON knowledge_chunks (document_id, chunk_index);
      CREATE INDEX knowledge_chunks_by_base ON knowledge_chunks (knowledge_base_id, seq);
      CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(content, content='', contentless_delete=1, tokenize='porter unicode61');
      CREATE TABLE knowledge_tag_definitions (
        id TEXT PRIMARY KEY,
        knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        tag_slot TEXT NOT NULL,
        display_name TEXT NOT NULL,
        field_type TEXT NOT NULL CHECK (field_type IN ('text', 'number', 'date', 'boolean')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (knowledge_base_id, tag_slot),
        UNIQUE (knowledge_base_id, display_name)
      );
      CREATE TABLE knowledge_upload_sessions (
        upload_id TEXT PRIMARY KEY REFERENCES file_upload_sessions(id) ON DELETE CASCADE,
        knowledge_base_id TEXT NOT NULL,
        options TEXT NOT NULL,
        document_id TEXT
      )
    `,
  },
  {
    version: 61,
    name: 'knowledge connectors and their sync logs',
    sql: `
      CREATE TABLE knowledge_connectors (
        id TEXT PRIMARY KEY,
        knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        connector_type TEXT NOT NULL,
        credential_id TEXT,
        api_key_sealed TEXT,
        source_config TEXT NOT NULL,
        sync_interval_minutes INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'pending', 'syncing', 'error', 'disabled')),
        resume_status TEXT,
        last_sync_at TEXT,
        last_sync_error TEXT,
        last_sync_doc_count INTEGER,
        next_sync_at TEXT,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX knowledge_connectors_by_base ON knowledge_connectors (knowledge_base_id, created_at, id);
      CREATE INDEX knowledge_connectors_due ON knowledge_connectors (next_sync_at) WHERE next_sync_at IS NOT NULL;
      CREATE TABLE knowledge_connector_sync_logs (
        id TEXT PRIMARY KEY,
        connector_id TEXT NOT NULL REFERENCES knowledge_connectors(id) ON DELETE CASCADE,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        completed_at TEXT,
        docs_added INTEGER NOT NULL DEFAULT 0,
        docs_updated INTEGER NOT NULL DEFAULT 0,
        docs_deleted INTEGER NOT NULL DEFAULT 0,
        docs_unchanged INTEGER NOT NULL DEFAULT 0,
        docs_skipped INTEGER NOT NULL DEFAULT 0,
        docs_failed INTEGER NOT NULL DEFAULT 0,
        error_message TEXT
      );
      CREATE INDEX knowledge_connector_sync_logs_by_connector ON knowledge_connector_sync_logs (connector_id, started_at);
      CREATE INDEX knowledge_documents_by_connector ON knowledge_documents (connector_id, external_id) WHERE connector_id IS NOT NULL
    `,
  },
  {
    version: 90,
    name: 'idempotency_keys',
    // One row per Idempotency-Key in its scope: 'applied' in the same transaction as the first request's change
    // (owner: the process instance answering it; resource_* names what it created), 'completed' once its answer
    // is stored for replay.
    sql: `
      CREATE TABLE idempotency_keys (
        subject TEXT NOT NULL,
        scope TEXT NOT NULL,
        operation_id TEXT NOT NULL,
        idem_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('applied', 'completed')),
        owner TEXT,
        resource_kind TEXT,
        resource_id TEXT,
        status INTEGER,
        headers TEXT,
        body TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (subject, scope, operation_id, idem_key)
      );
      CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at)
    `,
  },
  {
    version: 95,
    name: 'completion callbacks: workflow defaults, run targets, signing secrets, delivery outbox and attempt log',
    sql: `
      CREATE TABLE workflow_callback_defaults (
        workflow_id TEXT PRIMARY KEY REFERENCES workflows(id) ON DELETE CASCADE,
        url TEXT NOT NULL,
        updated_by TEXT,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE run_callback_targets (
        run_id TEXT PRIMARY KEY REFERENCES workflow_runs(id) ON DELETE CASCADE,
        url TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('run', 'workflow'))
      );
      CREATE TABLE callback_signing_secrets (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        sealed TEXT NOT NULL,
        last_four TEXT NOT NULL,
        created_by TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT
      );
      CREATE INDEX callback_signing_secrets_by_workspace ON callback_signing_secrets (workspace_id, created_at, id);
      CREATE TABLE run_callback_deliveries (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        url TEXT NOT NULL,
        event TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TEXT,
        attempt_started_at TEXT,
        in_flight_until TEXT,
        created_at TEXT NOT NULL,
        delivered_at TEXT,
        last_error TEXT
      );
      CREATE INDEX run_callback_deliveries_due ON run_callback_deliveries (next_attempt_at) WHERE status = 'pending';
      CREATE INDEX run_callback_deliveries_by_run ON run_callback_deliveries (run_id, created_at, id);
      CREATE TABLE run_callback_attempts (
        delivery_id TEXT NOT NULL REFERENCES run_callback_deliveries(id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        duration_ms INTEGER NOT NULL,
        status_code INTEGER,
        error TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'retry', 'failed')),
        next_attempt_at TEXT,
        PRIMARY KEY (delivery_id, attempt)
      )
    `,
  },
  {
    version: 24,
    name: 'block and edge ids scoped to their workflow: the workspace-wide ownership table goes',
    // A draft's block ids are the keys of its blocks map and its edge ids are checked unique on write, so ids are
    // unique within a workflow by construction; two workflows may both have block `b1` and edge `e1`.
    sql: `
      DROP TABLE workflow_element_ids
    `,
  },
  {
    version: 120,
    name: 'knowledge documents count processing runs that overran or were cut off, to retry them once and then fail them',
    sql: `
      ALTER TABLE knowledge_documents ADD COLUMN processing_interruptions INTEGER NOT NULL DEFAULT 0
    `,
  },
];

export async function migrate(db: Database): Promise<number[]> {
  await db.transaction((tx) =>
    tx.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)'),
  );
  const applied = new Set((await db.read.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
  const done: number[] = [];
  // Branches append versions from their own ranges; apply them in version order whatever the array order.
  for (const m of [...MIGRATIONS].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    await db.transaction(async (tx) => {
      // node:sqlite runs one statement per prepare; split the script on statement boundaries.
      for (const statement of m.sql.split(/;\s*(?:\n|$)/).map((s) => s.trim()).filter(Boolean)) {
        await tx.run(statement);
      }
      await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [m.version, m.name, new Date().toISOString()]);
    });
    done.push(m.version);
  }
  return done;
}

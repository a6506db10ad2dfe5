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
];

export async function migrate(db: Database): Promise<number[]> {
  await db.transaction((tx) =>
    tx.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)'),
  );
  const applied = new Set((await db.read.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
  const done: number[] = [];
  for (const m of MIGRATIONS) {
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

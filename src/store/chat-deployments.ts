// Hosted chat deployments (one per workflow) and the one-time e-mail codes of their visitors.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type ChatAuthType = 'public' | 'password' | 'email' | 'sso';

export interface ChatOutputConfig {
  workflowId?: string;
  blockId: string;
  path: string;
}

export interface ChatCustomizations {
  primaryColor?: string;
  welcomeMessage?: string;
  imageUrl?: string;
}

export interface ChatDeployment {
  id: string;
  workflowId: string;
  workspaceId: string;
  identifier: string;
  title: string;
  description: string;
  customizations: ChatCustomizations;
  authType: ChatAuthType;
  /** scrypt hash (see src/identity/passwords.ts); never leaves the server. */
  passwordHash: string | null;
  allowedEmails: string[];
  outputConfigs: ChatOutputConfig[];
  includeThinking: boolean;
  includeToolCalls: boolean;
  isActive: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workflow_id: string;
  workspace_id: string;
  identifier: string;
  title: string;
  description: string;
  customizations: string;
  auth_type: ChatAuthType;
  password_hash: string | null;
  allowed_emails: string;
  output_configs: string;
  include_thinking: number;
  include_tool_calls: number;
  is_active: number;
  created_by: string;
  created_at: string;
  updated_at: string;
  live: number;
}

/**
 * A chat is active while its own flag is on and its workflow is deployed and not deleted: undeploying the
 * workflow takes the chat offline, deploying again brings it back.
 */
const SELECT = `SELECT c.*, (c.is_active = 1 AND w.is_deployed = 1 AND w.archived = 0) AS live
  FROM chat_deployments c JOIN workflows w ON w.id = c.workflow_id`;

const toChat = (r: Row): ChatDeployment => ({
  id: r.id,
  workflowId: r.workflow_id,
  workspaceId: r.workspace_id,
  identifier: r.identifier,
  title: r.title,
  description: r.description,
  customizations: JSON.parse(r.customizations),
  authType: r.auth_type,
  passwordHash: r.password_hash,
  allowedEmails: JSON.parse(r.allowed_emails),
  outputConfigs: JSON.parse(r.output_configs),
  includeThinking: r.include_thinking === 1,
  includeToolCalls: r.include_tool_calls === 1,
  isActive: Number(r.live) === 1,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const CHAT_SORT_COLUMNS = { identifier: 'c.identifier', createdAt: 'c.created_at', updatedAt: 'c.updated_at' } as const;

export interface ChatListQuery {
  workspaceId: string;
  workflowId?: string;
  isActive?: boolean;
  sortBy: keyof typeof CHAT_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

export class ChatDeploymentRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async getByWorkflow(workflowId: string): Promise<ChatDeployment | undefined> {
    const r = await this.db.get<Row>(`${SELECT} WHERE c.workflow_id = ?`, [workflowId]);
    return r && toChat(r);
  }

  async getByIdentifier(identifier: string): Promise<ChatDeployment | undefined> {
    const r = await this.db.get<Row>(`${SELECT} WHERE c.identifier = ?`, [identifier]);
    return r && toChat(r);
  }

  /** Inserts or replaces the workflow's chat (one per workflow); the id and creation time of an existing one stay. */
  async upsert(c: ChatDeployment): Promise<void> {
    await this.db.run(
      `INSERT INTO chat_deployments (id, workflow_id, workspace_id, identifier, title, description, customizations, auth_type,
         password_hash, allowed_emails, output_configs, include_thinking, include_tool_calls, is_active, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (workflow_id) DO UPDATE SET identifier = excluded.identifier, title = excluded.title,
         description = excluded.description, customizations = excluded.customizations, auth_type = excluded.auth_type,
         password_hash = excluded.password_hash, allowed_emails = excluded.allowed_emails, output_configs = excluded.output_configs,
         include_thinking = excluded.include_thinking, include_tool_calls = excluded.include_tool_calls,
         is_active = excluded.is_active, updated_at = excluded.updated_at`,
      [
        c.id,
        c.workflowId,
        c.workspaceId,
        c.identifier,
        c.title,
        c.description,
        JSON.stringify(c.customizations),
        c.authType,
        c.passwordHash,
        JSON.stringify(c.allowedEmails),
        JSON.stringify(c.outputConfigs),
        c.includeThinking ? 1 : 0,
        c.includeToolCalls ? 1 : 0,
        c.isActive ? 1 : 0,
        c.createdBy,
        c.createdAt,
        c.updatedAt,
      ],
    );
  }

  async setActive(id: string, active: boolean, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE chat_deployments SET is_active = ?, updated_at = ? WHERE id = ?', [active ? 1 : 0, at, id])).changes > 0;
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM chat_deployments WHERE id = ?', [id])).changes > 0;
  }

  async list(q: ChatListQuery): Promise<ChatDeployment[]> {
    const page = keyset({ column: CHAT_SORT_COLUMNS[q.sortBy], idColumn: 'c.id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workspaceId, ...page.whereParams];
    let where = `c.workspace_id = ? AND ${page.where}`;
    if (q.workflowId !== undefined) {
      where += ' AND c.workflow_id = ?';
      params.push(q.workflowId);
    }
    if (q.isActive !== undefined) {
      where += ' AND (c.is_active = 1 AND w.is_deployed = 1 AND w.archived = 0) = ?';
      params.push(q.isActive ? 1 : 0);
    }
    const rows = await this.db.all<Row>(`${SELECT} WHERE ${where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params);
    return rows.map(toChat);
  }

  /** Stores a fresh code for one visitor e-mail, replacing any earlier one. */
  async putCode(chatId: string, email: string, codeHash: string, expiresAt: string): Promise<void> {
    await this.db.run(
      `INSERT INTO chat_codes (chat_id, email, code_hash, expires_at, attempts) VALUES (?, ?, ?, ?, 0)
       ON CONFLICT (chat_id, email) DO UPDATE SET code_hash = excluded.code_hash, expires_at = excluded.expires_at, attempts = 0`,
      [chatId, email, codeHash, expiresAt],
    );
  }

  async getCode(chatId: string, email: string): Promise<{ codeHash: string; expiresAt: string; attempts: number } | undefined> {
    const r = await this.db.get<{ code_hash: string; expires_at: string; attempts: number }>('SELECT * FROM chat_codes WHERE chat_id = ? AND email = ?', [
      chatId,
      email,
    ]);
    return r && { codeHash: r.code_hash, expiresAt: r.expires_at, attempts: Number(r.attempts) };
  }

  async countCodeAttempt(chatId: string, email: string): Promise<void> {
    await this.db.run('UPDATE chat_codes SET attempts = attempts + 1 WHERE chat_id = ? AND email = ?', [chatId, email]);
  }

  async deleteCode(chatId: string, email: string): Promise<void> {
    await this.db.run('DELETE FROM chat_codes WHERE chat_id = ? AND email = ?', [chatId, email]);
  }
}

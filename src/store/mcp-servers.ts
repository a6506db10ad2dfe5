// External MCP servers a workspace registers so its workflows can call their tools. Headers and the OAuth
// client secret are stored sealed (see src/mcp/registry.ts); this layer never sees them in the clear.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type McpAuthType = 'none' | 'headers' | 'oauth';
export type McpConnectionStatus = 'connected' | 'disconnected' | 'error';

export interface McpToolDescriptor {
  name: string;
  description?: string;
  inputSchema: { type: 'object'; properties?: Record<string, unknown>; required?: string[] };
}

export interface McpServerRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  transport: 'streamable-http';
  url: string;
  authType: McpAuthType;
  /** Sealed JSON object of header name → value; null when none. */
  headersSealed: string | null;
  headerNames: string[];
  timeoutMs: number;
  retries: number;
  enabled: boolean;
  oauthClientId: string | null;
  oauthClientSecretSealed: string | null;
  connectionStatus: McpConnectionStatus;
  lastError: string | null;
  toolCount: number;
  /** The last discovered tool list (shared by the workspace's members). */
  tools: McpToolDescriptor[] | null;
  lastToolsRefresh: string | null;
  lastConnected: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  transport: 'streamable-http';
  url: string;
  auth_type: McpAuthType;
  headers_sealed: string | null;
  header_names: string;
  timeout_ms: number;
  retries: number;
  enabled: number;
  oauth_client_id: string | null;
  oauth_client_secret_sealed: string | null;
  connection_status: McpConnectionStatus;
  last_error: string | null;
  tool_count: number;
  tools: string | null;
  last_tools_refresh: string | null;
  last_connected: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): McpServerRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  transport: r.transport,
  url: r.url,
  authType: r.auth_type,
  headersSealed: r.headers_sealed,
  headerNames: JSON.parse(r.header_names),
  timeoutMs: Number(r.timeout_ms),
  retries: Number(r.retries),
  enabled: r.enabled === 1,
  oauthClientId: r.oauth_client_id,
  oauthClientSecretSealed: r.oauth_client_secret_sealed,
  connectionStatus: r.connection_status,
  lastError: r.last_error,
  toolCount: Number(r.tool_count),
  tools: r.tools ? JSON.parse(r.tools) : null,
  lastToolsRefresh: r.last_tools_refresh,
  lastConnected: r.last_connected,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SORT_COLUMNS = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export class McpServerRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** Inserts or replaces the whole row (writes are read-modify-write inside one transaction). */
  async save(s: McpServerRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO mcp_servers (id, workspace_id, name, description, transport, url, auth_type, headers_sealed, header_names, timeout_ms,
         retries, enabled, oauth_client_id, oauth_client_secret_sealed, connection_status, last_error, tool_count, tools,
         last_tools_refresh, last_connected, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description, auth_type = excluded.auth_type,
         headers_sealed = excluded.headers_sealed, header_names = excluded.header_names, timeout_ms = excluded.timeout_ms,
         retries = excluded.retries, enabled = excluded.enabled, oauth_client_id = excluded.oauth_client_id,
         oauth_client_secret_sealed = excluded.oauth_client_secret_sealed, connection_status = excluded.connection_status,
         last_error = excluded.last_error, tool_count = excluded.tool_count, tools = excluded.tools,
         last_tools_refresh = excluded.last_tools_refresh, last_connected = excluded.last_connected, updated_at = excluded.updated_at`,
      [
        s.id,
        s.workspaceId,
        s.name,
        s.description,
        s.transport,
        s.url,
        s.authType,
        s.headersSealed,
        JSON.stringify(s.headerNames),
        s.timeoutMs,
        s.retries,
        s.enabled ? 1 : 0,
        s.oauthClientId,
        s.oauthClientSecretSealed,
        s.connectionStatus,
        s.lastError,
        s.toolCount,
        s.tools ? JSON.stringify(s.tools) : null,
        s.lastToolsRefresh,
        s.lastConnected,
        s.createdBy,
        s.createdAt,
        s.updatedAt,
      ],
    );
  }

  /** Records the outcome of talking to the server (status, error, tools) without touching its settings. */
  async recordConnection(
    id: string,
    fields: { connectionStatus: McpConnectionStatus; lastError: string | null; lastConnected?: string; tools?: McpToolDescriptor[]; refreshedAt?: string },
  ): Promise<void> {
    const sets = ['connection_status = ?', 'last_error = ?'];
    const params: SqlValue[] = [fields.connectionStatus, fields.lastError];
    if (fields.lastConnected) {
      sets.push('last_connected = ?');
      params.push(fields.lastConnected);
    }
    if (fields.tools) {
      sets.push('tools = ?', 'tool_count = ?', 'last_tools_refresh = ?');
      params.push(JSON.stringify(fields.tools), fields.tools.length, fields.refreshedAt ?? new Date().toISOString());
    }
    await this.db.run(`UPDATE mcp_servers SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  async get(id: string): Promise<McpServerRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM mcp_servers WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM mcp_servers WHERE id = ?', [id])).changes > 0;
  }

  async list(q: {
    workspaceId: string;
    search: string | null;
    sortBy: keyof typeof SORT_COLUMNS;
    order: 'asc' | 'desc';
    after: readonly [SqlValue, string] | null;
    limit: number;
    enabledOnly?: boolean;
  }): Promise<McpServerRecord[]> {
    const k = keyset({ column: SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
    const filters: string[] = ['workspace_id = ?'];
    const params: SqlValue[] = [q.workspaceId];
    if (q.search) {
      filters.push(this.db.dialect.contains('lower(name)', 'lower(?)'));
      params.push(q.search);
    }
    if (q.enabledOnly) filters.push('enabled = 1');
    const rows = await this.db.all<Row>(
      `SELECT * FROM mcp_servers WHERE ${filters.join(' AND ')} AND ${k.where} ORDER BY ${k.orderBy} ${limitClause(q.limit)}`,
      [...params, ...k.whereParams],
    );
    return rows.map(toRecord);
  }
}

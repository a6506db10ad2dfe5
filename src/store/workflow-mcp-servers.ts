// Workflow MCP servers (a workspace's own workflows served as MCP tools) and the tools published on them.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface WorkflowMcpServerRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  isPublic: boolean;
  /** Public servers run their tools as this user. */
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface WorkflowMcpToolRecord {
  id: string;
  serverId: string;
  workflowId: string;
  toolName: string;
  toolDescription: string | null;
  /** Per-field description overrides: [{name, description}]. */
  parameterDescriptions: { name: string; description: string }[];
  createdAt: string;
  updatedAt: string;
}

interface ServerRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  is_public: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

interface ToolRow {
  id: string;
  server_id: string;
  workflow_id: string;
  tool_name: string;
  tool_description: string | null;
  parameter_descriptions: string;
  created_at: string;
  updated_at: string;
}

const toServer = (r: ServerRow): WorkflowMcpServerRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  isPublic: r.is_public === 1,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toTool = (r: ToolRow): WorkflowMcpToolRecord => ({
  id: r.id,
  serverId: r.server_id,
  workflowId: r.workflow_id,
  toolName: r.tool_name,
  toolDescription: r.tool_description,
  parameterDescriptions: JSON.parse(r.parameter_descriptions),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const SERVER_SORT_COLUMNS = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export class WorkflowMcpServerRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(s: WorkflowMcpServerRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO workflow_mcp_servers (id, workspace_id, name, description, is_public, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [s.id, s.workspaceId, s.name, s.description, s.isPublic ? 1 : 0, s.createdBy, s.createdAt, s.updatedAt],
    );
  }

  async get(id: string): Promise<WorkflowMcpServerRecord | undefined> {
    const r = await this.db.get<ServerRow>('SELECT * FROM workflow_mcp_servers WHERE id = ?', [id]);
    return r && toServer(r);
  }

  async update(id: string, fields: { name: string; description: string | null; isPublic: boolean; updatedAt: string }): Promise<void> {
    await this.db.run('UPDATE workflow_mcp_servers SET name = ?, description = ?, is_public = ?, updated_at = ? WHERE id = ?', [
      fields.name,
      fields.description,
      fields.isPublic ? 1 : 0,
      fields.updatedAt,
      id,
    ]);
  }

  /** Deletes the server and (by cascade) its tools. */
  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM workflow_mcp_servers WHERE id = ?', [id])).changes > 0;
  }

  async list(q: {
    workspaceId: string;
    sortBy: keyof typeof SERVER_SORT_COLUMNS;
    order: 'asc' | 'desc';
    after: readonly [SqlValue, string] | null;
    limit: number;
  }): Promise<WorkflowMcpServerRecord[]> {
    const k = keyset({ column: SERVER_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
    const rows = await this.db.all<ServerRow>(
      `SELECT * FROM workflow_mcp_servers WHERE workspace_id = ? AND ${k.where} ORDER BY ${k.orderBy} ${limitClause(q.limit)}`,
      [q.workspaceId, ...k.whereParams],
    );
    return rows.map(toServer);
  }

  // ---- tools --------------------------------------------------------------------------------------------------

  async insertTool(t: WorkflowMcpToolRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO workflow_mcp_tools (id, server_id, workflow_id, tool_name, tool_description, parameter_descriptions, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [t.id, t.serverId, t.workflowId, t.toolName, t.toolDescription, JSON.stringify(t.parameterDescriptions), t.createdAt, t.updatedAt],
    );
  }

  async updateTool(t: WorkflowMcpToolRecord): Promise<void> {
    await this.db.run('UPDATE workflow_mcp_tools SET tool_name = ?, tool_description = ?, parameter_descriptions = ?, updated_at = ? WHERE id = ?', [
      t.toolName,
      t.toolDescription,
      JSON.stringify(t.parameterDescriptions),
      t.updatedAt,
      t.id,
    ]);
  }

  async toolForWorkflow(serverId: string, workflowId: string): Promise<WorkflowMcpToolRecord | undefined> {
    const r = await this.db.get<ToolRow>('SELECT * FROM workflow_mcp_tools WHERE server_id = ? AND workflow_id = ?', [serverId, workflowId]);
    return r && toTool(r);
  }

  async toolByName(serverId: string, toolName: string): Promise<WorkflowMcpToolRecord | undefined> {
    const r = await this.db.get<ToolRow>('SELECT * FROM workflow_mcp_tools WHERE server_id = ? AND tool_name = ?', [serverId, toolName]);
    return r && toTool(r);
  }

  /** A server's tools in publication order (ids are time-ordered), after `afterId` when given. */
  async listTools(serverId: string, options: { afterId?: string | null; limit?: number } = {}): Promise<WorkflowMcpToolRecord[]> {
    const rows = await this.db.all<ToolRow>(
      `SELECT * FROM workflow_mcp_tools WHERE server_id = ? AND id > ? ORDER BY id ASC ${limitClause(options.limit ?? 1000)}`,
      [serverId, options.afterId ?? ''],
    );
    return rows.map(toTool);
  }

  /** Every tool publishing this workflow, on any server. */
  async toolsOfWorkflow(workflowId: string): Promise<WorkflowMcpToolRecord[]> {
    const rows = await this.db.all<ToolRow>('SELECT * FROM workflow_mcp_tools WHERE workflow_id = ? ORDER BY id', [workflowId]);
    return rows.map(toTool);
  }

  async countTools(serverId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM workflow_mcp_tools WHERE server_id = ?', [serverId]);
    return Number(r?.n ?? 0);
  }

  async deleteTool(serverId: string, workflowId: string): Promise<WorkflowMcpToolRecord | undefined> {
    const found = await this.toolForWorkflow(serverId, workflowId);
    if (found) await this.db.run('DELETE FROM workflow_mcp_tools WHERE id = ?', [found.id]);
    return found;
  }
}

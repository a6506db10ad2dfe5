// Custom tools of a workspace: a function declaration (JSON) and the JavaScript that implements it.
import type { SqlExecutor, SqlValue } from './database.ts';
import { workspacePage } from './keyset.ts';

export interface CustomToolRecord {
  id: string;
  workspaceId: string;
  title: string;
  /** `{type: 'function', function: {name, description?, parameters}}` */
  schema: { type: 'function'; function: { name: string; description?: string; parameters: { type: string; properties: Record<string, unknown>; required?: string[] } } };
  code: string;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  title: string;
  schema: string;
  code: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): CustomToolRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  title: r.title,
  schema: JSON.parse(r.schema),
  code: r.code,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SORT_COLUMN = { title: 'title', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export class CustomToolRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(workspaceId: string, id: string): Promise<CustomToolRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM custom_tools WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return r && toRecord(r);
  }

  async getByTitle(workspaceId: string, title: string): Promise<CustomToolRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM custom_tools WHERE workspace_id = ? AND title = ?', [workspaceId, title]);
    return r && toRecord(r);
  }

  async list(q: { workspaceId: string; search?: string; sortBy: keyof typeof SORT_COLUMN; sortOrder: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number }): Promise<CustomToolRecord[]> {
    const rows = await workspacePage<Row>(this.db, 'custom_tools', { ...q, searchColumn: 'title', sortColumn: SORT_COLUMN[q.sortBy], order: q.sortOrder });
    return rows.map(toRecord);
  }

  /** Every tool of the workspace (for the tool catalog and agents). */
  async all(workspaceId: string): Promise<CustomToolRecord[]> {
    return (await this.db.all<Row>('SELECT * FROM custom_tools WHERE workspace_id = ? ORDER BY title', [workspaceId])).map(toRecord);
  }

  async insert(t: CustomToolRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO custom_tools (id, workspace_id, title, schema, code, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [t.id, t.workspaceId, t.title, JSON.stringify(t.schema), t.code, t.createdBy, t.createdAt, t.updatedAt],
    );
  }

  async update(t: CustomToolRecord): Promise<void> {
    await this.db.run('UPDATE custom_tools SET title = ?, schema = ?, code = ?, updated_at = ? WHERE id = ?', [t.title, JSON.stringify(t.schema), t.code, t.updatedAt, t.id]);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM custom_tools WHERE id = ?', [id])).changes > 0;
  }
}

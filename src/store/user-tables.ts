// Table definitions: name, folder, columns (JSON, keyed by stable column ids), row count, plan row limit, the
// four lock flags, the running job, and archive state. The rows themselves live in table-rows.ts.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';
import { onUniqueViolation } from './errors.ts';
import type { Column } from '../tables/columns.ts';
import { DomainError } from '../domain/errors.ts';

/**
 * The answer when a table name is taken in the workspace: the 409 of the name checks in the table handlers, for a
 * write that lost a race to another process (the unique index user_tables_active_name decides).
 */
export const tableNameTaken = (name: string) => new DomainError('conflict', `A table named "${name}" already exists.`, { name });
const NAME_INDEX = ['user_tables', ['workspace_id', 'name']] as const;

export interface TableJob {
  id: string;
  type: 'import' | 'delete' | 'export' | 'backfill' | 'update';
  status: 'running' | 'ready' | 'failed' | 'canceled';
  rowsProcessed: number;
  error: string | null;
}

export interface TableLocks {
  schemaLocked: boolean;
  insertLocked: boolean;
  updateLocked: boolean;
  deleteLocked: boolean;
}

/** A workflow group: one producer per row fills the output columns (column refs are stable column ids). */
export interface WorkflowGroup {
  id: string;
  workflowId: string;
  name?: string;
  type: 'manual' | 'enrichment';
  enrichmentId?: string;
  dependencies: { columns: string[] };
  outputs: { blockId: string; path: string; outputId?: string; columnId: string }[];
  inputMappings: { inputName: string; columnId: string }[];
  deploymentMode: 'live' | 'deployed';
  autoRun: boolean;
}

export interface UserTableRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  folderPath: string;
  columns: Column[];
  /** Workflow groups; absent on records written before groups existed means none. */
  groups?: WorkflowGroup[];
  ownerId: string | null;
  ownerEmail: string;
  rowCount: number;
  maxRows: number;
  locks: TableLocks;
  job: TableJob | null;
  archivedAt: string | null;
  archiveBatch: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  folder_path: string;
  columns: string;
  groups: string;
  owner_id: string | null;
  owner_email: string;
  row_count: number;
  max_rows: number;
  schema_locked: number;
  insert_locked: number;
  update_locked: number;
  delete_locked: number;
  job: string | null;
  archived_at: string | null;
  archive_batch: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): UserTableRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  folderPath: r.folder_path,
  columns: JSON.parse(r.columns),
  groups: JSON.parse(r.groups ?? '[]'),
  ownerId: r.owner_id,
  ownerEmail: r.owner_email,
  rowCount: Number(r.row_count),
  maxRows: Number(r.max_rows),
  locks: { schemaLocked: r.schema_locked === 1, insertLocked: r.insert_locked === 1, updateLocked: r.update_locked === 1, deleteLocked: r.delete_locked === 1 },
  job: r.job ? JSON.parse(r.job) : null,
  archivedAt: r.archived_at,
  archiveBatch: r.archive_batch,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const TABLE_SORT_COLUMNS = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export interface TableListQuery {
  workspaceId: string;
  archived: boolean;
  folderPath: string | null;
  search: string | null;
  sortBy: keyof typeof TABLE_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

const FIELDS: Record<string, string> = {
  name: 'name',
  description: 'description',
  folderPath: 'folder_path',
  columns: 'columns',
  groups: 'groups',
  rowCount: 'row_count',
  maxRows: 'max_rows',
  job: 'job',
  archivedAt: 'archived_at',
  archiveBatch: 'archive_batch',
  updatedAt: 'updated_at',
};

type Updatable = Partial<Pick<UserTableRecord, 'name' | 'description' | 'folderPath' | 'columns' | 'groups' | 'rowCount' | 'maxRows' | 'job' | 'archivedAt' | 'archiveBatch' | 'updatedAt'>>;

export class UserTableRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(t: UserTableRecord): Promise<void> {
    await onUniqueViolation(this.insertRow(t), ...NAME_INDEX, () => tableNameTaken(t.name));
  }

  private async insertRow(t: UserTableRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO user_tables (id, workspace_id, name, description, folder_path, columns, owner_id, owner_email, row_count, max_rows,
         schema_locked, insert_locked, update_locked, delete_locked, job, archived_at, archive_batch, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        t.id, t.workspaceId, t.name, t.description, t.folderPath, JSON.stringify(t.columns), t.ownerId, t.ownerEmail, t.rowCount, t.maxRows,
        t.locks.schemaLocked ? 1 : 0, t.locks.insertLocked ? 1 : 0, t.locks.updateLocked ? 1 : 0, t.locks.deleteLocked ? 1 : 0,
        t.job ? JSON.stringify(t.job) : null, t.archivedAt, t.archiveBatch, t.createdAt, t.updatedAt,
      ],
    );
  }

  async get(id: string): Promise<UserTableRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM user_tables WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async activeByName(workspaceId: string, name: string): Promise<UserTableRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM user_tables WHERE workspace_id = ? AND name = ? AND archived_at IS NULL', [workspaceId, name]);
    return r && toRecord(r);
  }

  /** Sets every table's row limit to its plan's, for the tables of workspaces whose billing account is on `plan`. */
  async setMaxRowsForPlan(plan: string, maxRows: number): Promise<number> {
    const r = await this.db.run(
      `UPDATE user_tables SET max_rows = ? WHERE max_rows <> ? AND workspace_id IN (
         SELECT w.id FROM workspaces w JOIN billing_accounts b ON b.id = w.billing_account_id WHERE b.plan = ?)`,
      [maxRows, maxRows, plan],
    );
    return r.changes;
  }

  async countActive(workspaceId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM user_tables WHERE workspace_id = ? AND archived_at IS NULL', [workspaceId]);
    return Number(r?.n ?? 0);
  }

  async list(q: TableListQuery): Promise<UserTableRecord[]> {
    const page = keyset({ column: TABLE_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workspaceId];
    let where = `workspace_id = ? AND archived_at IS ${q.archived ? 'NOT NULL' : 'NULL'}`;
    if (q.folderPath !== null) {
      where += ' AND folder_path = ?';
      params.push(q.folderPath);
    }
    if (q.search !== null) {
      where += ` AND ${this.db.dialect.contains(this.db.dialect.fold('name'), this.db.dialect.fold('?'))}`;
      params.push(q.search);
    }
    params.push(...page.whereParams);
    const rows = await this.db.all<Row>(`SELECT * FROM user_tables WHERE ${where} AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params);
    return rows.map(toRecord);
  }

  /** Active tables in a folder or below it. */
  async activeInSubtree(workspaceId: string, path: string): Promise<UserTableRecord[]> {
    const rows =
      path === '/'
        ? await this.db.all<Row>('SELECT * FROM user_tables WHERE workspace_id = ? AND archived_at IS NULL', [workspaceId])
        : await this.db.all<Row>('SELECT * FROM user_tables WHERE workspace_id = ? AND archived_at IS NULL AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)', [
            workspaceId, path, path.length + 1, path + '/',
          ]);
    return rows.map(toRecord);
  }

  async archivedInBatch(workspaceId: string, batch: string): Promise<UserTableRecord[]> {
    const rows = await this.db.all<Row>('SELECT * FROM user_tables WHERE workspace_id = ? AND archive_batch = ? AND archived_at IS NOT NULL', [workspaceId, batch]);
    return rows.map(toRecord);
  }

  async update(id: string, fields: Updatable): Promise<void> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return;
    const value = (k: string, v: unknown): SqlValue => (k === 'columns' || k === 'groups' ? JSON.stringify(v) : k === 'job' ? (v === null ? null : JSON.stringify(v)) : (v as SqlValue));
    const write = () => this.db.run(`UPDATE user_tables SET ${entries.map(([k]) => `${FIELDS[k]} = ?`).join(', ')} WHERE id = ?`, [...entries.map(([k, v]) => value(k, v)), id]);
    if (fields.name === undefined && !('archivedAt' in fields)) {
      await write();
      return;
    }
    // The name the row will have, read before the write (after a failed statement some engines accept no
    // further reads in the transaction).
    const name = fields.name ?? (await this.get(id))?.name ?? '';
    await onUniqueViolation(write(), ...NAME_INDEX, () => tableNameTaken(name));
  }

  async setLocks(id: string, locks: TableLocks, now: string): Promise<void> {
    await this.db.run('UPDATE user_tables SET schema_locked = ?, insert_locked = ?, update_locked = ?, delete_locked = ?, updated_at = ? WHERE id = ?', [
      locks.schemaLocked ? 1 : 0, locks.insertLocked ? 1 : 0, locks.updateLocked ? 1 : 0, locks.deleteLocked ? 1 : 0, now, id,
    ]);
  }

  async addRowCount(id: string, delta: number): Promise<void> {
    if (delta !== 0) await this.db.run('UPDATE user_tables SET row_count = row_count + ? WHERE id = ?', [delta, id]);
  }

  /** Moves tables in a folder subtree to another path prefix. */
  async relocateSubtree(workspaceId: string, from: string, to: string, now: string): Promise<number> {
    const r = await this.db.run(
      `UPDATE user_tables SET folder_path = ? || substr(folder_path, ?), updated_at = ?
       WHERE workspace_id = ? AND archived_at IS NULL AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)`,
      [to, from.length + 1, now, workspaceId, from, from.length + 1, from + '/'],
    );
    return r.changes;
  }
}

export interface TableViewRecord {
  id: string;
  tableId: string;
  name: string;
  /** Stored with column ids in place of names (filter fields, sort fields, layout keys). */
  config: Record<string, unknown>;
  isDefault: boolean;
  createdByEmail: string | null;
  createdAt: string;
  updatedAt: string;
}

interface ViewRow {
  id: string;
  table_id: string;
  name: string;
  config: string;
  is_default: number;
  created_by_email: string | null;
  created_at: string;
  updated_at: string;
}

const toView = (r: ViewRow): TableViewRecord => ({
  id: r.id,
  tableId: r.table_id,
  name: r.name,
  config: JSON.parse(r.config),
  isDefault: r.is_default === 1,
  createdByEmail: r.created_by_email,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class TableViewRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(v: TableViewRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO table_views (id, table_id, name, config, is_default, created_by_email, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [v.id, v.tableId, v.name, JSON.stringify(v.config), v.isDefault ? 1 : 0, v.createdByEmail, v.createdAt, v.updatedAt],
    );
  }

  async list(tableId: string): Promise<TableViewRecord[]> {
    return (await this.db.all<ViewRow>('SELECT * FROM table_views WHERE table_id = ? ORDER BY created_at, id', [tableId])).map(toView);
  }

  async get(tableId: string, id: string): Promise<TableViewRecord | undefined> {
    const r = await this.db.get<ViewRow>('SELECT * FROM table_views WHERE table_id = ? AND id = ?', [tableId, id]);
    return r && toView(r);
  }

  async count(tableId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM table_views WHERE table_id = ?', [tableId]);
    return Number(r?.n ?? 0);
  }

  async update(id: string, fields: { name?: string; config?: Record<string, unknown>; isDefault?: boolean; updatedAt: string }): Promise<void> {
    const sets: string[] = ['updated_at = ?'];
    const params: SqlValue[] = [fields.updatedAt];
    if (fields.name !== undefined) sets.push('name = ?'), params.push(fields.name);
    if (fields.config !== undefined) sets.push('config = ?'), params.push(JSON.stringify(fields.config));
    if (fields.isDefault !== undefined) sets.push('is_default = ?'), params.push(fields.isDefault ? 1 : 0);
    await this.db.run(`UPDATE table_views SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  async clearDefault(tableId: string): Promise<void> {
    await this.db.run('UPDATE table_views SET is_default = 0 WHERE table_id = ? AND is_default = 1', [tableId]);
  }

  async delete(id: string): Promise<number> {
    return (await this.db.run('DELETE FROM table_views WHERE id = ?', [id])).changes;
  }
}

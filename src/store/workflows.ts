// Workflows: definitions with their draft state, and the block and edge ids each one owns.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';
import { onUniqueViolation } from './errors.ts';
import { DomainError } from '../domain/errors.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';

/**
 * The answer when a workflow name is taken in a folder: the same 409 the handlers' check gives, for a write that
 * lost a race to another process (the unique index workflows_active_name decides).
 */
export const workflowNameTaken = (name: string, folderPath: string) =>
  new DomainError('conflict', `A workflow named "${name}" already exists in ${folderPathToWire(folderPath)}.`, { name, folderPath: folderPathToWire(folderPath) });
const NAME_INDEX = ['workflows', ['workspace_id', 'folder_path', 'name']] as const;

export interface WorkflowRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  /** Canonical decoded folder path; '/' for the root. */
  folderPath: string;
  position: number;
  archived: boolean;
  archivedAt: string | null;
  locked: boolean;
  isDeployed: boolean;
  deployedAt: string | null;
  activeVersionId: string | null;
  isPublicApi: boolean;
  runCount: number;
  lastRunAt: string | null;
  /** The draft state as stored JSON. */
  state: string;
  stateSavedAt: string;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  folder_path: string;
  position: number;
  archived: number;
  archived_at: string | null;
  locked: number;
  is_deployed: number;
  deployed_at: string | null;
  active_version_id: string | null;
  is_public_api: number;
  run_count: number;
  last_run_at: string | null;
  state: string;
  state_saved_at: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): WorkflowRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  folderPath: r.folder_path,
  position: Number(r.position),
  archived: r.archived === 1,
  archivedAt: r.archived_at,
  locked: r.locked === 1,
  isDeployed: r.is_deployed === 1,
  deployedAt: r.deployed_at,
  activeVersionId: r.active_version_id,
  isPublicApi: r.is_public_api === 1,
  runCount: Number(r.run_count),
  lastRunAt: r.last_run_at,
  state: r.state,
  stateSavedAt: r.state_saved_at,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** Every sort is served by an index: (workspace_id, archived, column, id) and the same with folder_path. */
export const WORKFLOW_SORT_COLUMNS = {
  position: 'position',
  name: 'name',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  runCount: 'run_count',
} as const;

export interface WorkflowListQuery {
  workspaceId: string;
  archived: boolean;
  /** Only workflows directly in this folder. */
  folderPath: string | null;
  deployedOnly: boolean;
  /** Case-insensitive substring of the name. */
  search: string | null;
  sortBy: keyof typeof WORKFLOW_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

/** Columns a list page needs; the draft state is left out so pages stay cheap. */
const LIST_COLUMNS = `id, workspace_id, name, description, folder_path, position, archived, archived_at, locked, is_deployed, deployed_at,
  active_version_id, is_public_api, run_count, last_run_at, '' AS state, state_saved_at, created_by, created_at, updated_at`;

export type WorkflowChanges = Partial<
  Pick<WorkflowRecord, 'name' | 'description' | 'folderPath' | 'archived' | 'archivedAt' | 'locked' | 'isDeployed' | 'deployedAt' | 'activeVersionId' | 'isPublicApi' | 'state' | 'stateSavedAt' | 'updatedAt'>
>;

const CHANGE_COLUMNS: Record<keyof WorkflowChanges, string> = {
  name: 'name',
  description: 'description',
  folderPath: 'folder_path',
  archived: 'archived',
  archivedAt: 'archived_at',
  locked: 'locked',
  isDeployed: 'is_deployed',
  deployedAt: 'deployed_at',
  activeVersionId: 'active_version_id',
  isPublicApi: 'is_public_api',
  state: 'state',
  stateSavedAt: 'state_saved_at',
  updatedAt: 'updated_at',
};

const sqlValue = (v: unknown): SqlValue => (typeof v === 'boolean' ? (v ? 1 : 0) : (v as SqlValue));

export class WorkflowRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(w: WorkflowRecord): Promise<void> {
    await onUniqueViolation(this.insertRow(w), ...NAME_INDEX, () => workflowNameTaken(w.name, w.folderPath));
  }

  private async insertRow(w: WorkflowRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO workflows (id, workspace_id, name, description, folder_path, position, archived, archived_at, locked, is_deployed, deployed_at,
         active_version_id, is_public_api, run_count, last_run_at, state, state_saved_at, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        w.id, w.workspaceId, w.name, w.description, w.folderPath, w.position, w.archived ? 1 : 0, w.archivedAt, w.locked ? 1 : 0,
        w.isDeployed ? 1 : 0, w.deployedAt, w.activeVersionId, w.isPublicApi ? 1 : 0, w.runCount, w.lastRunAt, w.state, w.stateSavedAt,
        w.createdBy, w.createdAt, w.updatedAt,
      ],
    );
  }

  async get(id: string): Promise<WorkflowRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM workflows WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async update(id: string, changes: WorkflowChanges): Promise<void> {
    const entries = Object.entries(changes).filter(([, v]) => v !== undefined) as [keyof WorkflowChanges, unknown][];
    if (entries.length === 0) return;
    const write = () => this.db.run(`UPDATE workflows SET ${entries.map(([k]) => `${CHANGE_COLUMNS[k]} = ?`).join(', ')} WHERE id = ?`, [...entries.map(([, v]) => sqlValue(v)), id]);
    if (changes.name === undefined && changes.folderPath === undefined && changes.archived === undefined) {
      await write();
      return;
    }
    // The name and folder the row will have, read before the write (after a failed statement some engines
    // accept no further reads in the transaction).
    const current = changes.name === undefined || changes.folderPath === undefined ? await this.get(id) : undefined;
    const name = changes.name ?? current?.name ?? '';
    const folderPath = changes.folderPath ?? current?.folderPath ?? '/';
    await onUniqueViolation(write(), ...NAME_INDEX, () => workflowNameTaken(name, folderPath));
  }

  /** The position a new workflow of the workspace takes: after every existing one. */
  async nextPosition(workspaceId: string): Promise<number> {
    const r = await this.db.get<{ p: number | null }>(
      `SELECT MAX(p) AS p FROM (SELECT MAX(position) AS p FROM workflows WHERE workspace_id = ? AND archived = 0
        UNION ALL SELECT MAX(position) FROM workflows WHERE workspace_id = ? AND archived = 1) AS positions`,
      [workspaceId, workspaceId],
    );
    return Number(r?.p ?? 0) + 1;
  }

  /** Active workflows of the folder with exactly this name (other than `exceptId`). */
  async nameTaken(workspaceId: string, folderPath: string, name: string, exceptId: string | null = null): Promise<boolean> {
    const r = await this.db.get(
      'SELECT id FROM workflows WHERE workspace_id = ? AND archived = 0 AND folder_path = ? AND name = ? AND id IS DISTINCT FROM ? LIMIT 1',
      [workspaceId, folderPath, name, exceptId],
    );
    return r !== undefined;
  }

  async list(q: WorkflowListQuery): Promise<WorkflowRecord[]> {
    const { sql, params } = this.listQuery(q);
    return (await this.db.all<Row>(sql, params)).map(toRecord);
  }

  /** The SQL and parameters of a list page; the query-plan test explains exactly this. */
  listQuery(q: WorkflowListQuery): { sql: string; params: SqlValue[] } {
    const page = keyset({ column: WORKFLOW_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workspaceId, q.archived ? 1 : 0];
    let where = 'workspace_id = ? AND archived = ?';
    if (q.folderPath !== null) {
      where += ' AND folder_path = ?';
      params.push(q.folderPath);
    }
    if (q.deployedOnly) where += ' AND is_deployed = 1';
    if (q.search !== null) {
      where += ` AND ${this.db.dialect.contains('lower(name)', 'lower(?)')}`;
      params.push(q.search);
    }
    where += ` AND ${page.where}`;
    params.push(...page.whereParams);
    return { sql: `SELECT ${LIST_COLUMNS} FROM workflows WHERE ${where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params };
  }

  /** Ids of active workflows directly in the folder or below it. */
  async countInSubtree(workspaceId: string, path: string): Promise<number> {
    const r = await this.db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM workflows WHERE workspace_id = ? AND archived = 0 AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)`,
      [workspaceId, path, path.length + 1, path + '/'],
    );
    return Number(r?.n ?? 0);
  }

  /** Archives every active workflow in the folder or below it; returns how many. */
  async archiveSubtree(workspaceId: string, path: string, now: string): Promise<number> {
    const r = await this.db.run(
      `UPDATE workflows SET archived = 1, archived_at = ?, is_deployed = 0, deployed_at = NULL, active_version_id = NULL, updated_at = ?
       WHERE workspace_id = ? AND archived = 0 AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)`,
      [now, now, workspaceId, path, path.length + 1, path + '/'],
    );
    return r.changes;
  }

  /** Rewrites the folder of every workflow (active or archived) in a moved subtree. */
  async relocateSubtree(workspaceId: string, from: string, to: string, now: string): Promise<void> {
    await this.db.run(
      `UPDATE workflows SET folder_path = ? || substr(folder_path, ?), updated_at = ?
       WHERE workspace_id = ? AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)`,
      [to, from.length + 1, now, workspaceId, from, from.length + 1, from + '/'],
    );
  }

  /** For the runs issue: a finished run counts toward the workflow. */
  async recordRun(id: string, at: string, runs = 1): Promise<void> {
    await this.db.run('UPDATE workflows SET run_count = run_count + ?, last_run_at = ? WHERE id = ?', [runs, at, id]);
  }

  /** Plain access for plan checks in tests and benchmarks. */
  async explain(sql: string, params: SqlValue[]): Promise<string[]> {
    return this.db.dialect.explain(this.db, sql, params);
  }
}

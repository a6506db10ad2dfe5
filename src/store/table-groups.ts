// Workflow-group runs of table rows (one per row and group: the sidecar behind `runState`) and the dispatches
// that queue them.
import type { SqlExecutor, SqlValue } from './database.ts';
import { limitClause } from './keyset.ts';

export type RowRunStatus = 'pending' | 'queued' | 'running' | 'completed' | 'error' | 'cancelled' | 'skipped';

export interface RowRunRecord {
  tableId: string;
  rowId: string;
  groupId: string;
  status: RowRunStatus;
  runId: string | null;
  workflowId: string;
  dispatchId: string | null;
  error: string | null;
  runningBlockIds: string[];
  blockErrors: Record<string, string>;
  canceledAt: string | null;
  updatedAt: string;
  /** The provider cascade of an enrichment cell (JSON), null for workflow cells. */
  enrichmentDetails?: unknown;
}

interface RowRunRow {
  table_id: string;
  row_id: string;
  group_id: string;
  status: RowRunStatus;
  run_id: string | null;
  workflow_id: string;
  dispatch_id: string | null;
  error: string | null;
  running_block_ids: string;
  block_errors: string;
  canceled_at: string | null;
  updated_at: string;
  enrichment_details: string | null;
}

const toRowRun = (r: RowRunRow): RowRunRecord => ({
  tableId: r.table_id,
  rowId: r.row_id,
  groupId: r.group_id,
  status: r.status,
  runId: r.run_id,
  workflowId: r.workflow_id,
  dispatchId: r.dispatch_id,
  error: r.error,
  runningBlockIds: JSON.parse(r.running_block_ids),
  blockErrors: JSON.parse(r.block_errors),
  canceledAt: r.canceled_at,
  updatedAt: r.updated_at,
  enrichmentDetails: r.enrichment_details ? JSON.parse(r.enrichment_details) : null,
});

export type DispatchStatus = 'pending' | 'dispatching' | 'complete' | 'canceled';

export interface DispatchRecord {
  id: string;
  tableId: string;
  workspaceId: string;
  userId: string | null;
  status: DispatchStatus;
  mode: 'all' | 'incomplete' | 'new';
  scope: { groupIds: string[]; rowIds?: string[]; filtered?: boolean; excludeRowIds?: string[] };
  /** The raw predicate of a filtered dispatch. */
  filter: unknown;
  limit: { type: 'rows'; max: number } | null;
  processedCount: number;
  isManualRun: boolean;
  requestedAt: string;
  completedAt: string | null;
  canceledAt: string | null;
}

interface DispatchRow {
  id: string;
  table_id: string;
  workspace_id: string;
  user_id: string | null;
  status: DispatchStatus;
  mode: DispatchRecord['mode'];
  scope: string;
  filter: string | null;
  row_limit: string | null;
  processed_count: number;
  is_manual: number;
  requested_at: string;
  completed_at: string | null;
  canceled_at: string | null;
}

const toDispatch = (r: DispatchRow): DispatchRecord => ({
  id: r.id,
  tableId: r.table_id,
  workspaceId: r.workspace_id,
  userId: r.user_id,
  status: r.status,
  mode: r.mode,
  scope: JSON.parse(r.scope),
  filter: r.filter === null ? null : JSON.parse(r.filter),
  limit: r.row_limit === null ? null : JSON.parse(r.row_limit),
  processedCount: Number(r.processed_count),
  isManualRun: r.is_manual === 1,
  requestedAt: r.requested_at,
  completedAt: r.completed_at,
  canceledAt: r.canceled_at,
});

export class TableGroupRunRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async upsert(r: RowRunRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO table_row_runs (table_id, row_id, group_id, status, run_id, workflow_id, dispatch_id, error, running_block_ids, block_errors, canceled_at, updated_at, enrichment_details)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (table_id, row_id, group_id) DO UPDATE SET status = excluded.status, run_id = excluded.run_id, workflow_id = excluded.workflow_id,
         dispatch_id = excluded.dispatch_id, error = excluded.error, running_block_ids = excluded.running_block_ids, block_errors = excluded.block_errors,
         canceled_at = excluded.canceled_at, updated_at = excluded.updated_at, enrichment_details = excluded.enrichment_details`,
      [r.tableId, r.rowId, r.groupId, r.status, r.runId, r.workflowId, r.dispatchId, r.error, JSON.stringify(r.runningBlockIds), JSON.stringify(r.blockErrors), r.canceledAt, r.updatedAt, r.enrichmentDetails == null ? null : JSON.stringify(r.enrichmentDetails)],
    );
  }

  async get(tableId: string, rowId: string, groupId: string): Promise<RowRunRecord | undefined> {
    const r = await this.db.get<RowRunRow>('SELECT * FROM table_row_runs WHERE table_id = ? AND row_id = ? AND group_id = ?', [tableId, rowId, groupId]);
    return r && toRowRun(r);
  }

  async forRows(tableId: string, rowIds: string[]): Promise<RowRunRecord[]> {
    const out: RowRunRecord[] = [];
    for (let i = 0; i < rowIds.length; i += 500) {
      const chunk = rowIds.slice(i, i + 500);
      const rows = await this.db.all<RowRunRow>(`SELECT * FROM table_row_runs WHERE table_id = ? AND row_id IN (${chunk.map(() => '?').join(', ')})`, [tableId, ...chunk]);
      out.push(...rows.map(toRowRun));
    }
    return out;
  }

  /** Runs still waiting or executing, oldest first (every table). */
  async active(limit: number): Promise<RowRunRecord[]> {
    return (await this.db.all<RowRunRow>(`SELECT * FROM table_row_runs WHERE status IN ('queued', 'running') ORDER BY updated_at ${limitClause(limit)}`)).map(toRowRun);
  }

  async activeFor(tableId: string, rowId: string | null): Promise<RowRunRecord[]> {
    const params: SqlValue[] = [tableId];
    let where = "table_id = ? AND status IN ('queued', 'running')";
    if (rowId !== null) {
      where += ' AND row_id = ?';
      params.push(rowId);
    }
    return (await this.db.all<RowRunRow>(`SELECT * FROM table_row_runs WHERE ${where}`, params)).map(toRowRun);
  }

  async deleteGroup(tableId: string, groupId: string): Promise<void> {
    await this.db.run('DELETE FROM table_row_runs WHERE table_id = ? AND group_id = ?', [tableId, groupId]);
  }

  async insertDispatch(d: DispatchRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO table_dispatches (id, table_id, workspace_id, user_id, status, mode, scope, filter, row_limit, processed_count, is_manual, requested_at, completed_at, canceled_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [d.id, d.tableId, d.workspaceId, d.userId, d.status, d.mode, JSON.stringify(d.scope), d.filter === null ? null : JSON.stringify(d.filter),
        d.limit === null ? null : JSON.stringify(d.limit), d.processedCount, d.isManualRun ? 1 : 0, d.requestedAt, d.completedAt, d.canceledAt],
    );
  }

  async getDispatch(id: string): Promise<DispatchRecord | undefined> {
    const r = await this.db.get<DispatchRow>('SELECT * FROM table_dispatches WHERE id = ?', [id]);
    return r && toDispatch(r);
  }

  async listDispatches(tableId: string): Promise<DispatchRecord[]> {
    return (await this.db.all<DispatchRow>('SELECT * FROM table_dispatches WHERE table_id = ? ORDER BY requested_at DESC, id DESC LIMIT 100', [tableId])).map(toDispatch);
  }

  async openDispatches(): Promise<DispatchRecord[]> {
    return (await this.db.all<DispatchRow>("SELECT * FROM table_dispatches WHERE status IN ('pending', 'dispatching') ORDER BY requested_at")).map(toDispatch);
  }

  /** Moves a dispatch from one of `from` to `to`; a complete or canceled dispatch never changes again. */
  async moveDispatch(id: string, from: DispatchStatus[], to: DispatchStatus, at: string, processedCount?: number): Promise<boolean> {
    const stamp = to === 'complete' ? ', completed_at = ?' : to === 'canceled' ? ', canceled_at = ?' : '';
    const r = await this.db.run(
      `UPDATE table_dispatches SET status = ?, processed_count = COALESCE(?, processed_count)${stamp} WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})`,
      [to, processedCount ?? null, ...(stamp ? [at] : []), id, ...from],
    );
    return r.changes > 0;
  }
}

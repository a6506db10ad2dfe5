// Workflow runs: the durable record of every run and the async queue. Status changes are conditional UPDATEs
// (`... WHERE status = <expected>`), so a run moves only along queued → running → completed | failed |
// cancelled | paused (and paused → running | queued | cancelled when resumed or cancelled), and a terminal run
// never changes again, whoever else touches it.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type RunStatus = 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';
export type RunMode = 'sync' | 'async' | 'stream';
export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface RunRecord {
  /** Internal id (primary key): never shown; store calls take it. */
  id: string;
  /** The id callers see and address the run by (X-Run-Id, or the generated id); unique within the workspace. */
  key: string;
  workflowId: string;
  workspaceId: string;
  billingAccountId: string;
  deploymentVersionId: string | null;
  status: RunStatus;
  mode: RunMode;
  trigger: string;
  source: 'deployment' | 'manual';
  triggerBlockId: string | null;
  /** JSON */
  input: string;
  timeoutMs: number | null;
  triggeredBy: string | null;
  /** JSON {blockId, input} of a resume waiting in the queue. */
  resumeInput: string | null;
  /** JSON engine checkpoint of a paused run. Sensitive (secret-derived outputs): never sent over the API. */
  checkpoint: string | null;
  /** JSON pause points. */
  pause: string | null;
  resumedCount: number;
  output: string | null;
  blockOutputs: string | null;
  error: string | null;
  costTotal: number | null;
  blockExecutions: number;
  queuedAt: string;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  updatedAt: string;
}

interface Row {
  id: string;
  run_key: string;
  workflow_id: string;
  workspace_id: string;
  billing_account_id: string;
  deployment_version_id: string | null;
  status: RunStatus;
  mode: RunMode;
  trigger: string;
  source: 'deployment' | 'manual';
  trigger_block_id: string | null;
  input: string;
  timeout_ms: number | null;
  triggered_by: string | null;
  resume_input: string | null;
  checkpoint: string | null;
  pause: string | null;
  resumed_count: number;
  output: string | null;
  block_outputs: string | null;
  error: string | null;
  cost_total: number | null;
  block_executions: number;
  queued_at: string;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  updated_at: string;
}

const toRecord = (r: Row): RunRecord => ({
  id: r.id,
  // Every row has one (migration 44 filled in older rows); a query that forgets the column must not show the internal id.
  key: r.run_key as string,
  workflowId: r.workflow_id,
  workspaceId: r.workspace_id,
  billingAccountId: r.billing_account_id,
  deploymentVersionId: r.deployment_version_id,
  status: r.status,
  mode: r.mode,
  trigger: r.trigger,
  source: r.source,
  triggerBlockId: r.trigger_block_id,
  input: r.input,
  timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
  triggeredBy: r.triggered_by,
  resumeInput: r.resume_input,
  checkpoint: r.checkpoint,
  pause: r.pause,
  resumedCount: Number(r.resumed_count),
  output: r.output,
  blockOutputs: r.block_outputs,
  error: r.error,
  costTotal: r.cost_total === null ? null : Number(r.cost_total),
  blockExecutions: Number(r.block_executions),
  queuedAt: r.queued_at,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
  updatedAt: r.updated_at,
});

/** A run to insert: `key` defaults to the internal id (a run nobody named). */
export type NewRun = Omit<RunRecord, 'key'> & { key?: string };

/** What a run's end (or pause) writes. */
export interface RunOutcome {
  status: Exclude<RunStatus, 'queued' | 'running'>;
  output: string | null;
  blockOutputs: string | null;
  error: string | null;
  checkpoint: string | null;
  pause: string | null;
  resumedCount: number;
  costTotal: number;
  blockExecutions: number;
  endedAt: string;
  durationMs: number;
}

export interface RunListQuery {
  workflowId: string;
  status: RunStatus | null;
  trigger: string | null;
  startDate: string | null;
  endDate: string | null;
  order: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

export class WorkflowRunRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(r: NewRun): Promise<void> {
    await this.db.run(
      `INSERT INTO workflow_runs (id, run_key, workflow_id, workspace_id, billing_account_id, deployment_version_id, status, mode, trigger, source,
         trigger_block_id, input, timeout_ms, triggered_by, resume_input, checkpoint, pause, resumed_count, output, block_outputs, error,
         cost_total, block_executions, queued_at, started_at, ended_at, duration_ms, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        r.id, r.key ?? r.id, r.workflowId, r.workspaceId, r.billingAccountId, r.deploymentVersionId, r.status, r.mode, r.trigger, r.source,
        r.triggerBlockId, r.input, r.timeoutMs, r.triggeredBy, r.resumeInput, r.checkpoint, r.pause, r.resumedCount, r.output,
        r.blockOutputs, r.error, r.costTotal, r.blockExecutions, r.queuedAt, r.startedAt, r.endedAt, r.durationMs, r.updatedAt,
      ],
    );
  }

  async exists(id: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM workflow_runs WHERE id = ?', [id])) !== undefined;
  }

  async get(id: string): Promise<RunRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM workflow_runs WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  /** Whether the workspace already has a run with this caller-visible id. */
  async keyTaken(workspaceId: string, key: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM workflow_runs WHERE workspace_id = ? AND run_key = ?', [workspaceId, key])) !== undefined;
  }

  /** The run of this workflow that callers know by `key`. */
  async getByKey(workflowId: string, key: string): Promise<RunRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM workflow_runs WHERE workflow_id = ? AND run_key = ?', [workflowId, key]);
    return r && toRecord(r);
  }

  /** Every run callers know by `key`, one per workspace at most, newest first; the caller picks what it may see. */
  async findByKey(key: string): Promise<RunRecord[]> {
    const rows = await this.db.all<Row>('SELECT * FROM workflow_runs WHERE run_key = ? ORDER BY queued_at DESC, id', [key]);
    return rows.map(toRecord);
  }

  /** queued → running for the oldest queued run; undefined when the queue is empty. */
  async claimNext(at: string): Promise<RunRecord | undefined> {
    const next = await this.db.get<{ id: string }>("SELECT id FROM workflow_runs WHERE status = 'queued' ORDER BY queued_at, id LIMIT 1");
    if (!next) return undefined;
    const r = await this.db.get<Row>(
      "UPDATE workflow_runs SET status = 'running', started_at = COALESCE(started_at, ?), updated_at = ? WHERE id = ? AND status = 'queued' RETURNING *",
      [at, at, next.id],
    );
    return r && toRecord(r);
  }

  /** Moves the run from one status to another only if it is still in `from`; true when it moved. */
  async transition(id: string, from: RunStatus, to: RunStatus, at: string, extra: { resumeInput?: string | null; startedAt?: string } = {}): Promise<boolean> {
    const sets = ['status = ?', 'updated_at = ?'];
    const params: SqlValue[] = [to, at];
    if (extra.resumeInput !== undefined) {
      sets.push('resume_input = ?');
      params.push(extra.resumeInput);
    }
    if (extra.startedAt !== undefined) {
      sets.push('started_at = COALESCE(started_at, ?)');
      params.push(extra.startedAt);
    }
    const r = await this.db.run(`UPDATE workflow_runs SET ${sets.join(', ')} WHERE id = ? AND status = ?`, [...params, id, from]);
    return r.changes === 1;
  }

  /** running → the outcome; false (nothing written) when the run is no longer running. */
  async finish(id: string, o: RunOutcome): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE workflow_runs SET status = ?, output = ?, block_outputs = ?, error = ?, checkpoint = ?, pause = ?, resumed_count = ?, cost_total = ?,
         block_executions = ?, ended_at = ?, duration_ms = ?, resume_input = NULL, updated_at = ?
       WHERE id = ? AND status = 'running'`,
      [o.status, o.output, o.blockOutputs, o.error, o.checkpoint, o.pause, o.resumedCount, o.costTotal, o.blockExecutions, o.endedAt, o.durationMs, o.endedAt, id],
    );
    return r.changes === 1;
  }

  /** A run that will not run (any more): `from` → cancelled or failed with this error; false when not in `from`. */
  async stop(id: string, from: RunStatus, to: 'cancelled' | 'failed', error: string, at: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE workflow_runs SET status = ?, error = ?, checkpoint = NULL, resume_input = NULL, ended_at = ?,
         duration_ms = ${this.db.dialect.millisBetween('?', 'COALESCE(started_at, queued_at)')}, updated_at = ?
       WHERE id = ? AND status = ?`,
      [to, error, at, at, at, id, from],
    );
    return r.changes === 1;
  }

  /** Every run left running (by a process that died): ids, so their logs can follow. */
  async runningIds(): Promise<string[]> {
    return (await this.db.all<{ id: string }>("SELECT id FROM workflow_runs WHERE status = 'running'")).map((r) => r.id);
  }

  async countQueuedBefore(queuedAt: string, id: string): Promise<number> {
    const r = await this.db.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM workflow_runs WHERE status = 'queued' AND (queued_at < ? OR (queued_at = ? AND id < ?))",
      [queuedAt, queuedAt, id],
    );
    return Number(r?.n ?? 0);
  }

  async countByStatus(status: RunStatus): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM workflow_runs WHERE status = ?', [status]);
    return Number(r?.n ?? 0);
  }

  async list(q: RunListQuery): Promise<RunRecord[]> {
    const page = keyset({ column: 'queued_at', idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workflowId];
    let where = 'workflow_id = ?';
    if (q.status) {
      where += ' AND status = ?';
      params.push(q.status);
    }
    if (q.trigger) {
      where += ' AND trigger = ?';
      params.push(q.trigger);
    }
    if (q.startDate) {
      where += ' AND queued_at >= ?';
      params.push(q.startDate);
    }
    if (q.endDate) {
      where += ' AND queued_at <= ?';
      params.push(q.endDate);
    }
    where += ` AND ${page.where}`;
    params.push(...page.whereParams);
    const rows = await this.db.all<Row>(
      `SELECT id, run_key, workflow_id, workspace_id, billing_account_id, deployment_version_id, status, mode, trigger, source, trigger_block_id, '' AS input,
         timeout_ms, triggered_by, NULL AS resume_input, NULL AS checkpoint, NULL AS pause, resumed_count, NULL AS output, NULL AS block_outputs,
         error, cost_total, block_executions, queued_at, started_at, ended_at, duration_ms, updated_at
       FROM workflow_runs WHERE ${where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      params,
    );
    return rows.map(toRecord);
  }
}

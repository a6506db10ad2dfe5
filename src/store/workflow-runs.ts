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
  /** Who executes the run while it is `running` (a process's lease owner id), and until when unless renewed. */
  leaseOwner: string | null;
  leaseUntil: string | null;
  /** Executions of the current segment started so far (a claim or reclaim counts one; a graceful release gives it back). */
  attempts: number;
  /** When a cancel was asked for while the run was running; the lease holder sees it at its next renewal. */
  cancelRequestedAt: string | null;
  /** JSON W3C trace context (traceparent, tracestate) of the request that started the run; null when untraced. */
  traceContext?: string | null;
}

/** Who holds a running run: the owner and the attempt it claimed (a later reclaim, even by the same process, is another holder). */
export interface RunHolder {
  owner: string;
  attempt: number;
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
  lease_owner: string | null;
  lease_until: string | null;
  attempts: number;
  cancel_requested_at: string | null;
  trace_context: string | null;
}

/**
 * Every column, named: a statement with `*` is never prepared on Postgres (./postgres.ts), and the queue's
 * claims and completions run often enough that planning them each time would cost more than running them.
 */
const COLUMNS = `id, run_key, workflow_id, workspace_id, billing_account_id, deployment_version_id, status, mode, trigger, source,
  trigger_block_id, input, timeout_ms, triggered_by, resume_input, checkpoint, pause, resumed_count, output, block_outputs, error,
  cost_total, block_executions, queued_at, started_at, ended_at, duration_ms, updated_at, lease_owner, lease_until, attempts, cancel_requested_at, trace_context`;

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
  leaseOwner: r.lease_owner ?? null,
  leaseUntil: r.lease_until ?? null,
  attempts: Number(r.attempts ?? 0),
  cancelRequestedAt: r.cancel_requested_at ?? null,
  traceContext: r.trace_context ?? null,
});

/** A run to insert: `key` defaults to the internal id (a run nobody named); no lease unless given. */
export type NewRun = Omit<RunRecord, 'key' | 'leaseOwner' | 'leaseUntil' | 'attempts' | 'cancelRequestedAt'> &
  Partial<Pick<RunRecord, 'leaseOwner' | 'leaseUntil' | 'attempts' | 'cancelRequestedAt'>> & { key?: string };

/** What renewing a run's lease found: still held (and whether a cancel was asked for), or lost. */
export type LeaseRenewal = { held: true; cancelRequested: boolean } | { held: false };

/** Where a reclaimable run came from: the queue, or `running` under a lease that expired (its process died). */
export interface ClaimCandidate {
  id: string;
  status: 'queued' | 'running';
  mode: RunMode;
  attempts: number;
  cancelRequested: boolean;
}

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

  /** Queued runs and when the oldest was queued (metrics); one lookup on the partial queue index. */
  async queueStats(): Promise<{ depth: number; oldestQueuedAt: string | null }> {
    const r = await this.db.get<{ depth: number; oldest: string | null }>("SELECT COUNT(*) AS depth, MIN(queued_at) AS oldest FROM workflow_runs WHERE status = 'queued'");
    return { depth: Number(r?.depth ?? 0), oldestQueuedAt: r?.oldest ?? null };
  }

  /** One workspace's queue (the console's operations page): its queued and running runs and its oldest queued run, on the index workflow_runs_by_workspace_status (migration 0270). */
  async queueOf(workspaceId: string): Promise<{ queued: number; running: number; oldestQueuedAt: string | null }> {
    const rows = await this.db.all<{ status: string; n: number; oldest: string | null }>(
      `SELECT status, COUNT(*) AS n, MIN(queued_at) AS oldest FROM workflow_runs
       WHERE workspace_id = ? AND status IN ('queued', 'running') GROUP BY status`,
      [workspaceId],
    );
    const of = (status: string) => rows.find((r) => r.status === status);
    return { queued: Number(of('queued')?.n ?? 0), running: Number(of('running')?.n ?? 0), oldestQueuedAt: of('queued')?.oldest ?? null };
  }

  async insert(r: NewRun): Promise<void> {
    await this.db.run(
      `INSERT INTO workflow_runs (id, run_key, workflow_id, workspace_id, billing_account_id, deployment_version_id, status, mode, trigger, source,
         trigger_block_id, input, timeout_ms, triggered_by, resume_input, checkpoint, pause, resumed_count, output, block_outputs, error,
         cost_total, block_executions, queued_at, started_at, ended_at, duration_ms, updated_at, lease_owner, lease_until, attempts, cancel_requested_at, trace_context)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        r.id, r.key ?? r.id, r.workflowId, r.workspaceId, r.billingAccountId, r.deploymentVersionId, r.status, r.mode, r.trigger, r.source,
        r.triggerBlockId, r.input, r.timeoutMs, r.triggeredBy, r.resumeInput, r.checkpoint, r.pause, r.resumedCount, r.output,
        r.blockOutputs, r.error, r.costTotal, r.blockExecutions, r.queuedAt, r.startedAt, r.endedAt, r.durationMs, r.updatedAt,
        r.leaseOwner ?? null, r.leaseUntil ?? null, r.attempts ?? 0, r.cancelRequestedAt ?? null, r.traceContext ?? null,
      ],
    );
  }

  async exists(id: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM workflow_runs WHERE id = ?', [id])) !== undefined;
  }

  async get(id: string): Promise<RunRecord | undefined> {
    const r = await this.db.get<Row>(`SELECT ${COLUMNS} FROM workflow_runs WHERE id = ?`, [id]);
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

  /**
   * The next run a worker may take: a `running` run whose lease expired before `at` (its process died; found
   * first, since it waited longest), else the oldest queued run. `executingHere`: runs this process is executing
   * (a renewal that ran late must not make it reclaim its own run). Nothing is changed: take it with `claim`.
   */
  async nextClaimable(at: string, executingHere: string[] = []): Promise<ClaimCandidate | undefined> {
    const expired = await this.nextExpired(at, executingHere);
    if (expired) return expired;
    const next = await this.db.get<{ id: string; mode: RunMode; attempts: number; cancel_requested_at: string | null }>(
      "SELECT id, mode, attempts, cancel_requested_at FROM workflow_runs WHERE status = 'queued' ORDER BY queued_at, id LIMIT 1",
    );
    return next && { id: next.id, status: 'queued', mode: next.mode, attempts: Number(next.attempts), cancelRequested: next.cancel_requested_at !== null };
  }

  /** The `running` run whose lease expired longest before `at` (its process died), but for `executingHere`; nothing is changed. */
  async nextExpired(at: string, executingHere: string[] = []): Promise<ClaimCandidate | undefined> {
    const skip = executingHere.length ? ` AND id NOT IN (${executingHere.map(() => '?').join(', ')})` : '';
    const r = await this.db.get<{ id: string; mode: RunMode; attempts: number; cancel_requested_at: string | null }>(
      `SELECT id, mode, attempts, cancel_requested_at FROM workflow_runs WHERE status = 'running' AND (lease_until IS NULL OR lease_until < ?)${skip} ORDER BY lease_until LIMIT 1`,
      [at, ...executingHere],
    );
    return r && { id: r.id, status: 'running', mode: r.mode, attempts: Number(r.attempts), cancelRequested: r.cancel_requested_at !== null };
  }

  /**
   * Takes up to `limit` of the oldest queued runs under one lease of `owner`, in one statement: queued →
   * running, attempt + 1, oldest first. On Postgres the runs are picked with SKIP LOCKED, so claimers on every
   * server take disjoint runs without waiting on one another; the outer `status = 'queued'` takes a run only
   * if it is still queued once its row is locked (a cancel that committed first wins). The pick is a
   * MATERIALIZED CTE: written as `id IN (SELECT … LIMIT n)` Postgres may run the subquery again for each
   * row it updates, and then takes more than n runs.
   */
  async claimQueued(owner: string, leaseUntil: string, at: string, limit: number): Promise<RunRecord[]> {
    const rows = await this.db.all<Row>(
      `WITH picked AS MATERIALIZED (SELECT id FROM workflow_runs WHERE status = 'queued' ORDER BY queued_at, id ${limitClause(limit)}${this.db.dialect.skipLocked})
       UPDATE workflow_runs SET status = 'running', started_at = COALESCE(started_at, ?), updated_at = ?, lease_owner = ?, lease_until = ?, attempts = attempts + 1
       WHERE status = 'queued' AND id IN (SELECT id FROM picked)
       RETURNING ${COLUMNS}`,
      [at, at, owner, leaseUntil],
    );
    return rows.map(toRecord).sort((a, b) => (a.queuedAt < b.queuedAt ? -1 : a.queuedAt > b.queuedAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Takes the candidate under a new lease (the next attempt, unless `countAttempt` is false: taken only to be
   * settled): queued → running, or a running run whose lease expired before `at`. Undefined when another
   * worker took it first.
   */
  async claim(candidate: Pick<ClaimCandidate, 'id' | 'status'>, owner: string, leaseUntil: string, at: string, options: { countAttempt?: boolean } = {}): Promise<RunRecord | undefined> {
    const expired = candidate.status === 'running' ? ' AND (lease_until IS NULL OR lease_until < ?)' : '';
    const attempts = options.countAttempt === false ? 'attempts' : 'attempts + 1';
    const r = await this.db.get<Row>(
      `UPDATE workflow_runs SET status = 'running', started_at = COALESCE(started_at, ?), updated_at = ?, lease_owner = ?, lease_until = ?, attempts = ${attempts}
       WHERE id = ? AND status = ?${expired} RETURNING ${COLUMNS}`,
      [at, at, owner, leaseUntil, candidate.id, candidate.status, ...(expired ? [at] : [])],
    );
    return r && toRecord(r);
  }

  /**
   * Extends the holder's lease; reports a cancel asked for meanwhile. Lost when the run is no longer running
   * under this holder (settled, or reclaimed after the lease expired).
   */
  async renewLease(id: string, holder: RunHolder, leaseUntil: string): Promise<LeaseRenewal> {
    const r = await this.db.get<{ cancel_requested_at: string | null }>(
      "UPDATE workflow_runs SET lease_until = ? WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ? RETURNING cancel_requested_at",
      [leaseUntil, id, holder.owner, holder.attempt],
    );
    return r ? { held: true, cancelRequested: r.cancel_requested_at !== null } : { held: false };
  }

  /** Records that a cancel was asked for a running run; false when it is not running. */
  async requestCancel(id: string, at: string): Promise<boolean> {
    const r = await this.db.run("UPDATE workflow_runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?) WHERE id = ? AND status = 'running'", [at, id]);
    return r.changes === 1;
  }

  /** A holder stopped gracefully before the run finished: running → queued for the next claim, the attempt given back. */
  async release(id: string, holder: RunHolder, at: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE workflow_runs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = ?
       WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?`,
      [at, id, holder.owner, holder.attempt],
    );
    return r.changes === 1;
  }

  /** Moves the run from one status to another only if it is still in `from`; true when it moved. */
  async transition(id: string, from: RunStatus, to: RunStatus, at: string, extra: { resumeInput?: string | null; startedAt?: string; lease?: { owner: string; until: string } } = {}): Promise<boolean> {
    const sets = ['status = ?', 'updated_at = ?'];
    const params: SqlValue[] = [to, at];
    // A new segment starts: executed here under a fresh lease (attempt 1), or queued for a claim (attempt 0).
    if (extra.lease) {
      sets.push('lease_owner = ?', 'lease_until = ?', 'attempts = 1', 'cancel_requested_at = NULL');
      params.push(extra.lease.owner, extra.lease.until);
    } else if (to === 'queued') {
      sets.push('lease_owner = NULL', 'lease_until = NULL', 'attempts = 0', 'cancel_requested_at = NULL');
    }
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

  /**
   * running → the outcome, only while `holder` still holds the run; false (nothing written) when the run is no
   * longer running or another holder took it over after this one's lease expired.
   */
  async finish(id: string, o: RunOutcome, holder: RunHolder): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE workflow_runs SET status = ?, output = ?, block_outputs = ?, error = ?, checkpoint = ?, pause = ?, resumed_count = ?, cost_total = ?,
         block_executions = ?, ended_at = ?, duration_ms = ?, resume_input = NULL, updated_at = ?, lease_owner = NULL, lease_until = NULL
       WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?`,
      [o.status, o.output, o.blockOutputs, o.error, o.checkpoint, o.pause, o.resumedCount, o.costTotal, o.blockExecutions, o.endedAt, o.durationMs, o.endedAt, id, holder.owner, holder.attempt],
    );
    return r.changes === 1;
  }

  /** A run that will not run (any more): `from` → cancelled or failed with this error; false when not in `from`. */
  async stop(id: string, from: RunStatus, to: 'cancelled' | 'failed', error: string, at: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE workflow_runs SET status = ?, error = ?, checkpoint = NULL, resume_input = NULL, ended_at = ?,
         duration_ms = ${this.db.dialect.millisBetween('?', 'COALESCE(started_at, queued_at)')}, updated_at = ?,
         lease_owner = NULL, lease_until = NULL
       WHERE id = ? AND status = ?`,
      [to, error, at, at, at, id, from],
    );
    return r.changes === 1;
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

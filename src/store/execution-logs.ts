// Execution logs: one row per run, written when the run is accepted and brought up to date at each status
// change, in the same transaction as the run. Trace spans, input and output are stored as JSON, already
// redacted by the engine.
import type { SqlExecutor, SqlValue } from './database.ts';
import type { SqlDialect } from './dialect.ts';
import { keyset, limitClause } from './keyset.ts';

export type LogStatus = 'pending' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';

export interface ExecutionLogRecord {
  /** The run's internal id (store calls take it). */
  runId: string;
  /** The run id callers see (RunRecord.key); defaults to runId. */
  runKey?: string;
  workspaceId: string;
  workflowId: string;
  deploymentVersionId: string | null;
  trigger: string;
  level: 'info' | 'error';
  status: LogStatus;
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  costTotal: number | null;
  /** JSON CostSummary */
  cost: string | null;
  hasHandledErrors: boolean;
  errorMessage: string | null;
  /** Comma-separated models used by agent blocks. */
  models: string | null;
  executedBy: string | null;
  workflowInput: string | null;
  finalOutput: string | null;
  traceSpans: string | null;
  createdAt: string;
}

/** A log with what the views join in: the workflow and the user who ran it. */
export interface ExecutionLogView extends ExecutionLogRecord {
  workflowName: string | null;
  workflowDescription: string | null;
  workflowFolderPath: string | null;
  workflowCreatedAt: string | null;
  workflowUpdatedAt: string | null;
  workflowArchived: boolean;
  workflowOwnerEmail: string | null;
  executedByEmail: string | null;
}

interface Row {
  run_id: string;
  workspace_id: string;
  workflow_id: string;
  deployment_version_id: string | null;
  trigger: string;
  level: 'info' | 'error';
  status: LogStatus;
  started_at: string;
  ended_at: string | null;
  duration_ms: number | null;
  cost_total: number | null;
  cost: string | null;
  has_handled_errors: number;
  error_message: string | null;
  models: string | null;
  executed_by: string | null;
  workflow_input: string | null;
  final_output: string | null;
  trace_spans: string | null;
  created_at: string;
  w_name: string | null;
  w_description: string | null;
  w_folder_path: string | null;
  w_created_at: string | null;
  w_updated_at: string | null;
  w_archived: number | null;
  w_owner_email: string | null;
  executed_by_email: string | null;
}

const toView = (r: Row): ExecutionLogView => ({
  runId: r.run_id,
  workspaceId: r.workspace_id,
  workflowId: r.workflow_id,
  deploymentVersionId: r.deployment_version_id,
  trigger: r.trigger,
  level: r.level,
  status: r.status,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
  costTotal: r.cost_total === null ? null : Number(r.cost_total),
  cost: r.cost,
  hasHandledErrors: r.has_handled_errors === 1,
  errorMessage: r.error_message,
  models: r.models,
  executedBy: r.executed_by,
  workflowInput: r.workflow_input,
  finalOutput: r.final_output,
  traceSpans: r.trace_spans,
  createdAt: r.created_at,
  workflowName: r.w_name,
  workflowDescription: r.w_description,
  workflowFolderPath: r.w_folder_path,
  workflowCreatedAt: r.w_created_at,
  workflowUpdatedAt: r.w_updated_at,
  workflowArchived: r.w_archived === 1,
  workflowOwnerEmail: r.w_owner_email,
  executedByEmail: r.executed_by_email,
});

/** Sort columns; unsettled runs (no duration or cost yet) sort as -1: first ascending, last descending. */
export const LOG_SORT_COLUMNS = {
  startedAt: 'l.started_at',
  durationMs: 'COALESCE(l.duration_ms, -1)',
  cost: 'COALESCE(l.cost_total, -1)',
  status: 'l.status',
} as const;

export interface LogFilter {
  workspaceId: string;
  workflowIds: string[] | null;
  /** Canonical folder paths; a workflow in the folder or below it matches. */
  folderPaths: string[] | null;
  triggers: string[] | null;
  level: 'info' | 'error' | null;
  includeHandledErrors: boolean;
  statuses: string[] | null;
  startDate: string | null;
  endDate: string | null;
  minDurationMs: number | null;
  maxDurationMs: number | null;
  minCost: number | null;
  maxCost: number | null;
  model: string | null;
  workflowName: string | null;
  search: string | null;
  runId: string | null;
}

function whereOf(d: SqlDialect, f: LogFilter): { where: string; params: SqlValue[] } {
  const clauses = ['l.workspace_id = ?'];
  const params: SqlValue[] = [f.workspaceId];
  const inList = (column: string, values: string[]) => {
    clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };
  if (f.workflowIds) inList('l.workflow_id', f.workflowIds);
  if (f.folderPaths) {
    const parts = f.folderPaths.map((p) => {
      if (p === '/') return '1 = 1';
      params.push(p, p.length + 1, `${p}/`);
      return '(w.folder_path = ? OR substr(w.folder_path, 1, ?) = ?)';
    });
    clauses.push(`(${parts.join(' OR ')})`);
  }
  if (f.triggers) inList('l.trigger', f.triggers);
  if (f.level === 'error') clauses.push(f.includeHandledErrors ? "(l.level = 'error' OR l.has_handled_errors = 1)" : "l.level = 'error'");
  if (f.level === 'info') clauses.push("l.level = 'info'");
  if (f.statuses) inList('l.status', f.statuses);
  const cmp = (sql: string, v: SqlValue | null) => {
    if (v === null) return;
    clauses.push(sql);
    params.push(v);
  };
  cmp('l.started_at >= ?', f.startDate);
  cmp('l.started_at <= ?', f.endDate);
  cmp('l.duration_ms >= ?', f.minDurationMs);
  cmp('l.duration_ms <= ?', f.maxDurationMs);
  cmp('l.cost_total >= ?', f.minCost);
  cmp('l.cost_total <= ?', f.maxCost);
  cmp(d.contains("',' || COALESCE(l.models, '') || ','", "',' || ? || ','"), f.model);
  cmp(d.contains('lower(w.name)', 'lower(?)'), f.workflowName);
  if (f.search !== null) {
    clauses.push(`(${d.contains('lower(w.name)', 'lower(?)')} OR ${d.contains('lower(l.run_key)', 'lower(?)')} OR ${d.contains("lower(COALESCE(l.error_message, ''))", 'lower(?)')})`);
    params.push(f.search, f.search, f.search);
  }
  cmp('l.run_key = ?', f.runId);
  return { where: clauses.join(' AND '), params };
}

// Views show the caller-visible run id (run_key) as the run id; list pages are per workspace, where it is unique.
const VIEW_COLUMNS = (full: boolean) => `COALESCE(l.run_key, l.run_id) AS run_id, l.workspace_id, l.workflow_id, l.deployment_version_id, l.trigger, l.level, l.status, l.started_at,
  l.ended_at, l.duration_ms, l.cost_total, l.cost, l.has_handled_errors, l.error_message, l.models, l.executed_by,
  ${full ? 'l.workflow_input, l.final_output, l.trace_spans' : 'NULL AS workflow_input, NULL AS final_output, NULL AS trace_spans'}, l.created_at,
  w.name AS w_name, w.description AS w_description, w.folder_path AS w_folder_path, w.created_at AS w_created_at, w.updated_at AS w_updated_at,
  w.archived AS w_archived, owner.email AS w_owner_email, runner.email AS executed_by_email`;

const VIEW_FROM = `execution_logs l LEFT JOIN workflows w ON w.id = l.workflow_id LEFT JOIN users owner ON owner.id = w.created_by
  LEFT JOIN users runner ON runner.id = l.executed_by`;

export class ExecutionLogRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(l: ExecutionLogRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO execution_logs (run_id, run_key, workspace_id, workflow_id, deployment_version_id, trigger, level, status, started_at, ended_at, duration_ms,
         cost_total, cost, has_handled_errors, error_message, models, executed_by, workflow_input, final_output, trace_spans, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        l.runId, l.runKey ?? l.runId, l.workspaceId, l.workflowId, l.deploymentVersionId, l.trigger, l.level, l.status, l.startedAt, l.endedAt, l.durationMs,
        l.costTotal, l.cost, l.hasHandledErrors ? 1 : 0, l.errorMessage, l.models, l.executedBy, l.workflowInput, l.finalOutput, l.traceSpans,
        l.createdAt,
      ],
    );
  }

  async setStatus(runId: string, status: LogStatus, startedAt?: string): Promise<void> {
    if (startedAt) await this.db.run('UPDATE execution_logs SET status = ?, started_at = ? WHERE run_id = ?', [status, startedAt, runId]);
    else await this.db.run('UPDATE execution_logs SET status = ? WHERE run_id = ?', [status, runId]);
  }

  /** setStatus for several runs at once (a batch the queue claimed), all started at `startedAt`. */
  async setStatusOf(runIds: readonly string[], status: LogStatus, startedAt: string): Promise<void> {
    if (runIds.length === 0) return;
    await this.db.run(`UPDATE execution_logs SET status = ?, started_at = ? WHERE run_id IN (${runIds.map(() => '?').join(', ')})`, [status, startedAt, ...runIds]);
  }

  /** The run was stopped from outside (cancelled, or failed because its process died). */
  async stop(runId: string, status: 'cancelled' | 'failed', endedAt: string, errorMessage: string): Promise<void> {
    await this.db.run(
      `UPDATE execution_logs SET status = ?, level = ?, ended_at = ?, error_message = ?,
         duration_ms = ${this.db.dialect.millisBetween('?', 'started_at')} WHERE run_id = ?`,
      [status, status === 'failed' ? 'error' : 'info', endedAt, errorMessage, endedAt, runId],
    );
  }

  /** The run ended (or paused): everything it produced. */
  async complete(
    runId: string,
    l: Pick<ExecutionLogRecord, 'status' | 'level' | 'endedAt' | 'durationMs' | 'costTotal' | 'cost' | 'hasHandledErrors' | 'errorMessage' | 'models' | 'finalOutput' | 'traceSpans'>,
  ): Promise<void> {
    await this.db.run(
      `UPDATE execution_logs SET status = ?, level = ?, ended_at = ?, duration_ms = ?, cost_total = ?, cost = ?, has_handled_errors = ?,
         error_message = ?, models = ?, final_output = ?, trace_spans = ? WHERE run_id = ?`,
      [l.status, l.level, l.endedAt, l.durationMs, l.costTotal, l.cost, l.hasHandledErrors ? 1 : 0, l.errorMessage, l.models, l.finalOutput, l.traceSpans, runId],
    );
  }

  /** By the run's internal id. */
  async get(runId: string): Promise<ExecutionLogView | undefined> {
    const r = await this.db.get<Row>(`SELECT ${VIEW_COLUMNS(true)} FROM ${VIEW_FROM} WHERE l.run_id = ?`, [runId]);
    return r && toView(r);
  }

  /** Every log of a run callers know by `key` (one per workspace at most), newest first. */
  async findByKey(key: string): Promise<ExecutionLogView[]> {
    const rows = await this.db.all<Row>(`SELECT ${VIEW_COLUMNS(true)} FROM ${VIEW_FROM} WHERE l.run_key = ? ORDER BY l.started_at DESC, l.run_id`, [key]);
    return rows.map(toView);
  }

  async list(
    f: LogFilter,
    sort: { by: keyof typeof LOG_SORT_COLUMNS; order: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number },
    withDetail: { traceSpans: boolean; finalOutput: boolean },
  ): Promise<(ExecutionLogView & { sortValue: SqlValue })[]> {
    const { where, params } = whereOf(this.db.dialect, f);
    const column = LOG_SORT_COLUMNS[sort.by];
    const page = keyset({ column, idColumn: 'l.run_key', order: sort.order, after: sort.after, limit: sort.limit });
    let columns = VIEW_COLUMNS(false);
    if (withDetail.traceSpans) columns = columns.replace('NULL AS trace_spans', 'l.trace_spans');
    if (withDetail.finalOutput) columns = columns.replace('NULL AS final_output', 'l.final_output');
    const rows = await this.db.all<Row & { sort_value: SqlValue }>(
      `SELECT ${columns}, ${column} AS sort_value FROM ${VIEW_FROM} WHERE ${where} AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(sort.limit)}`,
      [...params, ...page.whereParams],
    );
    return rows.map((r) => ({ ...toView(r), sortValue: r.sort_value }));
  }

  /** Counts, successes and summed durations per workflow and time bucket of `segmentMs` from `startMs`. */
  async buckets(f: LogFilter, startMs: number, segmentMs: number): Promise<{ workflowId: string; workflowName: string | null; bucket: number; total: number; successful: number; durationSum: number; durationCount: number; errors: number; handled: number }[]> {
    const { where, params } = whereOf(this.db.dialect, f);
    const rows = await this.db.all<Record<string, SqlValue>>(
      `SELECT l.workflow_id AS workflow_id, w.name AS workflow_name,
         ${this.db.dialect.toInteger(`(${this.db.dialect.epochMillis('l.started_at')} - ?) / ?`)} AS bucket,
         COUNT(*) AS total, SUM(CASE WHEN l.status = 'completed' THEN 1 ELSE 0 END) AS successful, SUM(COALESCE(l.duration_ms, 0)) AS duration_sum,
         SUM(CASE WHEN l.duration_ms IS NOT NULL THEN 1 ELSE 0 END) AS duration_count, SUM(CASE WHEN l.level = 'error' THEN 1 ELSE 0 END) AS errors,
         SUM(l.has_handled_errors) AS handled
       FROM ${VIEW_FROM} WHERE ${where} GROUP BY l.workflow_id, w.name, bucket`,
      [startMs, segmentMs, ...params],
    );
    return rows.map((r) => ({
      workflowId: String(r.workflow_id),
      workflowName: r.workflow_name === null ? null : String(r.workflow_name),
      bucket: Number(r.bucket),
      total: Number(r.total),
      successful: Number(r.successful),
      durationSum: Number(r.duration_sum),
      durationCount: Number(r.duration_count),
      errors: Number(r.errors),
      handled: Number(r.handled),
    }));
  }
}

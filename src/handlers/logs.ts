// Handlers for the Logs operations: the execution log of every run (list, one with its full trace, and
// statistics over a window). Reads only; they record no audit events.
import type { Handler, OperationInputs } from '../../generated/handlers.ts';
import { invalidField } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import type { LogFilter } from '../store/execution-logs.ts';
import { parseFolderPath } from '../workflows/folders.ts';
import { logDetailView, logEntryView } from '../runs/views.ts';
import { firstReachable } from './run-support.ts';

const LOG_STATUSES = new Set(['pending', 'running', 'paused', 'redacting', 'completed', 'failed', 'cancelled']);

/** A comma-separated filter: null when absent; an empty entry or too many entries is a 400. */
function list(raw: string | undefined, name: string, max: number): string[] | null {
  if (raw === undefined) return null;
  const items = raw.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw invalidField(['query', name], `${name} has an empty entry.`);
  if (items.length > max) throw invalidField(['query', name], `${name} has more than ${max} entries.`);
  return items;
}

const utc = (v: string | undefined) => (v === undefined ? null : new Date(v).toISOString());

type FilterQuery = Pick<OperationInputs['listLogs']['query'], 'workflowIds' | 'folderPaths' | 'triggers' | 'level' | 'includeHandledErrors' | 'startDate' | 'endDate'>;

function baseFilter(workspaceId: string, q: FilterQuery): LogFilter {
  const folderPaths = list(q.folderPaths, 'folderPaths', 100)?.map((p) => parseFolderPath(p.startsWith('/') ? p : `/${p}`, ['query', 'folderPaths'])) ?? null;
  const triggers = list(q.triggers, 'triggers', 100);
  return {
    workspaceId,
    workflowIds: list(q.workflowIds, 'workflowIds', 200),
    folderPaths,
    triggers: triggers?.includes('all') ? null : triggers,
    level: q.level ?? null,
    includeHandledErrors: q.includeHandledErrors === true,
    statuses: null,
    startDate: utc(q.startDate),
    endDate: utc(q.endDate),
    minDurationMs: null,
    maxDurationMs: null,
    minCost: null,
    maxCost: null,
    model: null,
    workflowName: null,
    search: null,
    runId: null,
  };
}

export const listLogs: Handler<'listLogs'> = async ({ query, ctx }) => {
  const workspaceId = ctx.workspace!.workspace.id;
  const statuses = list(query.status, 'status', 7);
  const unknown = statuses?.find((s) => !LOG_STATUSES.has(s));
  if (unknown) throw invalidField(['query', 'status'], `Unknown status ${unknown}.`);
  const limit = Math.min(1000, Math.max(1, Math.trunc(query.limit ?? 100)));
  const sortBy = query.sortBy ?? 'startedAt';
  const sortOrder = query.sortOrder ?? 'desc';
  if (query.includeJobRuns && sortBy !== 'startedAt') throw invalidField(['query', 'sortBy'], 'Job runs can only be sorted by startedAt.');
  const filter: LogFilter = {
    ...baseFilter(workspaceId, query),
    statuses,
    minDurationMs: query.minDurationMs ?? null,
    maxDurationMs: query.maxDurationMs ?? null,
    minCost: query.minCost ?? null,
    maxCost: query.maxCost ?? null,
    model: query.model ?? null,
    workflowName: query.workflowName ?? null,
    search: query.search ?? null,
    runId: query.runId ?? null,
  };
  const { cursor: _cursor, limit: _limit, details: _details, includeTraceSpans: _spans, includeFinalOutput: _output, ...binding } = query;
  const after = readCursor(ctx, query.cursor, { ...binding, sortBy, sortOrder });
  const detail = {
    traceSpans: query.includeTraceSpans === true,
    finalOutput: query.includeFinalOutput === true,
    full: query.details === 'full' || query.includeTraceSpans === true || query.includeFinalOutput === true,
  };
  const rows = await ctx.services.store.executionLogs.list(filter, { by: sortBy, order: sortOrder, after, limit: limit + 1 }, detail);
  return {
    status: 200,
    body: toPage(ctx, rows, limit, { ...binding, sortBy, sortOrder }, (r) => [r.sortValue, r.runId], (r) => logEntryView(r, detail)),
  };
};

export const getLog: Handler<'getLog'> = async ({ params, ctx }) => {
  // Run ids are unique per workspace: of the logs under this id, the caller sees the one it may reach.
  const log = await firstReachable(ctx, await ctx.services.store.executionLogs.findByKey(params.runId), 'Log');
  return { status: 200, body: { data: logDetailView(log) } };
};

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);
const DAY_MS = 24 * 3600 * 1000;

export const getLogStats: Handler<'getLogStats'> = async ({ query, ctx }) => {
  const workspaceId = ctx.workspace!.workspace.id;
  const endMs = query.endDate ? Date.parse(query.endDate) : Date.now();
  const startMs = query.startDate ? Date.parse(query.startDate) : endMs - DAY_MS;
  if (startMs > endMs) throw invalidField(['query', 'startDate'], 'startDate is after endDate.');
  const segmentCount = query.segmentCount ?? 72;
  // Buckets are at least a minute wide; on a short window the series runs past its end instead.
  const segmentMs = Math.max(60_000, Math.ceil((endMs - startMs) / segmentCount));
  const includeEmpty = TRUE_WORDS.has(query.includeEmpty ?? 'false');
  const filter = { ...baseFilter(workspaceId, query), startDate: new Date(startMs).toISOString(), endDate: new Date(endMs).toISOString() };
  const rows = await ctx.services.store.executionLogs.buckets(filter, startMs, segmentMs);

  type Acc = { total: number; successful: number; durationSum: number; durationCount: number };
  const segmentsOf = (byBucket: Map<number, Acc>) => {
    const indexes = includeEmpty ? Array.from({ length: segmentCount }, (_, i) => i) : [...byBucket.keys()].sort((a, b) => a - b);
    return indexes.map((i) => {
      const a = byBucket.get(i) ?? { total: 0, successful: 0, durationSum: 0, durationCount: 0 };
      return {
        timestamp: new Date(startMs + i * segmentMs).toISOString(),
        totalExecutions: a.total,
        successfulExecutions: a.successful,
        avgDurationMs: a.durationCount ? Math.round(a.durationSum / a.durationCount) : 0,
      };
    });
  };
  const add = (m: Map<number, Acc>, bucket: number, r: Acc) => {
    const a = m.get(bucket) ?? { total: 0, successful: 0, durationSum: 0, durationCount: 0 };
    a.total += r.total;
    a.successful += r.successful;
    a.durationSum += r.durationSum;
    a.durationCount += r.durationCount;
    m.set(bucket, a);
  };
  const aggregate = new Map<number, Acc>();
  const perWorkflow = new Map<string, { name: string; buckets: Map<number, Acc>; total: number; successful: number }>();
  let totalRuns = 0;
  let totalErrors = 0;
  let handled = 0;
  let durationSum = 0;
  let durationCount = 0;
  for (const r of rows) {
    add(aggregate, r.bucket, r);
    const wf = perWorkflow.get(r.workflowId) ?? { name: r.workflowName ?? '', buckets: new Map(), total: 0, successful: 0 };
    add(wf.buckets, r.bucket, r);
    wf.total += r.total;
    wf.successful += r.successful;
    perWorkflow.set(r.workflowId, wf);
    totalRuns += r.total;
    totalErrors += r.errors;
    handled += r.handled;
    durationSum += r.durationSum;
    durationCount += r.durationCount;
  }
  const MAX_WORKFLOWS = 200;
  const workflows = [...perWorkflow.entries()]
    .sort((a, b) => b[1].total - a[1].total || (a[0] < b[0] ? -1 : 1))
    .map(([workflowId, wf]) => ({
      workflowId,
      workflowName: wf.name,
      segments: segmentsOf(wf.buckets),
      totalExecutions: wf.total,
      totalSuccessful: wf.successful,
      overallSuccessRate: wf.total ? Math.round((wf.successful / wf.total) * 10000) / 100 : 0,
    }));
  return {
    status: 200,
    body: {
      data: {
        workflows: workflows.slice(0, MAX_WORKFLOWS),
        workflowsTruncated: workflows.length > MAX_WORKFLOWS,
        aggregateSegments: segmentsOf(aggregate),
        totalRuns,
        totalErrors,
        ...(filter.includeHandledErrors ? { handledErrorRuns: handled } : {}),
        avgLatency: durationCount ? Math.round(durationSum / durationCount) : 0,
        timeBounds: { start: new Date(startMs).toISOString(), end: new Date(endMs).toISOString() },
        segmentMs,
      },
    },
  };
};

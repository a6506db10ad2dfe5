// Workflow groups at work: a dispatch walks the table's rows and queues one run of the group's workflow per
// (row, group) on the durable run queue of src/runs, with the mapped columns as the Start block's input; a
// watcher copies the chosen block outputs of finished runs into the group's columns and keeps `runState`
// (status, error, errors per block, cancellation) in table_row_runs. Everything lives in the store, so a restart
// picks up where the last process stopped: open dispatches go on, finished runs are still collected.
import { acceptRunIn, prepareRun, type RunRequest } from '../runs/lifecycle.ts';
import { recordAudit } from '../audit/recorder.ts';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store, Repositories } from '../store/index.ts';
import type { Config } from '../config.ts';
import type { RunService } from '../runs/service.ts';
import type { DispatchRecord, RowRunRecord } from '../store/table-groups.ts';
import type { UserTableRecord, WorkflowGroup } from '../store/user-tables.ts';
import type { StoredRow } from '../store/table-rows.ts';
import { ColumnError, fromStored, toStored, type Column, type StoredValue } from './columns.ts';
import { parsePredicate } from './predicate.ts';
import { getEnrichment, runCascade } from './enrichment.ts';
import type { EgressPolicy } from '../execution/egress.ts';

export const newGroupId = () => `grp_${randomBytes(10).toString('hex')}`;
export const newDispatchId = () => `dsp_${randomBytes(12).toString('hex')}`;

const WATCH_MS = 250;
const DISPATCH_WINDOW = 500;

export interface GroupRunnerDeps {
  store: Store;
  runs: RunService;
  config: Config;
  logger: Logger;
  /** Outbound calls of enrichment providers. */
  egress?: EgressPolicy;
}

/** A cell is filled when it holds something other than an empty string or an empty list. */
export function filled(v: StoredValue | undefined): boolean {
  return v !== undefined && v !== null && v !== '' && v !== '[]';
}

/** The value at a dot path (`a.b.0.c`) of a block output. */
export function atPath(value: unknown, path: string): unknown {
  if (path === '' || path === undefined) return value;
  let v: unknown = value;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** A block output as a cell of the column: taken as it is when it fits, else read from its text. */
export function outputCell(column: Column, value: unknown): StoredValue {
  if (value === undefined || value === null) return null;
  try {
    return toStored(column, value, []);
  } catch (err) {
    if (!(err instanceof ColumnError)) throw err;
    if (column.type === 'string') return typeof value === 'string' ? value : JSON.stringify(value);
    if (typeof value === 'string' && (column.type === 'number' || column.type === 'currency' || column.type === 'ttl') && value.trim() !== '' && Number.isFinite(Number(value))) {
      return toStored(column, Number(value), []);
    }
    if (typeof value === 'string' && column.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true' ? 1 : 0;
    throw err;
  }
}

export class GroupRunner {
  private readonly deps: GroupRunnerDeps;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private closed = false;

  constructor(deps: GroupRunnerDeps) {
    this.deps = deps;
  }

  start(): void {
    this.closed = false;
    this.timer = setInterval(() => void this.tick(), WATCH_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    while (this.busy) await new Promise((r) => setTimeout(r, 10));
  }

  /** Wakes the runner now (a dispatch was created). */
  poke(): void {
    setImmediate(() => void this.tick());
  }

  private async tick(): Promise<void> {
    if (this.busy || this.closed) return;
    this.busy = true;
    try {
      for (const d of await this.deps.store.tableGroupRuns.openDispatches()) {
        if (this.closed) break;
        await this.dispatch(d);
      }
      await this.collect();
    } catch (err) {
      this.deps.logger.error({ err }, 'table group runner');
    } finally {
      this.busy = false;
    }
  }

  /** Queues the runs of one dispatch, a window of rows at a time; a canceled dispatch stops at the next window. */
  private async dispatch(d: DispatchRecord): Promise<void> {
    const { store } = this.deps;
    await store.transaction((tx) => tx.tableGroupRuns.moveDispatch(d.id, ['pending'], 'dispatching', new Date().toISOString()));
    const t = await store.userTables.get(d.tableId);
    if (!t || t.archivedAt) {
      await store.transaction((tx) => tx.tableGroupRuns.moveDispatch(d.id, ['pending', 'dispatching'], 'canceled', new Date().toISOString()));
      return;
    }
    const groups = (t.groups ?? []).filter((g) => d.scope.groupIds.includes(g.id));
    const where = d.filter ? parsePredicate(t.columns, d.filter, []) : null;
    const excluded = new Set(d.scope.excludeRowIds ?? []);
    const max = d.limit?.max ?? Number.MAX_SAFE_INTEGER;
    let processed = d.processedCount;
    let rowsSeen = 0;
    let after: readonly [string, string] | null = null;
    const explicit = d.scope.rowIds ? [...d.scope.rowIds] : null;
    for (;;) {
      const current = await store.tableGroupRuns.getDispatch(d.id);
      if (current?.status !== 'dispatching' || this.closed) return;
      let rows: StoredRow[];
      if (explicit) rows = await store.tableRows.getMany(t.id, t.columns, explicit.splice(0, DISPATCH_WINDOW));
      else rows = await store.tableRows.query(t.id, t.columns, { where, sort: [], limit: DISPATCH_WINDOW, after });
      if (rows.length === 0) break;
      if (!explicit) after = [rows.at(-1)!.orderKey, rows.at(-1)!.id];
      const queued = await store.transaction(async (tx) => {
        let n = 0;
        for (const row of rows) {
          if (excluded.has(row.id) || rowsSeen >= max) continue;
          rowsSeen++;
          for (const g of groups) if (await this.queueCell(tx, t, g, row, d)) n++;
        }
        processed += n;
        await tx.tableGroupRuns.moveDispatch(d.id, ['dispatching'], 'dispatching', new Date().toISOString(), processed);
        return n;
      });
      if (queued > 0) this.deps.runs.notify();
      if (rowsSeen >= max) break;
    }
    await store.transaction((tx) => tx.tableGroupRuns.moveDispatch(d.id, ['dispatching'], 'complete', new Date().toISOString(), processed));
  }

  /** Queues one (row, group) run unless the mode skips it; returns whether a run was queued. */
  private async queueCell(tx: Repositories, t: UserTableRecord, g: WorkflowGroup, row: StoredRow, d: DispatchRecord): Promise<boolean> {
    const existing = await tx.tableGroupRuns.get(t.id, row.id, g.id);
    if (existing && (existing.status === 'queued' || existing.status === 'running')) return false;
    // A dispatch resumed after a restart walks from the start again: cells it already queued are not re-run.
    if (existing?.dispatchId === d.id) return false;
    if (d.mode === 'incomplete' && existing?.status === 'completed') return false;
    if (d.mode === 'new' && existing) return false;
    if (!g.dependencies.columns.every((c) => filled(row.cells[c]))) return false;
    const now = new Date().toISOString();
    const base: RowRunRecord = {
      tableId: t.id, rowId: row.id, groupId: g.id, status: 'queued', runId: null, workflowId: g.workflowId, dispatchId: d.id, error: null,
      runningBlockIds: [], blockErrors: {}, canceledAt: null, updatedAt: now, enrichmentDetails: null,
    };
    // Enrichment cells are queued without a workflow run; collect() runs their provider cascade.
    if (g.type === 'enrichment') {
      await tx.tableGroupRuns.upsert(base);
      return true;
    }
    const w = await tx.workflows.get(g.workflowId);
    const deployed = g.deploymentMode === 'deployed';
    if (!w || w.archived || w.workspaceId !== t.workspaceId || (deployed && (!w.isDeployed || !w.activeVersionId))) {
      await tx.tableGroupRuns.upsert({ ...base, status: 'error', error: !w || w.archived ? 'The workflow no longer exists.' : 'The workflow has no active deployment.' });
      return false;
    }
    const input: Record<string, unknown> = {};
    for (const m of g.inputMappings) {
      const c = t.columns.find((x) => x.id === m.columnId);
      if (c) input[m.inputName] = fromStored(c, row.cells[c.id] ?? null);
    }
    const ws = await tx.workspaces.get(t.workspaceId);
    const policy = this.deps.config.runs.policies[ws?.plan ?? 'free'];
    // Accepted through the one run lifecycle, inside the dispatch window's transaction; the dispatch is the actor.
    const request: RunRequest = {
      workflow: w, billingAccountId: ws?.billingAccountId ?? '', mode: 'async', source: deployed ? 'deployment' : 'manual', trigger: 'table',
      input, runId: null, triggerBlockId: null, timeoutMs: policy.maxAsyncSeconds * 1000, triggeredBy: d.userId,
    };
    const run = prepareRun(this.deps.runs, request);
    await acceptRunIn(tx, (entry) => recordAudit(tx, null, t.workspaceId, entry, `Table workflow group ${g.name ?? g.id}`), run, request);
    await tx.tableGroupRuns.upsert({ ...base, runId: run.id });
    return true;
  }

  /** Copies the outputs of finished runs into their rows and records how each cell run ended. */
  private async collect(): Promise<void> {
    const { store } = this.deps;
    for (const rr of await store.tableGroupRuns.active(200)) {
      if (!rr.runId) {
        // collect() runs one cell at a time, so a `running` enrichment cell seen here was left by a stopped process: run it again.
        await this.enrich(rr);
        continue;
      }
      const run = await store.workflowRuns.get(rr.runId);
      if (!run) continue;
      if (run.status === 'running' && rr.status === 'queued') {
        await store.transaction((tx) => tx.tableGroupRuns.upsert({ ...rr, status: 'running', updatedAt: new Date().toISOString() }));
        continue;
      }
      if (run.status === 'queued' || run.status === 'running' || run.status === 'paused') continue;
      await store.transaction(async (tx) => {
        const now = new Date().toISOString();
        const current = await tx.tableGroupRuns.get(rr.tableId, rr.rowId, rr.groupId);
        if (!current || current.runId !== rr.runId || (current.status !== 'queued' && current.status !== 'running')) return;
        if (run.status === 'cancelled') {
          await tx.tableGroupRuns.upsert({ ...current, status: 'cancelled', canceledAt: current.canceledAt ?? now, updatedAt: now });
          return;
        }
        const t = await tx.userTables.get(rr.tableId);
        const g = t?.groups?.find((x) => x.id === rr.groupId);
        const row = t && (await tx.tableRows.get(t.id, t.columns, rr.rowId));
        if (!t || !g || !row) {
          await tx.tableGroupRuns.upsert({ ...current, status: 'error', error: 'The row or its group no longer exists.', updatedAt: now });
          return;
        }
        const blockOutputs = run.blockOutputs ? (JSON.parse(run.blockOutputs) as Record<string, unknown>) : {};
        const blockErrors: Record<string, string> = {};
        const cells: Record<string, StoredValue> = {};
        if (run.status === 'failed') {
          const error = run.error ? (JSON.parse(run.error) as { message?: string; blockId?: string }) : null;
          for (const o of g.outputs) blockErrors[o.blockId] = error?.message ?? 'The run failed.';
          await tx.tableGroupRuns.upsert({ ...current, status: 'error', error: error?.message ?? 'The run failed.', blockErrors, runningBlockIds: [], updatedAt: now });
          return;
        }
        for (const o of g.outputs) {
          const column = t.columns.find((c) => c.id === o.columnId);
          if (!column) continue;
          const output = blockOutputs[o.blockId];
          if (output === undefined) {
            blockErrors[o.blockId] = `Block ${o.blockId} produced no output.`;
            continue;
          }
          try {
            cells[column.id] = outputCell(column, atPath(output, o.path));
          } catch (err) {
            blockErrors[o.blockId] = `Output ${o.path} does not fit column "${column.name}": ${(err as Error).message}`;
          }
        }
        if (Object.keys(cells).length > 0) await tx.tableRows.update(t.id, row.id, cells, now);
        const ok = Object.keys(blockErrors).length === 0;
        await tx.tableGroupRuns.upsert({ ...current, status: ok ? 'completed' : 'error', error: ok ? null : 'Some outputs could not be written.', blockErrors, runningBlockIds: [], updatedAt: now });
      });
    }
  }

  /** Runs the provider cascade of one enrichment cell and writes the matched provider's outputs into the row. */
  private async enrich(rr: RowRunRecord): Promise<void> {
    const { store } = this.deps;
    const t = await store.userTables.get(rr.tableId);
    const g = t?.groups?.find((x) => x.id === rr.groupId);
    const row = t && (await store.tableRows.get(t.id, t.columns, rr.rowId));
    const def = g?.enrichmentId ? getEnrichment(g.enrichmentId) : undefined;
    const finish = (patch: Partial<RowRunRecord>, cells?: Record<string, StoredValue>) =>
      store.transaction(async (tx) => {
        const current = await tx.tableGroupRuns.get(rr.tableId, rr.rowId, rr.groupId);
        if (!current || current.runId !== null || current.dispatchId !== rr.dispatchId || (current.status !== 'queued' && current.status !== 'running')) return;
        const now = new Date().toISOString();
        if (cells && t && Object.keys(cells).length > 0) await tx.tableRows.update(t.id, rr.rowId, cells, now);
        await tx.tableGroupRuns.upsert({ ...current, ...patch, updatedAt: now });
      });
    if (!t || !g || !row || !def || !this.deps.egress) {
      await finish({ status: 'error', error: !def ? 'The enrichment is not known to this server.' : 'The row or its group no longer exists.' });
      return;
    }
    await finish({ status: 'running' });
    const input: Record<string, unknown> = {};
    for (const m of g.inputMappings) {
      const c = t.columns.find((x) => x.id === m.columnId);
      if (c) input[m.inputName] = fromStored(c, row.cells[c.id] ?? null);
    }
    const { cascade, outputs } = await runCascade(def, input, this.deps.egress, this.deps.config.execution.apiTimeoutMs, this.deps.config.tables.enrichmentProviders);
    const cells: Record<string, StoredValue> = {};
    const blockErrors: Record<string, string> = {};
    if (outputs) {
      for (const o of g.outputs) {
        const column = t.columns.find((c) => c.id === o.columnId);
        const key = o.outputId ?? o.path;
        if (!column || !key) continue;
        try {
          cells[column.id] = outputCell(column, atPath(outputs, key));
        } catch (err) {
          blockErrors[key] = `Output ${key} does not fit column "${column.name}": ${(err as Error).message}`;
        }
      }
    }
    const all = cascade.providers;
    let patch: Partial<RowRunRecord>;
    if (outputs) patch = { status: Object.keys(blockErrors).length ? 'error' : 'completed', error: Object.keys(blockErrors).length ? 'Some outputs could not be written.' : null, blockErrors };
    else if (all.every((p) => p.status === 'skipped')) patch = { status: 'skipped', error: `No provider of "${def.id}" is configured: ${all.map((p) => p.id).join(', ')} were skipped.` };
    else if (all.some((p) => p.status === 'error') && !all.some((p) => p.status === 'no_match')) patch = { status: 'error', error: all.find((p) => p.status === 'error')!.error };
    else patch = { status: 'completed', error: null };
    await finish({ ...patch, enrichmentDetails: cascade }, cells);
  }
}

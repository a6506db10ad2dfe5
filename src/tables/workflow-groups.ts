// Workflow groups of a table (columns a workflow or an enrichment fills row by row), the dispatches that run
// them, and cancelling the cell runs they queued. The rules: at most MAX_GROUPS groups, a column is filled by
// one group, a deployed group needs a deployed workflow, an enrichment maps only its own inputs and outputs,
// schema locks. Each change works inside the caller's transaction and records its audit event there; the
// group runner (src/tables/group-runs.ts) does the running.
import type { Repositories, Store } from '../store/index.ts';
import type { DispatchRecord, RowRunRecord } from '../store/table-groups.ts';
import type { UserTableRecord, WorkflowGroup } from '../store/user-tables.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import { moveRun } from '../runs/transitions.ts';
import { type Column, defineColumn, fromStored, MAX_COLUMNS } from './columns.ts';
import { ENRICHMENTS, getEnrichment, type EnrichmentDef } from './enrichment.ts';
import { newDispatchId, newGroupId } from './group-runs.ts';
import { parsePredicate } from './predicate.ts';
import { type RunningBlocks, runStateView } from './row-reads.ts';
import { asBadRequest, assertUnlocked, columnView, loadTable } from './service.ts';

const MAX_GROUPS = 100;
const nowIso = () => new Date().toISOString();

type Path = (string | number)[];
type ColumnSpec = { name: string; type: Column['type']; required?: boolean; unique?: boolean };
type OutputMapping = { blockId?: string; path?: string; outputId?: string; columnName: string };
type InputMapping = { inputName: string; columnName: string };

/** A new group as a request describes it. */
export interface GroupInput {
  workflowId?: string;
  enrichmentId?: string;
  name?: string;
  type?: WorkflowGroup['type'];
  dependencies?: { columns?: string[] };
  outputs: OutputMapping[];
  inputMappings?: InputMapping[];
  deploymentMode?: WorkflowGroup['deploymentMode'];
  autoRun?: boolean;
}

/** A change to a group; absent fields stay as they are. */
export interface GroupChange {
  groupId: string;
  workflowId?: string;
  name?: string;
  type?: WorkflowGroup['type'];
  dependencies?: { columns?: string[] };
  outputs?: OutputMapping[];
  newOutputColumns?: ColumnSpec[];
  mappingUpdates?: { columnName: string; blockId: string; path: string }[];
  inputMappings?: InputMapping[];
  deploymentMode?: WorkflowGroup['deploymentMode'];
  autoRun?: boolean;
}

/** What a manual dispatch runs: these groups on the given rows, or the rows a filter matches. */
export interface DispatchRequest {
  groupIds: string[];
  rowIds?: string[];
  filter?: unknown;
  excludeRowIds?: string[];
  runMode?: DispatchRecord['mode'];
  limit?: DispatchRecord['limit'];
}

export function groupView(t: UserTableRecord, g: WorkflowGroup) {
  const name = (id: string) => t.columns.find((c) => c.id === id)?.name ?? id;
  return {
    id: g.id,
    workflowId: g.workflowId,
    ...(g.name !== undefined ? { name: g.name } : {}),
    type: g.type,
    ...(g.enrichmentId ? { enrichmentId: g.enrichmentId } : {}),
    dependencies: { columns: g.dependencies.columns.map(name) },
    outputs: g.outputs.map((o) => ({ blockId: o.blockId, path: o.path, ...(o.outputId ? { outputId: o.outputId } : {}), columnName: name(o.columnId) })),
    inputMappings: g.inputMappings.map((m) => ({ inputName: m.inputName, columnName: name(m.columnId) })),
    deploymentMode: g.deploymentMode,
    autoRun: g.autoRun,
  };
}

export function dispatchView(d: DispatchRecord) {
  return {
    id: d.id, tableId: d.tableId, workspaceId: d.workspaceId, status: d.status, mode: d.mode, scope: d.scope, limit: d.limit, processedCount: d.processedCount,
    isManualRun: d.isManualRun, requestedAt: d.requestedAt, completedAt: d.completedAt, canceledAt: d.canceledAt,
  };
}

function columnByName(columns: Column[], name: string, path: Path): Column {
  const c = columns.find((x) => x.name === name) ?? columns.find((x) => x.id === name);
  if (!c) throw invalidInput(path, `The table has no column "${name}".`);
  return c;
}

const takenByAnotherGroup = (c: Column) => new DomainError('conflict', `Column "${c.name}" is already filled by another group.`, { column: c.name });

async function checkWorkflow(tx: Repositories, t: UserTableRecord, workflowId: string, mode: WorkflowGroup['deploymentMode']): Promise<void> {
  const w = await tx.workflows.get(workflowId);
  if (!w || w.archived || w.workspaceId !== t.workspaceId) throw domainNotFound('Workflow');
  if (mode === 'deployed' && (!w.isDeployed || !w.activeVersionId)) {
    throw new DomainError('conflict', 'The workflow has no active deployment; deploy it or use deploymentMode live.', { code: 'NOT_DEPLOYED' });
  }
}

/** Checks that an enrichment reads only its own inputs. */
function checkEnrichmentInputs(enrichment: EnrichmentDef, mappings: InputMapping[], path: Path): void {
  for (const [i, m] of mappings.entries()) {
    if (!enrichment.inputs.includes(m.inputName)) throw invalidInput([...path, i, 'inputName'], `"${enrichment.id}" reads ${enrichment.inputs.join(', ')}.`);
  }
}

/** Creates the named output columns, attached to the group. */
function newColumns(columns: Column[], specs: ColumnSpec[], groupId: string, field: string): Column[] {
  const out = [...columns];
  for (const [i, spec] of specs.entries()) {
    if (out.some((c) => c.name === spec.name)) continue; // an existing column of that name is attached below
    let c: Column;
    try {
      c = defineColumn(spec, [i]);
    } catch (err) {
      asBadRequest(err, ['body', field]);
    }
    c.workflowGroupId = groupId;
    out.push(c);
  }
  if (out.length > MAX_COLUMNS) throw new DomainError('invalid', `A table has at most ${MAX_COLUMNS} columns.`);
  return out;
}

/** Output mappings as stored: each names a column (created or existing), which the group then fills. */
function attachOutputs(columns: Column[], groupId: string, outputs: OutputMapping[], field: string, specs: ColumnSpec[], enrichment?: EnrichmentDef): WorkflowGroup['outputs'] {
  return outputs.map((o, i) => {
    const c = columnByName(columns, o.columnName, ['body', field, i, 'columnName']);
    if (c.workflowGroupId && c.workflowGroupId !== groupId) throw takenByAnotherGroup(c);
    const spec = specs.find((s) => s.name === c.name);
    if (spec && spec.type !== c.type) throw new DomainError('conflict', `Column "${c.name}" exists as ${c.type}, not ${spec.type}.`, { column: c.name });
    if (enrichment) {
      if (!o.outputId || !enrichment.outputs.includes(o.outputId)) {
        throw invalidInput(['body', field, i, 'outputId'], `An enrichment output names one of the outputs of "${enrichment.id}": ${enrichment.outputs.join(', ')}.`);
      }
      c.workflowGroupId = groupId;
      return { blockId: '', path: '', outputId: o.outputId, columnId: c.id };
    }
    if (!o.blockId) throw invalidInput(['body', field, i, 'blockId'], 'A workflow output names its block.');
    c.workflowGroupId = groupId;
    return { blockId: o.blockId, path: o.path ?? '', ...(o.outputId ? { outputId: o.outputId } : {}), columnId: c.id };
  });
}

/** Records a dispatch (pending) for the group runner, on behalf of `userId`. */
async function startDispatch(tx: Repositories, t: UserTableRecord, userId: string, fields: Pick<DispatchRecord, 'mode' | 'scope' | 'filter' | 'limit' | 'isManualRun'>): Promise<DispatchRecord> {
  const d: DispatchRecord = {
    id: newDispatchId(), tableId: t.id, workspaceId: t.workspaceId, userId, status: 'pending', processedCount: 0,
    requestedAt: nowIso(), completedAt: null, canceledAt: null, ...fields,
  };
  await tx.tableGroupRuns.insertDispatch(d);
  return d;
}

/** Writes the table's new columns, columns and groups. */
async function saveGroups(tx: Repositories, t: UserTableRecord, columns: Column[], groups: WorkflowGroup[]): Promise<void> {
  for (const c of columns) if (!t.columns.some((x) => x.id === c.id)) await tx.tableRows.addColumn(t.id, c);
  await tx.userTables.update(t.id, { columns, groups, updatedAt: nowIso() });
}

/** The enrichment a new group runs (undefined for a workflow group), after checking the input's shape. */
function enrichmentOf(input: GroupInput): EnrichmentDef | undefined {
  const isEnrichment = (input.type ?? (input.enrichmentId !== undefined ? 'enrichment' : 'manual')) === 'enrichment';
  let enrichment: EnrichmentDef | undefined;
  if (isEnrichment) {
    if (input.workflowId) throw invalidInput(['body', 'group', 'workflowId'], 'An enrichment group names an enrichmentId, not a workflow.');
    enrichment = getEnrichment(input.enrichmentId ?? '');
    if (!enrichment) throw invalidInput(['body', 'group', 'enrichmentId'], `Unknown enrichment "${input.enrichmentId ?? ''}". Known: ${ENRICHMENTS.map((e) => e.id).join(', ')}.`);
    checkEnrichmentInputs(enrichment, input.inputMappings ?? [], ['body', 'group', 'inputMappings']);
  } else if (input.enrichmentId !== undefined) throw invalidInput(['body', 'group', 'enrichmentId'], 'Only an enrichment group names an enrichmentId.');
  if (!isEnrichment && !input.workflowId) throw invalidInput(['body', 'group', 'workflowId'], 'A workflow group names its workflowId.');
  return enrichment;
}

/**
 * Adds a group with its new output columns. `runNow` (the request sent autoRun true) also dispatches it on the
 * rows whose dependencies are filled. Returns whether a dispatch was created, for the caller to poke the runner.
 */
export async function addGroup(
  tx: Repositories, audit: Audit, workspaceId: string, tableId: string,
  input: GroupInput, outputColumns: ColumnSpec[], options: { autoRun: boolean; runNow: boolean; userId: string },
) {
  const enrichment = enrichmentOf(input);
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'schema');
  const groups = t.groups ?? [];
  if (groups.length >= MAX_GROUPS) throw new DomainError('invalid', `A table has at most ${MAX_GROUPS} workflow groups.`);
  const id = newGroupId();
  const mode = input.deploymentMode ?? 'live';
  if (!enrichment) await checkWorkflow(tx, t, input.workflowId!, mode);
  const columns = newColumns(t.columns.map((c) => ({ ...c })), outputColumns, id, 'outputColumns');
  const g: WorkflowGroup = {
    id,
    workflowId: enrichment ? '' : input.workflowId!,
    ...(input.name !== undefined ? { name: input.name } : {}),
    type: enrichment ? 'enrichment' : 'manual',
    ...(enrichment ? { enrichmentId: enrichment.id } : {}),
    dependencies: { columns: (input.dependencies?.columns ?? []).map((n, i) => columnByName(columns, n, ['body', 'group', 'dependencies', 'columns', i]).id) },
    outputs: attachOutputs(columns, id, input.outputs, 'group', outputColumns, enrichment),
    inputMappings: (input.inputMappings ?? []).map((m, i) => ({ inputName: m.inputName, columnId: columnByName(columns, m.columnName, ['body', 'group', 'inputMappings', i, 'columnName']).id })),
    deploymentMode: mode,
    autoRun: options.autoRun,
  };
  await saveGroups(tx, t, columns, [...groups, g]);
  await audit({ action: 'table.group_added', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { groupId: id, workflowId: g.workflowId } });
  if (options.runNow) await startDispatch(tx, t, options.userId, { mode: 'new', scope: { groupIds: [id] }, filter: null, limit: null, isManualRun: false });
  return { group: groupView({ ...t, columns }, g), columns: columns.map(columnView) };
}

/** Changes a group: its workflow, mappings, dependencies, output columns; unmapped columns are released. */
export async function updateGroup(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, change: GroupChange) {
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'schema');
  const groups = t.groups ?? [];
  const current = groups.find((g) => g.id === change.groupId);
  if (!current) throw domainNotFound('Workflow group');
  if (change.type !== undefined && change.type !== current.type) throw invalidInput(['body', 'type'], 'A group keeps the type it was created with.');
  const mode = change.deploymentMode ?? current.deploymentMode;
  const workflowId = change.workflowId ?? current.workflowId;
  const enrichment = current.type === 'enrichment' ? getEnrichment(current.enrichmentId ?? '') : undefined;
  if (current.type === 'enrichment') {
    if (change.workflowId !== undefined) throw invalidInput(['body', 'workflowId'], 'An enrichment group runs its enrichment, not a workflow.');
    if (change.mappingUpdates?.length) throw invalidInput(['body', 'mappingUpdates'], 'An enrichment group maps its outputs by outputId in `outputs`.');
  } else if (change.workflowId !== undefined || change.deploymentMode !== undefined) await checkWorkflow(tx, t, workflowId, mode);
  const specs = change.newOutputColumns ?? [];
  const columns = newColumns(t.columns.map((c) => ({ ...c })), specs, current.id, 'newOutputColumns');
  let outputs = change.outputs ? attachOutputs(columns, current.id, change.outputs, 'outputs', specs, enrichment) : current.outputs;
  for (const [i, m] of (change.mappingUpdates ?? []).entries()) {
    const c = columnByName(columns, m.columnName, ['body', 'mappingUpdates', i, 'columnName']);
    if (c.workflowGroupId && c.workflowGroupId !== current.id) throw takenByAnotherGroup(c);
    c.workflowGroupId = current.id;
    outputs = [...outputs.filter((o) => o.columnId !== c.id), { blockId: m.blockId, path: m.path, columnId: c.id }];
  }
  // Columns no longer mapped are released from the group.
  for (const c of columns) if (c.workflowGroupId === current.id && !outputs.some((o) => o.columnId === c.id)) delete c.workflowGroupId;
  const g: WorkflowGroup = {
    ...current,
    workflowId,
    ...(change.name !== undefined ? { name: change.name } : {}),
    dependencies: change.dependencies ? { columns: (change.dependencies.columns ?? []).map((n, i) => columnByName(columns, n, ['body', 'dependencies', 'columns', i]).id) } : current.dependencies,
    outputs,
    inputMappings: change.inputMappings
      ? change.inputMappings.map((m, i) => ({ inputName: m.inputName, columnId: columnByName(columns, m.columnName, ['body', 'inputMappings', i, 'columnName']).id }))
      : current.inputMappings,
    deploymentMode: mode,
    autoRun: change.autoRun ?? current.autoRun,
  };
  if (enrichment && change.inputMappings) checkEnrichmentInputs(enrichment, change.inputMappings, ['body', 'inputMappings']);
  await saveGroups(tx, t, columns, groups.map((x) => (x.id === g.id ? g : x)));
  await audit({ action: 'table.group_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { groupId: g.id } });
  return { group: groupView({ ...t, columns }, g), columns: columns.map(columnView) };
}

/** Deletes a group with every column it fills (and drops those columns from the other groups' mappings). */
export async function deleteGroup(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, groupId: string) {
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'schema');
  const g = (t.groups ?? []).find((x) => x.id === groupId);
  if (!g) throw domainNotFound('Workflow group');
  const removed = t.columns.filter((c) => c.workflowGroupId === g.id);
  for (const c of removed) await tx.tableRows.dropColumn(t.id, c);
  const columns = t.columns.filter((c) => c.workflowGroupId !== g.id);
  const groups = (t.groups ?? []).filter((x) => x.id !== g.id).map((x) => ({
    ...x,
    dependencies: { columns: x.dependencies.columns.filter((id) => !removed.some((c) => c.id === id)) },
    inputMappings: x.inputMappings.filter((m) => !removed.some((c) => c.id === m.columnId)),
  }));
  await tx.userTables.update(t.id, { columns, groups, updatedAt: nowIso() });
  await tx.tableGroupRuns.deleteGroup(t.id, g.id);
  await audit({ action: 'table.group_deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { groupId: g.id, columns: removed.map((c) => c.name) } });
  return { id: g.id, deleted: true as const, columns: columns.map(columnView) };
}

/** A manual dispatch of existing groups, on rows named, filtered, or all. */
export async function createDispatch(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, userId: string, req: DispatchRequest): Promise<DispatchRecord> {
  const t = await loadTable(tx, workspaceId, tableId);
  const groups = t.groups ?? [];
  for (const [i, id] of req.groupIds.entries()) if (!groups.some((g) => g.id === id)) throw invalidInput(['body', 'groupIds', i], `The table has no workflow group ${id}.`);
  if (req.filter !== undefined) {
    try {
      parsePredicate(t.columns, req.filter, ['filter']);
    } catch (err) {
      asBadRequest(err, ['body']);
    }
  }
  const scope = { groupIds: req.groupIds, ...(req.rowIds ? { rowIds: req.rowIds } : {}), ...(req.filter ? { filtered: true } : {}), ...(req.excludeRowIds ? { excludeRowIds: req.excludeRowIds } : {}) };
  const created = await startDispatch(tx, t, userId, { mode: req.runMode ?? 'all', scope, filter: req.filter ?? null, limit: req.limit ?? null, isManualRun: true });
  await audit({ action: 'table.dispatch_created', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { dispatchId: created.id, groups: req.groupIds.length } });
  return created;
}

/** Runs one group on one row again (a manual dispatch of that cell). */
export async function dispatchRow(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, userId: string, groupId: string, rowId: string): Promise<DispatchRecord> {
  const t = await loadTable(tx, workspaceId, tableId);
  if (!(t.groups ?? []).some((x) => x.id === groupId)) throw domainNotFound('Workflow group');
  if (!(await tx.tableRows.get(t.id, [], rowId))) throw domainNotFound('Row');
  const created = await startDispatch(tx, t, userId, { mode: 'all', scope: { groupIds: [groupId], rowIds: [rowId] }, filter: null, limit: null, isManualRun: true });
  await audit({ action: 'table.dispatch_created', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { dispatchId: created.id, rowId } });
  return created;
}

/** A dispatch of this table. */
export async function loadDispatch(repos: Repositories, workspaceId: string, tableId: string, dispatchId: string): Promise<DispatchRecord> {
  const t = await loadTable(repos, workspaceId, tableId);
  const d = await repos.tableGroupRuns.getDispatch(dispatchId);
  if (!d || d.tableId !== t.id) throw domainNotFound('Dispatch');
  return d;
}

export async function listDispatches(repos: Repositories, workspaceId: string, tableId: string): Promise<DispatchRecord[]> {
  const t = await loadTable(repos, workspaceId, tableId);
  return repos.tableGroupRuns.listDispatches(t.id);
}

/** Stops a dispatch's walk (a pending or dispatching one); returns it as it now is. */
export async function cancelDispatch(tx: Repositories, audit: Audit, d: DispatchRecord): Promise<DispatchRecord> {
  if (await tx.tableGroupRuns.moveDispatch(d.id, ['pending', 'dispatching'], 'canceled', nowIso())) {
    await audit({ action: 'table.dispatch_canceled', resourceType: 'table', resourceId: d.tableId, metadata: { dispatchId: d.id } });
  }
  return (await tx.tableGroupRuns.getDispatch(d.id))!;
}

/** Stops the walk of every dispatch of a table that is still walking. */
export async function cancelAllDispatches(tx: Repositories, tableId: string): Promise<void> {
  for (const d of await tx.tableGroupRuns.listDispatches(tableId)) await tx.tableGroupRuns.moveDispatch(d.id, ['pending', 'dispatching'], 'canceled', nowIso());
}

/** What cancelling cell runs needs of the run engine: whether a run executes here, and stopping it. */
export interface LocalRuns {
  isLocal(runId: string): boolean;
  abort(runId: string, waitMs?: number): Promise<unknown>;
}

/** Cancels queued and running cell runs (and their workflow runs) that `pick` selects; returns how many. */
export async function cancelRowRuns(io: { store: Store; runs: LocalRuns }, tableId: string, rowId: string | null, pick: (r: RowRunRecord) => boolean): Promise<number> {
  const { store, runs } = io;
  const active = (await store.tableGroupRuns.activeFor(tableId, rowId)).filter(pick);
  let n = 0;
  for (const r of active) {
    const now = nowIso();
    const stopped = await store.transaction(async (tx) => {
      const current = await tx.tableGroupRuns.get(r.tableId, r.rowId, r.groupId);
      if (!current || current.runId !== r.runId || (current.status !== 'queued' && current.status !== 'running')) return false;
      if (r.runId) {
        const moved =
          (await moveRun(tx, r.runId, { kind: 'transition', from: 'queued', to: 'cancelled', at: now })) ||
          (await moveRun(tx, r.runId, { kind: 'transition', from: 'paused', to: 'cancelled', at: now }));
        // A running run stops wherever it executes: the process holding its lease sees the request at its next renewal.
        if (!moved) await tx.workflowRuns.requestCancel(r.runId, now);
      }
      await tx.tableGroupRuns.upsert({ ...current, status: 'cancelled', canceledAt: now, runningBlockIds: [], updatedAt: now });
      return true;
    });
    if (stopped) {
      n++;
      if (r.runId && runs.isLocal(r.runId)) await runs.abort(r.runId, 2000);
    }
  }
  return n;
}

/** The cell runs a cancel of a table's runs selects: one row's or all, minus exclusions, within a filter. */
export async function runsToCancel(
  repos: Repositories, workspaceId: string, tableId: string,
  req: { scope: string; rowId?: string; filter?: unknown; excludeRowIds?: string[] },
): Promise<{ tableId: string; rowId: string | null; pick: (r: RowRunRecord) => boolean }> {
  const t = await loadTable(repos, workspaceId, tableId);
  if (req.scope === 'row' && !req.rowId) throw invalidInput(['body', 'rowId'], 'scope row names the rowId.');
  let rows: Set<string> | null = null;
  if (req.filter !== undefined) {
    let where;
    try {
      where = parsePredicate(t.columns, req.filter, ['filter']);
    } catch (err) {
      asBadRequest(err, ['body']);
    }
    rows = new Set(await repos.tableRows.matchingIds(t.id, where, Number.MAX_SAFE_INTEGER));
  }
  const excluded = new Set(req.excludeRowIds ?? []);
  return { tableId: t.id, rowId: req.scope === 'row' ? req.rowId! : null, pick: (r) => !excluded.has(r.rowId) && (rows === null || rows.has(r.rowId)) };
}

/** One row's run of one group: its run state and the outputs it filled (and, for an enrichment, its cascade). */
export async function rowEnrichment(repos: Repositories, workspaceId: string, tableId: string, groupId: string, rowId: string, runningBlocks: RunningBlocks) {
  const t = await loadTable(repos, workspaceId, tableId);
  const g = (t.groups ?? []).find((x) => x.id === groupId);
  if (!g) throw domainNotFound('Workflow group');
  const row = await repos.tableRows.get(t.id, t.columns, rowId);
  if (!row) throw domainNotFound('Row');
  const state = await repos.tableGroupRuns.get(t.id, row.id, g.id);
  const outputs: Record<string, unknown> = {};
  for (const o of g.outputs) {
    const c = t.columns.find((x) => x.id === o.columnId);
    if (c) outputs[c.name] = fromStored(c, row.cells[c.id] ?? null);
  }
  // Workflow groups run one workflow, not a cascade of enrichment providers: their cascade is null.
  const cascade = g.type === 'enrichment' && state?.enrichmentDetails ? state.enrichmentDetails : null;
  return { groupId: g.id, runState: state ? runStateView(state, runningBlocks) : null, outputs, cascade };
}

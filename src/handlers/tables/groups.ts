// Workflow groups (columns a workflow fills row by row), dispatches that run them, cancelling runs, and one row's
// group run (the "enrichment" operations, for workflow groups).
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { badRequest, conflict, invalidField, notFound } from '../../http/errors.ts';
import type { Repositories } from '../../store/index.ts';
import type { DispatchRecord, RowRunRecord } from '../../store/table-groups.ts';
import type { UserTableRecord, WorkflowGroup } from '../../store/user-tables.ts';
import { type Column, defineColumn, fromStored, MAX_COLUMNS } from '../../tables/columns.ts';
import { newDispatchId, newGroupId } from '../../tables/group-runs.ts';
import { parsePredicate } from '../../tables/predicate.ts';
import { ENRICHMENTS, getEnrichment, type EnrichmentDef } from '../../tables/enrichment.ts';
import { asBadRequest, assertUnlocked, columnView, loadTable } from '../../tables/service.ts';
import { nowIso, workspaceOf } from './shared.ts';
import { moveRun } from '../../runs/transitions.ts';

const MAX_GROUPS = 100;
type ColumnSpec = { name: string; type: Column['type']; required?: boolean; unique?: boolean };

/** A cell's run as the wire shows it; `runningBlocks` names the blocks of a running run that are executing now. */
export function runStateView(r: RowRunRecord, runningBlocks: (runId: string) => string[]) {
  const runningBlockIds = r.status === 'running' && r.runId ? runningBlocks(r.runId) : r.runningBlockIds;
  return { status: r.status, executionId: r.runId, workflowId: r.workflowId, error: r.error, runningBlockIds, blockErrors: r.blockErrors, canceledAt: r.canceledAt };
}

function groupView(t: UserTableRecord, g: WorkflowGroup) {
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

function dispatchView(d: DispatchRecord) {
  return {
    id: d.id, tableId: d.tableId, workspaceId: d.workspaceId, status: d.status, mode: d.mode, scope: d.scope, limit: d.limit, processedCount: d.processedCount,
    isManualRun: d.isManualRun, requestedAt: d.requestedAt, completedAt: d.completedAt, canceledAt: d.canceledAt,
  };
}

function columnByName(columns: Column[], name: string, path: (string | number)[]): Column {
  const c = columns.find((x) => x.name === name) ?? columns.find((x) => x.id === name);
  if (!c) throw invalidField(path, `The table has no column "${name}".`);
  return c;
}

async function checkWorkflow(tx: Repositories, t: UserTableRecord, workflowId: string, mode: 'live' | 'deployed'): Promise<void> {
  const w = await tx.workflows.get(workflowId);
  if (!w || w.archived || w.workspaceId !== t.workspaceId) throw notFound('Workflow');
  if (mode === 'deployed' && (!w.isDeployed || !w.activeVersionId)) throw conflict('The workflow has no active deployment; deploy it or use deploymentMode live.', { code: 'NOT_DEPLOYED' });
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
  if (out.length > MAX_COLUMNS) throw badRequest(`A table has at most ${MAX_COLUMNS} columns.`);
  return out;
}

/** Output mappings as stored: each names a column (created or existing), which the group then fills. */
function attachOutputs(columns: Column[], groupId: string, outputs: { blockId?: string; path?: string; outputId?: string; columnName: string }[], field: string, specs: ColumnSpec[], enrichment?: EnrichmentDef): WorkflowGroup['outputs'] {
  return outputs.map((o, i) => {
    const c = columnByName(columns, o.columnName, ['body', field, i, 'columnName']);
    if (c.workflowGroupId && c.workflowGroupId !== groupId) throw conflict(`Column "${c.name}" is already filled by another group.`, { column: c.name });
    const spec = specs.find((s) => s.name === c.name);
    if (spec && spec.type !== c.type) throw conflict(`Column "${c.name}" exists as ${c.type}, not ${spec.type}.`, { column: c.name });
    if (enrichment) {
      if (!o.outputId || !enrichment.outputs.includes(o.outputId)) {
        throw invalidField(['body', field, i, 'outputId'], `An enrichment output names one of the outputs of "${enrichment.id}": ${enrichment.outputs.join(', ')}.`);
      }
      c.workflowGroupId = groupId;
      return { blockId: '', path: '', outputId: o.outputId, columnId: c.id };
    }
    if (!o.blockId) throw invalidField(['body', field, i, 'blockId'], 'A workflow output names its block.');
    c.workflowGroupId = groupId;
    return { blockId: o.blockId, path: o.path ?? '', ...(o.outputId ? { outputId: o.outputId } : {}), columnId: c.id };
  });
}

async function startDispatch(ctx: RequestContext, tx: Repositories, t: UserTableRecord, fields: Pick<DispatchRecord, 'mode' | 'scope' | 'filter' | 'limit' | 'isManualRun'>): Promise<DispatchRecord> {
  const d: DispatchRecord = {
    id: newDispatchId(), tableId: t.id, workspaceId: t.workspaceId, userId: ctx.principal.userId, status: 'pending', processedCount: 0,
    requestedAt: nowIso(), completedAt: null, canceledAt: null, ...fields,
  };
  await tx.tableGroupRuns.insertDispatch(d);
  return d;
}

/**
 * After rows are inserted or changed: groups with autoRun run on those rows whose dependency columns are now
 * filled and that have not run yet (a dispatch in mode `new`). Returns whether a dispatch was created.
 */
export async function autoDispatch(ctx: RequestContext, tx: Repositories, t: UserTableRecord, rowIds: string[]): Promise<boolean> {
  const groups = (t.groups ?? []).filter((g) => g.autoRun);
  if (groups.length === 0 || rowIds.length === 0) return false;
  await startDispatch(ctx, tx, t, { mode: 'new', scope: { groupIds: groups.map((g) => g.id), rowIds }, filter: null, limit: null, isManualRun: false });
  return true;
}

export const listWorkflowGroups: Handler<'listWorkflowGroups'> = async ({ params, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  return { status: 200, body: { data: (t.groups ?? []).map((g) => groupView(t, g)), nextCursor: null } };
};

export const addWorkflowGroup: Handler<'addWorkflowGroup'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const input = body.group;
  const isEnrichment = (input.type ?? (input.enrichmentId !== undefined ? 'enrichment' : 'manual')) === 'enrichment';
  let enrichment: EnrichmentDef | undefined;
  if (isEnrichment) {
    if (input.workflowId) throw invalidField(['body', 'group', 'workflowId'], 'An enrichment group names an enrichmentId, not a workflow.');
    enrichment = getEnrichment(input.enrichmentId ?? '');
    if (!enrichment) throw invalidField(['body', 'group', 'enrichmentId'], `Unknown enrichment "${input.enrichmentId ?? ''}". Known: ${ENRICHMENTS.map((e) => e.id).join(', ')}.`);
    for (const [i, m] of (input.inputMappings ?? []).entries()) {
      if (!enrichment.inputs.includes(m.inputName)) throw invalidField(['body', 'group', 'inputMappings', i, 'inputName'], `"${enrichment.id}" reads ${enrichment.inputs.join(', ')}.`);
    }
  } else if (input.enrichmentId !== undefined) throw invalidField(['body', 'group', 'enrichmentId'], 'Only an enrichment group names an enrichmentId.');
  if (!isEnrichment && !input.workflowId) throw invalidField(['body', 'group', 'workflowId'], 'A workflow group names its workflowId.');
  const autoRun = body.autoRun ?? input.autoRun ?? true;
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'schema');
    const groups = t.groups ?? [];
    if (groups.length >= MAX_GROUPS) throw badRequest(`A table has at most ${MAX_GROUPS} workflow groups.`);
    const id = newGroupId();
    const mode = input.deploymentMode ?? 'live';
    if (!enrichment) await checkWorkflow(tx, t, input.workflowId!, mode);
    const specs = (body.outputColumns ?? []) as ColumnSpec[];
    const columns = newColumns(t.columns.map((c) => ({ ...c })), specs, id, 'outputColumns');
    const g: WorkflowGroup = {
      id,
      workflowId: enrichment ? '' : input.workflowId!,
      ...(input.name !== undefined ? { name: input.name } : {}),
      type: enrichment ? 'enrichment' : 'manual',
      ...(enrichment ? { enrichmentId: enrichment.id } : {}),
      dependencies: { columns: (input.dependencies?.columns ?? []).map((n, i) => columnByName(columns, n, ['body', 'group', 'dependencies', 'columns', i]).id) },
      outputs: attachOutputs(columns, id, input.outputs, 'group', specs, enrichment),
      inputMappings: (input.inputMappings ?? []).map((m, i) => ({ inputName: m.inputName, columnId: columnByName(columns, m.columnName, ['body', 'group', 'inputMappings', i, 'columnName']).id })),
      deploymentMode: mode,
      autoRun,
    };
    for (const c of columns) if (!t.columns.some((x) => x.id === c.id)) await tx.tableRows.addColumn(t.id, c);
    await tx.userTables.update(t.id, { columns, groups: [...groups, g], updatedAt: nowIso() });
    audit({ action: 'table.group_added', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { groupId: id, workflowId: g.workflowId } });
    // Sent with autoRun, creating the group runs it on the rows whose dependencies are filled.
    if (body.autoRun === true || input.autoRun === true) await startDispatch(ctx, tx, t, { mode: 'new', scope: { groupIds: [id] }, filter: null, limit: null, isManualRun: false });
    return { group: groupView({ ...t, columns }, g), columns: columns.map(columnView) };
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const updateWorkflowGroup: Handler<'updateWorkflowGroup'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'schema');
    const groups = t.groups ?? [];
    const current = groups.find((g) => g.id === body.groupId);
    if (!current) throw notFound('Workflow group');
    if (body.type !== undefined && body.type !== current.type) throw invalidField(['body', 'type'], 'A group keeps the type it was created with.');
    const mode = body.deploymentMode ?? current.deploymentMode;
    const workflowId = body.workflowId ?? current.workflowId;
    const enrichment = current.type === 'enrichment' ? getEnrichment(current.enrichmentId ?? '') : undefined;
    if (current.type === 'enrichment') {
      if (body.workflowId !== undefined) throw invalidField(['body', 'workflowId'], 'An enrichment group runs its enrichment, not a workflow.');
      if (body.mappingUpdates?.length) throw invalidField(['body', 'mappingUpdates'], 'An enrichment group maps its outputs by outputId in `outputs`.');
    } else if (body.workflowId !== undefined || body.deploymentMode !== undefined) await checkWorkflow(tx, t, workflowId, mode);
    const specs = (body.newOutputColumns ?? []) as ColumnSpec[];
    const columns = newColumns(t.columns.map((c) => ({ ...c })), specs, current.id, 'newOutputColumns');
    let outputs = body.outputs ? attachOutputs(columns, current.id, body.outputs, 'outputs', specs, enrichment) : current.outputs;
    for (const [i, m] of (body.mappingUpdates ?? []).entries()) {
      const c = columnByName(columns, m.columnName, ['body', 'mappingUpdates', i, 'columnName']);
      if (c.workflowGroupId && c.workflowGroupId !== current.id) throw conflict(`Column "${c.name}" is already filled by another group.`, { column: c.name });
      c.workflowGroupId = current.id;
      outputs = [...outputs.filter((o) => o.columnId !== c.id), { blockId: m.blockId, path: m.path, columnId: c.id }];
    }
    // Columns no longer mapped are released from the group.
    for (const c of columns) if (c.workflowGroupId === current.id && !outputs.some((o) => o.columnId === c.id)) delete c.workflowGroupId;
    const g: WorkflowGroup = {
      ...current,
      workflowId,
      ...(body.name !== undefined ? { name: body.name } : {}),
      dependencies: body.dependencies ? { columns: (body.dependencies.columns ?? []).map((n, i) => columnByName(columns, n, ['body', 'dependencies', 'columns', i]).id) } : current.dependencies,
      outputs,
      inputMappings: body.inputMappings
        ? body.inputMappings.map((m, i) => ({ inputName: m.inputName, columnId: columnByName(columns, m.columnName, ['body', 'inputMappings', i, 'columnName']).id }))
        : current.inputMappings,
      deploymentMode: mode,
      autoRun: body.autoRun ?? current.autoRun,
    };
    for (const [i, m] of (enrichment && body.inputMappings ? body.inputMappings : []).entries()) {
      if (!enrichment!.inputs.includes(m.inputName)) throw invalidField(['body', 'inputMappings', i, 'inputName'], `"${enrichment!.id}" reads ${enrichment!.inputs.join(', ')}.`);
    }
    for (const c of columns) if (!t.columns.some((x) => x.id === c.id)) await tx.tableRows.addColumn(t.id, c);
    await tx.userTables.update(t.id, { columns, groups: groups.map((x) => (x.id === g.id ? g : x)), updatedAt: nowIso() });
    audit({ action: 'table.group_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { groupId: g.id } });
    return { group: groupView({ ...t, columns }, g), columns: columns.map(columnView) };
  });
  return { status: 200, body: { data: result } };
};

export const deleteWorkflowGroup: Handler<'deleteWorkflowGroup'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'schema');
    const g = (t.groups ?? []).find((x) => x.id === body.groupId);
    if (!g) throw notFound('Workflow group');
    // The group goes with every column it fills.
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
    audit({ action: 'table.group_deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { groupId: g.id, columns: removed.map((c) => c.name) } });
    return { id: g.id, deleted: true as const, columns: columns.map(columnView) };
  });
  return { status: 200, body: { data: result } };
};

export const createTableDispatch: Handler<'createTableDispatch'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  if (body.rowIds !== undefined && body.filter !== undefined) throw badRequest('Send rowIds or filter, not both.', [{ code: 'custom', keys: ['rowIds', 'filter'], path: ['body'], message: 'rowIds and filter together' }]);
  const d = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    const groups = t.groups ?? [];
    for (const [i, id] of body.groupIds.entries()) if (!groups.some((g) => g.id === id)) throw invalidField(['body', 'groupIds', i], `The table has no workflow group ${id}.`);
    if (body.filter !== undefined) {
      try {
        parsePredicate(t.columns, body.filter, ['filter']);
      } catch (err) {
        asBadRequest(err, ['body']);
      }
    }
    const scope = { groupIds: body.groupIds, ...(body.rowIds ? { rowIds: body.rowIds } : {}), ...(body.filter ? { filtered: true } : {}), ...(body.excludeRowIds ? { excludeRowIds: body.excludeRowIds } : {}) };
    const created = await startDispatch(ctx, tx, t, { mode: body.runMode ?? 'all', scope, filter: body.filter ?? null, limit: body.limit ?? null, isManualRun: true });
    audit({ action: 'table.dispatch_created', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { dispatchId: created.id, groups: body.groupIds.length } });
    return created;
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: { dispatchId: d.id } } };
};

async function loadDispatch(ctx: RequestContext, tableId: string, dispatchId: string): Promise<DispatchRecord> {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, tableId);
  const d = await ctx.services.store.tableGroupRuns.getDispatch(dispatchId);
  if (!d || d.tableId !== t.id) throw notFound('Dispatch');
  return d;
}

export const listTableDispatches: Handler<'listTableDispatches'> = async ({ params, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  return { status: 200, body: { data: (await ctx.services.store.tableGroupRuns.listDispatches(t.id)).map(dispatchView), nextCursor: null } };
};

export const getTableDispatch: Handler<'getTableDispatch'> = async ({ params, ctx }) => {
  return { status: 200, body: { data: dispatchView(await loadDispatch(ctx, params.tableId, params.dispatchId)) } };
};

export const cancelTableDispatch: Handler<'cancelTableDispatch'> = async ({ params, ctx }) => {
  const d = await loadDispatch(ctx, params.tableId, params.dispatchId);
  const done = await ctx.mutate(async (tx, audit) => {
    // Stops the walk; cells it already queued are cancelled as well.
    if (await tx.tableGroupRuns.moveDispatch(d.id, ['pending', 'dispatching'], 'canceled', nowIso())) {
      audit({ action: 'table.dispatch_canceled', resourceType: 'table', resourceId: d.tableId, metadata: { dispatchId: d.id } });
    }
    return (await tx.tableGroupRuns.getDispatch(d.id))!;
  });
  await cancelRowRuns(ctx, d.tableId, null, (r) => r.dispatchId === d.id);
  return { status: 200, body: { data: dispatchView(done) } };
};

/** Cancels queued and running cell runs (and their workflow runs) that `pick` selects; returns how many. */
async function cancelRowRuns(ctx: RequestContext, tableId: string, rowId: string | null, pick: (r: RowRunRecord) => boolean): Promise<number> {
  const { store, runs } = ctx.services;
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

export const cancelTableRuns: Handler<'cancelTableRuns'> = async ({ params, body, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  if (body.scope === 'row' && !body.rowId) throw invalidField(['body', 'rowId'], 'scope row names the rowId.');
  let rows: Set<string> | null = null;
  if (body.filter !== undefined) {
    let where;
    try {
      where = parsePredicate(t.columns, body.filter, ['filter']);
    } catch (err) {
      asBadRequest(err, ['body']);
    }
    rows = new Set(await ctx.services.store.tableRows.matchingIds(t.id, where, Number.MAX_SAFE_INTEGER));
  }
  const excluded = new Set(body.excludeRowIds ?? []);
  if (body.scope === 'all') {
    await ctx.mutate(async (tx) => {
      for (const d of await tx.tableGroupRuns.listDispatches(t.id)) await tx.tableGroupRuns.moveDispatch(d.id, ['pending', 'dispatching'], 'canceled', nowIso());
    });
  }
  const cancelled = await cancelRowRuns(ctx, t.id, body.scope === 'row' ? body.rowId! : null, (r) => !excluded.has(r.rowId) && (rows === null || rows.has(r.rowId)));
  return { status: 200, body: { data: { cancelled } } };
};

export const getRowEnrichment: Handler<'getRowEnrichment'> = async ({ params, ctx }) => {
  const store = ctx.services.store;
  const t = await loadTable(store, workspaceOf(ctx).id, params.tableId);
  const g = (t.groups ?? []).find((x) => x.id === params.groupId);
  if (!g) throw notFound('Workflow group');
  const row = await store.tableRows.get(t.id, t.columns, params.rowId);
  if (!row) throw notFound('Row');
  const state = await store.tableGroupRuns.get(t.id, row.id, g.id);
  const outputs: Record<string, unknown> = {};
  for (const o of g.outputs) {
    const c = t.columns.find((x) => x.id === o.columnId);
    if (c) outputs[c.name] = fromStored(c, row.cells[c.id] ?? null);
  }
  // Workflow groups run one workflow, not a cascade of enrichment providers: their cascade is null.
  const cascade = g.type === 'enrichment' && state?.enrichmentDetails ? (state.enrichmentDetails as never) : null;
  return { status: 200, body: { data: { groupId: g.id, runState: state ? runStateView(state, (runId) => ctx.services.runs.runningBlockIds(runId)) : null, outputs, cascade } } };
};

export const runRowEnrichment: Handler<'runRowEnrichment'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const d = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    if (!(t.groups ?? []).some((x) => x.id === params.groupId)) throw notFound('Workflow group');
    if (!(await tx.tableRows.get(t.id, [], params.rowId))) throw notFound('Row');
    const created = await startDispatch(ctx, tx, t, { mode: 'all', scope: { groupIds: [params.groupId], rowIds: [params.rowId] }, filter: null, limit: null, isManualRun: true });
    audit({ action: 'table.dispatch_created', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { dispatchId: created.id, rowId: params.rowId } });
    return created;
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: { dispatchId: d.id } } };
};

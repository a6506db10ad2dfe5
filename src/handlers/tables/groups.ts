// Workflow groups (columns a workflow fills row by row), dispatches that run them, cancelling runs, and one row's
// group run (the "enrichment" operations, for workflow groups). The rules are src/tables/workflow-groups.ts; here
// the request is read, the answer shaped, and the group runner poked once a dispatch has committed.
import type { Handler } from '../../../generated/handlers.ts';
import { badRequest } from '../../http/errors.ts';
import { loadTable } from '../../tables/service.ts';
import * as groups from '../../tables/workflow-groups.ts';
import { workspaceOf } from './shared.ts';

export const listWorkflowGroups: Handler<'listWorkflowGroups'> = async ({ params, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  return { status: 200, body: { data: (t.groups ?? []).map((g) => groups.groupView(t, g)), nextCursor: null } };
};

export const addWorkflowGroup: Handler<'addWorkflowGroup'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  // Sent with autoRun, creating the group runs it on the rows whose dependencies are filled.
  const options = { autoRun: body.autoRun ?? body.group.autoRun ?? true, runNow: body.autoRun === true || body.group.autoRun === true, userId: ctx.principal.userId };
  const result = await ctx.mutate((tx, audit) => groups.addGroup(tx, audit, workspaceId, params.tableId, body.group, body.outputColumns ?? [], options));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const updateWorkflowGroup: Handler<'updateWorkflowGroup'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate((tx, audit) => groups.updateGroup(tx, audit, workspaceId, params.tableId, body));
  return { status: 200, body: { data: result } };
};

export const deleteWorkflowGroup: Handler<'deleteWorkflowGroup'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate((tx, audit) => groups.deleteGroup(tx, audit, workspaceId, params.tableId, body.groupId));
  return { status: 200, body: { data: result } };
};

export const createTableDispatch: Handler<'createTableDispatch'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  if (body.rowIds !== undefined && body.filter !== undefined) throw badRequest('Send rowIds or filter, not both.', [{ code: 'custom', keys: ['rowIds', 'filter'], path: ['body'], message: 'rowIds and filter together' }]);
  const d = await ctx.mutate((tx, audit) => groups.createDispatch(tx, audit, workspaceId, params.tableId, ctx.principal.userId, body));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: { dispatchId: d.id } } };
};

export const listTableDispatches: Handler<'listTableDispatches'> = async ({ params, ctx }) => {
  const dispatches = await groups.listDispatches(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  return { status: 200, body: { data: dispatches.map(groups.dispatchView), nextCursor: null } };
};

export const getTableDispatch: Handler<'getTableDispatch'> = async ({ params, ctx }) => {
  const d = await groups.loadDispatch(ctx.services.store, workspaceOf(ctx).id, params.tableId, params.dispatchId);
  return { status: 200, body: { data: groups.dispatchView(d) } };
};

export const cancelTableDispatch: Handler<'cancelTableDispatch'> = async ({ params, ctx }) => {
  const d = await groups.loadDispatch(ctx.services.store, workspaceOf(ctx).id, params.tableId, params.dispatchId);
  // Stops the walk; cells it already queued are cancelled as well.
  const done = await ctx.mutate((tx, audit) => groups.cancelDispatch(tx, audit, d));
  await groups.cancelRowRuns(ctx.services, d.tableId, null, (r) => r.dispatchId === d.id);
  return { status: 200, body: { data: groups.dispatchView(done) } };
};

export const cancelTableRuns: Handler<'cancelTableRuns'> = async ({ params, body, ctx }) => {
  const selected = await groups.runsToCancel(ctx.services.store, workspaceOf(ctx).id, params.tableId, body);
  if (body.scope === 'all') await ctx.mutate((tx) => groups.cancelAllDispatches(tx, selected.tableId));
  const cancelled = await groups.cancelRowRuns(ctx.services, selected.tableId, selected.rowId, selected.pick);
  return { status: 200, body: { data: { cancelled } } };
};

export const getRowEnrichment: Handler<'getRowEnrichment'> = async ({ params, ctx }) => {
  const runningBlocks = (runId: string) => ctx.services.runs.runningBlockIds(runId);
  const state = await groups.rowEnrichment(ctx.services.store, workspaceOf(ctx).id, params.tableId, params.groupId, params.rowId, runningBlocks);
  return { status: 200, body: { data: { ...state, cascade: state.cascade as never } } };
};

export const runRowEnrichment: Handler<'runRowEnrichment'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const d = await ctx.mutate((tx, audit) => groups.dispatchRow(tx, audit, workspaceId, params.tableId, ctx.principal.userId, params.groupId, params.rowId));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: { dispatchId: d.id } } };
};

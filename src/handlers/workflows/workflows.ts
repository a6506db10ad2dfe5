// Workflows handlers: the workflows themselves (list, create, read, update, archive, restore, duplicate, move,
// export, import). The rules live in src/workflows/service.ts; these parse, authorize and shape the answer.
import type { Handler } from '../../../generated/handlers.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { WorkflowRecord } from '../../store/workflows.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { parseFolderPath, resolveExistingFolder } from '../../workflows/folders.ts';
import { blockRefs } from '../../workflows/state.ts';
import { lintState } from '../../workflows/lint.ts';
import { exportDocument } from '../../workflows/portable.ts';
import * as workflows from '../../workflows/service.ts';
import { loadWorkflow, workflowDetail, workflowTag, workflowView } from './shared.ts';
import { inputFingerprint, newOperationId, priorReceipt, recordReceipt, type Receipt } from '../../forks/receipts.ts';

const now = () => new Date().toISOString();

const WORKFLOW_SORT_VALUE = {
  position: (w: WorkflowRecord) => w.position,
  name: (w: WorkflowRecord) => w.name,
  createdAt: (w: WorkflowRecord) => w.createdAt,
  updatedAt: (w: WorkflowRecord) => w.updatedAt,
  runCount: (w: WorkflowRecord) => w.runCount,
};

export const listWorkflows: Handler<'listWorkflows'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'position';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const scope = query.scope ?? 'active';
  const binding = { workspaceId: query.workspaceId, scope, folderPath: query.folderPath, deployedOnly: query.deployedOnly, search: query.search, sortBy, sortOrder };
  const after = readCursor(ctx, query.cursor, binding);
  const store = ctx.services.store;
  let folderPath: string | null = null;
  if (query.folderPath !== undefined) {
    folderPath = await resolveExistingFolder(store, query.workspaceId, parseFolderPath(query.folderPath, ['query', 'folderPath']));
    if (folderPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  }
  const rows = await store.workflows.list({
    workspaceId: query.workspaceId,
    archived: scope === 'archived',
    folderPath,
    deployedOnly: query.deployedOnly === true,
    search: query.search ?? null,
    sortBy,
    sortOrder,
    after,
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (w) => [WORKFLOW_SORT_VALUE[sortBy](w), w.id], (w) => workflowView(ctx, w)) };
};

export const createWorkflow: Handler<'createWorkflow'> = async ({ body, ctx }) => {
  const name = workflows.checkName(body.name, ['body', 'name']);
  const folderPath = body.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : '/';
  const created = await ctx.mutate((tx, audit) =>
    workflows.createWorkflow(tx, audit, ctx.principal.userId, { workspaceId: body.workspaceId, name, description: body.description ?? null, folderPath }),
  );
  return { status: 201, body: { data: { ...workflowView(ctx, created.w), blocks: blockRefs(created.state) } } };
};

export const getWorkflow: Handler<'getWorkflow'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const data = workflowDetail(ctx, w);
  return { status: 200, body: { data }, headers: { ETag: workflowTag(ctx, w, data) } };
};

export const updateWorkflow: Handler<'updateWorkflow'> = async ({ params, body, ctx }) => {
  await loadWorkflow(ctx, params.workflowId);
  const name = body.name !== undefined ? workflows.checkName(body.name, ['body', 'name']) : undefined;
  const folderPath = body.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : undefined;
  const updated = await ctx.mutate((tx, audit) =>
    workflows.updateWorkflow(tx, audit, params.workflowId, { name, description: body.description, folderPath, fields: Object.keys(body) }, (w) => ctx.precondition(() => workflowTag(ctx, w))),
  );
  return { status: 200, body: { data: workflowView(ctx, updated) }, headers: { ETag: workflowTag(ctx, updated) } };
};

export const deleteWorkflow: Handler<'deleteWorkflow'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  workflows.assertUnlocked(w);
  // Archiving an archived workflow changes nothing; If-Match still applies to it.
  if (w.archived) ctx.precondition(() => workflowTag(ctx, w));
  else await ctx.mutate((tx, audit) => workflows.archiveWorkflow(tx, audit, w.id, (current) => ctx.precondition(() => workflowTag(ctx, current))));
  return { status: 200, body: { data: { id: w.id, deleted: true, archived: true } } };
};

export const restoreWorkflow: Handler<'restoreWorkflow'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  if (!w.archived) return { status: 200, body: { data: workflowView(ctx, w) } };
  const restored = await ctx.mutate((tx, audit) => workflows.restoreWorkflow(tx, audit, w.id));
  return { status: 200, body: { data: workflowView(ctx, restored) } };
};

export const duplicateWorkflow: Handler<'duplicateWorkflow'> = async ({ params, body, ctx }) => {
  const source = await loadWorkflow(ctx, params.workflowId);
  const name = body?.name !== undefined ? workflows.checkName(body.name, ['body', 'name']) : undefined;
  const folderPath = body?.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : source.folderPath;
  const copy = await ctx.mutate((tx, audit) => workflows.duplicateWorkflow(tx, audit, ctx.principal.userId, source, { name, folderPath, folderNamed: body?.folderPath !== undefined }));
  return { status: 201, body: { data: workflowView(ctx, copy) } };
};

export const moveWorkflows: Handler<'moveWorkflows'> = async ({ body, ctx }) => {
  const folderPath = parseFolderPath(body.folderPath, ['body', 'folderPath']);
  const result = await ctx.mutate((tx, audit) => workflows.moveWorkflows(tx, audit, body.workspaceId, [...new Set(body.workflowIds)], folderPath));
  return { status: 200, body: { data: { ...result, folderPath: folderPathToWire(folderPath) } } };
};

export const exportWorkflow: Handler<'exportWorkflow'> = async ({ params, query, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const doc = exportDocument({ ...w, folderPath: folderPathToWire(w.folderPath) }, workflows.stateOf(w), now());
  return { status: 200, body: { data: query.includeReferences ? { ...doc, referenceManifest: { version: 1 as const, references: [] } } : doc } };
};

export const previewWorkflowImport: Handler<'previewWorkflowImport'> = async ({ body, ctx }) => {
  const plan = await workflows.previewImport(ctx.services.store, ctx.services.content, body);
  return {
    status: 200,
    body: { data: { previewFingerprint: plan.fingerprint, ready: true, bindings: [], unresolvedBindings: [], configuration: [], unresolvedConfiguration: [], discovery: [] } },
  };
};

export const importWorkflow: Handler<'importWorkflow'> = async ({ body, ctx }) => {
  // With a request id the import leaves a durable receipt (src/forks/receipts.ts): an identical retry answers
  // the same workflow and receipt instead of importing twice, and the CLI can reconcile by request id.
  const { requestId, ...inputs } = body;
  const fingerprint = requestId !== undefined ? inputFingerprint('workflow_import', inputs) : null;
  if (requestId !== undefined) {
    const prior = await priorReceipt(ctx.services.store, body.workspaceId, requestId, 'workflow_import', fingerprint!);
    const imported = prior ? await ctx.services.store.workflows.get(prior.resourceIds[0] ?? '') : undefined;
    if (prior && imported) return { status: 201, body: { data: importAnswer(imported, workflows.stateOf(imported), [], prior) } };
  }
  const plan = await workflows.planImport(ctx.services.content, body);
  workflows.assertPreviewed(plan, body.previewFingerprint);
  const { created, warnings, receipt } = await ctx.mutate(async (tx, audit) => {
    const created = await workflows.importWorkflow(tx, audit, ctx.principal.userId, plan);
    const warnings = [
      ...(created.renamed ? [`The name "${plan.name}" was taken; the workflow was imported as "${created.w.name}".`] : []),
      ...lintState(created.state).notes,
    ];
    const status = warnings.length > 0 ? ('completed_with_warnings' as const) : ('completed' as const);
    const receipt =
      requestId === undefined
        ? undefined
        : await recordReceipt(tx, { operationId: newOperationId(), requestId, workspaceId: body.workspaceId, kind: 'workflow_import', applied: true, status, resourceIds: [created.w.id], issues: [], idMap: {} }, fingerprint!);
    return { created, warnings, receipt };
  });
  return { status: 201, body: { data: importAnswer(created.w, created.state, warnings, receipt) } };
};

/** The imported workflow, with its receipt's fields when the import was sent with a request id. */
function importAnswer(w: WorkflowRecord, state: ReturnType<typeof workflows.stateOf>, warnings: string[], receipt: Receipt | undefined) {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    workspaceId: w.workspaceId,
    folderPath: folderPathToWire(w.folderPath),
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
    blocks: blockRefs(state),
    warnings,
    ...(receipt ? { operationId: receipt.operationId, requestId: receipt.requestId, resourceIds: receipt.resourceIds, issues: receipt.issues } : {}),
    kind: 'workflow_import' as const,
    applied: true as const,
    status: receipt ? (receipt.status as 'completed' | 'completed_with_warnings') : warnings.length > 0 ? ('completed_with_warnings' as const) : ('completed' as const),
    idMap: {},
  };
}

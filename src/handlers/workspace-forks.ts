// Handlers for the Workspace Forks operations. The Enterprise gate, the admin role and the refusal of workspace
// keys are declared in the spec (x-plans, x-min-role, x-rejects-workspace-keys) for the workspace in the path;
// a sync also needs admin in the other workspace, checked here with the same policy. The rules live in src/forks/.
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import type { Principal } from '../identity/principal.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { pageInMemory } from './list-support.ts';
import type { Workspace } from '../store/workspaces.ts';
import { inputFingerprint, priorReceipt, type Receipt } from '../forks/receipts.ts';
import {
  applySync,
  assertFingerprint,
  checkMappings,
  directEdge,
  forkingAvailable,
  forkWorkspace as forkInto,
  orientedMappings,
  planFork,
  planSync,
  previewView,
  rollbackLatestSync,
  saveMappings,
  setExclusions,
  sides,
  unlink,
  type Direction,
  type SyncRequest,
} from '../forks/service.ts';

type Ctx = RequestContext<Principal>;
const currentOf = (ctx: Ctx): Workspace => ctx.workspace!.workspace;
const workspaceRef = (w: Workspace) => ({ id: w.id, name: w.name, organizationId: null });

/** The other side of an edge must be administered by the caller too (and be on a plan that allows forks). */
const authorizeOther = (ctx: Ctx, otherWorkspaceId: string) => ctx.authorizeWorkspace(otherWorkspaceId, { minRole: 'admin' });

export const getWorkspaceForkAvailability: Handler<'getWorkspaceForkAvailability'> = async ({ ctx }) => {
  return { status: 200, body: { data: { available: forkingAvailable(currentOf(ctx)) } } };
};

export const getWorkspaceForkLineage: Handler<'getWorkspaceForkLineage'> = async ({ ctx }) => {
  const current = currentOf(ctx);
  const edge = await ctx.services.store.workspaceForks.parentEdge(current.id);
  const parent = edge ? await ctx.services.store.workspaces.get(edge.parentWorkspaceId) : undefined;
  return { status: 200, body: { data: { current: workspaceRef(current), parent: parent ? workspaceRef(parent) : null } } };
};

export const listWorkspaceForkChildren: Handler<'listWorkspaceForkChildren'> = async ({ query, ctx }) => {
  const limit = query.limit ?? 50;
  const binding = { sortBy: 'createdAt', sortOrder: 'desc' };
  const store = ctx.services.store;
  const edges = await store.workspaceForks.children(currentOf(ctx).id, readCursor(ctx, query.cursor, binding), limit + 1);
  const rows = [];
  for (const e of edges) {
    const w = await store.workspaces.get(e.childWorkspaceId);
    if (w) rows.push({ edge: e, w });
  }
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, (r) => [r.edge.createdAt, r.edge.childWorkspaceId], (r) => ({ id: r.w.id, name: r.w.name, organizationId: null, createdAt: r.edge.createdAt })),
  };
};

export const listWorkspaceForkResources: Handler<'listWorkspaceForkResources'> = async ({ query, ctx }) => {
  const limit = query.limit ?? 50;
  const binding = { kind: query.kind, sortBy: 'id', sortOrder: 'asc' };
  const after = readCursor(ctx, query.cursor, binding);
  const store = ctx.services.store;
  const workspaceId = currentOf(ctx).id;
  const all = 100_000;
  let items: { id: string; label: string; folderId?: string | null; folderName?: string | null }[];
  switch (query.kind) {
    case 'files': {
      const files = await store.files.list({ workspaceId, archived: false, folderPath: null, recursive: true, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: all });
      items = [];
      for (const f of files) {
        const folder = f.folderPath === '/' ? undefined : await store.fileFolders.getActive(workspaceId, f.folderPath);
        items.push({ id: f.id, label: f.name, folderId: folder?.id ?? null, folderName: folder?.name ?? null });
      }
      break;
    }
    case 'tables':
      items = (await store.userTables.list({ workspaceId, archived: false, folderPath: null, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: all })).map((t) => ({ id: t.id, label: t.name }));
      break;
    case 'knowledgeBases':
      items = (await store.knowledgeBases.list({ workspaceId, archived: false, folderPath: null, search: null, sortBy: 'name', order: 'asc', after: null, limit: all })).map((k) => ({ id: k.id, label: k.name }));
      break;
    case 'customTools':
      items = (await store.customTools.all(workspaceId)).map((t) => ({ id: t.id, label: t.title }));
      break;
    case 'skills':
      items = (await store.skills.listAll(workspaceId)).map((s) => ({ id: s.id, label: s.name }));
      break;
    case 'mcpServers':
      items = (await store.mcpServers.list({ workspaceId, search: null, sortBy: 'name', order: 'asc', after: null, limit: all })).map((s) => ({ id: s.id, label: s.name }));
      break;
    case 'workflowMcpServers':
      items = (await store.workflowMcpServers.list({ workspaceId, sortBy: 'name', order: 'asc', after: null, limit: all })).map((s) => ({ id: s.id, label: s.name }));
      break;
  }
  const rows = pageInMemory(items, (i) => [i.id, i.id], 'asc', after, limit);
  return { status: 200, body: toPage(ctx, rows, limit, binding, (i) => [i.id, i.id], (i) => i) };
};

export const previewWorkspaceFork: Handler<'previewWorkspaceFork'> = async ({ body, ctx }) => {
  const plan = await planFork(ctx.services.store, currentOf(ctx), body);
  return {
    status: 200,
    body: {
      data: {
        previewFingerprint: plan.fingerprint,
        sourceWorkspaceId: plan.source.id,
        workflows: plan.workflows.map(({ w }) => ({ sourceWorkflowId: w.id, name: w.name })),
        selectedResourceCount: plan.selectedResourceCount,
        draftOnly: true as const,
      },
    },
  };
};

/** Whether a knowledge base was copied: its documents wait for the knowledge worker, woken after commit. */
function afterCommit(ctx: Ctx, result: { receipt: Receipt; knowledgeCopied: boolean }) {
  if (result.knowledgeCopied) ctx.services.knowledge.notify();
  return { status: 200 as const, body: { data: result.receipt } };
}

export const forkWorkspace: Handler<'forkWorkspace'> = async ({ body, ctx }) => {
  const current = currentOf(ctx);
  const requestId = body.requestId.trim();
  const fingerprint = inputFingerprint('workspace_fork', { name: body.name ?? null, copy: body.copy ?? {}, previewFingerprint: body.previewFingerprint });
  const prior = await priorReceipt(ctx.services.store, current.id, requestId, 'workspace_fork', fingerprint);
  if (prior) return { status: 200, body: { data: prior } };
  const result = await ctx.mutate(async (tx, audit) => {
    const plan = await planFork(tx, current, body);
    assertFingerprint(plan.fingerprint, body.previewFingerprint);
    return forkInto(tx, audit, ctx.principal.userId, plan, { requestId, tables: ctx.services.config.tables, fingerprint });
  });
  return afterCommit(ctx, result);
};

async function previewSync(ctx: Ctx, direction: Direction, body: SyncRequest) {
  await authorizeOther(ctx, body.otherWorkspaceId);
  const plan = await planSync(ctx.services.store, currentOf(ctx), direction, body);
  return { status: 200 as const, body: { data: previewView(plan) } };
}

async function sync(ctx: Ctx, direction: Direction, body: SyncRequest & { requestId: string; previewFingerprint: string }) {
  const current = currentOf(ctx);
  await authorizeOther(ctx, body.otherWorkspaceId);
  const kind = direction === 'push' ? 'workspace_push' : 'workspace_pull';
  const requestId = body.requestId.trim();
  const { requestId: _r, ...inputs } = body;
  const fingerprint = inputFingerprint(kind, inputs);
  const prior = await priorReceipt(ctx.services.store, current.id, requestId, kind, fingerprint);
  if (prior) return { status: 200 as const, body: { data: prior } };
  const result = await ctx.mutate(async (tx, audit) => {
    const plan = await planSync(tx, current, direction, body);
    assertFingerprint(plan.fingerprint, body.previewFingerprint);
    return applySync(tx, audit, ctx.principal.userId, current, direction, plan, { requestId, tables: ctx.services.config.tables, fingerprint });
  });
  return afterCommit(ctx, result);
}

export const previewWorkspacePush: Handler<'previewWorkspacePush'> = ({ body, ctx }) => previewSync(ctx, 'push', body);
export const previewWorkspacePull: Handler<'previewWorkspacePull'> = ({ body, ctx }) => previewSync(ctx, 'pull', body);
export const pushWorkspace: Handler<'pushWorkspace'> = ({ body, ctx }) => sync(ctx, 'push', body);
export const pullWorkspace: Handler<'pullWorkspace'> = ({ body, ctx }) => sync(ctx, 'pull', body);

export const getWorkspaceForkMappings: Handler<'getWorkspaceForkMappings'> = async ({ query, ctx }) => {
  const current = currentOf(ctx);
  const limit = query.limit ?? 50;
  const binding = { otherWorkspaceId: query.otherWorkspaceId, direction: query.direction, sortBy: 'id', sortOrder: 'asc' };
  const after = readCursor(ctx, query.cursor, binding);
  const edge = await directEdge(ctx.services.store, current.id, query.otherWorkspaceId);
  const { sourceIsParent } = sides(edge, current.id, query.direction);
  const rows = [...(await orientedMappings(ctx.services.store, edge, sourceIsParent)).values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page = pageInMemory(rows, (m) => [m.id, m.id], 'asc', after, limit);
  return {
    status: 200,
    body: toPage(ctx, page, limit, binding, (m) => [m.id, m.id], (m) => ({ resourceType: m.resourceType as never, sourceId: m.sourceId, targetId: m.targetId, id: m.id })),
  };
};

export const updateWorkspaceForkMappings: Handler<'updateWorkspaceForkMappings'> = async ({ body, ctx }) => {
  const current = currentOf(ctx);
  await authorizeOther(ctx, body.otherWorkspaceId);
  const updated = await ctx.mutate(async (tx, audit) => {
    const edge = await directEdge(tx, current.id, body.otherWorkspaceId);
    const { sourceWorkspaceId, targetWorkspaceId, sourceIsParent } = sides(edge, current.id, body.direction);
    await checkMappings(tx, sourceWorkspaceId, targetWorkspaceId, body.mappings);
    const n = await saveMappings(tx, edge, sourceIsParent, body.mappings);
    audit({ action: 'workspace.fork_mappings_updated', resourceType: 'workspace', resourceId: edge.childWorkspaceId, metadata: { direction: body.direction, otherWorkspaceId: body.otherWorkspaceId, updated: n } });
    return n;
  });
  return { status: 200, body: { data: { updated } } };
};

export const rollbackWorkspaceFork: Handler<'rollbackWorkspaceFork'> = async ({ body, ctx }) => {
  const result = await ctx.mutate((tx, audit) => rollbackLatestSync(tx, audit, currentOf(ctx), body.otherWorkspaceId, ctx.principal.userId));
  return { status: 200, body: { data: result } };
};

export const unlinkWorkspaceFork: Handler<'unlinkWorkspaceFork'> = async ({ body, ctx }) => {
  const unlinked = await ctx.mutate((tx, audit) => unlink(tx, audit, currentOf(ctx), body.otherWorkspaceId));
  return { status: 200, body: { data: { unlinked } } };
};

export const updateWorkspaceForkExclusions: Handler<'updateWorkspaceForkExclusions'> = async ({ body, ctx }) => {
  const updated = await ctx.mutate((tx, audit) => setExclusions(tx, audit, currentOf(ctx).id, body.workflowIds, body.forkSyncExcluded));
  return { status: 200, body: { data: { updated } } };
};

// Handlers for the Workflows operations. They validate what the spec cannot express, authorize, and call the
// workflow domain (src/workflows/) and the store; every change and its one audit event commit together.
import { createHash, randomUUID } from 'node:crypto';
import type { Handler, OperationInputs } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { ApiError, badRequest, conflict, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { tagOf, tagOfText } from '../http/conditional.ts';
import type { Repositories } from '../store/index.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { FolderRecord as WorkflowFolderRecord } from '../store/folders.ts';
import type { DeploymentAttemptRecord, WorkflowVersionRecord } from '../store/workflow-versions.ts';
import { folderName } from '../domain/folder-paths.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';
import { assertTreeSize, ensureFolder, parseFolderPath, resolveExistingFolder, withWorkflowTree, workflowTree } from '../workflows/folders.ts';
import {
  blockRefs,
  copyWithFreshIds,
  executableFingerprint,
  prepareState,
  seedState,
  stableStringify,
  startInputs,
  type Block,
  type Edge,
  type Variable,
  type WorkflowState,
} from '../workflows/state.ts';
import { lintState, lintWarnings } from '../workflows/lint.ts';
import { applyOperations, type BlockOperation, type OperationsOutcome } from '../workflows/operations.ts';
import { exportDocument } from '../workflows/portable.ts';
import { WorkerOverrun } from '../content/index.ts';

// ---- shared helpers

/** Domain and state errors become the documented error bodies. */
function toApi(err: unknown): unknown {
  // A document its content worker could not read within its time or memory limit is too costly to import.
  if (err instanceof WorkerOverrun && err.reason !== 'stopped') return new ApiError('PAYLOAD_TOO_LARGE', `The workflow document could not be read: ${err.message}`, { reason: err.reason });
  return err;
}

function handle<K extends keyof OperationInputs>(fn: Handler<K>): Handler<K> {
  return (async (input: Parameters<Handler<K>>[0]) => {
    try {
      return await fn(input);
    } catch (err) {
      throw toApi(err);
    }
  }) as Handler<K>;
}

const now = () => new Date().toISOString();
const locked = (what: string, details?: unknown) => new ApiError('LOCKED', what, details);

function webUrl(ctx: RequestContext, w: { workspaceId: string; id: string }): string {
  return `${ctx.services.config.baseUrl}/workspace/${encodeURIComponent(w.workspaceId)}/w/${encodeURIComponent(w.id)}`;
}

function workflowView(ctx: RequestContext, w: WorkflowRecord) {
  return {
    id: w.id,
    webUrl: webUrl(ctx, w),
    name: w.name,
    description: w.description,
    folderPath: folderPathToWire(w.folderPath),
    workspaceId: w.workspaceId,
    isDeployed: w.isDeployed,
    deployedAt: w.deployedAt,
    runCount: w.runCount,
    lastRunAt: w.lastRunAt,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

function folderView(f: WorkflowFolderRecord) {
  return { name: f.name, path: folderPathToWire(f.path), parentPath: folderPathToWire(f.parentPath), createdAt: f.createdAt, updatedAt: f.updatedAt, locked: f.locked };
}

const stateOf = (w: { state: string }): WorkflowState => JSON.parse(w.state) as WorkflowState;

/** What getWorkflow answers: the workflow with its variables and start inputs. */
function workflowDetail(ctx: RequestContext, w: WorkflowRecord) {
  const state = stateOf(w);
  return { ...workflowView(ctx, w), variables: state.variables, inputs: startInputs(state) };
}

/**
 * Entity tags (src/http/conditional.ts). The draft state's is the hash of its stored JSON; the workflow's is
 * the hash of getWorkflow's answer without the run statistics, which runs update without changing the
 * workflow. Both follow every write by any path, since they are computed from what is stored.
 */
const stateTag = (w: { state: string }) => tagOfText(w.state);
function workflowTag(ctx: RequestContext, w: WorkflowRecord, detail = workflowDetail(ctx, w)): string {
  const { runCount: _runs, lastRunAt: _lastRun, ...document } = detail;
  return tagOf(document);
}

/** Loads a workflow by id and checks the caller may act in its workspace; anything else is a 404. */
async function loadWorkflow(ctx: RequestContext, id: string, repos: Repositories = ctx.services.store): Promise<WorkflowRecord> {
  const w = await repos.workflows.get(id);
  if (!w) throw notFound('Workflow');
  await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  return w;
}

/** The same workflow read again inside a transaction, so the change works on the latest row. */
async function reload(tx: Repositories, id: string): Promise<WorkflowRecord> {
  const w = await tx.workflows.get(id);
  if (!w) throw notFound('Workflow');
  return w;
}

function assertUnlocked(w: WorkflowRecord): void {
  if (w.locked) throw locked('The workflow is locked.', { lock: 'workflow' });
}

function assertActive(w: WorkflowRecord): void {
  if (w.archived) throw notFound('Workflow');
}

/** `name`, or `name (2)`, `name (3)`… whichever is free among the folder's active workflows. */
async function freeName(repos: Repositories, workspaceId: string, folderPath: string, name: string, exceptId: string | null = null): Promise<string> {
  if (!(await repos.workflows.nameTaken(workspaceId, folderPath, name, exceptId))) return name;
  for (let i = 2; ; i++) {
    const candidate = `${name} (${i})`;
    if (!(await repos.workflows.nameTaken(workspaceId, folderPath, candidate, exceptId))) return candidate;
  }
}

function checkName(name: string, field: string[]): string {
  if (name.trim() === '') throw badRequest('A workflow name may not be blank.', [{ code: 'too_small', keys: [], path: field, message: 'Name is blank' }]);
  return name;
}

async function assertNameFree(repos: Repositories, workspaceId: string, folderPath: string, name: string, exceptId: string | null = null) {
  if (await repos.workflows.nameTaken(workspaceId, folderPath, name, exceptId)) {
    throw conflict(`A workflow named "${name}" already exists in ${folderPathToWire(folderPath)}.`, { name, folderPath: folderPathToWire(folderPath) });
  }
}

function newWorkflowRecord(fields: { id?: string; workspaceId: string; name: string; description: string | null; folderPath: string; position: number; state: WorkflowState; createdBy: string; at: string }): WorkflowRecord {
  return {
    id: fields.id ?? randomUUID(),
    workspaceId: fields.workspaceId,
    name: fields.name,
    description: fields.description,
    folderPath: fields.folderPath,
    position: fields.position,
    archived: false,
    archivedAt: null,
    locked: false,
    isDeployed: false,
    deployedAt: null,
    activeVersionId: null,
    isPublicApi: false,
    runCount: 0,
    lastRunAt: null,
    state: JSON.stringify(fields.state),
    stateSavedAt: fields.at,
    createdBy: fields.createdBy,
    createdAt: fields.at,
    updatedAt: fields.at,
  };
}

/** A write may not change or remove a locked block. */
function assertLockedBlocksKept(before: WorkflowState, after: WorkflowState): void {
  const changed = Object.values(before.blocks)
    .filter((b) => b.locked === true)
    .filter((b) => !after.blocks[b.id] || stableStringify(after.blocks[b.id]) !== stableStringify(b))
    .map((b) => b.id);
  if (changed.length > 0) throw locked(`${changed.length} locked block(s) would be changed or removed.`, { lock: 'block', blockIds: changed });
}

async function activeVersion(repos: Repositories, w: WorkflowRecord): Promise<WorkflowVersionRecord | undefined> {
  return w.isDeployed && w.activeVersionId ? repos.workflowVersions.getById(w.activeVersionId) : undefined;
}

/** True when the draft differs, in what runs, from the live version. */
async function needsRedeployment(repos: Repositories, w: WorkflowRecord, draft: WorkflowState): Promise<boolean> {
  const live = await activeVersion(repos, w);
  if (!live) return false;
  return executableFingerprint(draft) !== executableFingerprint(stateOf(live));
}

function attemptView(a: DeploymentAttemptRecord, w: WorkflowRecord) {
  return {
    id: a.id,
    deploymentVersionId: a.versionId,
    version: a.version,
    action: a.action,
    status: a.status,
    isCurrent: a.status === 'active' && w.isDeployed && w.activeVersionId === a.versionId,
    readiness: { webhooks: 'not_applicable' as const, schedules: 'not_applicable' as const, mcp: 'not_applicable' as const },
    requestedAt: a.requestedAt,
    activatedAt: a.activatedAt,
  };
}

async function deploymentCore(repos: Repositories, w: WorkflowRecord) {
  const live = await activeVersion(repos, w);
  const attempt = live ? await repos.workflowVersions.latestAttempt(w.id) : undefined;
  return {
    id: w.id,
    isDeployed: Boolean(live),
    deployedAt: live ? w.deployedAt : null,
    // What is wrong with the live graph (references to missing blocks or outputs, missing inputs…); advisory.
    warnings: live ? lintWarnings(lintState(stateOf(live))) : [],
    activeDeployment: live ? { deploymentVersionId: live.id, version: live.version, deployedAt: w.deployedAt ?? live.createdAt } : null,
    latestDeploymentAttempt: attempt ? attemptView(attempt, w) : null,
  };
}

/** Makes `version` the live one: one activation attempt, and the workflow points at it. */
async function activate(tx: Repositories, w: WorkflowRecord, version: WorkflowVersionRecord, action: 'deploy' | 'activate', at: string): Promise<WorkflowRecord> {
  await tx.workflowVersions.recordActivation({ id: randomUUID(), workflowId: w.id, versionId: version.id, version: version.version, action, requestedAt: at, activatedAt: at });
  await tx.workflows.update(w.id, { isDeployed: true, deployedAt: at, activeVersionId: version.id, updatedAt: at });
  return { ...w, isDeployed: true, deployedAt: at, activeVersionId: version.id, updatedAt: at };
}

const WORKFLOW_SORT_VALUE = {
  position: (w: WorkflowRecord) => w.position,
  name: (w: WorkflowRecord) => w.name,
  createdAt: (w: WorkflowRecord) => w.createdAt,
  updatedAt: (w: WorkflowRecord) => w.updatedAt,
  runCount: (w: WorkflowRecord) => w.runCount,
};

// ---- workflows

export const listWorkflows: Handler<'listWorkflows'> = handle<'listWorkflows'>(async ({ query, ctx }) => {
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
});

export const createWorkflow: Handler<'createWorkflow'> = handle<'createWorkflow'>(async ({ body, ctx }) => {
  const name = checkName(body.name, ['body', 'name']);
  const folderPath = body.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : '/';
  const created = await ctx.mutate(async (tx, audit) => {
    const at = now();
    await ensureFolder(tx, body.workspaceId, folderPath, at);
    await assertNameFree(tx, body.workspaceId, folderPath, name);
    const { state } = seedState();
    const w = newWorkflowRecord({ workspaceId: body.workspaceId, name, description: body.description ?? null, folderPath, position: await tx.workflows.nextPosition(body.workspaceId), state, createdBy: ctx.principal.userId, at });
    await tx.workflows.insert(w);
    audit({ action: 'workflow.created', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, metadata: { folderPath: folderPathToWire(folderPath) } });
    return { w, state };
  });
  return { status: 201, body: { data: { ...workflowView(ctx, created.w), blocks: blockRefs(created.state) } } };
});

export const getWorkflow: Handler<'getWorkflow'> = handle<'getWorkflow'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const data = workflowDetail(ctx, w);
  return { status: 200, body: { data }, headers: { ETag: workflowTag(ctx, w, data) } };
});

export const updateWorkflow: Handler<'updateWorkflow'> = handle<'updateWorkflow'>(async ({ params, body, ctx }) => {
  await loadWorkflow(ctx, params.workflowId);
  const name = body.name !== undefined ? checkName(body.name, ['body', 'name']) : undefined;
  const folderPath = body.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : undefined;
  const updated = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, params.workflowId);
    ctx.precondition(() => workflowTag(ctx, w));
    const at = now();
    const nextFolder = folderPath ?? w.folderPath;
    const nextName = name ?? w.name;
    if (folderPath !== undefined) await ensureFolder(tx, w.workspaceId, folderPath, at);
    if (!w.archived && (nextName !== w.name || nextFolder !== w.folderPath)) await assertNameFree(tx, w.workspaceId, nextFolder, nextName, w.id);
    const changes = { name: nextName, description: body.description === undefined ? w.description : body.description, folderPath: nextFolder, updatedAt: at };
    await tx.workflows.update(w.id, changes);
    audit({ action: 'workflow.updated', resourceType: 'workflow', resourceId: w.id, resourceName: nextName, workspaceId: w.workspaceId, metadata: { fields: Object.keys(body) } });
    return reload(tx, w.id);
  });
  return { status: 200, body: { data: workflowView(ctx, updated) }, headers: { ETag: workflowTag(ctx, updated) } };
});

export const deleteWorkflow: Handler<'deleteWorkflow'> = handle<'deleteWorkflow'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  assertUnlocked(w);
  // Archiving an archived workflow changes nothing; If-Match still applies to it.
  if (w.archived) ctx.precondition(() => workflowTag(ctx, w));
  if (!w.archived) {
    await ctx.mutate(async (tx, audit) => {
      const current = await reload(tx, w.id);
      assertUnlocked(current);
      ctx.precondition(() => workflowTag(ctx, current));
      const at = now();
      await tx.workflows.update(w.id, { archived: true, archivedAt: at, isDeployed: false, deployedAt: null, activeVersionId: null, updatedAt: at });
      await tx.workflowVersions.deactivate(w.id);
      audit({ action: 'workflow.deleted', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { archived: true, wasDeployed: current.isDeployed } });
    });
  }
  return { status: 200, body: { data: { id: w.id, deleted: true, archived: true } } };
});

export const restoreWorkflow: Handler<'restoreWorkflow'> = handle<'restoreWorkflow'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  if (!w.archived) return { status: 200, body: { data: workflowView(ctx, w) } };
  const restored = await ctx.mutate(async (tx, audit) => {
    const current = await reload(tx, w.id);
    const at = now();
    // A folder archived meanwhile is not brought back: the workflow returns to the root instead.
    const folderPath = current.folderPath === '/' || (await tx.workflowFolders.getActive(w.workspaceId, current.folderPath)) ? current.folderPath : '/';
    const name = await freeName(tx, w.workspaceId, folderPath, current.name, w.id);
    const changes = { archived: false, archivedAt: null, folderPath, name, updatedAt: at };
    await tx.workflows.update(w.id, changes);
    audit({ action: 'workflow.restored', resourceType: 'workflow', resourceId: w.id, resourceName: name, workspaceId: w.workspaceId, metadata: { folderPath: folderPathToWire(folderPath) } });
    return { ...current, ...changes };
  });
  return { status: 200, body: { data: workflowView(ctx, restored) } };
});

export const duplicateWorkflow: Handler<'duplicateWorkflow'> = handle<'duplicateWorkflow'>(async ({ params, body, ctx }) => {
  const source = await loadWorkflow(ctx, params.workflowId);
  const requestedName = body?.name !== undefined ? checkName(body.name, ['body', 'name']) : undefined;
  const folderPath = body?.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : source.folderPath;
  const copy = await ctx.mutate(async (tx, audit) => {
    const at = now();
    if (body?.folderPath !== undefined || folderPath !== '/') await ensureFolder(tx, source.workspaceId, folderPath, at);
    let name: string;
    if (requestedName !== undefined) {
      await assertNameFree(tx, source.workspaceId, folderPath, requestedName);
      name = requestedName;
    } else name = await freeName(tx, source.workspaceId, folderPath, source.name);
    const state = copyWithFreshIds(stateOf(await reload(tx, source.id)));
    const w = newWorkflowRecord({ workspaceId: source.workspaceId, name, description: source.description, folderPath, position: await tx.workflows.nextPosition(source.workspaceId), state, createdBy: ctx.principal.userId, at });
    await tx.workflows.insert(w);
    audit({ action: 'workflow.duplicated', resourceType: 'workflow', resourceId: w.id, resourceName: name, workspaceId: w.workspaceId, metadata: { sourceWorkflowId: source.id } });
    return w;
  });
  return { status: 201, body: { data: workflowView(ctx, copy) } };
});

export const moveWorkflows: Handler<'moveWorkflows'> = handle<'moveWorkflows'>(async ({ body, ctx }) => {
  const folderPath = parseFolderPath(body.folderPath, ['body', 'folderPath']);
  const ids = [...new Set(body.workflowIds)];
  const result = await ctx.mutate(async (tx, audit) => {
    const at = now();
    await ensureFolder(tx, body.workspaceId, folderPath, at);
    const moved: string[] = [];
    const failed: string[] = [];
    for (const id of ids) {
      const w = await tx.workflows.get(id);
      if (!w || w.workspaceId !== body.workspaceId || w.archived) {
        failed.push(id);
        continue;
      }
      if (w.folderPath !== folderPath) {
        if (await tx.workflows.nameTaken(w.workspaceId, folderPath, w.name, w.id)) {
          failed.push(id);
          continue;
        }
        await tx.workflows.update(id, { folderPath, updatedAt: at });
      }
      moved.push(id);
    }
    audit({ action: 'workflow.moved', resourceType: 'workflow', resourceId: moved.length === 1 ? moved[0] : null, metadata: { folderPath: folderPathToWire(folderPath), moved: moved.length, failed: failed.length } });
    return { moved, failed };
  });
  return { status: 200, body: { data: { ...result, folderPath: folderPathToWire(folderPath) } } };
});

export const exportWorkflow: Handler<'exportWorkflow'> = handle<'exportWorkflow'>(async ({ params, query, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const doc = exportDocument({ ...w, folderPath: folderPathToWire(w.folderPath) }, stateOf(w), now());
  return { status: 200, body: { data: query.includeReferences ? { ...doc, referenceManifest: { version: 1 as const, references: [] } } : doc } };
});

type ImportBody = OperationInputs['importWorkflow']['body'];

/** What an import would create, computed the same way for the preview and the import itself. */
async function planImport(ctx: RequestContext, body: Omit<ImportBody, 'requestId' | 'previewFingerprint'>) {
  const folderPath = body.folderPath !== undefined ? parseFolderPath(body.folderPath, ['body', 'folderPath']) : '/';
  // Read in a content worker: a document of the body's full size never holds the event loop.
  const parsed = await ctx.services.content.workflowDocument(body.workflow);
  const name = body.name ?? parsed.name ?? 'Imported workflow';
  checkName(name, ['body', 'name']);
  let source: unknown = body.workflow;
  if (typeof source === 'string') source = JSON.parse(source);
  const fingerprint = createHash('sha256')
    .update(stableStringify({ workflow: source, folderPath, name: body.name ?? null, description: body.description ?? null, workspaceId: body.workspaceId }))
    .digest('base64url');
  return { folderPath, parsed, name, description: body.description ?? parsed.description, fingerprint };
}

export const previewWorkflowImport: Handler<'previewWorkflowImport'> = handle<'previewWorkflowImport'>(async ({ body, ctx }) => {
  const plan = await planImport(ctx, body);
  await assertTreeSize(ctx.services.store, body.workspaceId);
  return {
    status: 200,
    body: { data: { previewFingerprint: plan.fingerprint, ready: true, bindings: [], unresolvedBindings: [], configuration: [], unresolvedConfiguration: [], discovery: [] } },
  };
});

export const importWorkflow: Handler<'importWorkflow'> = handle<'importWorkflow'>(async ({ body, ctx }) => {
  const plan = await planImport(ctx, body);
  if (body.previewFingerprint !== undefined && body.previewFingerprint !== plan.fingerprint) {
    throw conflict('The document or options differ from the reviewed preview; preview again.', { previewFingerprint: plan.fingerprint });
  }
  const created = await ctx.mutate(async (tx, audit) => {
    const at = now();
    await ensureFolder(tx, body.workspaceId, plan.folderPath, at);
    // Block and edge ids are scoped to their workflow, so the document's ids are kept as they are.
    const state = plan.parsed.state;
    const name = await freeName(tx, body.workspaceId, plan.folderPath, plan.name);
    const w = newWorkflowRecord({ workspaceId: body.workspaceId, name, description: plan.description, folderPath: plan.folderPath, position: await tx.workflows.nextPosition(body.workspaceId), state, createdBy: ctx.principal.userId, at });
    await tx.workflows.insert(w);
    audit({ action: 'workflow.imported', resourceType: 'workflow', resourceId: w.id, resourceName: name, metadata: { blockCount: Object.keys(state.blocks).length } });
    return { w, state, renamed: name !== plan.name };
  });
  const warnings = [
    ...(created.renamed ? [`The name "${plan.name}" was taken; the workflow was imported as "${created.w.name}".`] : []),
    ...lintState(created.state).notes,
  ];
  return {
    status: 201,
    body: {
      data: {
        id: created.w.id,
        name: created.w.name,
        description: created.w.description,
        workspaceId: created.w.workspaceId,
        folderPath: folderPathToWire(created.w.folderPath),
        createdAt: created.w.createdAt,
        updatedAt: created.w.updatedAt,
        blocks: blockRefs(created.state),
        warnings,
        ...(body.requestId !== undefined ? { requestId: body.requestId } : {}),
        kind: 'workflow_import' as const,
        applied: true as const,
        status: warnings.length > 0 ? ('completed_with_warnings' as const) : ('completed' as const),
        idMap: {},
      },
    },
  };
});

// ---- folders

const FOLDER_SORT_VALUE = { name: (f: WorkflowFolderRecord) => f.name, createdAt: (f: WorkflowFolderRecord) => f.createdAt, updatedAt: (f: WorkflowFolderRecord) => f.updatedAt };

export const listWorkflowFolders: Handler<'listWorkflowFolders'> = handle<'listWorkflowFolders'>(async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, parentPath: query.parentPath, search: query.search, sortBy, sortOrder };
  const after = readCursor(ctx, query.cursor, binding);
  const store = ctx.services.store;
  let parentPath: string | null = null;
  if (query.parentPath !== undefined) {
    parentPath = await resolveExistingFolder(store, query.workspaceId, parseFolderPath(query.parentPath, ['query', 'parentPath']));
    if (parentPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  } else await assertTreeSize(store, query.workspaceId);
  const rows = await store.workflowFolders.list({ workspaceId: query.workspaceId, parentPath, search: query.search ?? null, sortBy, sortOrder, after, limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (f) => [FOLDER_SORT_VALUE[sortBy](f), f.id], folderView) };
});

export const createWorkflowFolder: Handler<'createWorkflowFolder'> = handle<'createWorkflowFolder'>(async ({ body, ctx }) => {
  const path = parseFolderPath(body.path, ['body', 'path']);
  if (path === '/') throw conflict('The root folder always exists.');
  const folder = await ctx.mutate(async (tx, audit) => {
    await assertTreeSize(tx, body.workspaceId);
    const { folder: leaf, created } = await withWorkflowTree(() => workflowTree(tx).create(body.workspaceId, path, now()));
    audit({ action: 'workflow_folder.created', resourceType: 'workflow_folder', resourceId: leaf.id, resourceName: leaf.name, metadata: { path: folderPathToWire(path), created: created.length } });
    return leaf;
  });
  return { status: 201, body: { data: folderView(folder) } };
});

export const relocateWorkflowFolder: Handler<'relocateWorkflowFolder'> = handle<'relocateWorkflowFolder'>(async ({ body, ctx }) => {
  const from = parseFolderPath(body.path, ['body', 'path']);
  const destination = parseFolderPath(body.destinationPath, ['body', 'destinationPath']);
  if (from === '/') throw badRequest('The root folder cannot be moved.', [{ code: 'custom', keys: [], path: ['body', 'path'], message: 'The root cannot be moved' }]);
  const folder = await ctx.mutate(async (tx, audit) => {
    const ws = body.workspaceId;
    await assertTreeSize(tx, ws);
    const tree = workflowTree(tx);
    // `mv` semantics: an existing folder (or the root) receives the source under its current name.
    const { source, to } = await withWorkflowTree(() => tree.planMove(ws, from, destination));
    if (to === from) return source;
    const at = now();
    const moved = await withWorkflowTree(() => tree.move(ws, from, to, at));
    await tx.workflows.relocateSubtree(ws, from, to, at);
    audit({ action: 'workflow_folder.moved', resourceType: 'workflow_folder', resourceId: source.id, resourceName: folderName(to), metadata: { from: folderPathToWire(from), to: folderPathToWire(to) } });
    return moved;
  });
  return { status: 200, body: { data: folderView(folder) } };
});

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);

export const deleteWorkflowFolder: Handler<'deleteWorkflowFolder'> = handle<'deleteWorkflowFolder'>(async ({ query, ctx }) => {
  const path = parseFolderPath(query.path, ['query', 'path']);
  if (path === '/') throw badRequest('The root folder cannot be deleted.', [{ code: 'custom', keys: [], path: ['query', 'path'], message: 'The root cannot be deleted' }]);
  const recursive = TRUE_WORDS.has(query.recursive ?? 'false');
  const result = await ctx.mutate(async (tx, audit) => {
    const ws = query.workspaceId;
    await assertTreeSize(tx, ws);
    const { folder, below: subfolders } = await withWorkflowTree(() => workflowTree(tx).inspect(ws, path));
    const workflows = await tx.workflows.countInSubtree(ws, path);
    if (!recursive && subfolders + workflows > 0) {
      throw conflict('The folder is not empty; send recursive=true to archive it with everything inside.', { folders: subfolders, workflows });
    }
    const at = now();
    const { folders } = await withWorkflowTree(() => workflowTree(tx).archive(ws, path, at));
    const archived = await tx.workflows.archiveSubtree(ws, path, at);
    audit({ action: 'workflow_folder.deleted', resourceType: 'workflow_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), folders, workflows: archived } });
    return { folders, workflows: archived };
  });
  return { status: 200, body: { data: { path: folderPathToWire(path), deleted: true, deletedItems: result } } };
});

// ---- draft state

export const getWorkflowState: Handler<'getWorkflowState'> = handle<'getWorkflowState'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  return { status: 200, body: { data: stateOf(w) }, headers: { ETag: stateTag(w) } };
});

/**
 * HEAD answers with the headers a GET would send (type and length of the same JSON), and no body. Express
 * would route HEAD to the GET handler by itself, but the request validator only knows declared methods.
 */
export const headWorkflowState: Handler<'headWorkflowState'> = handle<'headWorkflowState'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const json = JSON.stringify({ data: stateOf(w) });
  return { status: 200, body: undefined, headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(json)), ETag: stateTag(w) } };
});

export const replaceWorkflowState: Handler<'replaceWorkflowState'> = handle<'replaceWorkflowState'>(async ({ params, query, body, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  assertUnlocked(first);
  const warnings: string[] = [];
  if (body.loops !== undefined || body.parallels !== undefined) warnings.push('loops and parallels in the body were ignored: containers are recomputed from the blocks.');
  const input = { blocks: body.blocks as Record<string, Block>, edges: body.edges as Edge[], variables: body.variables as Record<string, Variable> | undefined };

  // The same checks run for a dry run (on committed data) and for the write (inside its transaction).
  const evaluate = async (repos: Repositories, w: WorkflowRecord) => {
    assertUnlocked(w);
    const before = stateOf(w);
    const next = prepareState(input, before.variables);
    assertLockedBlocksKept(before, next);
    const data = { id: w.id, warnings, needsRedeployment: await needsRedeployment(repos, w, next), lint: lintState(next), dryRun: query.dryRun === true };
    return { next, data };
  };

  if (query.dryRun === true) {
    ctx.precondition(() => stateTag(first));
    const { data } = await evaluate(ctx.services.store, first);
    return { status: 200, body: { data }, headers: { ETag: stateTag(first) } };
  }
  const { data, etag } = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, first.id);
    ctx.precondition(() => stateTag(w));
    const { next, data } = await evaluate(tx, w);
    const at = now();
    const stored = JSON.stringify(next);
    await tx.workflows.update(w.id, { state: stored, stateSavedAt: at, updatedAt: at });
    audit({ action: 'workflow.state_replaced', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { blocks: Object.keys(next.blocks).length, edges: next.edges.length, variablesReplaced: input.variables !== undefined } });
    return { data, etag: tagOfText(stored) };
  });
  return { status: 200, body: { data }, headers: { ETag: etag } };
});

/** With `atomic`, any finding refuses the batch: 423 when a locked block is among them, 409 otherwise. */
function atomicRefusal(outcome: OperationsOutcome): ApiError | undefined {
  const { skipped, inputValidationErrors } = outcome;
  if (skipped.length === 0 && inputValidationErrors.length === 0) return undefined;
  const summary = `${skipped.length} operation(s) declined and ${inputValidationErrors.length} input(s) invalid; nothing was written.`;
  const lockedIds = skipped.filter((f) => f.type === 'block_locked').map((f) => f.blockId);
  if (lockedIds.length > 0) return locked(`The batch touches locked blocks: ${summary}`, { lock: 'block', blockIds: lockedIds, skipped, inputValidationErrors });
  return conflict(`The atomic batch was refused: ${summary}`, { skipped, inputValidationErrors });
}

const PROVISIONAL_IDS_WARNING = 'Dry run: previewBlockIds are provisional; committing the same batch mints different block ids.';

export const applyWorkflowOperations: Handler<'applyWorkflowOperations'> = handle<'applyWorkflowOperations'>(async ({ params, query, body, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  assertUnlocked(first);
  const dryRun = query.dryRun === true;
  const request = { operations: body.operations as BlockOperation[], setBlockEnabled: body.setBlockEnabled, layout: body.layout ?? 'targeted' as const };

  // The same evaluation runs for a dry run (on committed data) and for the write (inside its transaction).
  const evaluate = async (repos: Repositories, w: WorkflowRecord) => {
    assertUnlocked(w);
    const before = stateOf(w);
    const outcome = applyOperations(before, request);
    if (body.atomic === true) {
      const refusal = atomicRefusal(outcome);
      if (refusal) throw refusal;
    }
    assertLockedBlocksKept(before, outcome.state);
    const data = {
      id: w.id,
      warnings: dryRun ? [...outcome.warnings, PROVISIONAL_IDS_WARNING] : outcome.warnings,
      needsRedeployment: await needsRedeployment(repos, w, outcome.state),
      applied: outcome.applied,
      skipped: outcome.skipped,
      deferred: [],
      inputValidationErrors: outcome.inputValidationErrors,
      mintedBlockIds: dryRun ? {} : outcome.minted,
      ...(dryRun ? { previewBlockIds: outcome.minted } : {}),
      lint: lintState(outcome.state),
      dryRun,
    };
    return { outcome, data };
  };

  if (dryRun) {
    ctx.precondition(() => stateTag(first));
    const { data } = await evaluate(ctx.services.store, first);
    return { status: 200, body: { data }, headers: { ETag: stateTag(first) } };
  }
  const { data, etag } = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, first.id);
    ctx.precondition(() => stateTag(w));
    const { outcome, data } = await evaluate(tx, w);
    if (!outcome.changed) return { data, etag: stateTag(w) };
    const at = now();
    const next = outcome.state;
    const stored = JSON.stringify(next);
    await tx.workflows.update(w.id, { state: stored, stateSavedAt: at, updatedAt: at });
    audit({
      action: 'workflow.operations_applied',
      resourceType: 'workflow',
      resourceId: w.id,
      resourceName: w.name,
      workspaceId: w.workspaceId,
      metadata: {
        operations: body.operations.length,
        setBlockEnabled: body.setBlockEnabled?.length ?? 0,
        applied: outcome.applied,
        skipped: outcome.skipped.length,
        inputValidationErrors: outcome.inputValidationErrors.length,
        ...outcome.counts,
        blocks: Object.keys(next.blocks).length,
        edges: next.edges.length,
      },
    });
    return { data, etag: tagOfText(stored) };
  });
  return { status: 200, body: { data }, headers: { ETag: etag } };
});

export const applyWorkflowVariables: Handler<'applyWorkflowVariables'> = handle<'applyWorkflowVariables'>(async ({ params, body, ctx }) => {
  await loadWorkflow(ctx, params.workflowId);
  const result = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, params.workflowId);
    ctx.precondition(() => stateTag(w));
    const state = stateOf(w);
    const byName = new Map(Object.values(state.variables).map((v) => [v.name, v]));
    let changed = false;
    body.operations.forEach((op, i) => {
      const existing = byName.get(op.name);
      const where = ['body', 'operations', i, 'name'];
      if (op.operation === 'add') {
        if (existing) throw conflict(`A variable named "${op.name}" already exists.`, { name: op.name });
        const v: Variable = { id: randomUUID(), name: op.name, type: op.type, value: op.value ?? null };
        byName.set(op.name, v);
        changed = true;
      } else if (!existing) {
        throw badRequest(`There is no variable named "${op.name}".`, [{ code: 'custom', keys: [], path: where, message: 'Unknown variable' }]);
      } else if (op.operation === 'edit') {
        const v: Variable = { ...existing, type: op.type ?? existing.type, value: op.value ?? null };
        if (stableStringify(v) !== stableStringify(existing)) changed = true;
        byName.set(op.name, v);
      } else {
        byName.delete(op.name);
        changed = true;
      }
    });
    const variables = Object.fromEntries([...byName.values()].map((v) => [v.id, v]));
    let stored = w.state;
    if (changed) {
      const at = now();
      stored = JSON.stringify({ ...state, variables });
      await tx.workflows.update(w.id, { state: stored, stateSavedAt: at, updatedAt: at });
      audit({ action: 'workflow.variables_updated', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { operations: body.operations.length } });
    }
    return { data: { id: w.id, variableCount: byName.size, changed }, etag: tagOfText(stored) };
  });
  return { status: 200, body: { data: result.data }, headers: { ETag: result.etag } };
});

// ---- deployment and versions

export const deployWorkflow: Handler<'deployWorkflow'> = handle<'deployWorkflow'>(async ({ params, body, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  assertActive(first);
  assertUnlocked(first);
  const result = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, first.id);
    assertUnlocked(w);
    const at = now();
    const version: WorkflowVersionRecord = {
      id: randomUUID(),
      workflowId: w.id,
      version: await tx.workflowVersions.nextVersion(w.id),
      name: body?.name ?? null,
      description: body?.description ?? null,
      state: w.state,
      deployedBy: ctx.principal.userId,
      createdAt: at,
    };
    await tx.workflowVersions.insert(version);
    const live = await activate(tx, w, version, 'deploy', at);
    audit({ action: 'workflow.deployed', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: version.version } });
    return { ...(await deploymentCore(tx, live)), version: version.version };
  });
  return { status: 200, body: { data: result } };
});

export const undeployWorkflow: Handler<'undeployWorkflow'> = handle<'undeployWorkflow'>(async ({ params, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  assertUnlocked(first);
  const archivedMcpTools = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, first.id);
    assertUnlocked(w);
    if (!w.isDeployed) return [];
    await tx.workflows.update(w.id, { isDeployed: false, deployedAt: null, activeVersionId: null, updatedAt: now() });
    await tx.workflowVersions.deactivate(w.id);
    audit({ action: 'workflow.undeployed', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId });
    // Its MCP tools stay published but inactive (hidden from MCP clients) until the workflow is deployed again.
    return (await tx.workflowMcpServers.toolsOfWorkflow(w.id)).map((t) => ({ serverId: t.serverId, toolName: t.toolName }));
  });
  return {
    status: 200,
    body: { data: { id: first.id, isDeployed: false, deployedAt: null, warnings: [], activeDeployment: null, latestDeploymentAttempt: null, archivedMcpTools } },
  };
});

export const getWorkflowDeployment: Handler<'getWorkflowDeployment'> = handle<'getWorkflowDeployment'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const store = ctx.services.store;
  return {
    status: 200,
    body: { data: { ...(await deploymentCore(store, w)), needsRedeployment: await needsRedeployment(store, w, stateOf(w)), isPublicApi: w.isPublicApi, webhooks: [] } },
  };
});

export const updateWorkflowPublicApi: Handler<'updateWorkflowPublicApi'> = handle<'updateWorkflowPublicApi'>(async ({ params, body, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  await ctx.mutate(async (tx, audit) => {
    await tx.workflows.update(w.id, { isPublicApi: body.isPublicApi, updatedAt: now() });
    audit({ action: 'workflow.public_api_updated', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { isPublicApi: body.isPublicApi } });
  });
  return { status: 200, body: { data: { id: w.id, isPublicApi: body.isPublicApi } } };
});

export const listWorkflowVersions: Handler<'listWorkflowVersions'> = handle<'listWorkflowVersions'>(async ({ params, query, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const limit = query.limit ?? 50;
  const binding = { workflowId: w.id };
  const rows = await ctx.services.store.workflowVersions.list(w.id, readCursor(ctx, query.cursor, binding), limit + 1);
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, (v) => [v.version, v.id], (v) => ({
      id: v.id,
      version: v.version,
      name: v.name,
      description: v.description,
      isActive: w.isDeployed && w.activeVersionId === v.id,
      createdAt: v.createdAt,
      deployedBy: v.deployedBy,
      latestOperationStatus: v.latestStatus,
    })),
  };
});

async function loadVersion(repos: Repositories, workflowId: string, version: number): Promise<WorkflowVersionRecord> {
  const v = await repos.workflowVersions.get(workflowId, version);
  if (!v) throw notFound('Version');
  return v;
}

export const getWorkflowVersion: Handler<'getWorkflowVersion'> = handle<'getWorkflowVersion'>(async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const v = await loadVersion(ctx.services.store, w.id, params.version);
  return {
    status: 200,
    body: { data: { id: v.id, version: v.version, name: v.name, description: v.description, isActive: w.isDeployed && w.activeVersionId === v.id, createdAt: v.createdAt, state: stateOf(v) } },
  };
});

export const updateWorkflowVersion: Handler<'updateWorkflowVersion'> = handle<'updateWorkflowVersion'>(async ({ params, body, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const updated = await ctx.mutate(async (tx, audit) => {
    const v = await loadVersion(tx, w.id, params.version);
    await tx.workflowVersions.updateLabel(v.id, { name: body.name, description: body.description });
    audit({ action: 'workflow.version_updated', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: v.version, fields: Object.keys(body) } });
    return { version: v.version, name: body.name ?? v.name, description: body.description === undefined ? v.description : body.description };
  });
  return { status: 200, body: { data: updated } };
});

async function activateVersion(ctx: RequestContext, workflowId: string, pick: (tx: Repositories, w: WorkflowRecord) => Promise<WorkflowVersionRecord>, action: string) {
  const first = await loadWorkflow(ctx, workflowId);
  assertActive(first);
  assertUnlocked(first);
  return ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, first.id);
    assertUnlocked(w);
    const version = await pick(tx, w);
    const live = await activate(tx, w, version, 'activate', now());
    audit({ action, resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: version.version } });
    return { ...(await deploymentCore(tx, live)), version: version.version };
  });
}

export const activateWorkflowVersion: Handler<'activateWorkflowVersion'> = handle<'activateWorkflowVersion'>(async ({ params, ctx }) => {
  const data = await activateVersion(ctx, params.workflowId, (tx, w) => loadVersion(tx, w.id, params.version), 'workflow.version_activated');
  return { status: 200, body: { data } };
});

export const rollbackWorkflow: Handler<'rollbackWorkflow'> = handle<'rollbackWorkflow'>(async ({ params, body, ctx }) => {
  const data = await activateVersion(
    ctx,
    params.workflowId,
    async (tx, w) => {
      const target = body?.version ?? (await tx.workflowVersions.previousActiveVersion(w.id, w.isDeployed ? w.activeVersionId : null));
      if (target === undefined) throw conflict('There is no earlier deployment to roll back to.');
      return loadVersion(tx, w.id, target);
    },
    'workflow.rolled_back',
  );
  return { status: 200, body: { data } };
});

export const revertWorkflowVersion: Handler<'revertWorkflowVersion'> = handle<'revertWorkflowVersion'>(async ({ params, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  assertUnlocked(first);
  const which = params.version === 'active' ? ('active' as const) : Number(params.version);
  const { savedAt, etag } = await ctx.mutate(async (tx, audit) => {
    const w = await reload(tx, first.id);
    assertUnlocked(w);
    ctx.precondition(() => stateTag(w));
    let version: WorkflowVersionRecord;
    if (which === 'active') {
      const live = await activeVersion(tx, w);
      if (!live) throw conflict('The workflow has no active deployment to revert to.');
      version = live;
    } else version = await loadVersion(tx, w.id, which);
    const next = stateOf(version);
    assertLockedBlocksKept(stateOf(w), next);
    const at = now();
    await tx.workflows.update(w.id, { state: version.state, stateSavedAt: at, updatedAt: at });
    audit({ action: 'workflow.reverted', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: version.version } });
    return { savedAt: at, etag: stateTag(version) };
  });
  return { status: 200, body: { data: { id: first.id, version: which, lastSaved: Date.parse(savedAt) } }, headers: { ETag: etag } };
});

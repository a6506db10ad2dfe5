// The workflows domain service: the rules a workflow change must keep (names unique per folder and never blank,
// locked workflows and locked blocks left alone, archived workflows not deployed) and the changes themselves.
// Each change works inside the caller's transaction and records its one audit event there; `guard` lets the
// caller check the row the change read (an If-Match precondition) before anything is written. Draft changes
// live in ./draft-changes.ts, deployments and versions in ./deployment-changes.ts. No HTTP here.
import { createHash, randomUUID } from 'node:crypto';
import { assertAccess } from '../access-control/policy.ts';
import type { Repositories } from '../store/index.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { FolderRecord } from '../store/folders.ts';
import type { WorkflowVersionRecord } from '../store/workflow-versions.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { folderName } from '../domain/folder-paths.ts';
import { WorkerOverrun, type ContentWorkers } from '../content/index.ts';
import { folderPathToWire } from './folder-wire.ts';
import { assertTreeSize, ensureFolder, parseFolderPath, withWorkflowTree, workflowTree } from './folders.ts';
import { copyWithFreshIds, executableFingerprint, seedState, stableStringify, type WorkflowState } from './state.ts';
import { lintState, lintWarnings } from './lint.ts';

/** Checks the row a change read before it writes (e.g. the request's If-Match); throws to refuse. */
export type Guard = (current: WorkflowRecord) => void;

export const now = () => new Date().toISOString();
export const locked = (message: string, details?: unknown) => new DomainError('locked', message, details);

export const stateOf = (w: { state: string }): WorkflowState => JSON.parse(w.state) as WorkflowState;

/**
 * Access Control: every block of a draft being saved or a version being deployed must be a type the actor's
 * permission group allows (403 naming the first that is not). Unrestricted people pass (src/access-control/policy.ts).
 */
export async function assertBlocksAllowed(repos: Repositories, workspaceId: string, state: { blocks: Record<string, { id: string; type: string; name?: string }> }, actorId: string | null): Promise<void> {
  await assertAccess(repos, { workspaceId, userId: actorId }, { kind: 'blocks', blocks: Object.values(state.blocks) });
}

// ---- rules

/** The same workflow read again inside a transaction, so the change works on the latest row. */
export async function reload(tx: Repositories, id: string): Promise<WorkflowRecord> {
  const w = await tx.workflows.get(id);
  if (!w) throw domainNotFound('Workflow');
  return w;
}

export function assertUnlocked(w: WorkflowRecord): void {
  if (w.locked) throw locked('The workflow is locked.', { lock: 'workflow' });
}

export function assertActive(w: WorkflowRecord): void {
  if (w.archived) throw domainNotFound('Workflow');
}

export function checkName(name: string, field: string[]): string {
  if (name.trim() === '') throw new DomainError('invalid', 'A workflow name may not be blank.', [{ code: 'too_small', keys: [], path: field, message: 'Name is blank' }]);
  return name;
}

/** `name`, or `name (2)`, `name (3)`… whichever is free among the folder's active workflows. */
async function freeName(repos: Repositories, workspaceId: string, folderPath: string, name: string, exceptId: string | null = null): Promise<string> {
  if (!(await repos.workflows.nameTaken(workspaceId, folderPath, name, exceptId))) return name;
  for (let i = 2; ; i++) {
    const candidate = `${name} (${i})`;
    if (!(await repos.workflows.nameTaken(workspaceId, folderPath, candidate, exceptId))) return candidate;
  }
}

async function assertNameFree(repos: Repositories, workspaceId: string, folderPath: string, name: string, exceptId: string | null = null) {
  if (await repos.workflows.nameTaken(workspaceId, folderPath, name, exceptId)) {
    throw new DomainError('conflict', `A workflow named "${name}" already exists in ${folderPathToWire(folderPath)}.`, { name, folderPath: folderPathToWire(folderPath) });
  }
}

function newWorkflowRecord(fields: { workspaceId: string; name: string; description: string | null; folderPath: string; position: number; state: WorkflowState; createdBy: string; at: string }): WorkflowRecord {
  return {
    id: randomUUID(),
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
export function assertLockedBlocksKept(before: WorkflowState, after: WorkflowState): void {
  const changed = Object.values(before.blocks)
    .filter((b) => b.locked === true)
    .filter((b) => !after.blocks[b.id] || stableStringify(after.blocks[b.id]) !== stableStringify(b))
    .map((b) => b.id);
  if (changed.length > 0) throw locked(`${changed.length} locked block(s) would be changed or removed.`, { lock: 'block', blockIds: changed });
}

export async function activeVersion(repos: Repositories, w: WorkflowRecord): Promise<WorkflowVersionRecord | undefined> {
  return w.isDeployed && w.activeVersionId ? repos.workflowVersions.getById(w.activeVersionId) : undefined;
}

/** True when the draft differs, in what runs, from the live version. */
export async function needsRedeployment(repos: Repositories, w: WorkflowRecord, draft: WorkflowState): Promise<boolean> {
  const live = await activeVersion(repos, w);
  if (!live) return false;
  return executableFingerprint(draft) !== executableFingerprint(stateOf(live));
}

export async function loadVersion(repos: Repositories, workflowId: string, version: number): Promise<WorkflowVersionRecord> {
  const v = await repos.workflowVersions.get(workflowId, version);
  if (!v) throw domainNotFound('Version');
  return v;
}

/** What the deployment reads answer: the live version, its advisory lint warnings and the latest attempt. */
export async function deploymentState(repos: Repositories, w: WorkflowRecord) {
  const live = await activeVersion(repos, w);
  const attempt = live ? await repos.workflowVersions.latestAttempt(w.id) : undefined;
  return { workflow: w, live, attempt, warnings: live ? lintWarnings(lintState(stateOf(live))) : [] };
}
export type DeploymentState = Awaited<ReturnType<typeof deploymentState>>;

/** Makes `version` the live one: one activation attempt, and the workflow points at it. */
export async function activate(tx: Repositories, w: WorkflowRecord, version: WorkflowVersionRecord, action: 'deploy' | 'activate', at: string): Promise<WorkflowRecord> {
  await tx.workflowVersions.recordActivation({ id: randomUUID(), workflowId: w.id, versionId: version.id, version: version.version, action, requestedAt: at, activatedAt: at });
  await tx.workflows.update(w.id, { isDeployed: true, deployedAt: at, activeVersionId: version.id, updatedAt: at });
  return { ...w, isDeployed: true, deployedAt: at, activeVersionId: version.id, updatedAt: at };
}

// ---- workflows

export async function createWorkflow(tx: Repositories, audit: Audit, actorId: string, input: { workspaceId: string; name: string; description: string | null; folderPath: string }) {
  const at = now();
  await ensureFolder(tx, input.workspaceId, input.folderPath, at);
  await assertNameFree(tx, input.workspaceId, input.folderPath, input.name);
  const { state } = seedState();
  const w = newWorkflowRecord({ ...input, position: await tx.workflows.nextPosition(input.workspaceId), state, createdBy: actorId, at });
  await tx.workflows.insert(w);
  audit({ action: 'workflow.created', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, metadata: { folderPath: folderPathToWire(input.folderPath) } });
  return { w, state };
}

/** Renames, re-describes or moves a workflow; `fields` names what the request sent, for the audit event. */
export async function updateWorkflow(
  tx: Repositories,
  audit: Audit,
  id: string,
  change: { name?: string; description?: string | null; folderPath?: string; fields: string[] },
  guard: Guard,
): Promise<WorkflowRecord> {
  const w = await reload(tx, id);
  guard(w);
  const at = now();
  const nextFolder = change.folderPath ?? w.folderPath;
  const nextName = change.name ?? w.name;
  if (change.folderPath !== undefined) await ensureFolder(tx, w.workspaceId, change.folderPath, at);
  if (!w.archived && (nextName !== w.name || nextFolder !== w.folderPath)) await assertNameFree(tx, w.workspaceId, nextFolder, nextName, w.id);
  const changes = { name: nextName, description: change.description === undefined ? w.description : change.description, folderPath: nextFolder, updatedAt: at };
  await tx.workflows.update(w.id, changes);
  audit({ action: 'workflow.updated', resourceType: 'workflow', resourceId: w.id, resourceName: nextName, workspaceId: w.workspaceId, metadata: { fields: change.fields } });
  return reload(tx, w.id);
}

/** Archives a workflow (undeploying it); a locked one is refused. */
export async function archiveWorkflow(tx: Repositories, audit: Audit, id: string, guard: Guard): Promise<void> {
  const current = await reload(tx, id);
  assertUnlocked(current);
  guard(current);
  const at = now();
  await tx.workflows.update(id, { archived: true, archivedAt: at, isDeployed: false, deployedAt: null, activeVersionId: null, updatedAt: at });
  await tx.workflowVersions.deactivate(id);
  audit({ action: 'workflow.deleted', resourceType: 'workflow', resourceId: id, resourceName: current.name, workspaceId: current.workspaceId, metadata: { archived: true, wasDeployed: current.isDeployed } });
}

/** Brings an archived workflow back, under a free name; into the root if its folder was archived meanwhile. */
export async function restoreWorkflow(tx: Repositories, audit: Audit, id: string): Promise<WorkflowRecord> {
  const current = await reload(tx, id);
  const at = now();
  const folderPath = current.folderPath === '/' || (await tx.workflowFolders.getActive(current.workspaceId, current.folderPath)) ? current.folderPath : '/';
  const name = await freeName(tx, current.workspaceId, folderPath, current.name, id);
  const changes = { archived: false, archivedAt: null, folderPath, name, updatedAt: at };
  await tx.workflows.update(id, changes);
  audit({ action: 'workflow.restored', resourceType: 'workflow', resourceId: id, resourceName: name, workspaceId: current.workspaceId, metadata: { folderPath: folderPathToWire(folderPath) } });
  return { ...current, ...changes };
}

/** A copy of the draft with fresh block ids: under `name` (which must be free) or the source's next free name. */
export async function duplicateWorkflow(
  tx: Repositories,
  audit: Audit,
  actorId: string,
  source: WorkflowRecord,
  target: { name?: string; folderPath: string; folderNamed: boolean },
): Promise<WorkflowRecord> {
  const at = now();
  if (target.folderNamed || target.folderPath !== '/') await ensureFolder(tx, source.workspaceId, target.folderPath, at);
  let name: string;
  if (target.name !== undefined) {
    await assertNameFree(tx, source.workspaceId, target.folderPath, target.name);
    name = target.name;
  } else name = await freeName(tx, source.workspaceId, target.folderPath, source.name);
  const state = copyWithFreshIds(stateOf(await reload(tx, source.id)));
  await assertBlocksAllowed(tx, source.workspaceId, state, actorId);
  const w = newWorkflowRecord({ workspaceId: source.workspaceId, name, description: source.description, folderPath: target.folderPath, position: await tx.workflows.nextPosition(source.workspaceId), state, createdBy: actorId, at });
  await tx.workflows.insert(w);
  audit({ action: 'workflow.duplicated', resourceType: 'workflow', resourceId: w.id, resourceName: name, workspaceId: w.workspaceId, metadata: { sourceWorkflowId: source.id } });
  return w;
}

/** Moves the workspace's active workflows into a folder; one that is missing or whose name is taken there fails alone. */
export async function moveWorkflows(tx: Repositories, audit: Audit, workspaceId: string, ids: string[], folderPath: string) {
  const at = now();
  await ensureFolder(tx, workspaceId, folderPath, at);
  const moved: string[] = [];
  const failed: string[] = [];
  for (const id of ids) {
    const w = await tx.workflows.get(id);
    if (!w || w.workspaceId !== workspaceId || w.archived) {
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
}

// ---- import

export interface ImportRequest {
  workspaceId: string;
  workflow: unknown;
  folderPath?: string;
  name?: string;
  description?: string;
}

/** What an import would create, computed the same way for the preview and the import itself. */
export async function planImport(content: ContentWorkers, request: ImportRequest) {
  const folderPath = request.folderPath !== undefined ? parseFolderPath(request.folderPath, ['body', 'folderPath']) : '/';
  let parsed: Awaited<ReturnType<ContentWorkers['workflowDocument']>>;
  try {
    // Read in a content worker: a document of the body's full size never holds the event loop.
    parsed = await content.workflowDocument(request.workflow as Parameters<ContentWorkers['workflowDocument']>[0]);
  } catch (err) {
    // A document its content worker could not read within its time or memory limit is too costly to import.
    if (err instanceof WorkerOverrun && err.reason !== 'stopped') throw new DomainError('too_large', `The workflow document could not be read: ${err.message}`, { reason: err.reason });
    throw err;
  }
  const name = request.name ?? parsed.name ?? 'Imported workflow';
  checkName(name, ['body', 'name']);
  let source: unknown = request.workflow;
  if (typeof source === 'string') source = JSON.parse(source);
  const fingerprint = createHash('sha256')
    .update(stableStringify({ workflow: source, folderPath, name: request.name ?? null, description: request.description ?? null, workspaceId: request.workspaceId }))
    .digest('base64url');
  return { workspaceId: request.workspaceId, folderPath, parsed, name, description: request.description ?? parsed.description, fingerprint };
}
export type ImportPlan = Awaited<ReturnType<typeof planImport>>;

/** The preview's checks: the fingerprint it answers with is what the import must be sent to apply the same plan. */
export async function previewImport(repos: Repositories, content: ContentWorkers, request: ImportRequest): Promise<ImportPlan> {
  const plan = await planImport(content, request);
  await assertTreeSize(repos, request.workspaceId);
  return plan;
}

/** Refuses an import whose document or options differ from the preview the caller reviewed. */
export function assertPreviewed(plan: ImportPlan, previewFingerprint: string | undefined): void {
  if (previewFingerprint !== undefined && previewFingerprint !== plan.fingerprint) {
    throw new DomainError('conflict', 'The document or options differ from the reviewed preview; preview again.', { previewFingerprint: plan.fingerprint });
  }
}

export async function importWorkflow(tx: Repositories, audit: Audit, actorId: string, plan: ImportPlan) {
  // Block and edge ids are scoped to their workflow, so the document's ids are kept as they are.
  const created = await insertWorkflowWithState(tx, actorId, { workspaceId: plan.workspaceId, name: plan.name, description: plan.description, folderPath: plan.folderPath, state: plan.parsed.state });
  audit({ action: 'workflow.imported', resourceType: 'workflow', resourceId: created.w.id, resourceName: created.w.name, metadata: { blockCount: Object.keys(created.state.blocks).length } });
  return created;
}

/**
 * A new, undeployed workflow holding `state` as its draft, under `name` or its next free name in the folder
 * (created when missing). Imports and fork copies share it; the caller records the audit event.
 */
export async function insertWorkflowWithState(
  tx: Repositories,
  actorId: string,
  input: { workspaceId: string; name: string; description: string | null; folderPath: string; state: WorkflowState },
) {
  // A workflow made here (import, fork, sync) holds only block types the workspace's permission group allows.
  await assertBlocksAllowed(tx, input.workspaceId, input.state, actorId);
  const at = now();
  await ensureFolder(tx, input.workspaceId, input.folderPath, at);
  const name = await freeName(tx, input.workspaceId, input.folderPath, input.name);
  const w = newWorkflowRecord({ ...input, name, position: await tx.workflows.nextPosition(input.workspaceId), createdBy: actorId, at });
  await tx.workflows.insert(w);
  return { w, state: input.state, renamed: name !== input.name };
}

/** `name`, or its next free variant, among the folder's active workflows other than `exceptId`. */
export const freeWorkflowName = freeName;

// ---- folders

export async function createFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string): Promise<FolderRecord> {
  if (path === '/') throw new DomainError('conflict', 'The root folder always exists.');
  await assertTreeSize(tx, workspaceId);
  const { folder, created } = await withWorkflowTree(() => workflowTree(tx).create(workspaceId, path, now()));
  audit({ action: 'workflow_folder.created', resourceType: 'workflow_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), created: created.length } });
  return folder;
}

/** `mv` semantics: an existing folder (or the root) receives the source under its current name; the workflows inside move along. */
export async function relocateFolder(tx: Repositories, audit: Audit, workspaceId: string, from: string, destination: string): Promise<FolderRecord> {
  if (from === '/') throw new DomainError('invalid', 'The root folder cannot be moved.', [{ code: 'custom', keys: [], path: ['body', 'path'], message: 'The root cannot be moved' }]);
  await assertTreeSize(tx, workspaceId);
  const tree = workflowTree(tx);
  const { source, to } = await withWorkflowTree(() => tree.planMove(workspaceId, from, destination));
  if (to === from) return source;
  const at = now();
  const moved = await withWorkflowTree(() => tree.move(workspaceId, from, to, at));
  await tx.workflows.relocateSubtree(workspaceId, from, to, at);
  audit({ action: 'workflow_folder.moved', resourceType: 'workflow_folder', resourceId: source.id, resourceName: folderName(to), metadata: { from: folderPathToWire(from), to: folderPathToWire(to) } });
  return moved;
}

/** Archives a folder; one that is not empty only when `recursive`, and then with every folder and workflow inside. */
export async function archiveFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string, recursive: boolean) {
  if (path === '/') throw new DomainError('invalid', 'The root folder cannot be deleted.', [{ code: 'custom', keys: [], path: ['query', 'path'], message: 'The root cannot be deleted' }]);
  await assertTreeSize(tx, workspaceId);
  const { folder, below: subfolders } = await withWorkflowTree(() => workflowTree(tx).inspect(workspaceId, path));
  const workflows = await tx.workflows.countInSubtree(workspaceId, path);
  if (!recursive && subfolders + workflows > 0) {
    throw new DomainError('conflict', 'The folder is not empty; send recursive=true to archive it with everything inside.', { folders: subfolders, workflows });
  }
  const at = now();
  const { folders } = await withWorkflowTree(() => workflowTree(tx).archive(workspaceId, path, at));
  const archived = await tx.workflows.archiveSubtree(workspaceId, path, at);
  audit({ action: 'workflow_folder.deleted', resourceType: 'workflow_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), folders, workflows: archived } });
  return { folders, workflows: archived };
}

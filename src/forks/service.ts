// Workspace forks: a child workspace linked to its parent, and force syncs of deployed workflows along that one
// edge with references remapped. Push is from the request's workspace to the other, pull the reverse, whichever
// side is the parent. Every change runs in the caller's transaction: a sync that would leave a reference empty
// is refused before anything is written. No HTTP here.
import { createHash, randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import type { TableSettings } from '../config.ts';
import { addWorkspace } from '../identity/admin.ts';
import { archiveWorkflow, createWorkflow, insertWorkflowWithState, freeWorkflowName, reload, restoreWorkflow, stateOf } from '../workflows/service.ts';
import { activateVersion, deploy, undeploy } from '../workflows/deployment-changes.ts';
import { replaceState } from '../workflows/draft-changes.ts';
import { stableStringify, type WorkflowState } from '../workflows/state.ts';
import { collectReferences, rewriteReferences, type ReferenceKind } from './references.ts';
import { COPY_KINDS, RESOURCE_TYPE_OF, copyResource, resourceExists, type CopyKind } from './copy.ts';
import { newOperationId, recordReceipt, type Receipt } from './receipts.ts';

// ---- the gate

/**
 * Forking is an Enterprise feature: a workspace may be forked (and synced) when the billing account it bills to
 * is on the Enterprise plan. The platform also requires the workspace to belong to an organization (a personal
 * workspace never qualifies); organizations are not part of this server yet.
 * ORGANIZATION SEAM: once organizations exist, also require `workspace.organizationId !== null` here.
 */
export function forkingAvailable(workspace: Workspace): boolean {
  return workspace.plan === 'enterprise';
}

// ---- lineage

export interface ForkPair {
  childWorkspaceId: string;
  parentWorkspaceId: string;
}

/** The direct edge between two workspaces (400 when they are not parent and child). */
export async function directEdge(repos: Repositories, current: string, other: string): Promise<ForkPair> {
  const edge = current === other ? undefined : await repos.workspaceForks.edgeBetween(current, other);
  if (!edge) {
    throw new DomainError('invalid', 'The two workspaces are not a direct fork edge (a parent and its fork); syncs go only along one edge.', [
      { code: 'custom', keys: [], path: ['body', 'otherWorkspaceId'], message: 'Not a direct fork edge' },
    ]);
  }
  return edge;
}

// ---- fork

export interface ForkSelection {
  files?: string[];
  tables?: string[];
  knowledgeBases?: string[];
  customTools?: string[];
  skills?: string[];
  mcpServers?: string[];
  workflowMcpServers?: string[];
}

export interface ForkRequest {
  name?: string;
  copy?: ForkSelection;
}

/** The deployed, not sync-excluded, active workflows of a workspace with their live states. */
async function sendableWorkflows(repos: Repositories, workspaceId: string): Promise<{ w: WorkflowRecord; live: WorkflowState; liveVersion: number; liveVersionId: string }[]> {
  const excluded = await repos.workspaceForks.excludedIds(workspaceId);
  const rows = await repos.workflows.list({ workspaceId, archived: false, folderPath: null, deployedOnly: true, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: 100_000 });
  const out = [];
  for (const row of rows) {
    if (excluded.has(row.id)) continue;
    const w = await repos.workflows.get(row.id);
    if (!w || !w.isDeployed || !w.activeVersionId) continue;
    const version = await repos.workflowVersions.getById(w.activeVersionId);
    if (!version) continue;
    out.push({ w, live: stateOf(version), liveVersion: version.version, liveVersionId: version.id });
  }
  return out;
}

const UNSUPPORTED_COPY = ['mcpServers', 'workflowMcpServers'] as const;

/** What a fork with these choices copies, and its fingerprint; the same for the preview and the fork. */
export async function planFork(repos: Repositories, source: Workspace, request: ForkRequest) {
  const name = request.name ?? `${source.name} (fork)`.slice(0, 100);
  const selection: Partial<Record<CopyKind, string[]>> = {};
  for (const kind of UNSUPPORTED_COPY) {
    if ((request.copy?.[kind] ?? []).length > 0) {
      throw new DomainError('invalid', `This server cannot copy ${kind} into a fork; leave copy.${kind} out.`, [{ code: 'custom', keys: [], path: ['body', 'copy', kind], message: 'Not copyable' }]);
    }
  }
  for (const kind of COPY_KINDS) {
    const ids = [...new Set(request.copy?.[kind] ?? [])].sort();
    for (const [i, id] of ids.entries()) {
      if (!(await resourceExists(repos, source.id, kind, id))) {
        throw new DomainError('invalid', `copy.${kind} names ${id}, which is not a live resource of this workspace.`, [{ code: 'custom', keys: [], path: ['body', 'copy', kind, i], message: 'Unknown resource' }]);
      }
    }
    if (ids.length > 0) selection[kind] = ids;
  }
  const workflows = await sendableWorkflows(repos, source.id);
  const fingerprint = createHash('sha256')
    .update(stableStringify({ source: source.id, name, selection, workflows: workflows.map((x) => [x.w.id, x.liveVersionId]) }))
    .digest('base64url');
  return { source, name, selection, workflows, fingerprint, selectedResourceCount: Object.values(selection).reduce((n, ids) => n + ids.length, 0) };
}
export type ForkPlan = Awaited<ReturnType<typeof planFork>>;

export function assertFingerprint(expected: string, sent: string): void {
  if (expected !== sent) {
    throw new DomainError('conflict', 'The inputs or the source workspace changed since the preview; preview again and send its fingerprint.', { previewFingerprint: expected });
  }
}

/** Ids of a workspace's live resources of the kinds a workflow may reference, to tell an id from a name. */
async function isSourceResource(repos: Repositories, workspaceId: string, kind: ReferenceKind, id: string): Promise<boolean> {
  switch (kind) {
    case 'table':
      return resourceExists(repos, workspaceId, 'tables', id);
    case 'file':
      return resourceExists(repos, workspaceId, 'files', id);
    case 'knowledge-base':
      return resourceExists(repos, workspaceId, 'knowledgeBases', id);
    case 'custom-tool':
      return resourceExists(repos, workspaceId, 'customTools', id.replace(/^custom_/, ''));
    case 'skill':
      return resourceExists(repos, workspaceId, 'skills', id);
    case 'credential':
      return Boolean(await repos.credentials.get(workspaceId, id));
    case 'sandbox':
      return Boolean(await repos.sandboxes.get(workspaceId, id));
    case 'mcp-server': {
      const s = await repos.mcpServers.get(id);
      return Boolean(s && s.workspaceId === workspaceId);
    }
    case 'env-var':
      return Boolean(await repos.secrets.get(workspaceId, 'workspace', null, id));
    case 'workflow': {
      const w = await repos.workflows.get(id);
      return Boolean(w && w.workspaceId === workspaceId);
    }
  }
}

const KIND_TO_COPY: Partial<Record<ReferenceKind, CopyKind>> = { table: 'tables', file: 'files', 'knowledge-base': 'knowledgeBases', 'custom-tool': 'customTools', skill: 'skills' };

/**
 * Creates the child: a workspace on the parent's billing account with the parent's members, the selected
 * resources copied, and the deployed workflows copied as undeployed drafts with their references remapped to
 * the copies (references to anything not copied are cleared, credentials always; `{{SECRET}}` names are kept).
 */
export async function forkWorkspace(tx: Repositories, audit: Audit, actorId: string, plan: ForkPlan, request: { requestId: string; tables: TableSettings; fingerprint: string }): Promise<{ receipt: Receipt; knowledgeCopied: boolean }> {
  const source = plan.source;
  const at = new Date().toISOString();
  const child = await addWorkspace(tx, { name: plan.name, ownerId: actorId, color: source.color });
  await tx.workspaces.setBillingAccount(child.id, source.billingAccountId, at);
  if (!source.allowPersonalKeys) await tx.workspaces.setAllowPersonalKeys(child.id, false, at);
  for (const m of await tx.members.list(source.id, null, 100_000)) {
    if (m.userId !== actorId) await tx.members.upsert(child.id, m.userId, m.role, at);
  }
  await tx.workspaceForks.insertEdge({ childWorkspaceId: child.id, parentWorkspaceId: source.id, createdBy: actorId, createdAt: at });

  const idMap: Record<string, string> = { [source.id]: child.id };
  const copied = new Map<string, string>(); // `${kind}:${sourceId}` → copy id
  let items = 0;
  const ctx = { tx, audit, actorId, sourceWorkspaceId: source.id, targetWorkspaceId: child.id, tables: request.tables };
  for (const kind of COPY_KINDS) {
    for (const id of plan.selection[kind] ?? []) {
      const copy = await copyResource(ctx, kind, id);
      copied.set(`${kind}:${id}`, copy.id);
      idMap[id] = copy.id;
      items += 1 + copy.items;
      await tx.workspaceForks.pair({ id: randomUUID(), childWorkspaceId: child.id, resourceType: RESOURCE_TYPE_OF[kind], parentResourceId: id, childResourceId: copy.id, createdAt: at, updatedAt: at });
    }
  }
  const workflowIds = new Map<string, string>(); // source workflow → its copy
  const sourceResource = new Map<string, boolean>();
  const resourceWas = async (kind: ReferenceKind, id: string) => {
    const k = `${kind}:${id}`;
    if (!sourceResource.has(k)) sourceResource.set(k, await isSourceResource(tx, source.id, kind, id));
    return sourceResource.get(k)!;
  };
  const created: string[] = [];
  for (const { w, live } of plan.workflows) {
    const refs = collectReferences(live);
    const answers = new Map<string, string | null | undefined>();
    for (const r of refs) {
      const key = `${r.kind}:${r.sourceId}`;
      if (answers.has(key)) continue;
      let answer: string | null | undefined;
      if (r.kind === 'env-var') answer = undefined;
      else if (r.kind === 'credential') answer = null;
      else if (r.kind === 'workflow') answer = undefined; // rewritten below, once every copy has its id
      else {
        const copyKind = KIND_TO_COPY[r.kind];
        const bare = r.kind === 'custom-tool' ? r.sourceId.replace(/^custom_/, '') : r.sourceId;
        const copy = copyKind ? copied.get(`${copyKind}:${bare}`) : undefined;
        if (copy) answer = r.kind === 'custom-tool' && r.sourceId.startsWith('custom_') ? `custom_${copy}` : copy;
        // A name (skills, sandboxes) or a built-in resolves in the child too; an id of something not copied is cleared.
        else answer = (await resourceWas(r.kind, bare)) ? null : undefined;
      }
      answers.set(key, answer);
    }
    const state = rewriteReferences(live, (kind, id) => answers.get(`${kind}:${id}`));
    const { w: copy } = await insertWorkflowWithState(tx, actorId, { workspaceId: child.id, name: w.name, description: w.description, folderPath: w.folderPath, state });
    workflowIds.set(w.id, copy.id);
    idMap[w.id] = copy.id;
    created.push(copy.id);
    await tx.workspaceForks.pairWorkflows(child.id, w.id, copy.id);
  }
  // A workflow block calling another workflow points at that workflow's copy, or is cleared when it was not copied.
  for (const id of created) {
    const before = stateOf(await reload(tx, id));
    const fixed = rewriteReferences(before, (kind, ref) => (kind === 'workflow' ? (workflowIds.get(ref) ?? null) : undefined));
    if (stableStringify(fixed) !== stableStringify(before)) await tx.workflows.update(id, { state: JSON.stringify(fixed), updatedAt: at });
  }
  if (plan.workflows.length === 0) {
    const starter = await createWorkflow(tx, audit, actorId, { workspaceId: child.id, name: 'Workflow 1', description: null, folderPath: '/' });
    created.push(starter.w.id);
  }
  audit({ action: 'workspace.forked', resourceType: 'workspace', resourceId: child.id, resourceName: child.name, workspaceId: source.id, metadata: { sourceWorkspaceId: source.id, workflows: plan.workflows.length, resources: plan.selectedResourceCount } });
  const receipt: Receipt = {
    operationId: newOperationId(),
    requestId: request.requestId,
    workspaceId: source.id,
    kind: 'workspace_fork',
    applied: true,
    status: 'completed',
    resourceIds: [child.id, ...created],
    issues: [],
    idMap,
    copyProgress: { status: 'completed', copied: items, failed: 0 },
  };
  await recordReceipt(tx, receipt, request.fingerprint);
  return { receipt, knowledgeCopied: (plan.selection.knowledgeBases ?? []).length > 0 };
}

// ---- mappings

export type Direction = 'push' | 'pull';
export type MappingInput = { resourceType: string; sourceId: string; targetId: string | null };

/** Which side of the edge is the source of a direction, from the request's workspace. */
export function sides(edge: ForkPair, current: string, direction: Direction) {
  const other = edge.childWorkspaceId === current ? edge.parentWorkspaceId : edge.childWorkspaceId;
  const sourceWorkspaceId = direction === 'push' ? current : other;
  const targetWorkspaceId = direction === 'push' ? other : current;
  return { sourceWorkspaceId, targetWorkspaceId, sourceIsParent: sourceWorkspaceId === edge.parentWorkspaceId };
}

/** The saved pairs of an edge oriented source → target for one direction, keyed `${type}:${sourceId}`. */
export async function orientedMappings(repos: Repositories, edge: ForkPair, sourceIsParent: boolean) {
  const out = new Map<string, { id: string; resourceType: string; sourceId: string; targetId: string }>();
  for (const m of await repos.workspaceForks.mappings(edge.childWorkspaceId)) {
    const sourceId = sourceIsParent ? m.parentResourceId : m.childResourceId;
    const targetId = sourceIsParent ? m.childResourceId : m.parentResourceId;
    out.set(`${m.resourceType}:${sourceId}`, { id: m.id, resourceType: m.resourceType, sourceId, targetId });
  }
  return out;
}

const badMapping = (index: number, message: string, field = 'targetId') =>
  new DomainError('invalid', message, [{ code: 'custom', keys: [], path: ['body', 'mappings', index, field], message }]);

/** Whether `id` is a live resource of that mapping type in the workspace. */
async function mappingTargetExists(repos: Repositories, workspaceId: string, resourceType: string, id: string): Promise<boolean | 'unsupported'> {
  switch (resourceType) {
    case 'table': return resourceExists(repos, workspaceId, 'tables', id);
    case 'file': return resourceExists(repos, workspaceId, 'files', id);
    case 'knowledge_base': return resourceExists(repos, workspaceId, 'knowledgeBases', id);
    case 'custom_tool': return resourceExists(repos, workspaceId, 'customTools', id);
    case 'skill': return resourceExists(repos, workspaceId, 'skills', id);
    case 'env_var': return Boolean(await repos.secrets.get(workspaceId, 'workspace', null, id));
    case 'oauth_credential':
    case 'service_account_credential': {
      const c = await repos.credentials.get(workspaceId, id);
      return Boolean(c && (c.type === 'oauth') === (resourceType === 'oauth_credential'));
    }
    case 'sandbox': return Boolean(await repos.sandboxes.get(workspaceId, id));
    case 'mcp_server': {
      const s = await repos.mcpServers.get(id);
      return Boolean(s && s.workspaceId === workspaceId);
    }
    default: return 'unsupported';
  }
}

/** Checks mappings sent for one direction: targets exist in the target, credentials keep their provider, one source per target. */
export async function checkMappings(repos: Repositories, sourceWorkspaceId: string, targetWorkspaceId: string, mappings: MappingInput[]): Promise<void> {
  const targets = new Map<string, number>();
  for (const [i, m] of mappings.entries()) {
    if (m.targetId === null) continue;
    const exists = await mappingTargetExists(repos, targetWorkspaceId, m.resourceType, m.targetId);
    if (exists === 'unsupported') throw badMapping(i, `This server has no ${m.resourceType} resources to map.`, 'resourceType');
    if (!exists) {
      throw badMapping(i, m.resourceType === 'env_var' ? `The target workspace has no secret named ${m.targetId}.` : `${m.targetId} is not a live ${m.resourceType} of the target workspace.`);
    }
    if (m.resourceType === 'oauth_credential' || m.resourceType === 'service_account_credential') {
      const [from, to] = await Promise.all([repos.credentials.get(sourceWorkspaceId, m.sourceId), repos.credentials.get(targetWorkspaceId, m.targetId)]);
      if (from && to && from.providerId !== to.providerId) throw badMapping(i, `A ${from.providerId} credential can only be mapped to a ${from.providerId} credential; ${m.targetId} is ${to.providerId}.`);
    }
    const key = `${m.resourceType}:${m.targetId}`;
    if (targets.has(key)) throw badMapping(i, `mappings[${targets.get(key)}] already maps a source to ${m.targetId}; two sources may not map to one target.`);
    targets.set(key, i);
  }
}

/** Saves mappings for one direction of an edge (null targets remove the source's pairing); answers how many changed. */
export async function saveMappings(tx: Repositories, edge: ForkPair, sourceIsParent: boolean, mappings: MappingInput[]): Promise<number> {
  const at = new Date().toISOString();
  let updated = 0;
  for (const m of mappings) {
    if (m.targetId === null) {
      updated += await tx.workspaceForks.unpair(edge.childWorkspaceId, m.resourceType, sourceIsParent ? 'parent' : 'child', m.sourceId) > 0 ? 1 : 0;
      continue;
    }
    const [parentId, childId] = sourceIsParent ? [m.sourceId, m.targetId] : [m.targetId, m.sourceId];
    await tx.workspaceForks.pair({ id: randomUUID(), childWorkspaceId: edge.childWorkspaceId, resourceType: m.resourceType, parentResourceId: parentId, childResourceId: childId, createdAt: at, updatedAt: at });
    updated++;
  }
  return updated;
}

// ---- sync

export interface SyncRequest {
  otherWorkspaceId: string;
  mappings?: MappingInput[];
  dependentValues?: { sourceWorkflowId: string; sourceBlockId: string; subBlockKey: string; value: string }[];
  copyResources?: Partial<Record<CopyKind | 'mcpServers', string[]>>;
  dropReferences?: { kind: string; sourceId: string }[];
  triggerMappings?: { sourceWorkflowId: string; sourceBlockId: string; adoptPath: string | null }[];
}

export interface Blocker {
  kind: string;
  sourceId: string;
  blockName?: string;
  reason?: string;
}

const CREDENTIAL_TYPES = ['oauth_credential', 'service_account_credential'];

/** The mapping resource type a reference is looked up under. */
async function resourceTypeOf(repos: Repositories, sourceWorkspaceId: string, kind: ReferenceKind, id: string): Promise<string | null> {
  switch (kind) {
    case 'credential': {
      const c = await repos.credentials.get(sourceWorkspaceId, id);
      return c ? (c.type === 'oauth' ? 'oauth_credential' : 'service_account_credential') : 'oauth_credential';
    }
    case 'env-var': return 'env_var';
    case 'knowledge-base': return 'knowledge_base';
    case 'custom-tool': return 'custom_tool';
    case 'mcp-server': return 'mcp_server';
    case 'workflow': return null;
    default: return kind;
  }
}

/**
 * What a sync along the edge would do, computed the same way for the preview and inside the sync's
 * transaction: the workflows created, replaced and archived in the target, how every reference resolves, and
 * the references that would be left empty (`blockers`; the sync is refused while there are any).
 */
export async function planSync(repos: Repositories, current: Workspace, direction: Direction, request: SyncRequest) {
  const edge = await directEdge(repos, current.id, request.otherWorkspaceId);
  const { sourceWorkspaceId, targetWorkspaceId, sourceIsParent } = sides(edge, current.id, direction);
  if (request.copyResources?.mcpServers?.length) {
    throw new DomainError('invalid', 'This server cannot copy MCP servers during a sync; map them instead.', [{ code: 'custom', keys: [], path: ['body', 'copyResources', 'mcpServers'], message: 'Not copyable' }]);
  }
  const requestMappings = request.mappings ?? [];
  await checkMappings(repos, sourceWorkspaceId, targetWorkspaceId, requestMappings);
  const copies = new Map<string, CopyKind>(); // `${type}:${id}` → kind to copy
  for (const kind of COPY_KINDS) {
    for (const [i, id] of (request.copyResources?.[kind] ?? []).entries()) {
      if (!(await resourceExists(repos, sourceWorkspaceId, kind, id))) {
        throw new DomainError('invalid', `copyResources.${kind} names ${id}, which is not a live resource of the source workspace.`, [{ code: 'custom', keys: [], path: ['body', 'copyResources', kind, i], message: 'Unknown resource' }]);
      }
      copies.set(`${RESOURCE_TYPE_OF[kind]}:${id}`, kind);
    }
  }
  const saved = await orientedMappings(repos, edge, sourceIsParent);
  const explicit = new Map(requestMappings.map((m) => [`${m.resourceType}:${m.sourceId}`, m.targetId]));
  const drops = new Set((request.dropReferences ?? []).map((d) => `${d.kind}:${d.sourceId}`));

  const sources = await sendableWorkflows(repos, sourceWorkspaceId);
  const targetExcluded = await repos.workspaceForks.excludedIds(targetWorkspaceId);
  const pairs = await repos.workspaceForks.workflowPairs(edge.childWorkspaceId);
  const counterpart = new Map(pairs.map((p) => (sourceIsParent ? [p.parentWorkflowId, p.childWorkflowId] : [p.childWorkflowId, p.parentWorkflowId])));
  const sentIds = new Set(sources.map((s) => s.w.id));

  type Step = { action: 'create' | 'replace' | 'archive'; source?: (typeof sources)[number]; target?: WorkflowRecord; name: string };
  const steps: Step[] = [];
  const excludedTargets: { id: string; name: string }[] = [];
  const targetOf = new Map<string, string | 'new'>();
  for (const s of sources) {
    const targetId = counterpart.get(s.w.id);
    const target = targetId ? await repos.workflows.get(targetId) : undefined;
    if (target && target.workspaceId === targetWorkspaceId) {
      if (targetExcluded.has(target.id)) {
        excludedTargets.push({ id: target.id, name: target.name });
        continue;
      }
      steps.push({ action: 'replace', source: s, target, name: s.w.name });
      targetOf.set(s.w.id, target.id);
    } else {
      steps.push({ action: 'create', source: s, name: s.w.name });
      targetOf.set(s.w.id, 'new');
    }
  }
  // Targets whose source is no longer sent (archived, undeployed, excluded, deleted) are archived.
  for (const [sourceId, targetId] of counterpart) {
    if (sentIds.has(sourceId)) continue;
    const target = await repos.workflows.get(targetId);
    if (!target || target.workspaceId !== targetWorkspaceId || target.archived) continue;
    if (targetExcluded.has(target.id)) {
      excludedTargets.push({ id: target.id, name: target.name });
      continue;
    }
    steps.push({ action: 'archive', target, name: target.name });
  }

  // Resolve every reference of every workflow sent; what cannot resolve blocks the sync.
  const resolution = new Map<string, { to: string | null | undefined; copy?: CopyKind; resourceType: string | null }>();
  const blockers: Blocker[] = [];
  const blocked = new Set<string>();
  for (const step of steps) {
    if (!step.source) continue;
    for (const r of collectReferences(step.source.live)) {
      const key = `${r.kind}:${r.sourceId}`;
      if (r.kind === 'workflow') {
        if (!targetOf.has(r.sourceId) && !(counterpart.has(r.sourceId) && !sentIds.has(r.sourceId) && false)) {
          if (!blocked.has(key)) blockers.push({ kind: r.kind, sourceId: r.sourceId, blockName: r.blockName, reason: 'The called workflow is not carried by this sync (not deployed, or excluded).' });
          blocked.add(key);
        }
        continue;
      }
      if (resolution.has(key) || blocked.has(key)) continue;
      const bare = r.kind === 'custom-tool' ? r.sourceId.replace(/^custom_/, '') : r.sourceId;
      const resourceType = await resourceTypeOf(repos, sourceWorkspaceId, r.kind, bare);
      const typeKey = `${resourceType}:${bare}`;
      const block = (reason: string) => {
        blocked.add(key);
        blockers.push({ kind: r.kind, sourceId: r.sourceId, blockName: r.blockName, reason });
      };
      const explicitTarget = explicit.get(typeKey);
      if (explicitTarget) {
        resolution.set(key, { to: explicitTarget, resourceType });
        continue;
      }
      if (copies.has(typeKey)) {
        resolution.set(key, { to: undefined, copy: copies.get(typeKey), resourceType });
        continue;
      }
      const savedTarget = explicitTarget === null ? undefined : saved.get(typeKey);
      if (savedTarget) {
        if (await mappingTargetExists(repos, targetWorkspaceId, savedTarget.resourceType, savedTarget.targetId)) resolution.set(key, { to: savedTarget.targetId, resourceType });
        else block(`The saved mapping points at ${savedTarget.targetId}, which no longer exists in the target workspace; map it again.`);
        continue;
      }
      if (r.kind === 'env-var') {
        if (await repos.secrets.get(targetWorkspaceId, 'workspace', null, r.sourceId)) resolution.set(key, { to: undefined, resourceType });
        else block(`The target workspace has no secret named ${r.sourceId}; create it there or map it to one.`);
        continue;
      }
      const live = await isSourceResource(repos, sourceWorkspaceId, r.kind, bare);
      if (!live) {
        // Skill and sandbox references may be names, which resolve in any workspace.
        if (r.kind === 'skill' || r.kind === 'sandbox') resolution.set(key, { to: undefined, resourceType });
        else if (drops.has(key) || drops.has(`${r.kind}:${bare}`)) resolution.set(key, { to: null, resourceType });
        else block('The referenced resource was deleted in the source; acknowledge it in dropReferences to clear the reference.');
        continue;
      }
      if (r.kind === 'skill' || r.kind === 'sandbox') {
        // An id of the source's own resource; a name is not an id and was answered above.
        block(`Unmapped ${r.kind}: map it${r.kind === 'skill' ? ' or copy it (copyResources)' : ''}.`);
        continue;
      }
      block(CREDENTIAL_TYPES.includes(resourceType ?? '') ? 'Unmapped credential: map it to a credential of the target workspace.' : `Unmapped ${r.kind}: map it to one in the target workspace or copy it (copyResources).`);
    }
  }
  for (const d of request.dropReferences ?? []) {
    const bare = d.kind === 'custom-tool' ? d.sourceId.replace(/^custom_/, '') : d.sourceId;
    if (d.kind !== 'env-var' && d.kind !== 'knowledge-document' && d.kind !== 'file-folder' && d.kind !== 'custom-block' && (await isSourceResource(repos, sourceWorkspaceId, d.kind as ReferenceKind, bare))) {
      throw new DomainError('invalid', `dropReferences names ${d.kind} ${d.sourceId}, which still exists in the source; only references to deleted resources can be dropped.`, [
        { code: 'custom', keys: [], path: ['body', 'dropReferences'], message: 'Live reference' },
      ]);
    }
  }

  const fingerprint = createHash('sha256')
    .update(
      stableStringify({
        edge: edge.childWorkspaceId,
        direction,
        sourceWorkspaceId,
        request: { mappings: requestMappings, copyResources: request.copyResources ?? {}, dropReferences: request.dropReferences ?? [], dependentValues: request.dependentValues ?? [], triggerMappings: request.triggerMappings ?? [] },
        steps: steps.map((s) => [s.action, s.source?.w.id ?? null, s.source?.liveVersionId ?? null, s.target?.id ?? null, s.target?.updatedAt ?? null]),
        saved: [...saved.values()].map((m) => [m.resourceType, m.sourceId, m.targetId]),
      }),
    )
    .digest('base64url');
  return { edge, sourceWorkspaceId, targetWorkspaceId, sourceIsParent, steps, excludedTargets, blockers, resolution, copies, requestMappings, fingerprint };
}
export type SyncPlan = Awaited<ReturnType<typeof planSync>>;

export function previewView(plan: SyncPlan) {
  return {
    previewFingerprint: plan.fingerprint,
    sourceWorkspaceId: plan.sourceWorkspaceId,
    targetWorkspaceId: plan.targetWorkspaceId,
    ready: plan.blockers.length === 0,
    workflows: plan.steps.map((s) => ({
      action: s.action,
      ...(s.source ? { sourceWorkflowId: s.source.w.id } : {}),
      ...(s.target ? { targetWorkflowId: s.target.id } : {}),
      name: s.name,
    })),
    unresolvedBindings: plan.blockers,
    // This server's blocks have no fields that depend on a remapped resource (channels of a credential,
    // documents of a knowledge base), so there is nothing to re-pick.
    configuration: [],
    excludedTargets: plan.excludedTargets,
    // Triggers here are the API and chat, served by workflow id: no webhook paths move with a sync.
    triggerSlots: [],
    triggerUrlChanges: [],
  };
}

/** What the rollback of one workflow needs: the state and version it had before the sync. */
interface UndoEntry {
  workflowId: string;
  action: 'created' | 'replaced' | 'archived';
  priorVersion: number | null;
  priorDraft: string | null;
}

/**
 * Applies a planned sync in the caller's transaction: refused with nothing written while any reference would be
 * left empty; otherwise saves the mappings sent, copies `copyResources`, writes and redeploys every target,
 * archives the targets whose source is gone, stores the undo point and the receipt.
 */
export async function applySync(
  tx: Repositories,
  audit: Audit,
  actorId: string,
  current: Workspace,
  direction: Direction,
  plan: SyncPlan,
  request: { requestId: string; tables: TableSettings; fingerprint: string },
): Promise<{ receipt: Receipt; knowledgeCopied: boolean }> {
  if (plan.blockers.length > 0) {
    throw new DomainError('conflict', `The sync would leave ${plan.blockers.length} reference(s) empty; map them, copy them or (for deleted resources) drop them, then preview again. Nothing was written.`, {
      code: 'UNRESOLVED_REFERENCES',
      unresolvedBindings: plan.blockers,
    });
  }
  const at = new Date().toISOString();
  const { edge, sourceWorkspaceId, targetWorkspaceId, sourceIsParent } = plan;
  await saveMappings(tx, edge, sourceIsParent, plan.requestMappings);
  // Copies first, so references can point at them; each copy is remembered as the mapping of its source.
  const copied = new Map<string, string>();
  const ctx = { tx, audit, actorId, sourceWorkspaceId, targetWorkspaceId, tables: request.tables };
  let items = 0;
  for (const [typeKey, kind] of plan.copies) {
    const sourceId = typeKey.slice(typeKey.indexOf(':') + 1);
    const copy = await copyResource(ctx, kind, sourceId);
    copied.set(typeKey, copy.id);
    items += 1 + copy.items;
    await saveMappings(tx, edge, sourceIsParent, [{ resourceType: RESOURCE_TYPE_OF[kind], sourceId, targetId: copy.id }]);
  }
  const resolve = (kind: ReferenceKind, id: string): string | null | undefined => {
    const r = plan.resolution.get(`${kind}:${id}`);
    if (!r) return undefined;
    if (r.copy) {
      const bare = kind === 'custom-tool' ? id.replace(/^custom_/, '') : id;
      const c = copied.get(`${r.resourceType}:${bare}`);
      return c && kind === 'custom-tool' && id.startsWith('custom_') ? `custom_${c}` : c;
    }
    return r.to;
  };
  const undo: UndoEntry[] = [];
  const resourceIds: string[] = [];
  const deployments: NonNullable<Receipt['deployments']> = [];
  const targetOf = new Map<string, string>();
  const written: { id: string; state: WorkflowState; source: WorkflowRecord }[] = [];
  for (const step of plan.steps) {
    if (step.action === 'archive') {
      const t = await reload(tx, step.target!.id);
      const live = t.isDeployed && t.activeVersionId ? await tx.workflowVersions.getById(t.activeVersionId) : undefined;
      undo.push({ workflowId: t.id, action: 'archived', priorVersion: live?.version ?? null, priorDraft: null });
      await archiveWorkflow(tx, audit, t.id, () => {});
      resourceIds.push(t.id);
      continue;
    }
    const source = step.source!;
    const state = rewriteReferences(source.live, resolve);
    if (step.action === 'create') {
      const { w } = await insertWorkflowWithState(tx, actorId, { workspaceId: targetWorkspaceId, name: source.w.name, description: source.w.description, folderPath: source.w.folderPath, state });
      audit({ action: 'workflow.created', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: targetWorkspaceId, metadata: { syncedFrom: source.w.id } });
      await tx.workspaceForks.pairWorkflows(edge.childWorkspaceId, sourceIsParent ? source.w.id : w.id, sourceIsParent ? w.id : source.w.id);
      undo.push({ workflowId: w.id, action: 'created', priorVersion: null, priorDraft: null });
      targetOf.set(source.w.id, w.id);
      written.push({ id: w.id, state, source: source.w });
    } else {
      let t = await reload(tx, step.target!.id);
      const live = t.isDeployed && t.activeVersionId ? await tx.workflowVersions.getById(t.activeVersionId) : undefined;
      undo.push({ workflowId: t.id, action: 'replaced', priorVersion: live?.version ?? null, priorDraft: t.state });
      if (t.archived) t = { ...t, ...(await restoreWorkflow(tx, audit, t.id)) };
      // A sync is a force push: the target's lock does not hold it back.
      if (t.locked) await tx.workflows.update(t.id, { locked: false, updatedAt: at });
      const name = source.w.name === t.name ? t.name : await freeWorkflowName(tx, targetWorkspaceId, t.folderPath, source.w.name, t.id);
      await tx.workflows.update(t.id, { name, description: source.w.description, updatedAt: at });
      targetOf.set(source.w.id, t.id);
      written.push({ id: t.id, state, source: source.w });
    }
  }
  // Workflow blocks calling a workflow of the source call its counterpart in the target.
  for (const wr of written) {
    const state = rewriteReferences(wr.state, (kind, id) => (kind === 'workflow' ? targetOf.get(id) : undefined));
    await replaceState(tx, audit, wr.id, { blocks: state.blocks, edges: state.edges, variables: state.variables }, () => {}, actorId);
    if (wr.source.isPublicApi !== (await reload(tx, wr.id)).isPublicApi) await tx.workflows.update(wr.id, { isPublicApi: wr.source.isPublicApi, updatedAt: at });
    const deployed = await deploy(tx, audit, actorId, wr.id, {});
    resourceIds.push(wr.id);
    const attempt = deployed.deployment.attempt;
    deployments.push({ operationId: attempt?.id ?? randomUUID(), workflowId: wr.id, version: deployed.version, status: 'active', ready: true, pendingComponents: [] });
  }
  const operationId = newOperationId();
  await tx.workspaceForks.putUndoPoint({ childWorkspaceId: edge.childWorkspaceId, targetWorkspaceId, sourceWorkspaceId, operationId, undo: JSON.stringify(undo), createdAt: at });
  audit({ action: `workspace.${direction === 'push' ? 'pushed' : 'pulled'}`, resourceType: 'workspace', resourceId: targetWorkspaceId, workspaceId: current.id, metadata: { sourceWorkspaceId, targetWorkspaceId, workflows: plan.steps.length } });
  const receipt: Receipt = {
    operationId,
    requestId: request.requestId,
    workspaceId: current.id,
    kind: direction === 'push' ? 'workspace_push' : 'workspace_pull',
    applied: true,
    status: 'completed',
    resourceIds,
    issues: [],
    idMap: Object.fromEntries(targetOf),
    deploymentOperationIds: deployments.map((d) => d.operationId),
    deployments,
    triggerUrlChanges: [],
    ...(items > 0 ? { copyProgress: { status: 'completed' as const, copied: items, failed: 0 } } : {}),
  };
  await recordReceipt(tx, receipt, request.fingerprint);
  return { receipt, knowledgeCopied: [...plan.copies.values()].includes('knowledgeBases') };
}

// ---- rollback, unlink, exclusions

export async function rollbackLatestSync(tx: Repositories, audit: Audit, current: Workspace, otherWorkspaceId: string, actorId: string) {
  const edge = await directEdge(tx, current.id, otherWorkspaceId);
  const point = await tx.workspaceForks.undoPoint(edge.childWorkspaceId, current.id);
  if (!point) throw new DomainError('not_found', 'There is no sync into this workspace from that edge to roll back.');
  const newest = await tx.workspaceForks.newestUndoInto(current.id);
  if (newest && newest.operationId !== point.operationId) {
    throw new DomainError('conflict', 'A newer sync into this workspace came from another fork edge; roll that one back first.', { otherWorkspaceId: newest.sourceWorkspaceId });
  }
  const result = { restored: 0, archived: 0, unarchived: 0, skipped: 0, pendingActivations: [] as string[] };
  const atVersion = (version: number) => (inner: Repositories, w: WorkflowRecord) =>
    inner.workflowVersions.get(w.id, version).then((v) => {
      if (!v) throw domainNotFound('Version');
      return v;
    });
  for (const entry of JSON.parse(point.undo) as UndoEntry[]) {
    const w = await tx.workflows.get(entry.workflowId);
    if (!w || w.workspaceId !== current.id) {
      result.skipped++;
      continue;
    }
    if (entry.action === 'created') {
      if (!w.archived) await archiveWorkflow(tx, audit, w.id, () => {});
      result.archived++;
    } else if (entry.action === 'archived') {
      if (w.archived) await restoreWorkflow(tx, audit, w.id);
      if (entry.priorVersion !== null) await activateVersion(tx, audit, w.id, atVersion(entry.priorVersion), 'workflow.rolled_back', actorId);
      result.unarchived++;
    } else {
      if (entry.priorDraft !== null) await tx.workflows.update(w.id, { state: entry.priorDraft, updatedAt: new Date().toISOString() });
      if (entry.priorVersion !== null) await activateVersion(tx, audit, w.id, atVersion(entry.priorVersion), 'workflow.rolled_back', actorId);
      else await undeploy(tx, audit, w.id);
      result.restored++;
    }
  }
  await tx.workspaceForks.deleteUndoPoint(edge.childWorkspaceId, current.id);
  audit({ action: 'workspace.sync_rolled_back', resourceType: 'workspace', resourceId: current.id, workspaceId: current.id, metadata: { otherWorkspaceId, ...result } });
  return result;
}

export async function unlink(tx: Repositories, audit: Audit, current: Workspace, otherWorkspaceId: string): Promise<boolean> {
  const edge = await directEdge(tx, current.id, otherWorkspaceId);
  const unlinked = await tx.workspaceForks.deleteEdge(edge.childWorkspaceId);
  if (unlinked) audit({ action: 'workspace.fork_unlinked', resourceType: 'workspace', resourceId: edge.childWorkspaceId, workspaceId: current.id, metadata: { parentWorkspaceId: edge.parentWorkspaceId } });
  return unlinked;
}

export async function setExclusions(tx: Repositories, audit: Audit, workspaceId: string, workflowIds: string[], excluded: boolean): Promise<number> {
  const at = new Date().toISOString();
  let updated = 0;
  for (const id of new Set(workflowIds)) {
    const w = await tx.workflows.get(id);
    if (!w || w.workspaceId !== workspaceId) continue;
    if (excluded ? await tx.workspaceForks.exclude(workspaceId, id, at) : await tx.workspaceForks.include(id)) updated++;
  }
  if (updated > 0) audit({ action: 'workflow.fork_exclusion_changed', resourceType: 'workflow', resourceId: null, workspaceId, metadata: { forkSyncExcluded: excluded, updated } });
  return updated;
}

// Access requests: what a governed person may ask for (discovery), filing and cancelling a request, and the
// admin side: the inbox, the preview of the exact change and who it reaches, applying or declining, and the
// organization's on/off switch. Only a pending request moves (to fulfilled, declined, cancelled or closed).
import { createHash } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { AccessRequestRecord } from '../store/access-requests.ts';
import type { PermissionGroupRecord } from '../store/permission-groups.ts';
import type { Organization } from '../store/organizations.ts';
import type { Audit } from '../domain/changes.ts';
import type { components } from '../../generated/types.ts';
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { newId } from '../identity/keys.ts';
import { requireOrgAdmin, requireOrgMember } from '../organizations/organizations.ts';
import { listBlockDefinitions, getBlockDefinition } from '../workflows/blocks.ts';
import { CONNECTOR_TYPES } from '../knowledge/connectors.ts';
import { AUTH_TYPES, CONFIG_KEYS, FEATURE_KEYS, configKeyLabel, readConfig, storeConfig, type PermissionConfig, type PermissionConfigKey } from './config.ts';
import { ALWAYS_ALLOWED_BLOCKS, effectiveAccess, providerOfModel, type EffectiveAccess } from './policy.ts';

export type AccessTarget = components['schemas']['AccessTarget'];
export type AccessTargetKind = components['schemas']['AccessTargetKind'];
type DiscoveryState = 'allowed' | 'requestable' | 'unavailable';

export interface DiscoveryItem {
  target: AccessTarget;
  label: string;
  state: DiscoveryState;
  reason: string | null;
  pendingRequestId: string | null;
}

/** Where a request is made: a workspace of the organization, or the organization itself (its default group). */
export interface RequestScope {
  organization: Organization;
  workspaceId: string | null;
}

type Reader = Repositories;

const targetKey = (t: AccessTarget): { kind: AccessTargetKind; id: string } => (t.kind === 'feature' ? { kind: 'feature', id: t.configKey } : { kind: t.kind, id: t.id });

export function targetOf(kind: string, id: string): AccessTarget {
  return (kind === 'feature' ? { kind, configKey: id } : { kind, id }) as AccessTarget;
}

export function targetLabel(t: AccessTarget): string {
  switch (t.kind) {
    case 'feature':
      return configKeyLabel(t.configKey);
    case 'integration':
      return `Block: ${getBlockDefinition(t.id)?.name ?? t.id}`;
    case 'provider':
      return `Model provider: ${t.id}`;
    case 'model':
      return `Model: ${t.id}`;
    case 'tool':
      return `Tool: ${t.id}`;
    case 'knowledge_connector':
      return `Knowledge connector: ${CONNECTOR_TYPES.find((c) => c.connectorType === t.id)?.name ?? t.id}`;
    case 'file_share_auth':
      return `File sharing: ${t.id}`;
    case 'chat_deploy_auth':
      return `Chat deployment: ${t.id}`;
    case 'usage_limit':
      return 'Member credit limit';
  }
}

/** The configuration change that grants `t` (null: `config` already allows it, or it is not a config target). */
export function grantOf(config: PermissionConfig, t: AccessTarget): PermissionConfig | null {
  const next = structuredClone(config) as Record<string, unknown> & PermissionConfig;
  const addTo = (key: 'allowedIntegrations' | 'allowedModelProviders' | 'allowedKnowledgeConnectors' | 'allowedFileShareAuthTypes' | 'allowedChatDeployAuthTypes', id: string) => {
    const list = next[key] as string[] | null;
    if (list !== null && !list.includes(id)) (next as Record<string, unknown>)[key] = [...list, id];
  };
  switch (t.kind) {
    case 'feature':
      next[t.configKey] = false;
      break;
    case 'integration':
      addTo('allowedIntegrations', t.id);
      break;
    case 'provider':
      addTo('allowedModelProviders', t.id);
      break;
    case 'model':
      next.deniedModels = next.deniedModels.filter((m) => m !== t.id);
      addTo('allowedModelProviders', providerOfModel(t.id));
      break;
    case 'tool':
      next.deniedTools = next.deniedTools.filter((m) => m !== t.id);
      break;
    case 'knowledge_connector':
      addTo('allowedKnowledgeConnectors', t.id);
      break;
    case 'file_share_auth':
      addTo('allowedFileShareAuthTypes', t.id);
      break;
    case 'chat_deploy_auth':
      addTo('allowedChatDeployAuthTypes', t.id);
      break;
    case 'usage_limit':
      return null;
  }
  return storeConfig(next) === storeConfig(config) ? null : next;
}

/** Every key whose value differs, with before and after. */
function diff(before: PermissionConfig, after: PermissionConfig) {
  return CONFIG_KEYS.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k])).map((k: PermissionConfigKey) => ({
    configKey: k,
    label: configKeyLabel(k),
    before: before[k] as boolean | string[] | null,
    after: after[k] as boolean | string[] | null,
  }));
}

/** Everything a person could be restricted on, as targets (named list items, every feature and auth mode). */
function candidateTargets(config: PermissionConfig | null): AccessTarget[] {
  const out: AccessTarget[] = FEATURE_KEYS.map((k) => ({ kind: 'feature', configKey: k }) as AccessTarget);
  for (const b of listBlockDefinitions()) if (!ALWAYS_ALLOWED_BLOCKS.has(b.id) && !b.container) out.push({ kind: 'integration', id: b.id });
  const providers = new Set(['openai', 'anthropic', 'google', 'xai', 'mistral', 'deepseek', 'ollama', 'custom', ...(config?.allowedModelProviders ?? [])]);
  for (const p of providers) out.push({ kind: 'provider', id: p });
  for (const m of config?.deniedModels ?? []) out.push({ kind: 'model', id: m });
  for (const tool of config?.deniedTools ?? []) out.push({ kind: 'tool', id: tool });
  const connectors = new Set([...CONNECTOR_TYPES.map((c) => c.connectorType), ...(config?.allowedKnowledgeConnectors ?? [])]);
  for (const c of connectors) out.push({ kind: 'knowledge_connector', id: c });
  for (const a of AUTH_TYPES) out.push({ kind: 'file_share_auth', id: a }, { kind: 'chat_deploy_auth', id: a });
  out.push({ kind: 'usage_limit', id: 'member' });
  return out;
}

interface ScopeState {
  access: EffectiveAccess;
  allowRequests: boolean;
  creditLimit: number | null;
  pending: AccessRequestRecord[];
}

async function scopeState(repos: Reader, scope: RequestScope, userId: string): Promise<ScopeState> {
  const access = await effectiveAccess(repos, { workspaceId: scope.workspaceId, organizationId: scope.organization.id }, userId);
  return {
    access,
    allowRequests: await repos.accessRequests.allowRequests(scope.organization.id),
    creditLimit: await repos.organizations.creditLimit(scope.organization.id, userId),
    pending: (await repos.accessRequests.pendingOf(scope.organization.id, userId)).filter((r) => r.workspaceId === scope.workspaceId),
  };
}

function itemState(s: ScopeState, t: AccessTarget): { state: DiscoveryState; reason: string | null } {
  let restricted: boolean;
  if (t.kind === 'usage_limit') {
    if (s.creditLimit === null) return { state: 'allowed', reason: null };
    restricted = true;
  } else {
    restricted = s.access.config !== null && grantOf(s.access.config, t) !== null;
    if (!restricted) return { state: 'allowed', reason: null };
  }
  if (!s.allowRequests) return { state: 'unavailable', reason: 'Access requests are turned off in this organization.' };
  return { state: 'requestable', reason: null };
}

/** The discovery list of `userId` in the scope, filtered (search on the label, kind, state) but not paged. */
export async function discover(repos: Reader, scope: RequestScope, userId: string, filter: { search?: string; targetKind?: AccessTargetKind; state?: DiscoveryState }): Promise<DiscoveryItem[]> {
  const s = await scopeState(repos, scope, userId);
  const search = filter.search?.toLowerCase();
  const items: DiscoveryItem[] = [];
  for (const target of candidateTargets(s.access.config)) {
    if (filter.targetKind && target.kind !== filter.targetKind) continue;
    const label = targetLabel(target);
    if (search && !label.toLowerCase().includes(search)) continue;
    const { state, reason } = itemState(s, target);
    if (filter.state && state !== filter.state) continue;
    const key = targetKey(target);
    const pending = s.pending.find((r) => r.targetKind === key.kind && r.targetId === key.id);
    items.push({ target, label, state, reason, pendingRequestId: pending?.id ?? null });
  }
  return items;
}

export function requestView(r: AccessRequestRecord) {
  return {
    id: r.id,
    organizationId: r.organizationId,
    workspaceId: r.workspaceId,
    target: targetOf(r.targetKind, r.targetId),
    targetLabel: r.targetLabel,
    reason: r.reason,
    status: r.status,
    decisionReason: r.decisionReason,
    createdAt: r.createdAt,
    decidedAt: r.decidedAt,
    groupName: r.groupName,
    requester: { id: r.requesterId, name: r.requesterName, email: r.requesterEmail },
  };
}

/** The organization of a workspace route: a personal workspace has no one to ask (409). */
export async function workspaceScope(repos: Reader, workspaceId: string): Promise<RequestScope | null> {
  const orgId = await repos.organizations.organizationOfWorkspace(workspaceId);
  const organization = orgId ? await repos.organizations.get(orgId) : undefined;
  return organization ? { organization, workspaceId } : null;
}

export async function organizationScope(repos: Reader, organizationId: string, userId: string): Promise<RequestScope> {
  const organization = await requireOrgMember(repos, organizationId, userId);
  return { organization, workspaceId: null };
}

export async function fileRequest(tx: Repositories, audit: Audit, userId: string, scope: RequestScope, target: AccessTarget, reason: string) {
  const s = await scopeState(tx, scope, userId);
  if (!s.allowRequests) throw new DomainError('forbidden', 'Access requests are turned off in this organization.');
  const label = targetLabel(target);
  const { state, reason: why } = itemState(s, target);
  if (state === 'allowed') throw new DomainError('conflict', `${label} is already available to you; there is nothing to request.`);
  if (state !== 'requestable') throw new DomainError('conflict', why ?? `${label} cannot be requested.`);
  const key = targetKey(target);
  const duplicate = () => new DomainError('conflict', `You already have a pending request for ${label}.`);
  if (s.pending.some((r) => r.targetKind === key.kind && r.targetId === key.id)) throw duplicate();
  const record = {
    id: newId(),
    organizationId: scope.organization.id,
    workspaceId: scope.workspaceId,
    requesterId: userId,
    targetKind: key.kind,
    targetId: key.id,
    targetLabel: label,
    reason,
    status: 'pending' as const,
    decisionReason: null,
    decidedBy: null,
    groupId: s.access.group?.id ?? null,
    groupName: s.access.group?.name ?? null,
    createdAt: new Date().toISOString(),
    decidedAt: null,
  };
  await onUniqueViolation(tx.accessRequests.insert(record), 'access_requests', ['organization_id', 'requester_id', 'scope_id', 'target_kind', 'target_id'], duplicate);
  await audit({ action: 'access_request.created', resourceType: 'access_request', resourceId: record.id, resourceName: label, workspaceId: scope.workspaceId, metadata: { organizationId: scope.organization.id } });
  return requestView((await tx.accessRequests.get(record.id))!);
}

/** A request of the organization (and, on a workspace route, filed in that workspace); 404 otherwise. */
async function requestIn(repos: Reader, organizationId: string, requestId: string, workspaceId?: string): Promise<AccessRequestRecord> {
  const r = await repos.accessRequests.get(requestId);
  if (!r || r.organizationId !== organizationId || (workspaceId !== undefined && r.workspaceId !== workspaceId)) throw domainNotFound('Access request');
  return r;
}

const notPending = (r: AccessRequestRecord) => new DomainError('conflict', `The request is ${r.status}; only a pending request can change.`, { status: r.status });

async function settle(tx: Repositories, r: AccessRequestRecord, change: Parameters<Repositories['accessRequests']['settle']>[1]) {
  if (r.status !== 'pending' || !(await tx.accessRequests.settle(r.id, change))) throw notPending((await tx.accessRequests.get(r.id)) ?? r);
  return requestView((await tx.accessRequests.get(r.id))!);
}

export async function cancelRequest(tx: Repositories, audit: Audit, userId: string, organizationId: string, requestId: string, workspaceId?: string) {
  const r = await requestIn(tx, organizationId, requestId, workspaceId);
  if (r.requesterId !== userId) throw new DomainError('forbidden', 'Only the person who filed a request can cancel it.');
  const view = await settle(tx, r, { status: 'cancelled', decisionReason: null, decidedBy: userId, decidedAt: new Date().toISOString() });
  await audit({ action: 'access_request.cancelled', resourceType: 'access_request', resourceId: r.id, resourceName: r.targetLabel, workspaceId: r.workspaceId, metadata: { organizationId } });
  return view;
}

// ---- the admin side

export const requireRequestsAdmin = (repos: Reader, organizationId: string, userId: string) => requireOrgAdmin(repos, organizationId, userId);

/** Who a group's change reaches: its explicit members, else everyone in its workspaces (the default: the organization). */
async function impactOf(repos: Reader, g: PermissionGroupRecord) {
  const orgId = g.organizationId;
  let workspaceIds: string[];
  let memberCount: number;
  if (g.isDefault) {
    workspaceIds = await repos.organizations.workspaceIds(orgId);
    memberCount = (await repos.organizations.memberIds(orgId)).length;
  } else {
    workspaceIds = await repos.permissionGroups.workspaceIds(g.id);
    const explicit = await repos.permissionGroups.memberIds(g.id);
    if (explicit.length > 0) memberCount = explicit.length;
    else {
      const people = new Set<string>();
      for (const w of workspaceIds) for (const m of await repos.members.list(w, null, 100_000)) people.add(m.userId);
      memberCount = people.size;
    }
  }
  const MAX_NAMES = 10;
  const names: string[] = [];
  for (const id of workspaceIds.slice(0, MAX_NAMES)) {
    const w = await repos.workspaces.get(id);
    if (w) names.push(w.name);
  }
  return { memberCount, workspaceCount: workspaceIds.length, workspaceNames: names, truncated: workspaceIds.length > MAX_NAMES };
}

const fingerprintOf = (parts: unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 32);

export async function previewRequest(repos: Reader, organizationId: string, r: AccessRequestRecord) {
  const allowRequests = await repos.accessRequests.allowRequests(organizationId);
  const request = requestView(r);
  const blocked = r.status !== 'pending' ? `The request is ${r.status}.` : !allowRequests ? 'Access requests are turned off in this organization.' : null;
  if (r.targetKind === 'usage_limit') {
    const current = await repos.organizations.creditLimit(organizationId, r.requesterId);
    const unavailableReason = blocked ?? (current === null ? 'No credit limit applies to this member any more.' : null);
    return {
      newLimitCredits: null,
      request,
      changes: [],
      impact: { memberCount: 1, workspaceCount: 0, workspaceNames: [], truncated: false },
      fingerprint: fingerprintOf(['usage_limit', r.id, current]),
      canApply: unavailableReason === null,
      unavailableReason,
      resolutionKind: 'usage_limit' as const,
      group: null,
      currentLimitCredits: current,
    };
  }
  const g = r.groupId ? await repos.permissionGroups.get(r.groupId) : undefined;
  const before = g ? readConfig(g.config) : null;
  const after = before ? grantOf(before, request.target) : null;
  const unavailableReason = blocked ?? (!g ? 'The permission group the request was filed under no longer exists.' : !after ? 'The group already allows this.' : null);
  return {
    newLimitCredits: null,
    request,
    changes: before && after ? diff(before, after) : [],
    impact: g ? await impactOf(repos, g) : { memberCount: 0, workspaceCount: 0, workspaceNames: [], truncated: false },
    fingerprint: fingerprintOf(['permission', r.id, g?.id ?? null, g?.config ?? null]),
    canApply: unavailableReason === null,
    unavailableReason,
    resolutionKind: 'permission' as const,
    group: g ? { id: g.id, name: g.name } : null,
    currentLimitCredits: null,
  };
}

export async function previewById(repos: Reader, userId: string, organizationId: string, requestId: string) {
  await requireRequestsAdmin(repos, organizationId, userId);
  return previewRequest(repos, organizationId, await requestIn(repos, organizationId, requestId));
}

export type Resolution = { action: 'apply'; expectedFingerprint: string; newLimitCredits?: number } | { action: 'decline'; reason: string };

/** Closes the other pending requests under `groupId` that its new config now satisfies (granted some other way). */
async function closeSatisfied(tx: Repositories, groupId: string, config: PermissionConfig, exceptId: string, at: string) {
  for (const other of await tx.accessRequests.pendingForGroup(groupId)) {
    if (other.id === exceptId || other.targetKind === 'usage_limit') continue;
    if (grantOf(config, targetOf(other.targetKind, other.targetId)) === null) {
      await tx.accessRequests.settle(other.id, { status: 'closed', decisionReason: 'Access was granted by another request.', decidedBy: null, decidedAt: at });
    }
  }
}

export async function resolveRequest(tx: Repositories, audit: Audit, userId: string, organizationId: string, requestId: string, resolution: Resolution) {
  await requireRequestsAdmin(tx, organizationId, userId);
  const r = await requestIn(tx, organizationId, requestId);
  if (r.status !== 'pending') throw notPending(r);
  const at = new Date().toISOString();
  if (resolution.action === 'decline') {
    const view = await settle(tx, r, { status: 'declined', decisionReason: resolution.reason, decidedBy: userId, decidedAt: at });
    await audit({ action: 'access_request.declined', resourceType: 'access_request', resourceId: r.id, resourceName: r.targetLabel, workspaceId: r.workspaceId, metadata: { organizationId } });
    return view;
  }
  if (!(await tx.accessRequests.allowRequests(organizationId))) throw new DomainError('forbidden', 'Access requests are turned off in this organization; approvals are refused.');
  const preview = await previewRequest(tx, organizationId, r);
  if (preview.fingerprint !== resolution.expectedFingerprint) {
    throw new DomainError('conflict', 'The group or the credit limit changed since the preview; preview the request again.', { fingerprint: preview.fingerprint });
  }
  if (preview.resolutionKind === 'usage_limit') {
    const current = preview.currentLimitCredits;
    if (resolution.newLimitCredits === undefined) throw invalidInput(['body', 'newLimitCredits'], 'A credit limit request needs newLimitCredits.');
    if (current === null) throw new DomainError('conflict', preview.unavailableReason ?? 'No credit limit applies to this member.');
    if (resolution.newLimitCredits <= current) throw invalidInput(['body', 'newLimitCredits'], `newLimitCredits must be greater than the current limit (${current}).`);
    await tx.organizations.setCreditLimit(organizationId, r.requesterId, resolution.newLimitCredits, at);
  } else {
    if (resolution.newLimitCredits !== undefined) throw invalidInput(['body', 'newLimitCredits'], 'newLimitCredits applies to credit limit requests only.');
    if (!preview.canApply || !preview.group) throw new DomainError('conflict', preview.unavailableReason ?? 'The request cannot be applied.');
    const g = (await tx.permissionGroups.get(preview.group.id))!;
    const next = grantOf(readConfig(g.config), preview.request.target)!;
    await tx.permissionGroups.update(g.id, { name: g.name, description: g.description, config: storeConfig(next), isDefault: g.isDefault, updatedAt: at });
    await closeSatisfied(tx, g.id, next, r.id, at);
  }
  const view = await settle(tx, r, { status: 'fulfilled', decisionReason: null, decidedBy: userId, decidedAt: at });
  await audit({ action: 'access_request.applied', resourceType: 'access_request', resourceId: r.id, resourceName: r.targetLabel, workspaceId: r.workspaceId, metadata: { organizationId, kind: preview.resolutionKind } });
  return view;
}

export async function setAllowRequests(tx: Repositories, audit: Audit, userId: string, organizationId: string, allow: boolean) {
  await requireRequestsAdmin(tx, organizationId, userId);
  await tx.accessRequests.setAllowRequests(organizationId, allow, new Date().toISOString());
  await audit({ action: 'access_request.settings_updated', resourceType: 'organization', resourceId: organizationId, workspaceId: null, metadata: { allowRequests: allow } });
  return { allowRequests: allow };
}

// Permission groups: the Enterprise gate, creating, changing and deleting groups, and their explicit members,
// with the rule that keeps exactly one group governing a person in a workspace (see ./policy.ts for the order):
// no two all-members groups share a workspace, and nobody is an explicit member of two groups that share one.
// Every change runs in one transaction, which serializes it with every other writer (the organization-wide lock).
import type { Repositories } from '../store/index.ts';
import type { PermissionGroupRecord } from '../store/permission-groups.ts';
import type { MemberOrganization } from '../store/organizations.ts';
import type { Audit } from '../domain/changes.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import { newId } from '../identity/keys.ts';
import { requireOrgAdmin } from '../organizations/organizations.ts';
import { DEFAULT_CONFIG, patchConfig, readConfig, storeConfig, type PermissionConfig, type PermissionConfigPatch } from './config.ts';
import { isEntitled } from './policy.ts';

type Reader = Pick<Repositories, 'organizations' | 'users' | 'workspaces' | 'billingAccounts' | 'permissionGroups'>;

/** The caller must be an owner or admin of an organization on the Enterprise plan (403 otherwise). */
export async function requireAccessControlAdmin(repos: Reader, organizationId: string, userId: string): Promise<MemberOrganization> {
  const org = await requireOrgAdmin(repos, organizationId, userId);
  if (!(await isEntitled(repos, org))) throw new DomainError('forbidden', 'Access Control is an Enterprise feature: the organization must be on the Enterprise plan.');
  return org;
}

/** A group of this organization; a group of another one is not found. */
export async function groupOf(repos: Pick<Repositories, 'permissionGroups'>, organizationId: string, groupId: string): Promise<PermissionGroupRecord> {
  const g = await repos.permissionGroups.get(groupId);
  if (!g || g.organizationId !== organizationId) throw domainNotFound('Permission group');
  return g;
}

export interface PermissionGroupView {
  id: string;
  organizationId: string;
  name: string;
  description: string | null;
  config: PermissionConfig;
  isDefault: boolean;
  membershipMode: string;
  workspaceIds: string[];
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export async function groupView(repos: Pick<Repositories, 'permissionGroups'>, g: PermissionGroupRecord): Promise<PermissionGroupView> {
  const workspaceIds = g.isDefault ? [] : await repos.permissionGroups.workspaceIds(g.id);
  const membershipMode = g.isDefault ? 'organization' : (await repos.permissionGroups.memberCount(g.id)) > 0 ? 'explicit' : 'all_members';
  return {
    id: g.id,
    organizationId: g.organizationId,
    name: g.name,
    description: g.description,
    config: readConfig(g.config),
    isDefault: g.isDefault,
    membershipMode,
    workspaceIds,
    createdBy: g.createdBy,
    createdAt: g.createdAt,
    updatedAt: g.updatedAt,
  };
}

function checkName(raw: string): string {
  const name = raw.trim();
  if (!name || name.length > 100) throw invalidInput(['body', 'name'], 'A group name has 1 to 100 characters (after trimming).');
  return name;
}

const nameTaken = (name: string) => new DomainError('conflict', `A permission group named "${name}" already exists in this organization.`, { field: 'name' });

/** Distinct workspace ids that must all belong to the organization (400 naming the first that does not). */
async function checkWorkspaces(repos: Reader, organizationId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  for (const id of unique) {
    if ((await repos.organizations.organizationOfWorkspace(id)) !== organizationId) {
      throw invalidInput(['body', 'workspaceIds', ids.indexOf(id)], `The workspace ${id} does not belong to this organization.`);
    }
  }
  return unique;
}

const shares = (a: readonly string[], b: readonly string[]) => a.some((w) => b.includes(w));

/**
 * Refuses a scope that would have someone governed by two groups in one workspace: `groupId` targeting
 * `workspaceIds` with `memberIds` (none: it governs everyone there).
 */
async function assertNoScopeConflict(repos: Reader, organizationId: string, groupId: string | null, workspaceIds: string[], memberIds: string[]): Promise<void> {
  if (workspaceIds.length === 0) return;
  for (const other of await repos.permissionGroups.listForOrganization(organizationId)) {
    if (other.id === groupId || other.isDefault) continue;
    const otherWorkspaces = await repos.permissionGroups.workspaceIds(other.id);
    if (!shares(workspaceIds, otherWorkspaces)) continue;
    const otherMembers = await repos.permissionGroups.memberIds(other.id);
    if (memberIds.length === 0 && otherMembers.length === 0) {
      throw new DomainError('conflict', `The permission group "${other.name}" already governs all members of one of these workspaces.`, { groupId: other.id });
    }
    const both = memberIds.filter((m) => otherMembers.includes(m));
    if (both.length > 0) {
      throw new DomainError('conflict', `A member would be governed by two groups in one workspace: they are already an explicit member of "${other.name}".`, {
        groupId: other.id,
        userIds: both,
      });
    }
  }
}

/** Turns the current default group (if any, other than `keepId`) into an inert non-default group. */
async function demoteDefault(tx: Repositories, organizationId: string, keepId: string | null, at: string): Promise<void> {
  const current = await tx.permissionGroups.defaultOf(organizationId);
  if (!current || current.id === keepId) return;
  await tx.permissionGroups.update(current.id, { name: current.name, description: current.description, config: current.config, isDefault: false, updatedAt: at });
  await tx.permissionGroups.setWorkspaces(current.id, []);
}

export interface NewGroup {
  name: string;
  description?: string;
  config?: PermissionConfigPatch;
  isDefault?: boolean;
  workspaceIds?: string[];
}

export async function createGroup(tx: Repositories, audit: Audit, actorId: string, organizationId: string, input: NewGroup): Promise<PermissionGroupView> {
  await requireAccessControlAdmin(tx, organizationId, actorId);
  const name = checkName(input.name);
  const isDefault = input.isDefault === true;
  let workspaceIds: string[] = [];
  if (isDefault) {
    if (input.workspaceIds && input.workspaceIds.length > 0) throw invalidInput(['body', 'workspaceIds'], 'The default group governs the whole organization; it lists no workspaces.');
  } else {
    if (!input.workspaceIds || input.workspaceIds.length === 0) throw invalidInput(['body', 'workspaceIds'], 'A non-default group must list at least one workspace.');
    workspaceIds = await checkWorkspaces(tx, organizationId, input.workspaceIds);
  }
  if (await tx.permissionGroups.nameTaken(organizationId, name, null)) throw nameTaken(name);
  // A new group has no members, so it governs everyone in its workspaces.
  await assertNoScopeConflict(tx, organizationId, null, workspaceIds, []);
  const at = new Date().toISOString();
  if (isDefault) await demoteDefault(tx, organizationId, null, at);
  const group: PermissionGroupRecord = {
    id: newId(),
    organizationId,
    name,
    description: input.description?.trim() ? input.description : null,
    config: storeConfig(patchConfig(DEFAULT_CONFIG, input.config)),
    isDefault,
    createdBy: actorId,
    createdAt: at,
    updatedAt: at,
  };
  await onUniqueViolation(
    onUniqueViolation(tx.permissionGroups.insert(group), 'permission_groups', ['organization_id', 'name'], () => nameTaken(name)),
    'permission_groups',
    ['organization_id'],
    () => new DomainError('conflict', 'Another request made a default group at the same time; try again.'),
  );
  await tx.permissionGroups.setWorkspaces(group.id, workspaceIds);
  await audit({ action: 'permission_group.created', resourceType: 'permission_group', resourceId: group.id, resourceName: name, workspaceId: null, metadata: { organizationId, isDefault, workspaces: workspaceIds.length } });
  return groupView(tx, group);
}

export interface GroupChange {
  name?: string;
  description?: string | null;
  config?: PermissionConfigPatch;
  isDefault?: boolean;
  workspaceIds?: string[];
}

export async function updateGroup(tx: Repositories, audit: Audit, actorId: string, organizationId: string, groupId: string, change: GroupChange): Promise<PermissionGroupView> {
  await requireAccessControlAdmin(tx, organizationId, actorId);
  const g = await groupOf(tx, organizationId, groupId);
  if (change.isDefault === true && change.workspaceIds !== undefined) {
    throw invalidInput(['body', 'workspaceIds'], 'The default group governs the whole organization; send workspaceIds only for a non-default group.');
  }
  const name = change.name !== undefined ? checkName(change.name) : g.name;
  if (name !== g.name && (await tx.permissionGroups.nameTaken(organizationId, name, g.id))) throw nameTaken(name);
  const isDefault = change.isDefault ?? g.isDefault;
  let workspaceIds: string[];
  if (isDefault) workspaceIds = [];
  else if (change.workspaceIds !== undefined) workspaceIds = await checkWorkspaces(tx, organizationId, change.workspaceIds);
  else if (g.isDefault) workspaceIds = []; // demoted without a scope: inert
  else workspaceIds = await tx.permissionGroups.workspaceIds(g.id);
  if (!isDefault) await assertNoScopeConflict(tx, organizationId, g.id, workspaceIds, await tx.permissionGroups.memberIds(g.id));
  const at = new Date().toISOString();
  if (isDefault && !g.isDefault) await demoteDefault(tx, organizationId, g.id, at);
  const description = change.description === undefined ? g.description : change.description === null || change.description.trim() === '' ? null : change.description;
  const config = storeConfig(patchConfig(readConfig(g.config), change.config));
  await onUniqueViolation(
    onUniqueViolation(tx.permissionGroups.update(g.id, { name, description, config, isDefault, updatedAt: at }), 'permission_groups', ['organization_id', 'name'], () => nameTaken(name)),
    'permission_groups',
    ['organization_id'],
    () => new DomainError('conflict', 'Another request made a default group at the same time; try again.'),
  );
  await tx.permissionGroups.setWorkspaces(g.id, workspaceIds);
  await audit({ action: 'permission_group.updated', resourceType: 'permission_group', resourceId: g.id, resourceName: name, workspaceId: null, metadata: { organizationId, fields: Object.keys(change) } });
  return groupView(tx, (await tx.permissionGroups.get(g.id))!);
}

/** Closes the pending requests filed under a group that no longer exists (the system moves them to `closed`). */
async function closeRequestsOf(tx: Repositories, groupId: string, at: string): Promise<void> {
  for (const r of await tx.accessRequests.pendingForGroup(groupId)) {
    await tx.accessRequests.settle(r.id, { status: 'closed', decisionReason: 'The permission group was deleted.', decidedBy: null, decidedAt: at });
  }
}

export async function deleteGroup(tx: Repositories, audit: Audit, actorId: string, organizationId: string, groupId: string): Promise<void> {
  await requireAccessControlAdmin(tx, organizationId, actorId);
  const g = await groupOf(tx, organizationId, groupId);
  await closeRequestsOf(tx, g.id, new Date().toISOString());
  await tx.permissionGroups.delete(g.id);
  await audit({ action: 'permission_group.deleted', resourceType: 'permission_group', resourceId: g.id, resourceName: g.name, workspaceId: null, metadata: { organizationId } });
}

// ---- members

async function requireScopedGroup(tx: Repositories, organizationId: string, groupId: string): Promise<PermissionGroupRecord> {
  const g = await groupOf(tx, organizationId, groupId);
  if (g.isDefault) throw invalidInput(['path', 'groupId'], 'The default group governs every member of the organization; it takes no explicit members.');
  return g;
}

export async function addMember(tx: Repositories, audit: Audit, actorId: string, organizationId: string, groupId: string, userId: string) {
  await requireAccessControlAdmin(tx, organizationId, actorId);
  const g = await requireScopedGroup(tx, organizationId, groupId);
  if (!(await tx.organizations.member(organizationId, userId))) {
    throw invalidInput(['body', 'userId'], 'Only members of the organization can be members of its permission groups.');
  }
  if (await tx.permissionGroups.isMember(g.id, userId)) throw new DomainError('conflict', 'The user is already a member of this group.');
  await assertNoScopeConflict(tx, organizationId, g.id, await tx.permissionGroups.workspaceIds(g.id), [userId]);
  const row = { id: newId(), groupId: g.id, organizationId, userId, assignedBy: actorId, assignedAt: new Date().toISOString() };
  await onUniqueViolation(tx.permissionGroups.addMember(row), 'permission_group_members', ['group_id', 'user_id'], () => new DomainError('conflict', 'The user is already a member of this group.'));
  await audit({ action: 'permission_group.member_added', resourceType: 'permission_group', resourceId: g.id, resourceName: g.name, workspaceId: null, metadata: { organizationId, userId } });
  return { id: row.id, permissionGroupId: g.id, organizationId, userId, assignedBy: actorId, assignedAt: row.assignedAt };
}

export async function removeMember(tx: Repositories, audit: Audit, actorId: string, organizationId: string, groupId: string, userId: string): Promise<void> {
  await requireAccessControlAdmin(tx, organizationId, actorId);
  const g = await groupOf(tx, organizationId, groupId);
  if (!(await tx.permissionGroups.removeMember(g.id, userId))) throw domainNotFound('Permission group member');
  // Without explicit members the group governs everyone in its workspaces again.
  if (!g.isDefault && (await tx.permissionGroups.memberCount(g.id)) === 0) {
    await assertNoScopeConflict(tx, organizationId, g.id, await tx.permissionGroups.workspaceIds(g.id), []);
  }
  await audit({ action: 'permission_group.member_removed', resourceType: 'permission_group', resourceId: g.id, resourceName: g.name, workspaceId: null, metadata: { organizationId, userId } });
}

export async function addMembers(
  tx: Repositories,
  audit: Audit,
  actorId: string,
  organizationId: string,
  groupId: string,
  input: { userIds?: string[]; addAllOrganizationMembers?: boolean },
): Promise<{ added: number; skipped: number }> {
  await requireAccessControlAdmin(tx, organizationId, actorId);
  if (input.userIds !== undefined && input.addAllOrganizationMembers === true) {
    throw invalidInput(['body'], 'Send either userIds or addAllOrganizationMembers, not both.');
  }
  const g = await requireScopedGroup(tx, organizationId, groupId);
  const orgMembers = new Set(await tx.organizations.memberIds(organizationId));
  // Ids outside the organization are ignored, not counted.
  const candidates = input.addAllOrganizationMembers === true ? [...orgMembers] : [...new Set(input.userIds ?? [])].filter((id) => orgMembers.has(id));
  const current = new Set(await tx.permissionGroups.memberIds(g.id));
  const fresh = candidates.filter((id) => !current.has(id));
  // All or nothing: one conflict refuses the batch.
  await assertNoScopeConflict(tx, organizationId, g.id, await tx.permissionGroups.workspaceIds(g.id), fresh);
  const at = new Date().toISOString();
  for (const userId of fresh) await tx.permissionGroups.addMember({ id: newId(), groupId: g.id, organizationId, userId, assignedBy: actorId, assignedAt: at });
  if (fresh.length > 0) {
    await audit({ action: 'permission_group.members_added', resourceType: 'permission_group', resourceId: g.id, resourceName: g.name, workspaceId: null, metadata: { organizationId, added: fresh.length } });
  }
  return { added: fresh.length, skipped: candidates.length - fresh.length };
}

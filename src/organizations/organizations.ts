// The organization model's rules, over the store (no HTTP here): who belongs to which organization and in what
// role (exactly one owner; a user in at most one organization), the lookups other families build on
// (organization of a workspace, a user's membership, admin checks), and the changes that keep the rules:
// creating an organization, adding members, moving workspaces in and out (their billing follows).
import type { Repositories } from '../store/index.ts';
import type { MemberOrganization, Organization, OrganizationRole } from '../store/organizations.ts';
import { onUniqueViolation } from '../store/errors.ts';
import type { Plan } from '../store/billing-accounts.ts';
import { personalAccountId } from '../store/billing-accounts.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { newId } from '../identity/keys.ts';
import { bumpCredentialEpoch } from '../identity/credentials.ts';

export type { Organization, OrganizationRole, OrganizationMember, MemberOrganization } from '../store/organizations.ts';

/** Reads the rules need; a Store or a transaction's repositories both fit. */
type Reader = Pick<Repositories, 'organizations' | 'users' | 'workspaces'>;

export const isOrgAdminRole = (role: OrganizationRole) => role === 'owner' || role === 'admin';

/** The billing account an organization's workspaces bill to. */
export const organizationAccountId = (organizationId: string) => `ba-org-${organizationId}`;

/** The organization and the caller's role in it: 404 when it does not exist, 403 when the caller is not a member. */
export async function requireOrgMember(repos: Reader, organizationId: string, userId: string): Promise<MemberOrganization> {
  const organization = await repos.organizations.get(organizationId);
  if (!organization) throw domainNotFound('Organization');
  const member = await repos.organizations.member(organizationId, userId);
  if (!member) throw new DomainError('forbidden', 'You are not a member of this organization.');
  return { ...organization, role: member.role };
}

/** As requireOrgMember, and the caller must be the owner or an admin (403 otherwise). */
export async function requireOrgAdmin(repos: Reader, organizationId: string, userId: string): Promise<MemberOrganization> {
  const org = await requireOrgMember(repos, organizationId, userId);
  if (!isOrgAdminRole(org.role)) throw new DomainError('forbidden', 'Organization admin access required (owner or admin).');
  return org;
}

/** The organization that owns a workspace; null for a personal workspace or one that does not exist. */
export async function organizationOfWorkspace(repos: Reader, workspaceId: string): Promise<Organization | null> {
  const id = await repos.organizations.organizationOfWorkspace(workspaceId);
  return id ? ((await repos.organizations.get(id)) ?? null) : null;
}

/** The user's one organization membership, if any. */
export const membershipOf = (repos: Reader, userId: string) => repos.organizations.membershipOf(userId);

/** The caller's role in the organization owning `workspaceId`, or null (personal workspace, or not a member). */
export async function orgRoleForWorkspace(repos: Reader, workspaceId: string, userId: string): Promise<OrganizationRole | null> {
  const orgId = await repos.organizations.organizationOfWorkspace(workspaceId);
  if (!orgId) return null;
  return (await repos.organizations.member(orgId, userId))?.role ?? null;
}

const ONE_ORG = (email: string) => new DomainError('conflict', `${email} already belongs to an organization; a user can be a member of only one.`);

/**
 * Adds a user to an organization. A user already in this organization or in another one is a conflict (409):
 * a user belongs to at most one organization. Owners are made only by createOrganization.
 */
export async function addOrganizationMember(tx: Repositories, organizationId: string, userId: string, role: Exclude<OrganizationRole, 'owner'>, now: string) {
  const user = await tx.users.get(userId);
  if (!user) throw domainNotFound('User');
  const existing = await tx.organizations.membershipOf(userId);
  if (existing?.organizationId === organizationId) throw new DomainError('conflict', `${user.email} is already a member of this organization.`);
  if (existing) throw ONE_ORG(user.email);
  await onUniqueViolation(tx.organizations.addMember(organizationId, userId, role, now), 'organization_members', ['user_id'], () => ONE_ORG(user.email));
}

function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return s || 'organization';
}

/**
 * Creates an organization owned by `ownerId` (who must not belong to another one), with its own billing account
 * on `plan` (default: the plan of the owner's personal account, so creating it changes no limits).
 */
export async function createOrganization(tx: Repositories, input: { name: string; ownerId: string; slug?: string; plan?: Plan }): Promise<Organization> {
  const name = input.name.trim();
  if (!name || name.length > 200) throw new DomainError('invalid', 'An organization name must have 1 to 200 characters.');
  const owner = await tx.users.get(input.ownerId);
  if (!owner) throw domainNotFound('User');
  if (await tx.organizations.membershipOf(owner.id)) throw ONE_ORG(owner.email);
  let slug = input.slug?.trim() ? input.slug.trim() : slugify(name);
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) throw new DomainError('invalid', 'A slug has lower-case letters, digits and dashes (1 to 63).');
  if (await tx.organizations.slugTaken(slug)) {
    if (input.slug) throw new DomainError('conflict', `The slug ${slug} is taken.`);
    slug = `${slug}-${newId().slice(0, 6)}`;
  }
  const now = new Date().toISOString();
  const id = newId();
  const plan = input.plan ?? (await tx.billingAccounts.get(personalAccountId(owner.id)))?.plan ?? 'free';
  await tx.billingAccounts.insert({ id: organizationAccountId(id), name, plan, createdAt: now, updatedAt: now });
  const organization: Organization = { id, name, slug, logo: null, billingAccountId: organizationAccountId(id), createdAt: now, updatedAt: now };
  await onUniqueViolation(tx.organizations.insert(organization), 'organizations', ['slug'], () => new DomainError('conflict', `The slug ${slug} is taken.`));
  await onUniqueViolation(tx.organizations.addMember(id, owner.id, 'owner', now), 'organization_members', ['user_id'], () => ONE_ORG(owner.email));
  return organization;
}

/**
 * Moves a workspace into an organization: it bills to the organization's account from now on (its plan and usage
 * limits become the organization's). The workspace's owner must be a member of the organization.
 */
export async function attachWorkspace(tx: Repositories, organizationId: string, workspaceId: string): Promise<void> {
  const organization = await tx.organizations.get(organizationId);
  if (!organization) throw domainNotFound('Organization');
  const workspace = await tx.workspaces.get(workspaceId);
  if (!workspace) throw domainNotFound('Workspace');
  const current = await tx.organizations.organizationOfWorkspace(workspaceId);
  if (current && current !== organizationId) throw new DomainError('conflict', 'The workspace already belongs to another organization.');
  if (!(await tx.organizations.member(organizationId, workspace.ownerId))) {
    throw new DomainError('invalid', "The workspace's owner must be a member of the organization.");
  }
  await tx.organizations.setWorkspaceOrganization(workspaceId, organizationId, organization.billingAccountId, new Date().toISOString());
  // Cached principals carry the plan that sizes their rate limits.
  await bumpCredentialEpoch(tx);
}

/** Makes an organization's workspace personal again, billed to its owner's own account. */
export async function detachWorkspace(tx: Repositories, workspaceId: string): Promise<void> {
  const workspace = await tx.workspaces.get(workspaceId);
  if (!workspace) throw domainNotFound('Workspace');
  await tx.organizations.setWorkspaceOrganization(workspaceId, null, personalAccountId(workspace.ownerId), new Date().toISOString());
  await bumpCredentialEpoch(tx);
}

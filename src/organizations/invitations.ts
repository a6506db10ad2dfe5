// Invitations: e-mailed, token-based offers to join an organization (with a role) or to use workspaces (with
// per-workspace grants). They live 7 days; pending ones past that are marked expired lazily (when read or used).
// The e-mail goes out before anything is written, so a failed send leaves nothing behind (and the old link of a
// resent invitation keeps working). Accepting happens on this server's accept page (src/http/web/).
import { createHash, randomBytes } from 'node:crypto';
import type { Repositories, Store } from '../store/index.ts';
import type { Invitation } from '../store/invitations.ts';
import type { Workspace, WorkspaceRole } from '../store/workspaces.ts';
import type { User } from '../store/users.ts';
import type { Mailer } from '../mail/mailer.ts';
import { UniqueViolation } from '../store/errors.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { newId } from '../identity/keys.ts';
import { roleAtLeast } from '../identity/principal.ts';
import { isOrgAdminRole } from './organizations.ts';

export type { Invitation } from '../store/invitations.ts';

export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;
/** The accept page, served by src/http/web/invitation-routes.ts. */
export const ACCEPT_PATH = '/invitations/accept';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
export const hashInvitationToken = (token: string) => createHash('sha256').update(token).digest('hex');
const newToken = () => randomBytes(32).toString('base64url');
const expiryFrom = (nowMs: number) => new Date(nowMs + INVITATION_TTL_MS).toISOString();

/** How an invitation reads: a pending one past its expiry is expired even before the sweep marks it. */
export function effectiveStatus(i: Invitation, now = new Date().toISOString()): Invitation['status'] {
  return i.status === 'pending' && i.expiresAt <= now ? 'expired' : i.status;
}

/** Marks the organization's due invitations expired (reads call this first, so lists and filters agree). */
export const expireDueInvitations = (store: Store, organizationId?: string) =>
  store.transaction((tx) => tx.invitations.expireDue(new Date().toISOString(), organizationId));

export interface InvitationMail {
  baseUrl: string;
  mailer: Mailer;
}

async function sendInvitationMail(mail: InvitationMail, o: { email: string; token: string; inviter: string; what: string; expiresAt: string }) {
  const link = `${mail.baseUrl}${ACCEPT_PATH}?token=${encodeURIComponent(o.token)}`;
  try {
    await mail.mailer.send({
      to: o.email,
      subject: `${o.inviter} invited you to ${o.what}`,
      text:
        `${o.inviter} invited you to ${o.what}.\n\n` +
        `Open this link, sign in as ${o.email}, and accept:\n${link}\n\n` +
        `The invitation expires ${o.expiresAt.slice(0, 16).replace('T', ' ')} UTC. If you did not expect it, ignore this e-mail.`,
    });
  } catch (err) {
    throw new DomainError('unavailable', `The invitation e-mail to ${o.email} could not be sent; nothing was changed. Try again later.`, {
      reason: err instanceof Error ? err.message : String(err),
    });
  }
}

const inviterName = async (repos: Pick<Repositories, 'users'>, userId: string) => {
  const u = await repos.users.get(userId);
  return u ? `${u.name} (${u.email})` : 'Someone';
};

const ONE_PENDING = (email: string) => new DomainError('conflict', `${email} already has a pending invitation to this organization.`);

/** Organization invitation: joins the organization with `role`, no workspace permissions. Owner/admin checked by the caller. */
export async function inviteToOrganization(
  store: Store,
  mail: InvitationMail,
  input: { organizationId: string; email: string; role: 'member' | 'admin'; invitedBy: string },
): Promise<Invitation> {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email)) throw new DomainError('invalid', `"${input.email}" is not an e-mail address.`);
  const organization = await store.organizations.get(input.organizationId);
  if (!organization) throw domainNotFound('Organization');
  const check = async (repos: Repositories | Store) => {
    const user = await repos.users.getByEmail(email);
    if (user) {
      const membership = await repos.organizations.membershipOf(user.id);
      if (membership?.organizationId === organization.id) throw new DomainError('conflict', `${email} is already a member of this organization.`);
      if (membership) throw new DomainError('conflict', `${email} belongs to another organization; a user can be a member of only one.`);
    }
    const pending = await repos.invitations.pendingFor(organization.id, email);
    if (pending && pending.expiresAt > new Date().toISOString()) throw ONE_PENDING(email);
  };
  await check(store);
  const token = newToken();
  const nowMs = Date.now();
  const invitation: Invitation = {
    id: newId(),
    organizationId: organization.id,
    email,
    role: input.role,
    kind: 'organization',
    membershipIntent: 'internal',
    status: 'pending',
    tokenHash: hashInvitationToken(token),
    invitedBy: input.invitedBy,
    createdAt: new Date(nowMs).toISOString(),
    expiresAt: expiryFrom(nowMs),
    updatedAt: new Date(nowMs).toISOString(),
  };
  await sendInvitationMail(mail, { email, token, inviter: await inviterName(store, input.invitedBy), what: `join the organization ${organization.name}`, expiresAt: invitation.expiresAt });
  await store.transaction(async (tx) => {
    await tx.invitations.expireDue(invitation.createdAt, organization.id);
    await check(tx);
    try {
      await tx.invitations.insert(invitation);
    } catch (err) {
      if (err instanceof UniqueViolation) throw ONE_PENDING(email);
      throw err;
    }
  });
  return invitation;
}

/** The caller may manage an invitation: an admin of its organization, or of a workspace it grants. */
export async function requireInvitationManager(store: Store, invitation: Invitation, userId: string): Promise<void> {
  if (invitation.organizationId) {
    const role = (await store.organizations.member(invitation.organizationId, userId))?.role;
    if (role && isOrgAdminRole(role)) return;
  }
  for (const g of await store.invitations.grants(invitation.id)) {
    if ((await store.members.role(g.workspaceId, userId)) === 'admin') return;
  }
  throw new DomainError('forbidden', 'Organization admin access (or admin of a workspace the invitation grants) is required.');
}

/** New link, expiry restarted at 7 days; only pending invitations. The e-mail goes first: if it fails nothing changes. */
export async function resendInvitation(store: Store, mail: InvitationMail, invitation: Invitation, actorId: string): Promise<Invitation> {
  const now = new Date().toISOString();
  if (effectiveStatus(invitation, now) !== 'pending') throw new DomainError('invalid', `Only pending invitations can be resent; this one is ${effectiveStatus(invitation, now)}.`);
  const token = newToken();
  const expiresAt = expiryFrom(Date.now());
  const what = await describeOffer(store, invitation);
  await sendInvitationMail(mail, { email: invitation.email, token, inviter: await inviterName(store, actorId), what, expiresAt });
  const rotated = await store.transaction((tx) => tx.invitations.rotate(invitation.id, hashInvitationToken(token), expiresAt, new Date().toISOString()));
  if (!rotated) throw new DomainError('invalid', 'Only pending invitations can be resent.');
  return (await store.invitations.get(invitation.id))!;
}

export async function cancelInvitation(tx: Repositories, invitation: Invitation): Promise<void> {
  const now = new Date().toISOString();
  if (effectiveStatus(invitation, now) !== 'pending' || !(await tx.invitations.settle(invitation.id, 'cancelled', now))) {
    throw new DomainError('invalid', `Only pending invitations can be cancelled; this one is ${effectiveStatus(invitation, now)}.`);
  }
}

/** What accepting gives, in words (the e-mail and the accept page). */
export async function describeOffer(repos: Pick<Repositories, 'organizations' | 'invitations'>, invitation: Invitation): Promise<string> {
  const org = invitation.organizationId ? await repos.organizations.get(invitation.organizationId) : undefined;
  const grants = await repos.invitations.grants(invitation.id);
  if (grants.length === 0) return `join the organization ${org?.name ?? ''}`.trim();
  const names = grants.map((g) => g.name).join(', ');
  const ws = `${grants.length === 1 ? 'the workspace' : 'the workspaces'} ${names}`;
  return org && invitation.membershipIntent === 'internal' ? `${ws} and the organization ${org.name}` : ws;
}

// ---- workspace invitations (one address at a time; failures are answers, not errors)

export interface WorkspaceInviteResult {
  success: boolean;
  successful: string[];
  added: string[];
  failed: { email: string; error: string }[];
  invitations: {
    id: string;
    email: string;
    workspaceIds: string[];
    permission: WorkspaceRole;
    membershipIntent: 'internal' | 'external';
    instantAdd?: boolean;
    outcome?: 'added' | 'updated' | 'unchanged';
  }[];
}

type Plan =
  | { kind: 'failed'; error: string }
  | { kind: 'instant'; user: User }
  | { kind: 'new'; intent: 'internal' | 'external' }
  | { kind: 'update'; invitation: Invitation };

/**
 * Invites each address to `workspace` with `permission`. The caller is a workspace admin (the spec's x-min-role);
 * `membership: admin` needs an organization owner/admin and `external` an organization-owned workspace, both
 * checked for the whole request. Each address then succeeds or fails on its own.
 */
export async function inviteToWorkspace(
  store: Store,
  mail: InvitationMail,
  input: { workspace: Workspace; emails: string[]; permission: WorkspaceRole; membership: 'member' | 'admin' | 'external'; invitedBy: string },
): Promise<WorkspaceInviteResult> {
  const { workspace, permission, membership } = input;
  const organizationId = (await store.organizations.organizationOfWorkspace(workspace.id)) ?? null;
  const organization = organizationId ? await store.organizations.get(organizationId) : undefined;
  if (membership === 'external' && !organization) {
    throw new DomainError('invalid', 'External collaborators can be invited only to a workspace owned by an organization.', [
      { code: 'custom', keys: [], path: ['body', 'membership'], message: 'external needs an organization-owned workspace' },
    ]);
  }
  if (membership === 'admin') {
    const role = organization ? (await store.organizations.member(organization.id, input.invitedBy))?.role : undefined;
    if (!role || !isOrgAdminRole(role)) throw new DomainError('forbidden', 'Only an organization owner or admin can invite organization admins.');
  }
  const orgRole = membership === 'admin' ? 'admin' : 'member';
  const inviter = await inviterName(store, input.invitedBy);
  const result: WorkspaceInviteResult = { success: true, successful: [], added: [], failed: [], invitations: [] };
  const seen = new Set<string>();

  const plan = async (repos: Repositories | Store, email: string): Promise<Plan> => {
    const now = new Date().toISOString();
    const user = await repos.users.getByEmail(email);
    if (user && (await repos.members.role(workspace.id, user.id))) return { kind: 'failed', error: `${email} already has access to this workspace.` };
    if (await repos.invitations.pendingForWorkspace(workspace.id, email, now)) return { kind: 'failed', error: `${email} has already been invited to this workspace.` };
    const membershipOfUser = user ? await repos.organizations.membershipOf(user.id) : undefined;
    if (user && organization && membershipOfUser?.organizationId === organization.id) return { kind: 'instant', user };
    if (organization) {
      const pending = await repos.invitations.pendingFor(organization.id, email);
      if (pending && pending.expiresAt > now) return { kind: 'update', invitation: pending };
    }
    // Someone in another organization can only be an external collaborator here (a user has one organization).
    const intent = membership === 'external' || (organization && membershipOfUser) ? 'external' : 'internal';
    return { kind: 'new', intent };
  };

  for (const raw of input.emails) {
    const email = normalizeEmail(raw);
    if (seen.has(email)) continue;
    seen.add(email);
    if (!EMAIL.test(email)) {
      result.failed.push({ email: raw.trim(), error: 'Not a valid e-mail address.' });
      continue;
    }
    try {
      const first = await plan(store, email);
      if (first.kind === 'failed') {
        result.failed.push({ email, error: first.error });
        continue;
      }
      if (first.kind === 'instant') {
        // Already in the workspace's organization: access is granted now, no invitation.
        await store.transaction(async (tx) => {
          const again = await plan(tx, email);
          if (again.kind === 'failed') throw new DomainError('conflict', again.error);
          await tx.members.upsert(workspace.id, first.user.id, permission, new Date().toISOString());
        });
        result.added.push(email);
        result.successful.push(email);
        result.invitations.push({ id: first.user.id, email, workspaceIds: [workspace.id], permission, membershipIntent: 'internal', instantAdd: true, outcome: 'added' });
        continue;
      }
      const token = newToken();
      const nowMs = Date.now();
      const expiresAt = expiryFrom(nowMs);
      const what = organization && (first.kind === 'update' ? first.invitation.membershipIntent : first.intent) === 'internal'
        ? `the workspace ${workspace.name} and the organization ${organization.name}`
        : `the workspace ${workspace.name}`;
      await sendInvitationMail(mail, { email, token, inviter, what, expiresAt });
      if (first.kind === 'update') {
        // One pending invitation per e-mail and organization: this workspace becomes one more grant on it, and the
        // new link (just sent) replaces the old one.
        await store.transaction(async (tx) => {
          const now = new Date().toISOString();
          if (!(await tx.invitations.rotate(first.invitation.id, hashInvitationToken(token), expiresAt, now))) throw new DomainError('conflict', `${email}'s invitation changed meanwhile; try again.`);
          await tx.invitations.putGrant(first.invitation.id, workspace.id, permission);
          if (first.invitation.kind === 'organization') await tx.invitations.setKind(first.invitation.id, 'workspace', now);
        });
        const grants = await store.invitations.grants(first.invitation.id);
        result.successful.push(email);
        result.invitations.push({ id: first.invitation.id, email, workspaceIds: grants.map((g) => g.workspaceId), permission, membershipIntent: first.invitation.membershipIntent, outcome: 'updated' });
        continue;
      }
      const invitation: Invitation = {
        id: newId(),
        organizationId,
        email,
        role: orgRole,
        kind: 'workspace',
        membershipIntent: first.intent,
        status: 'pending',
        tokenHash: hashInvitationToken(token),
        invitedBy: input.invitedBy,
        createdAt: new Date(nowMs).toISOString(),
        expiresAt,
        updatedAt: new Date(nowMs).toISOString(),
      };
      await store.transaction(async (tx) => {
        if (organizationId) await tx.invitations.expireDue(invitation.createdAt, organizationId);
        const again = await plan(tx, email);
        if (again.kind !== 'new') throw new DomainError('conflict', again.kind === 'failed' ? again.error : `${email}'s invitations changed meanwhile; try again.`);
        try {
          await tx.invitations.insert(invitation);
        } catch (err) {
          if (err instanceof UniqueViolation) throw ONE_PENDING(email);
          throw err;
        }
        await tx.invitations.putGrant(invitation.id, workspace.id, permission);
      });
      result.successful.push(email);
      result.invitations.push({ id: invitation.id, email, workspaceIds: [workspace.id], permission, membershipIntent: invitation.membershipIntent, outcome: 'added' });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      result.failed.push({ email, error: err.message });
    }
  }
  result.success = result.failed.length === 0;
  return result;
}

// ---- accepting (the accept page)

export interface InvitationView {
  invitation: Invitation;
  organizationName: string | null;
  grants: { workspaceId: string; name: string; permission: WorkspaceRole }[];
  status: Invitation['status'];
}

/** The invitation a link's token names, as the accept page shows it; undefined for an unknown token. */
export async function invitationByToken(store: Store, token: string): Promise<InvitationView | undefined> {
  const invitation = token ? await store.invitations.getByTokenHash(hashInvitationToken(token)) : undefined;
  if (!invitation) return undefined;
  const org = invitation.organizationId ? await store.organizations.get(invitation.organizationId) : undefined;
  return { invitation, organizationName: org?.name ?? null, grants: await store.invitations.grants(invitation.id), status: effectiveStatus(invitation) };
}

const isInvitee = (user: User, invitation: Invitation) => normalizeEmail(user.email) === invitation.email;

/**
 * Accepts for the signed-in `user`, who must be the invitee. Joins the organization (for an internal invitation,
 * unless the user is in another one by now: then only the workspace grants apply, as for an external one) and
 * grants each workspace's permission, never lowering access the user already has.
 */
export async function acceptInvitation(store: Store, token: string, user: User): Promise<Invitation> {
  return store.transaction(async (tx) => {
    const invitation = await tx.invitations.getByTokenHash(hashInvitationToken(token));
    if (!invitation) throw domainNotFound('Invitation');
    if (!isInvitee(user, invitation)) throw new DomainError('forbidden', `This invitation is for ${invitation.email}; you are signed in as ${user.email}.`);
    const now = new Date().toISOString();
    if (invitation.status === 'pending' && invitation.expiresAt <= now) {
      await tx.invitations.settle(invitation.id, 'expired', now);
      throw new DomainError('invalid', 'This invitation has expired; ask for a new one.');
    }
    if (invitation.status !== 'pending') throw new DomainError('invalid', `This invitation is ${invitation.status}.`);
    if (invitation.organizationId && invitation.membershipIntent === 'internal') {
      const membership = await tx.organizations.membershipOf(user.id);
      if (!membership) await tx.organizations.addMember(invitation.organizationId, user.id, invitation.role, now);
      else if (membership.organizationId !== invitation.organizationId && invitation.kind === 'organization') {
        throw new DomainError('conflict', 'You already belong to another organization; a user can be a member of only one.');
      }
    }
    for (const g of await tx.invitations.grants(invitation.id)) {
      const current = await tx.members.role(g.workspaceId, user.id);
      if (!current || !roleAtLeast(current, g.permission)) await tx.members.upsert(g.workspaceId, user.id, g.permission, now);
    }
    await tx.invitations.settle(invitation.id, 'accepted', now);
    return (await tx.invitations.get(invitation.id))!;
  });
}

export async function declineInvitation(store: Store, token: string, user: User): Promise<void> {
  await store.transaction(async (tx) => {
    const invitation = await tx.invitations.getByTokenHash(hashInvitationToken(token));
    if (!invitation) throw domainNotFound('Invitation');
    if (!isInvitee(user, invitation)) throw new DomainError('forbidden', `This invitation is for ${invitation.email}; you are signed in as ${user.email}.`);
    const now = new Date().toISOString();
    if (effectiveStatus(invitation, now) !== 'pending') throw new DomainError('invalid', `This invitation is ${effectiveStatus(invitation, now)}.`);
    await tx.invitations.settle(invitation.id, 'rejected', now);
  });
}

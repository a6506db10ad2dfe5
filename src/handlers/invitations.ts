// Handlers for the Invitations operations. Creating, resending and accepting live in
// src/organizations/invitations.ts; these read the request, check the caller and shape the answer.
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { requireOrgAdmin } from '../organizations/organizations.ts';
import {
  cancelInvitation,
  effectiveStatus,
  expireDueInvitations,
  inviteToOrganization,
  inviteToWorkspace,
  requireInvitationManager,
  resendInvitation,
  type Invitation,
} from '../organizations/invitations.ts';

const invitationView = (i: Invitation) => ({
  id: i.id,
  organizationId: i.organizationId ?? '',
  email: i.email,
  role: i.role,
  kind: i.kind,
  membershipIntent: i.membershipIntent,
  status: effectiveStatus(i),
  createdAt: i.createdAt,
  expiresAt: i.expiresAt,
});

const mailOf = (ctx: RequestContext) => ({ baseUrl: ctx.services.config.baseUrl, mailer: ctx.services.mailer });

/** The organization's invitation (404 when it is another organization's). */
async function invitationOf(ctx: RequestContext, organizationId: string, invitationId: string): Promise<Invitation> {
  const { store } = ctx.services;
  if (!(await store.organizations.get(organizationId))) throw notFound('Organization');
  const invitation = await store.invitations.get(invitationId);
  if (!invitation || invitation.organizationId !== organizationId) throw notFound('Invitation');
  return invitation;
}

export const listOrganizationInvitations: Handler<'listOrganizationInvitations'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  await expireDueInvitations(store, params.organizationId);
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { organizationId: params.organizationId, search: query.search, status: query.status, sortBy, sortOrder };
  const rows = await store.invitations.list(params.organizationId, {
    search: query.search,
    status: query.status,
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (i) => [sortBy === 'email' ? i.email : i.createdAt, i.id], invitationView) };
};

export const createOrganizationInvitation: Handler<'createOrganizationInvitation'> = async ({ params, body, ctx }) => {
  const { store } = ctx.services;
  await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  const invitation = await inviteToOrganization(store, mailOf(ctx), {
    organizationId: params.organizationId,
    email: body.email,
    role: body.role ?? 'member',
    invitedBy: ctx.principal.userId,
  });
  await ctx.mutate(async (_tx, audit) =>
    audit({
      action: 'organization.invitation_created',
      resourceType: 'invitation',
      resourceId: invitation.id,
      workspaceId: null,
      metadata: { organizationId: params.organizationId, email: invitation.email, role: invitation.role },
    }),
  );
  return { status: 200, body: { data: invitationView(invitation) } };
};

export const getOrganizationInvitation: Handler<'getOrganizationInvitation'> = async ({ params, ctx }) => {
  await requireOrgAdmin(ctx.services.store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: { data: invitationView(await invitationOf(ctx, params.organizationId, params.invitationId)) } };
};

export const revokeOrganizationInvitation: Handler<'revokeOrganizationInvitation'> = async ({ params, ctx }) => {
  const invitation = await invitationOf(ctx, params.organizationId, params.invitationId);
  await requireInvitationManager(ctx.services.store, invitation, ctx.principal.userId);
  await ctx.mutate(async (tx, audit) => {
    await cancelInvitation(tx, invitation);
    audit({ action: 'organization.invitation_cancelled', resourceType: 'invitation', resourceId: invitation.id, workspaceId: null, metadata: { organizationId: params.organizationId, email: invitation.email } });
  });
  return { status: 200, body: { data: { id: invitation.id, status: 'cancelled' as const } } };
};

export const resendOrganizationInvitation: Handler<'resendOrganizationInvitation'> = async ({ params, ctx }) => {
  const { store } = ctx.services;
  const invitation = await invitationOf(ctx, params.organizationId, params.invitationId);
  await requireInvitationManager(store, invitation, ctx.principal.userId);
  const resent = await resendInvitation(store, mailOf(ctx), invitation, ctx.principal.userId);
  await ctx.mutate(async (_tx, audit) =>
    audit({ action: 'organization.invitation_resent', resourceType: 'invitation', resourceId: invitation.id, workspaceId: null, metadata: { organizationId: params.organizationId, email: invitation.email } }),
  );
  return { status: 200, body: { data: invitationView(resent) } };
};

export const listOrganizationInvitationWorkspaces: Handler<'listOrganizationInvitationWorkspaces'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  const invitation = await invitationOf(ctx, params.organizationId, params.invitationId);
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { invitationId: invitation.id, search: query.search, sortBy, sortOrder };
  const rows = await store.invitations.listGrants(invitation.id, { search: query.search, sortBy, sortOrder, after: readCursor(ctx, query.cursor, binding), limit: limit + 1 });
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, (g) => [sortBy === 'name' ? g.name : g.workspaceId, g.workspaceId], (g) => ({
      id: g.workspaceId,
      name: g.name,
      permission: g.permission,
      archivedAt: null,
    })),
  };
};

export const createWorkspaceInvitations: Handler<'createWorkspaceInvitations'> = async ({ params, body, ctx }) => {
  const { store } = ctx.services;
  const result = await inviteToWorkspace(store, mailOf(ctx), {
    workspace: ctx.workspace!.workspace,
    emails: body.emails,
    permission: body.permission ?? 'read',
    membership: body.membership ?? 'member',
    invitedBy: ctx.principal.userId,
  });
  if (result.successful.length > 0) {
    await ctx.mutate(async (_tx, audit) =>
      audit({
        action: 'workspace.invitations_created',
        resourceType: 'invitation',
        resourceId: null,
        workspaceId: params.workspaceId,
        metadata: { invited: result.successful.filter((e) => !result.added.includes(e)), added: result.added, permission: body.permission ?? 'read' },
      }),
    );
  }
  return { status: 200, body: { data: result } };
};

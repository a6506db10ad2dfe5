// Handlers for the Organizations operations: the organization, its members and roles, credit caps, owned
// workspaces and usage reports. Rules live in src/organizations/; workspace keys are refused by the spec.
import type { Handler } from '../../generated/handlers.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import type { MemberOrganization, OrganizationMember } from '../store/organizations.ts';
import { requireOrgAdmin, requireOrgMember } from '../organizations/organizations.ts';
import { memberUsageLimit, resolveWindow, usageBreakdown, usageSummary } from '../organizations/usage.ts';
import { KNOWN_CATEGORIES, categoriesOf, sourceOf } from '../billing/usage-sources.ts';
import { bumpCredentialEpoch } from '../identity/credentials.ts';

const round = (n: number) => Math.round(n * 1e6) / 1e6;

const organizationView = (o: MemberOrganization) => ({ id: o.id, name: o.name, slug: o.slug, logo: o.logo, role: o.role, createdAt: o.createdAt });
const memberView = (m: OrganizationMember) => ({ userId: m.userId, name: m.name, email: m.email, role: m.role, joinedAt: m.joinedAt });

export const listOrganizations: Handler<'listOrganizations'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { search: query.search, sortBy, sortOrder };
  const rows = await ctx.services.store.organizations.listForMember(ctx.principal.userId, {
    search: query.search,
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (o) => [sortBy === 'name' ? o.name : o.createdAt, o.id], organizationView) };
};

export const getOrganization: Handler<'getOrganization'> = async ({ params, ctx }) => ({
  status: 200,
  body: { data: organizationView(await requireOrgMember(ctx.services.store, params.organizationId, ctx.principal.userId)) },
});

export const listOrganizationWorkspaces: Handler<'listOrganizationWorkspaces'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { organizationId: params.organizationId, search: query.search, sortBy, sortOrder };
  const rows = await store.organizations.listWorkspaces(params.organizationId, { search: query.search, sortBy, sortOrder, after: readCursor(ctx, query.cursor, binding), limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (w) => [sortBy === 'name' ? w.name : w.id, w.id], (w) => ({ id: w.id, name: w.name })) };
};

const MEMBER_SORT_VALUE = { name: (m: OrganizationMember) => m.name, email: (m: OrganizationMember) => m.email, joinedAt: (m: OrganizationMember) => m.joinedAt };

export const listOrganizationMembers: Handler<'listOrganizationMembers'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  await requireOrgMember(store, params.organizationId, ctx.principal.userId);
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { organizationId: params.organizationId, search: query.search, sortBy, sortOrder };
  const rows = await store.organizations.listMembers(params.organizationId, { search: query.search, sortBy, sortOrder, after: readCursor(ctx, query.cursor, binding), limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (m) => [MEMBER_SORT_VALUE[sortBy](m), m.userId], memberView) };
};

export const updateOrganizationMember: Handler<'updateOrganizationMember'> = async ({ params, body, ctx }) => {
  const { store } = ctx.services;
  await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  const updated = await ctx.mutate(async (tx, audit) => {
    const member = await tx.organizations.member(params.organizationId, params.userId);
    if (!member) throw notFound('Member');
    if (member.role === 'owner') throw badRequest("The owner's role cannot be changed.");
    if (member.role !== body.role) {
      await tx.organizations.setRole(params.organizationId, params.userId, body.role);
      audit({
        action: 'organization.member_role_changed',
        resourceType: 'organization_member',
        resourceId: params.userId,
        workspaceId: null,
        metadata: { organizationId: params.organizationId, role: body.role, previousRole: member.role },
      });
    }
    return (await tx.organizations.member(params.organizationId, params.userId))!;
  });
  return { status: 200, body: { data: memberView(updated) } };
};

export const removeOrganizationMember: Handler<'removeOrganizationMember'> = async ({ params, ctx }) => {
  const { store } = ctx.services;
  const self = params.userId === ctx.principal.userId;
  // A member may leave; removing someone else needs the owner or an admin.
  if (self) await requireOrgMember(store, params.organizationId, ctx.principal.userId);
  else await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  await ctx.mutate(async (tx, audit) => {
    const member = await tx.organizations.member(params.organizationId, params.userId);
    const workspaceIds = await tx.organizations.workspaceIds(params.organizationId);
    if (!member) {
      // Not a member: an external collaborator loses their access to the organization's workspaces.
      if (!(await tx.organizations.isExternalCollaborator(params.organizationId, params.userId))) throw notFound('Member');
    } else {
      if (member.role === 'owner') throw badRequest('The owner cannot be removed from the organization.');
      for (const id of workspaceIds) {
        const ws = await tx.workspaces.get(id);
        if (ws?.ownerId === params.userId) {
          throw badRequest(`${member.email} owns the organization's workspace ${ws.name}, which bills through them; move its ownership first.`);
        }
      }
      await tx.organizations.removeMember(params.organizationId, params.userId);
    }
    for (const id of workspaceIds) await tx.members.remove(id, params.userId);
    await tx.organizations.setCreditLimit(params.organizationId, params.userId, null, new Date().toISOString());
    audit({
      action: 'organization.member_removed',
      resourceType: 'organization_member',
      resourceId: params.userId,
      workspaceId: null,
      metadata: { organizationId: params.organizationId, left: self, external: !member },
    });
    // Cached credentials of the removed person are re-read, so their access ends now.
    await bumpCredentialEpoch(tx);
  });
  return { status: 200, body: { data: { userId: params.userId, deleted: true as const } } };
};

export const getOrganizationMemberUsageLimit: Handler<'getOrganizationMemberUsageLimit'> = async ({ params, ctx }) => {
  const { store } = ctx.services;
  const org = await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: { data: await memberUsageLimit(store, org, params.userId) } };
};

export const updateOrganizationMemberUsageLimit: Handler<'updateOrganizationMemberUsageLimit'> = async ({ params, body, ctx }) => {
  const { store } = ctx.services;
  const org = await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  await memberUsageLimit(store, org, params.userId); // 404 for someone outside the organization
  await ctx.mutate(async (tx, audit) => {
    await tx.organizations.setCreditLimit(org.id, params.userId, body.creditLimit, new Date().toISOString());
    audit({
      action: 'organization.member_credit_limit_changed',
      resourceType: 'organization_member',
      resourceId: params.userId,
      workspaceId: null,
      metadata: { organizationId: org.id, creditLimit: body.creditLimit },
    });
  });
  return { status: 200, body: { data: { creditLimit: body.creditLimit } } };
};

export const getOrganizationUsageSummary: Handler<'getOrganizationUsageSummary'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  const org = await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: { data: await usageSummary(store, org, query) } };
};

export const getOrganizationUsageBreakdown: Handler<'getOrganizationUsageBreakdown'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  const org = await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: { data: await usageBreakdown(store, org, query) } };
};

const CATEGORY_LABEL: Record<string, string> = { workflow_run: 'Workflow run', workflow: 'Workflow run' };

export const listOrganizationUsageEvents: Handler<'listOrganizationUsageEvents'> = async ({ params, query, ctx }) => {
  const { store } = ctx.services;
  const org = await requireOrgAdmin(store, params.organizationId, ctx.principal.userId);
  const w = resolveWindow(query);
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { organizationId: org.id, preset: query.preset, startDate: query.startDate, endDate: query.endDate, timezone: query.timezone, source: query.source, sortOrder };
  const rows = await store.billingLogs.list({
    userId: null,
    workspaceId: null,
    billingAccountId: org.billingAccountId,
    categories: query.source ? categoriesOf(query.source) : KNOWN_CATEGORIES,
    from: w.start.toISOString(),
    // The window's end is exclusive; the ledger's `to` is inclusive.
    to: new Date(w.end.getTime() - 1).toISOString(),
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
    order: sortOrder,
  });
  const page = toPage(ctx, rows, limit, binding, (r) => [r.recordedAt, r.id], (r) => {
    const label = CATEGORY_LABEL[r.category] ?? r.category.replace(/[_-]+/g, ' ').replace(/^./, (c) => c.toUpperCase());
    return {
      id: r.id,
      createdAt: r.recordedAt,
      source: sourceOf(r.category) ?? ('workflow' as const),
      description: r.workflowName ? `${label}: ${r.workflowName}` : label,
      workflowName: r.workflowName,
      credits: round(r.cost),
      hasCost: r.cost > 0,
    };
  });
  return { status: 200, body: page };
};

// Handlers for the Access Requests operations: the workspace and organization routes share one set of rules
// (src/access-control/requests.ts); a request filed through a workspace route names that workspace.
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { DomainError } from '../domain/errors.ts';
import { requireOrgMember } from '../organizations/organizations.ts';
import * as requests from '../access-control/requests.ts';
import type { AccessRequestRecord, AccessRequestStatus } from '../store/access-requests.ts';
import { pageInMemory } from './list-support.ts';

type DiscoveryQuery = { search?: string; targetKind?: requests.AccessTargetKind; state?: 'allowed' | 'requestable' | 'unavailable'; sortBy?: 'label'; sortOrder?: 'asc' | 'desc'; limit?: number; cursor?: string };

function discoveryPage(ctx: RequestContext, scopeBinding: Record<string, unknown>, items: requests.DiscoveryItem[], query: DiscoveryQuery) {
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { ...scopeBinding, search: query.search, targetKind: query.targetKind, state: query.state, sortBy: 'label', sortOrder };
  // The label with the target's kind and id: a stable, unique key.
  const key = (i: requests.DiscoveryItem): [string, string] => [i.label, JSON.stringify(i.target)];
  const rows = pageInMemory(items, key, sortOrder, readCursor(ctx, query.cursor, binding), limit);
  return toPage(ctx, rows, limit, binding, key, (i) => i);
}

/** The organization a workspace route asks in; a personal workspace has none (409). */
async function scopeOfWorkspace(ctx: RequestContext, workspaceId: string): Promise<requests.RequestScope> {
  const scope = await requests.workspaceScope(ctx.services.store, workspaceId);
  if (!scope) throw new DomainError('conflict', 'This workspace belongs to no organization, so there is no one to ask for access.');
  return scope;
}

type ListQuery = { status?: AccessRequestStatus; sortBy?: 'createdAt' | 'targetLabel'; sortOrder?: 'asc' | 'desc'; limit?: number; cursor?: string; search?: string };

async function listRequests(ctx: RequestContext, organizationId: string, filter: { requesterId?: string; workspaceId?: string }, query: ListQuery) {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { organizationId, ...filter, status: query.status, search: query.search, sortBy, sortOrder };
  const rows = await ctx.services.store.accessRequests.list({
    organizationId,
    ...filter,
    status: query.status,
    search: query.search,
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  const key = (r: AccessRequestRecord): [string, string] => [sortBy === 'createdAt' ? r.createdAt : r.targetLabel, r.id];
  return toPage(ctx, rows, limit, binding, key, requests.requestView);
}

// ---- workspace routes

export const discoverWorkspaceAccessRequests: Handler<'discoverWorkspaceAccessRequests'> = async ({ params, query, ctx }) => {
  const scope = await requests.workspaceScope(ctx.services.store, params.workspaceId);
  const items = scope ? await requests.discover(ctx.services.store, scope, ctx.principal.userId, query) : [];
  return { status: 200, body: discoveryPage(ctx, { workspaceId: params.workspaceId }, items, query) };
};

export const listMyWorkspaceAccessRequests: Handler<'listMyWorkspaceAccessRequests'> = async ({ params, query, ctx }) => {
  const scope = await requests.workspaceScope(ctx.services.store, params.workspaceId);
  if (!scope) return { status: 200, body: { data: [], nextCursor: null } };
  return { status: 200, body: await listRequests(ctx, scope.organization.id, { requesterId: ctx.principal.userId, workspaceId: params.workspaceId }, query) };
};

export const createWorkspaceAccessRequest: Handler<'createWorkspaceAccessRequest'> = async ({ params, body, ctx }) => {
  const scope = await scopeOfWorkspace(ctx, params.workspaceId);
  const data = await ctx.mutate((tx, audit) => requests.fileRequest(tx, audit, ctx.principal.userId, scope, body.target, body.reason ?? ''));
  return { status: 200, body: { data } };
};

export const cancelWorkspaceAccessRequest: Handler<'cancelWorkspaceAccessRequest'> = async ({ params, ctx }) => {
  const scope = await scopeOfWorkspace(ctx, params.workspaceId);
  const data = await ctx.mutate((tx, audit) => requests.cancelRequest(tx, audit, ctx.principal.userId, scope.organization.id, params.requestId, params.workspaceId));
  return { status: 200, body: { data } };
};

// ---- organization routes

export const discoverOrganizationAccessRequests: Handler<'discoverOrganizationAccessRequests'> = async ({ params, query, ctx }) => {
  const scope = await requests.organizationScope(ctx.services.store, params.organizationId, ctx.principal.userId);
  const items = await requests.discover(ctx.services.store, scope, ctx.principal.userId, query);
  return { status: 200, body: discoveryPage(ctx, { organizationId: params.organizationId }, items, query) };
};

export const listMyOrganizationAccessRequests: Handler<'listMyOrganizationAccessRequests'> = async ({ params, query, ctx }) => {
  await requireOrgMember(ctx.services.store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: await listRequests(ctx, params.organizationId, { requesterId: ctx.principal.userId }, query) };
};

export const createOrganizationAccessRequest: Handler<'createOrganizationAccessRequest'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate(async (tx, audit) => {
    const scope = await requests.organizationScope(tx, params.organizationId, ctx.principal.userId);
    return requests.fileRequest(tx, audit, ctx.principal.userId, scope, body.target, body.reason ?? '');
  });
  return { status: 200, body: { data } };
};

export const cancelOrganizationAccessRequest: Handler<'cancelOrganizationAccessRequest'> = async ({ params, ctx }) => {
  const data = await ctx.mutate(async (tx, audit) => {
    await requireOrgMember(tx, params.organizationId, ctx.principal.userId);
    return requests.cancelRequest(tx, audit, ctx.principal.userId, params.organizationId, params.requestId);
  });
  return { status: 200, body: { data } };
};

export const listOrganizationAccessRequests: Handler<'listOrganizationAccessRequests'> = async ({ params, query, ctx }) => {
  await requests.requireRequestsAdmin(ctx.services.store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: await listRequests(ctx, params.organizationId, {}, query) };
};

export const previewOrganizationAccessRequest: Handler<'previewOrganizationAccessRequest'> = async ({ params, ctx }) => {
  const data = await requests.previewById(ctx.services.store, ctx.principal.userId, params.organizationId, params.requestId);
  return { status: 200, body: { data } };
};

export const resolveOrganizationAccessRequest: Handler<'resolveOrganizationAccessRequest'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate((tx, audit) => requests.resolveRequest(tx, audit, ctx.principal.userId, params.organizationId, params.requestId, body));
  return { status: 200, body: { data } };
};

export const getOrganizationAccessRequestSettings: Handler<'getOrganizationAccessRequestSettings'> = async ({ params, ctx }) => {
  const store = ctx.services.store;
  await requests.requireRequestsAdmin(store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: { data: { allowRequests: await store.accessRequests.allowRequests(params.organizationId) } } };
};

export const updateOrganizationAccessRequestSettings: Handler<'updateOrganizationAccessRequestSettings'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate((tx, audit) => requests.setAllowRequests(tx, audit, ctx.principal.userId, params.organizationId, body.allowRequests));
  return { status: 200, body: { data } };
};

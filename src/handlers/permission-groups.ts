// Handlers for the Permission Groups operations (Access Control). The rules live in src/access-control/; here
// the request is read, the change run in one transaction (ctx.mutate) and the answer shaped.
import type { Handler } from '../../generated/handlers.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import * as groups from '../access-control/groups.ts';
import { effectiveAccess } from '../access-control/policy.ts';
import { pageInMemory } from './list-support.ts';

export const listPermissionGroups: Handler<'listPermissionGroups'> = async ({ params, query, ctx }) => {
  const store = ctx.services.store;
  await groups.requireAccessControlAdmin(store, params.organizationId, ctx.principal.userId);
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { organizationId: params.organizationId, search: query.search, sortBy, sortOrder };
  const search = query.search?.toLowerCase();
  const all = (await store.permissionGroups.listForOrganization(params.organizationId)).filter((g) => !search || g.name.toLowerCase().includes(search));
  const key = (g: (typeof all)[number]): [string, string] => [g[sortBy], g.id];
  const rows = pageInMemory(all, key, sortOrder, readCursor(ctx, query.cursor, binding), limit);
  const page = toPage(ctx, rows, limit, binding, key, (g) => g);
  return { status: 200, body: { data: await Promise.all(page.data.map((g) => groups.groupView(store, g))), nextCursor: page.nextCursor } };
};

export const createPermissionGroup: Handler<'createPermissionGroup'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate((tx, audit) => groups.createGroup(tx, audit, ctx.principal.userId, params.organizationId, body));
  return { status: 200, body: { data } };
};

export const getPermissionGroup: Handler<'getPermissionGroup'> = async ({ params, ctx }) => {
  const store = ctx.services.store;
  await groups.requireAccessControlAdmin(store, params.organizationId, ctx.principal.userId);
  return { status: 200, body: { data: await groups.groupView(store, await groups.groupOf(store, params.organizationId, params.groupId)) } };
};

export const updatePermissionGroup: Handler<'updatePermissionGroup'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate((tx, audit) => groups.updateGroup(tx, audit, ctx.principal.userId, params.organizationId, params.groupId, body));
  return { status: 200, body: { data } };
};

export const deletePermissionGroup: Handler<'deletePermissionGroup'> = async ({ params, ctx }) => {
  await ctx.mutate((tx, audit) => groups.deleteGroup(tx, audit, ctx.principal.userId, params.organizationId, params.groupId));
  return { status: 200, body: { data: { id: params.groupId, deleted: true as const } } };
};

export const listPermissionGroupMembers: Handler<'listPermissionGroupMembers'> = async ({ params, query, ctx }) => {
  const store = ctx.services.store;
  await groups.requireAccessControlAdmin(store, params.organizationId, ctx.principal.userId);
  const g = await groups.groupOf(store, params.organizationId, params.groupId);
  const sortBy = query.sortBy ?? 'assignedAt';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { organizationId: params.organizationId, groupId: g.id, sortBy, sortOrder };
  const members = await store.permissionGroups.members(g.id);
  const key = (m: (typeof members)[number]): [string, string] => [sortBy === 'userId' ? m.userId : m.assignedAt, m.id];
  const rows = pageInMemory(members, key, sortOrder, readCursor(ctx, query.cursor, binding), limit);
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, key, (m) => ({ id: m.id, userId: m.userId, assignedAt: m.assignedAt, userName: m.userName, userEmail: m.userEmail, userImage: m.userImage })),
  };
};

export const addPermissionGroupMember: Handler<'addPermissionGroupMember'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate((tx, audit) => groups.addMember(tx, audit, ctx.principal.userId, params.organizationId, params.groupId, body.userId));
  return { status: 200, body: { data } };
};

export const removePermissionGroupMember: Handler<'removePermissionGroupMember'> = async ({ params, ctx }) => {
  await ctx.mutate((tx, audit) => groups.removeMember(tx, audit, ctx.principal.userId, params.organizationId, params.groupId, params.userId));
  return { status: 200, body: { data: { userId: params.userId, deleted: true as const } } };
};

export const bulkAddPermissionGroupMembers: Handler<'bulkAddPermissionGroupMembers'> = async ({ params, body, ctx }) => {
  const data = await ctx.mutate((tx, audit) => groups.addMembers(tx, audit, ctx.principal.userId, params.organizationId, params.groupId, body));
  return { status: 200, body: { data } };
};

export const getWorkspacePermissionConfig: Handler<'getWorkspacePermissionConfig'> = async ({ params, ctx }) => {
  const access = await effectiveAccess(ctx.services.store, { workspaceId: params.workspaceId }, ctx.principal.userId);
  return {
    status: 200,
    body: {
      data: {
        permissionGroupId: access.group?.id ?? null,
        groupName: access.group?.name ?? null,
        config: access.config,
        entitled: access.entitled,
        organizationId: access.organization?.id ?? null,
        isOrgAdmin: access.isOrgAdmin,
      },
    },
  };
};

// Handlers for the Workspaces operations.
import type { Handler } from '../../generated/handlers.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { Member } from '../store/members.ts';
import { readCursor, toPage } from '../http/pagination.ts';

const workspaceView = (w: Workspace) => ({
  id: w.id,
  name: w.name,
  color: w.color,
  logoUrl: w.logoUrl,
  memberCount: w.memberCount,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

const memberView = (m: Member) => ({
  userId: m.userId,
  email: m.email,
  name: m.name,
  image: m.image,
  role: m.role,
  isExternal: false,
  joinedAt: m.joinedAt,
});

const SORT_VALUE = { name: (w: Workspace) => w.name, createdAt: (w: Workspace) => w.createdAt, updatedAt: (w: Workspace) => w.updatedAt };

export const listWorkspaces: Handler<'listWorkspaces'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { sortBy, sortOrder };
  const { principal } = ctx;
  const rows = await ctx.services.store.workspaces.list({
    memberId: principal.userId,
    onlyWorkspaceId: principal.kind === 'workspace' ? principal.workspaceId : null,
    excludePersonalKeyDisabled: principal.kind === 'personal',
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  const page = toPage(ctx, rows, limit, binding, (w) => [SORT_VALUE[sortBy](w), w.id], workspaceView);
  return { status: 200, body: page };
};

export const getWorkspace: Handler<'getWorkspace'> = async ({ ctx }) => ({
  status: 200,
  body: { data: workspaceView(ctx.workspace!.workspace) },
});

export const listWorkspaceMembers: Handler<'listWorkspaceMembers'> = async ({ params, query, ctx }) => {
  const limit = query.limit ?? 50;
  const rows = await ctx.services.store.members.list(params.workspaceId, readCursor(ctx, query.cursor, {}), limit + 1);
  return { status: 200, body: toPage(ctx, rows, limit, {}, (m) => [m.joinedAt, m.userId], memberView) };
};

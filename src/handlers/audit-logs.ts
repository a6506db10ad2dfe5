// Handlers for the Audit Logs operations. Which workspaces' events a caller may read follows the operation's
// declared policy (x-min-role, x-plans), applied per workspace through ctx.authorizeWorkspace.
import type { Handler } from '../../generated/handlers.ts';
import { ApiError, forbidden, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import type { RequestContext } from '../http/context.ts';
import type { AuditEvent } from '../store/audit-events.ts';

const view = (e: AuditEvent) => ({
  id: e.id,
  workspaceId: e.workspaceId,
  actorName: e.actorName,
  actorEmail: e.actorEmail,
  action: e.action,
  resourceType: e.resourceType,
  resourceId: e.resourceId,
  resourceName: e.resourceName,
  description: e.description,
  metadata: e.metadata,
  createdAt: e.createdAt,
});

/** The workspaces whose audit trail the caller may read, optionally narrowed to one billing account. */
async function readableWorkspaces(ctx: RequestContext, organizationId: string | undefined): Promise<string[]> {
  const { store } = ctx.services;
  const allowed: string[] = [];
  let firstDenial: ApiError | null = null;
  let inOrganization = 0;
  for (const id of await store.members.workspaceIdsOf(ctx.principal.userId)) {
    if (organizationId) {
      const ws = await store.workspaces.get(id);
      if (ws?.billingAccountId !== organizationId) continue;
    }
    inOrganization++;
    try {
      await ctx.authorizeWorkspace(id);
      allowed.push(id);
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) firstDenial ??= err;
      else if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
  }
  if (allowed.length > 0) return allowed;
  if (organizationId && inOrganization === 0) throw forbidden('You are not a member of that organization.');
  throw firstDenial ?? forbidden('The audit trail needs admin access to a workspace on the Enterprise plan.');
}

export const listAuditLogs: Handler<'listAuditLogs'> = async ({ query, ctx }) => {
  const limit = query.limit ?? 50;
  const resourceTypes = query.resourceType ? [...new Set(query.resourceType.split(',').map((s) => s.trim()).filter(Boolean))].sort() : undefined;
  const filters = {
    action: query.action,
    resourceTypes: resourceTypes?.join(','),
    resourceId: query.resourceId,
    workspaceId: query.workspaceId,
    startDate: query.startDate,
    endDate: query.endDate,
    includeDeparted: query.includeDeparted ?? false,
    organizationId: query.organizationId,
    actorEmail: query.actorEmail?.toLowerCase(),
  };
  let workspaceIds: string[];
  if (query.workspaceId) {
    const access = await ctx.authorizeWorkspace(query.workspaceId);
    if (query.organizationId && access.workspace.billingAccountId !== query.organizationId) workspaceIds = [];
    else workspaceIds = [query.workspaceId];
  } else {
    workspaceIds = await readableWorkspaces(ctx, query.organizationId);
  }
  if (query.startDate && query.endDate && query.startDate > query.endDate) {
    throw new ApiError('BAD_REQUEST', 'startDate must not be after endDate.', [
      { code: 'custom', keys: [], path: ['query', 'startDate'], message: 'startDate is after endDate' },
    ]);
  }
  const rows = await ctx.services.store.auditEvents.list({
    workspaceIds,
    action: query.action,
    resourceTypes,
    resourceId: query.resourceId,
    actorEmail: query.actorEmail,
    startDate: query.startDate,
    endDate: query.endDate,
    includeDeparted: filters.includeDeparted,
    after: readCursor(ctx, query.cursor, filters),
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, filters, (e) => [e.createdAt, e.id], view) };
};

export const getAuditLog: Handler<'getAuditLog'> = async ({ params, query, ctx }) => {
  const event = await ctx.services.store.auditEvents.get(params.auditLogId);
  if (!event?.workspaceId) throw notFound('Audit log entry');
  const access = await ctx.authorizeWorkspace(event.workspaceId, { resource: 'Audit log entry' });
  if (query.organizationId && access.workspace.billingAccountId !== query.organizationId) throw notFound('Audit log entry');
  return { status: 200, body: { data: view(event) } };
};

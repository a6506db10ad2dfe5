// Handlers for the Workspace Operations operations: the stored receipts of imports, forks, pushes and pulls,
// answered exactly as the mutation answered them (src/forks/receipts.ts).
import type { Handler } from '../../generated/handlers.ts';
import { notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { parseReceipt } from '../forks/receipts.ts';

export const listWorkspaceOperations: Handler<'listWorkspaceOperations'> = async ({ params, query, ctx }) => {
  const limit = query.limit ?? 50;
  const binding = { requestId: query.requestId ?? null };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.workspaceOperations.list({ workspaceId: params.workspaceId, requestId: query.requestId, beforeId: after ? after[1] : null, limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (r) => [r.id, r.id], (r) => parseReceipt(r.receipt)) };
};

export const getWorkspaceOperation: Handler<'getWorkspaceOperation'> = async ({ params, ctx }) => {
  const row = await ctx.services.store.workspaceOperations.get(params.workspaceId, params.operationId);
  if (!row) throw notFound('Operation');
  return { status: 200, body: { data: parseReceipt(row.receipt) } };
};

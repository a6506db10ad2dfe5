// The workspace's queue depth now (an extension the console's operations page plots): queued and running runs
// and how long the oldest queued run has waited.
import type { Handler } from '../../../generated/handlers.ts';

export const getWorkspaceQueue: Handler<'getWorkspaceQueue'> = async ({ params, ctx }) => {
  const q = await ctx.services.store.workflowRuns.queueOf(params.workspaceId);
  const measuredAt = new Date();
  const oldestQueuedAgeMs = q.oldestQueuedAt === null ? null : Math.max(0, measuredAt.getTime() - Date.parse(q.oldestQueuedAt));
  return { status: 200, body: { data: { workspaceId: params.workspaceId, ...q, oldestQueuedAgeMs, measuredAt: measuredAt.toISOString() } } };
};

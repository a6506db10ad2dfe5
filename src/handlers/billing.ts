// Billing reads over what the server already records: usage_totals / usage_records (run and tool costs, USD,
// reported as credits) and file storage per workspace against the plan's quota.
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { planLimits } from '../billing/plans.ts';
import { personalAccountId, type Plan } from '../store/billing-accounts.ts';
import { usagePeriod } from '../store/usage.ts';
import type { BillingLogRow } from '../store/billing-logs.ts';
import { KNOWN_CATEGORIES, categoriesOf, sourceOf } from '../billing/usage-sources.ts';

const round = (n: number, digits = 6) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The workspace a request is about: the named one (authorized), a workspace key's own, or none. */
async function targetWorkspace(ctx: RequestContext, workspaceId: string | undefined): Promise<string | null> {
  const { principal } = ctx;
  if (principal.kind === 'workspace') {
    if (workspaceId !== undefined && workspaceId !== principal.workspaceId) throw notFound('Workspace');
    return principal.workspaceId;
  }
  if (workspaceId === undefined) return null;
  await ctx.authorizeWorkspace(workspaceId, { minRole: 'read' });
  return workspaceId;
}

export const getBillingStatus: Handler<'getBillingStatus'> = async ({ query, ctx }) => {
  const { store, config } = ctx.services;
  const workspaceId = await targetWorkspace(ctx, query.workspaceId);
  let accountId: string;
  let plan: Plan;
  let storageWorkspaces: string[];
  if (workspaceId) {
    const workspace = await store.workspaces.get(workspaceId);
    if (!workspace) throw notFound('Workspace');
    accountId = workspace.billingAccountId;
    plan = workspace.plan;
    storageWorkspaces = [workspaceId];
  } else {
    accountId = personalAccountId(ctx.principal.userId);
    plan = (await store.billingAccounts.get(accountId))?.plan ?? 'free';
    storageWorkspaces = await store.billingLogs.workspaceIdsOfAccount(accountId);
  }
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const used = (await store.usage.periodTotal(accountId, usagePeriod(now.toISOString()))).cost;
  const limit = config.runs.policies[plan].usageLimitUsd;
  let usedBytes = 0;
  for (const id of storageWorkspaces) usedBytes += await store.files.storageBytes(id);
  const limitBytes = planLimits(plan, config.files).storageBytes;
  return {
    status: 200,
    body: {
      data: {
        workspaceId,
        period: { start: start.toISOString(), end: end.toISOString() },
        plan,
        status: used >= limit ? ('limit_exceeded' as const) : ('active' as const),
        // Workspace keys see the plan and status only; credits and storage need a person's credential.
        credits: ctx.principal.kind === 'workspace' ? null : { used: round(used), limit, remaining: round(Math.max(0, limit - used)) },
        storage:
          ctx.principal.kind === 'workspace' ? null : { usedBytes, limitBytes, percentUsed: limitBytes > 0 ? round((usedBytes / limitBytes) * 100, 2) : 0 },
      },
    },
  };
};

const PERIOD_MS = { '1d': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const;

function utcInstant(value: string, field: string): string {
  const t = Date.parse(value);
  if (value.startsWith('0000') || Number.isNaN(t)) throw invalidField(['query', field], `${field} must be a UTC time such as 2026-08-06T00:00:00Z.`);
  return new Date(t).toISOString();
}

export const listBillingLogs: Handler<'listBillingLogs'> = async ({ query, ctx }) => {
  const period = query.period ?? '30d';
  const limit = query.limit ?? 50;
  if (period !== 'custom') {
    for (const field of ['startDate', 'endDate'] as const) {
      if (query[field] !== undefined) throw invalidField(['query', field], `${field} is accepted only with period=custom.`);
    }
  }
  const workspaceId = await targetWorkspace(ctx, query.workspaceId);
  const scope = ctx.principal.kind === 'workspace' ? ('workspace' as const) : ('user' as const);
  let from: string | null = null;
  let to: string | null = null;
  if (period === 'custom') {
    from = query.startDate ? utcInstant(query.startDate, 'startDate') : null;
    to = query.endDate ? utcInstant(query.endDate, 'endDate') : new Date().toISOString();
    if (from && from > to) throw invalidField(['query', 'startDate'], 'startDate must not be after endDate.');
  } else if (period !== 'all') {
    from = new Date(Date.now() - PERIOD_MS[period]).toISOString();
  }
  const binding = { source: query.source, workspaceId, period, startDate: query.startDate, endDate: query.endDate, scope };
  const rows = await ctx.services.store.billingLogs.list({
    userId: scope === 'user' ? ctx.principal.userId : null,
    workspaceId,
    categories: query.source ? categoriesOf(query.source) : KNOWN_CATEGORIES,
    from,
    to,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  const view = (r: BillingLogRow) => ({
    id: r.id,
    createdAt: r.recordedAt,
    source: sourceOf(r.category) ?? 'workflow',
    workspaceId: r.workspaceId,
    workflow: r.workflowId ? { id: r.workflowId, name: r.workflowName } : null,
    runId: r.runId,
    creditCost: round(r.cost),
  });
  const page = toPage(ctx, rows, limit, binding, (r) => [r.recordedAt, r.id], view);
  return { status: 200, body: { ...page, scope } };
};

// Organization usage reports and per-person credit caps, over the usage ledger (usage_records) the runs and
// tools already write. An organization's usage is what was charged to its billing account, i.e. what its
// workspaces used while they belonged to it. Credits are the recorded cost, the same unit as /billing.
import type { Store } from '../store/index.ts';
import type { Organization, OrganizationUsageRow } from '../store/organizations.ts';
import { DomainError, invalidInput } from '../domain/errors.ts';
import { sourceOf } from '../billing/usage-sources.ts';

const DAY_MS = 86_400_000;
const round = (n: number) => Math.round(n * 1e6) / 1e6;

export type Preset = 'current-period' | 'previous-period' | '7d' | '30d' | 'custom';
export interface WindowQuery {
  preset?: Preset;
  startDate?: string;
  endDate?: string;
  timezone?: string;
}
export interface UsageWindow {
  start: Date;
  end: Date;
  source: 'reporting' | 'default' | 'range';
  bucket: 'day' | 'week' | 'month';
  timezone: string;
}

// ---- calendar arithmetic in an IANA time zone

function checkTimezone(tz: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return tz;
  } catch {
    throw invalidInput(['query', 'timezone'], `"${tz}" is not an IANA time zone such as Europe/Berlin.`);
  }
}

const partsCache = new Map<string, Intl.DateTimeFormat>();
/** The wall-clock date and time in `tz` at an instant. */
function wall(tz: string, ms: number): { y: number; m: number; d: number; h: number; min: number; s: number } {
  let f = partsCache.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    partsCache.set(tz, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return { y: +p.year!, m: +p.month!, d: +p.day!, h: +p.hour!, min: +p.minute!, s: +p.second! };
}
const offsetMs = (tz: string, ms: number) => {
  const w = wall(tz, ms);
  return Date.UTC(w.y, w.m - 1, w.d, w.h, w.min, w.s) - Math.floor(ms / 1000) * 1000;
};
/** The instant local midnight begins on a calendar day in `tz` (month and day may overflow, as Date.UTC allows). */
function midnight(tz: string, y: number, m: number, d: number): number {
  const guess = Date.UTC(y, m - 1, d);
  const t = guess - offsetMs(tz, guess);
  const second = offsetMs(tz, t);
  return second === offsetMs(tz, guess) ? t : guess - second;
}
const localMidnightOf = (tz: string, ms: number) => {
  const w = wall(tz, ms);
  return midnight(tz, w.y, w.m, w.d);
};

function parseDate(value: string, field: string): { y: number; m: number; d: number } {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const y = Number(m?.[1]);
  const mo = Number(m?.[2]);
  const d = Number(m?.[3]);
  const check = new Date(Date.UTC(y, mo - 1, d));
  if (!m || check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d) {
    throw invalidInput(['query', field], `${field} must be a calendar date such as 2026-08-01.`);
  }
  return { y, m: mo, d };
}

/** The reporting window a query names; billing periods are calendar months (UTC), as usage_totals counts them. */
export function resolveWindow(q: WindowQuery, nowMs = Date.now()): UsageWindow {
  const preset = q.preset ?? '30d';
  const timezone = checkTimezone(q.timezone ?? 'UTC');
  if (preset !== 'custom') {
    for (const field of ['startDate', 'endDate'] as const) {
      if (q[field] !== undefined) throw invalidInput(['query', field], `${field} is accepted only with preset=custom.`);
    }
  }
  let start: number;
  let end: number;
  let source: UsageWindow['source'];
  if (preset === '7d' || preset === '30d') {
    end = nowMs;
    start = nowMs - (preset === '7d' ? 7 : 30) * DAY_MS;
    source = 'reporting';
  } else if (preset === 'current-period' || preset === 'previous-period') {
    const now = new Date(nowMs);
    const back = preset === 'previous-period' ? 1 : 0;
    start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1);
    end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back + 1, 1);
    source = 'default';
  } else {
    for (const field of ['startDate', 'endDate'] as const) {
      if (q[field] === undefined) throw invalidInput(['query', field], `${field} is required with preset=custom.`);
    }
    const a = parseDate(q.startDate!, 'startDate');
    const b = parseDate(q.endDate!, 'endDate');
    start = midnight(timezone, a.y, a.m, a.d);
    end = midnight(timezone, b.y, b.m, b.d + 1);
    if (end <= start) throw invalidInput(['query', 'endDate'], 'endDate must not be before startDate.');
    const days = Math.round((Date.UTC(b.y, b.m - 1, b.d) - Date.UTC(a.y, a.m - 1, a.d)) / DAY_MS) + 1;
    if (days > 92) throw invalidInput(['query', 'endDate'], `A custom window spans at most 92 days; this one spans ${days}.`);
    source = 'range';
  }
  // A billing-period window is capped at 366 days (never reached with calendar months, kept as the rule says).
  if (end - start > 366 * DAY_MS) start = end - 366 * DAY_MS;
  const days = (end - start) / DAY_MS;
  const bucket = days <= 31 ? 'day' : days <= 92 ? 'week' : 'month';
  return { start: new Date(start), end: new Date(end), source, bucket, timezone };
}

/** Bucket starts covering the window: local midnights in the window's zone, every day, week or month. */
function bucketStarts(w: UsageWindow): number[] {
  const first = wall(w.timezone, localMidnightOf(w.timezone, w.start.getTime()));
  const out: number[] = [];
  for (let i = 0; ; i++) {
    const t =
      w.bucket === 'month'
        ? midnight(w.timezone, first.y, first.m + i, 1)
        : midnight(w.timezone, first.y, first.m, first.d + i * (w.bucket === 'week' ? 7 : 1));
    if (t >= w.end.getTime() || i > 400) break;
    out.push(t);
  }
  return out;
}

export async function usageSummary(store: Store, org: Organization, q: WindowQuery & { workspaceId?: string }) {
  const w = resolveWindow(q);
  const workspaceId = await ownedWorkspace(store, org, q.workspaceId);
  const rows = await store.organizations.usageIn(org.billingAccountId, w.start.toISOString(), w.end.toISOString(), workspaceId);
  const length = w.end.getTime() - w.start.getTime();
  const previous = await store.organizations.usageIn(org.billingAccountId, new Date(w.start.getTime() - length).toISOString(), w.start.toISOString(), workspaceId);
  const starts = bucketStarts(w);
  const series = starts.map((t) => ({ timestamp: new Date(t).toISOString(), credits: 0, events: 0 }));
  for (const r of rows) {
    const t = Date.parse(r.recordedAt);
    let i = starts.length - 1;
    while (i > 0 && starts[i]! > t) i--;
    if (series[i]) (series[i]!.credits += r.cost), series[i]!.events++;
  }
  for (const s of series) s.credits = round(s.credits);
  const sum = (xs: OrganizationUsageRow[]) => round(xs.reduce((a, r) => a + r.cost, 0));
  return {
    window: { start: w.start.toISOString(), end: w.end.toISOString(), source: w.source },
    bucket: w.bucket,
    totals: { credits: sum(rows) },
    previousTotals: { credits: sum(previous) },
    series,
  };
}

export type Dimension = 'member' | 'workspace' | 'workflow' | 'model' | 'byok' | 'source';

/** The group a usage record falls in. Records carry no model or key origin, so those dimensions have one group. */
const GROUP: Record<Dimension, (r: OrganizationUsageRow) => { id: string; label: string }> = {
  member: (r) => ({ id: r.userId ?? 'unattributed', label: r.userLabel ?? 'No user (triggered by a key or schedule)' }),
  workspace: (r) => ({ id: r.workspaceId, label: r.workspaceName ?? r.workspaceId }),
  workflow: (r) => ({ id: r.workflowId ?? 'none', label: r.workflowName ?? (r.workflowId ? r.workflowId : 'No workflow') }),
  model: () => ({ id: 'unattributed', label: 'Not attributed to a model' }),
  byok: () => ({ id: 'platform', label: "The server's own provider keys" }),
  source: (r) => {
    const s = sourceOf(r.category) ?? r.category;
    return { id: s, label: s };
  },
};

export async function usageBreakdown(store: Store, org: Organization, q: WindowQuery & { workspaceId?: string; dimension: Dimension; limit?: number }) {
  const w = resolveWindow(q);
  const workspaceId = await ownedWorkspace(store, org, q.workspaceId);
  const rows = await store.organizations.usageIn(org.billingAccountId, w.start.toISOString(), w.end.toISOString(), workspaceId);
  const groups = new Map<string, { id: string; label: string; credits: number; events: number }>();
  for (const r of rows) {
    const g = GROUP[q.dimension](r);
    const acc = groups.get(g.id) ?? { ...g, credits: 0, events: 0 };
    acc.credits += r.cost;
    acc.events++;
    groups.set(g.id, acc);
  }
  const total = rows.reduce((a, r) => a + r.cost, 0);
  const ranked = [...groups.values()].sort((a, b) => b.credits - a.credits || b.events - a.events || (a.id < b.id ? -1 : 1));
  const limit = q.limit ?? 50;
  const withTokens = q.dimension === 'model' || q.dimension === 'byok';
  const view = (g: { id: string; label: string; credits: number; events: number }) => ({
    id: g.id,
    label: g.label,
    credits: round(g.credits),
    events: g.events,
    share: total > 0 ? round(g.credits / total) : 0,
    ...(withTokens ? { tokens: 0 } : {}),
  });
  const rest = ranked.slice(limit);
  return {
    dimension: q.dimension,
    rows: ranked.slice(0, limit).map(view),
    other: { credits: round(rest.reduce((a, g) => a + g.credits, 0)), events: rest.reduce((a, g) => a + g.events, 0), rowCount: rest.length, tokens: 0 },
    totalCredits: round(total),
  };
}

/** `workspaceId` must be one of the organization's workspaces (400 otherwise); undefined means all of them. */
export async function ownedWorkspace(store: Store, org: Organization, workspaceId: string | undefined): Promise<string | null> {
  if (workspaceId === undefined) return null;
  if ((await store.organizations.organizationOfWorkspace(workspaceId)) !== org.id) {
    throw invalidInput(['query', 'workspaceId'], 'workspaceId must name a workspace owned by this organization.');
  }
  return workspaceId;
}

// ---- per-person credit caps

/** The current billing period: the calendar month (UTC). */
export function currentPeriod(nowMs = Date.now()): { start: string; end: string } {
  const now = new Date(nowMs);
  return {
    start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
  };
}

/** The person's use this period and cap: a member of the organization, or an external collaborator of one of its workspaces. */
export async function memberUsageLimit(store: Store, org: Organization, userId: string) {
  if (!(await store.organizations.member(org.id, userId)) && !(await store.organizations.isExternalCollaborator(org.id, userId))) {
    throw new DomainError('not_found', 'Member not found.');
  }
  const period = currentPeriod();
  return {
    creditsUsed: round(await store.organizations.usageCostOf(org.billingAccountId, userId, period.start, period.end)),
    creditLimit: await store.organizations.creditLimit(org.id, userId),
    billingInterval: 'month' as const,
  };
}

/**
 * Why `userId` may not start more credit-consuming work in `workspaceId` (their cap in the workspace's
 * organization is used up), or null. Asked before a run starts, next to the plan's limit.
 */
export async function memberCreditProblem(store: Store, workspaceId: string, userId: string | null): Promise<string | null> {
  if (!userId) return null;
  const orgId = await store.organizations.organizationOfWorkspace(workspaceId);
  if (!orgId) return null;
  const limit = await store.organizations.creditLimit(orgId, userId);
  if (limit === null) return null;
  const org = await store.organizations.get(orgId);
  if (!org) return null;
  const period = currentPeriod();
  const used = await store.organizations.usageCostOf(org.billingAccountId, userId, period.start, period.end);
  if (used < limit) return null;
  return `Your credit limit in the organization ${org.name} (${limit} credits this month) has been reached; ask an organization admin to raise it.`;
}

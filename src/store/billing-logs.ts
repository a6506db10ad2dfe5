// Reads over the usage ledger (usage_records) for billing: per-event logs and the workspaces of an account.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface BillingLogRow {
  id: string;
  recordedAt: string;
  category: string;
  workspaceId: string;
  workflowId: string | null;
  workflowName: string | null;
  /** The run id callers see (its key). */
  runId: string | null;
  cost: number;
}

export interface BillingLogQuery {
  /** Only this user's events (personal keys and tokens); null for a workspace's view. */
  userId: string | null;
  workspaceId: string | null;
  /** Only usage charged to this billing account (an organization's reports); omitted: any. */
  billingAccountId?: string | null;
  categories: string[] | null;
  from: string | null;
  to: string | null;
  after: readonly [SqlValue, string] | null;
  limit: number;
  /** Newest first unless asked otherwise. */
  order?: 'asc' | 'desc';
}

export class BillingLogRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async list(q: BillingLogQuery): Promise<BillingLogRow[]> {
    const where: string[] = [];
    const args: SqlValue[] = [];
    if (q.userId !== null) (where.push('u.user_id = ?'), args.push(q.userId));
    if (q.workspaceId !== null) (where.push('u.workspace_id = ?'), args.push(q.workspaceId));
    if (q.billingAccountId) (where.push('u.billing_account_id = ?'), args.push(q.billingAccountId));
    if (q.categories) (where.push(`u.category IN (${q.categories.map(() => '?').join(', ')})`), args.push(...q.categories));
    if (q.from) (where.push('u.recorded_at >= ?'), args.push(q.from));
    if (q.to) (where.push('u.recorded_at <= ?'), args.push(q.to));
    const page = keyset({ column: 'u.recorded_at', idColumn: 'u.id', order: q.order ?? 'desc', after: q.after, limit: q.limit });
    where.push(page.where);
    const rows = await this.db.all<{ id: string; recorded_at: string; category: string; workspace_id: string; workflow_id: string | null; workflow_name: string | null; run_id: string | null; cost: number }>(
      `SELECT u.id, u.recorded_at, u.category, u.workspace_id, u.workflow_id, w.name AS workflow_name, COALESCE(r.run_key, u.run_id) AS run_id, u.cost
       FROM usage_records u LEFT JOIN workflows w ON w.id = u.workflow_id LEFT JOIN workflow_runs r ON r.id = u.run_id
       WHERE ${where.join(' AND ')} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [...args, ...page.whereParams],
    );
    return rows.map((r) => ({ id: r.id, recordedAt: r.recorded_at, category: r.category, workspaceId: r.workspace_id, workflowId: r.workflow_id, workflowName: r.workflow_name, runId: r.run_id, cost: Number(r.cost) }));
  }

  /** Workspaces billed to an account (for the account's storage). */
  async workspaceIdsOfAccount(billingAccountId: string): Promise<string[]> {
    return (await this.db.all<{ id: string }>('SELECT id FROM workspaces WHERE billing_account_id = ?', [billingAccountId])).map((r) => r.id);
  }
}

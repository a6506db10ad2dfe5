// Usage for billing: one record per run segment (a run, or the part after a resume) and a running total per
// billing account and calendar month (UTC), so limit checks are a point lookup.
import type { SqlExecutor } from './database.ts';

export interface UsageRecord {
  id: string;
  billingAccountId: string;
  workspaceId: string;
  workflowId: string | null;
  runId: string | null;
  userId: string | null;
  /** What was used, e.g. `workflow_run`. */
  category: string;
  /** USD */
  cost: number;
  blockExecutions: number;
  durationMs: number;
  recordedAt: string;
}

/** `YYYY-MM` of an ISO time. */
export const usagePeriod = (iso: string) => iso.slice(0, 7);

export class UsageRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async record(u: UsageRecord): Promise<void> {
    await this.recordRuns([u]);
  }

  /**
   * Several run segments' records, then each billing account's period total once with their sum. The totals
   * come last and in one order: a total is the one row every writer of an account updates, so it is locked
   * for as short a time as the transaction allows and two writers never take two totals in opposite orders.
   */
  async recordRuns(records: readonly UsageRecord[]): Promise<void> {
    const totals = new Map<string, { billingAccountId: string; period: string; cost: number; runs: number; blockExecutions: number }>();
    for (const u of records) {
      await this.db.run(
        `INSERT INTO usage_records (id, billing_account_id, workspace_id, workflow_id, run_id, user_id, category, cost, block_executions, duration_ms, recorded_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [u.id, u.billingAccountId, u.workspaceId, u.workflowId, u.runId, u.userId, u.category, u.cost, u.blockExecutions, u.durationMs, u.recordedAt],
      );
      const period = usagePeriod(u.recordedAt);
      const key = `${u.billingAccountId}\u0000${period}`;
      const t = totals.get(key) ?? { billingAccountId: u.billingAccountId, period, cost: 0, runs: 0, blockExecutions: 0 };
      t.cost += u.cost;
      t.runs += 1;
      t.blockExecutions += u.blockExecutions;
      totals.set(key, t);
    }
    for (const key of [...totals.keys()].sort()) {
      const t = totals.get(key)!;
      await this.db.run(
        `INSERT INTO usage_totals (billing_account_id, period, cost, runs, block_executions) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (billing_account_id, period) DO UPDATE SET cost = usage_totals.cost + excluded.cost, runs = usage_totals.runs + excluded.runs, block_executions = usage_totals.block_executions + excluded.block_executions`,
        [t.billingAccountId, t.period, t.cost, t.runs, t.blockExecutions],
      );
    }
  }

  /** Usage that is not a run (a tool execution, for instance): counts toward the period's cost, not its runs. */
  async recordEvent(u: UsageRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO usage_records (id, billing_account_id, workspace_id, workflow_id, run_id, user_id, category, cost, block_executions, duration_ms, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [u.id, u.billingAccountId, u.workspaceId, u.workflowId, u.runId, u.userId, u.category, u.cost, u.blockExecutions, u.durationMs, u.recordedAt],
    );
    await this.db.run(
      `INSERT INTO usage_totals (billing_account_id, period, cost, runs, block_executions) VALUES (?, ?, ?, 0, 0)
       ON CONFLICT (billing_account_id, period) DO UPDATE SET cost = usage_totals.cost + excluded.cost`,
      [u.billingAccountId, usagePeriod(u.recordedAt), u.cost],
    );
  }

  async periodTotal(billingAccountId: string, period: string): Promise<{ cost: number; runs: number; blockExecutions: number }> {
    const r = await this.db.get<{ cost: number; runs: number; block_executions: number }>(
      'SELECT cost, runs, block_executions FROM usage_totals WHERE billing_account_id = ? AND period = ?',
      [billingAccountId, period],
    );
    return { cost: Number(r?.cost ?? 0), runs: Number(r?.runs ?? 0), blockExecutions: Number(r?.block_executions ?? 0) };
  }

  /** By the run's internal id (RunRecord.id), not the id callers see. */
  async forRun(runId: string): Promise<UsageRecord[]> {
    const rows = await this.db.all<Record<string, unknown>>('SELECT * FROM usage_records WHERE run_id = ? ORDER BY recorded_at', [runId]);
    return rows.map((r) => ({
      id: String(r.id),
      billingAccountId: String(r.billing_account_id),
      workspaceId: String(r.workspace_id),
      workflowId: (r.workflow_id as string | null) ?? null,
      runId: (r.run_id as string | null) ?? null,
      userId: (r.user_id as string | null) ?? null,
      category: String(r.category),
      cost: Number(r.cost),
      blockExecutions: Number(r.block_executions),
      durationMs: Number(r.duration_ms),
      recordedAt: String(r.recorded_at),
    }));
  }
}

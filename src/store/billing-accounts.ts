import type { SqlExecutor } from './database.ts';

export type Plan = 'free' | 'pro' | 'team' | 'max' | 'enterprise';
export const PLANS: readonly Plan[] = ['free', 'pro', 'team', 'max', 'enterprise'];

export interface BillingAccount {
  id: string;
  name: string;
  plan: Plan;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  name: string;
  plan: Plan;
  created_at: string;
  updated_at: string;
}

const toAccount = (r: Row): BillingAccount => ({ id: r.id, name: r.name, plan: r.plan, createdAt: r.created_at, updatedAt: r.updated_at });

/** The account a user's own workspaces bill to. */
export const personalAccountId = (userId: string) => `ba-${userId}`;

export class BillingAccountRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(a: BillingAccount): Promise<void> {
    await this.db.run('INSERT INTO billing_accounts (id, name, plan, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [
      a.id,
      a.name,
      a.plan,
      a.createdAt,
      a.updatedAt,
    ]);
  }

  async get(id: string): Promise<BillingAccount | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM billing_accounts WHERE id = ?', [id]);
    return r && toAccount(r);
  }

  async setPlan(id: string, plan: Plan, now: string): Promise<boolean> {
    return (await this.db.run('UPDATE billing_accounts SET plan = ?, updated_at = ? WHERE id = ?', [plan, now, id])).changes > 0;
  }
}

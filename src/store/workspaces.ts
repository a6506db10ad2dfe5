import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';
import type { Plan } from './billing-accounts.ts';

export type WorkspaceRole = 'admin' | 'write' | 'read';

export interface Workspace {
  id: string;
  name: string;
  color: string;
  logoUrl: string | null;
  ownerId: string;
  allowPersonalKeys: boolean;
  billingAccountId: string;
  /** The plan of the billing account the workspace bills to. */
  plan: Plan;
  memberCount: number;
  createdAt: string;
  updatedAt: string;
}

interface WorkspaceRow {
  id: string;
  name: string;
  color: string;
  logo_url: string | null;
  owner_id: string;
  allow_personal_keys: number;
  billing_account_id: string;
  plan: Plan | null;
  member_count: number;
  created_at: string;
  updated_at: string;
}

const toWorkspace = (r: WorkspaceRow): Workspace => ({
  id: r.id,
  name: r.name,
  color: r.color,
  logoUrl: r.logo_url,
  ownerId: r.owner_id,
  allowPersonalKeys: r.allow_personal_keys === 1,
  billingAccountId: r.billing_account_id,
  plan: r.plan ?? 'free',
  memberCount: Number(r.member_count),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SELECT = `SELECT w.*, b.plan AS plan, (SELECT COUNT(*) FROM workspace_members c WHERE c.workspace_id = w.id) AS member_count
  FROM workspaces w LEFT JOIN billing_accounts b ON b.id = w.billing_account_id`;

export const WORKSPACE_SORT_COLUMNS = { name: 'w.name', createdAt: 'w.created_at', updatedAt: 'w.updated_at' } as const;

export interface WorkspaceListQuery {
  /** Only workspaces this user belongs to. */
  memberId: string;
  /** Only this workspace (a workspace key sees just its own). */
  onlyWorkspaceId: string | null;
  /** Leave out workspaces whose admins turned personal keys off. */
  excludePersonalKeyDisabled: boolean;
  sortBy: keyof typeof WORKSPACE_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

export class WorkspaceRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(w: Omit<Workspace, 'memberCount' | 'plan'>): Promise<void> {
    await this.db.run(
      `INSERT INTO workspaces (id, name, color, logo_url, owner_id, allow_personal_keys, billing_account_id, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [w.id, w.name, w.color, w.logoUrl, w.ownerId, w.allowPersonalKeys ? 1 : 0, w.billingAccountId, w.createdAt, w.updatedAt],
    );
  }

  /** Ids of the workspaces where the user holds one of the given roles. */
  async idsForMember(userId: string, roles: readonly WorkspaceRole[]): Promise<string[]> {
    const rows = await this.db.all<{ workspace_id: string }>(
      `SELECT workspace_id FROM workspace_members WHERE user_id = ? AND role IN (${roles.map(() => '?').join(', ')})`,
      [userId, ...roles],
    );
    return rows.map((r) => r.workspace_id);
  }

  async setBillingAccount(id: string, billingAccountId: string, now: string): Promise<boolean> {
    const r = await this.db.run('UPDATE workspaces SET billing_account_id = ?, updated_at = ? WHERE id = ?', [billingAccountId, now, id]);
    return r.changes > 0;
  }

  async get(id: string): Promise<Workspace | undefined> {
    const r = await this.db.get<WorkspaceRow>(`${SELECT} WHERE w.id = ?`, [id]);
    return r && toWorkspace(r);
  }

  async list(q: WorkspaceListQuery): Promise<Workspace[]> {
    const page = keyset({ column: WORKSPACE_SORT_COLUMNS[q.sortBy], idColumn: 'w.id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.memberId];
    let where = page.where;
    params.push(...page.whereParams);
    if (q.onlyWorkspaceId) {
      where += ' AND w.id = ?';
      params.push(q.onlyWorkspaceId);
    }
    if (q.excludePersonalKeyDisabled) where += ' AND w.allow_personal_keys = 1';
    const rows = await this.db.all<WorkspaceRow>(
      `${SELECT} JOIN workspace_members m ON m.workspace_id = w.id AND m.user_id = ? WHERE ${where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      params,
    );
    return rows.map(toWorkspace);
  }

  async setAllowPersonalKeys(id: string, allow: boolean, now: string): Promise<boolean> {
    const r = await this.db.run('UPDATE workspaces SET allow_personal_keys = ?, updated_at = ? WHERE id = ?', [allow ? 1 : 0, now, id]);
    return r.changes > 0;
  }
}

// Organizations, their members (exactly one owner; a user in at most one organization), per-person credit
// limits and the workspaces they own. Rules beyond what the indexes hold live in src/organizations/.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type OrganizationRole = 'owner' | 'admin' | 'member';

export interface Organization {
  id: string;
  name: string;
  slug: string;
  logo: string | null;
  billingAccountId: string;
  createdAt: string;
  updatedAt: string;
}

export interface OrganizationMember {
  organizationId: string;
  userId: string;
  name: string;
  email: string;
  role: OrganizationRole;
  joinedAt: string;
}

/** An organization as one of its members sees it. */
export interface MemberOrganization extends Organization {
  role: OrganizationRole;
}

interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  logo: string | null;
  billing_account_id: string;
  created_at: string;
  updated_at: string;
  role?: OrganizationRole;
}

const toOrganization = (r: OrganizationRow): Organization => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  logo: r.logo,
  billingAccountId: r.billing_account_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface MemberRow {
  organization_id: string;
  user_id: string;
  name: string;
  email: string;
  role: OrganizationRole;
  joined_at: string;
}

const toMember = (r: MemberRow): OrganizationMember => ({
  organizationId: r.organization_id,
  userId: r.user_id,
  name: r.name,
  email: r.email,
  role: r.role,
  joinedAt: r.joined_at,
});

export const ORGANIZATION_SORT_COLUMNS = { name: 'o.name', createdAt: 'o.created_at' } as const;
export const ORGANIZATION_MEMBER_SORT_COLUMNS = { name: 'u.name', email: 'u.email', joinedAt: 'm.joined_at' } as const;
export const ORGANIZATION_WORKSPACE_SORT_COLUMNS = { name: 'w.name', id: 'w.id' } as const;

interface Page<S extends string> {
  search?: string;
  sortBy: S;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

export class OrganizationRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  // ---- organizations

  async insert(o: Organization): Promise<void> {
    await this.db.run(
      'INSERT INTO organizations (id, name, slug, logo, billing_account_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [o.id, o.name, o.slug, o.logo, o.billingAccountId, o.createdAt, o.updatedAt],
    );
  }

  async get(id: string): Promise<Organization | undefined> {
    const r = await this.db.get<OrganizationRow>('SELECT * FROM organizations WHERE id = ?', [id]);
    return r && toOrganization(r);
  }

  /** Every organization with its owner (the admin command's list). */
  async listAll(): Promise<(Organization & { ownerId: string | null })[]> {
    const rows = await this.db.all<OrganizationRow & { owner_id: string | null }>(
      "SELECT o.*, m.user_id AS owner_id FROM organizations o LEFT JOIN organization_members m ON m.organization_id = o.id AND m.role = 'owner' ORDER BY o.name, o.id",
    );
    return rows.map((r) => ({ ...toOrganization(r), ownerId: r.owner_id }));
  }

  async slugTaken(slug: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM organizations WHERE slug = ?', [slug])) !== undefined;
  }

  async update(id: string, change: { name?: string; logo?: string | null }, now: string): Promise<boolean> {
    const sets: string[] = [];
    const args: SqlValue[] = [];
    if (change.name !== undefined) (sets.push('name = ?'), args.push(change.name));
    if (change.logo !== undefined) (sets.push('logo = ?'), args.push(change.logo));
    sets.push('updated_at = ?');
    args.push(now, id);
    return (await this.db.run(`UPDATE organizations SET ${sets.join(', ')} WHERE id = ?`, args)).changes > 0;
  }

  /** The organizations `userId` belongs to (at most one), with the user's role. */
  async listForMember(userId: string, q: Page<keyof typeof ORGANIZATION_SORT_COLUMNS>): Promise<MemberOrganization[]> {
    const page = keyset({ column: ORGANIZATION_SORT_COLUMNS[q.sortBy], idColumn: 'o.id', order: q.sortOrder, after: q.after, limit: q.limit });
    const rows = await this.db.all<OrganizationRow & { role: OrganizationRole }>(
      `SELECT o.*, m.role FROM organizations o JOIN organization_members m ON m.organization_id = o.id AND m.user_id = ?
       WHERE (CAST(? AS TEXT) IS NULL OR ${this.db.dialect.contains('lower(o.name)', 'lower(?)')}) AND ${page.where}
       ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [userId, q.search ?? null, q.search ?? null, ...page.whereParams],
    );
    return rows.map((r) => ({ ...toOrganization(r), role: r.role }));
  }

  // ---- members

  async addMember(organizationId: string, userId: string, role: OrganizationRole, joinedAt: string): Promise<void> {
    await this.db.run('INSERT INTO organization_members (organization_id, user_id, role, joined_at) VALUES (?, ?, ?, ?)', [
      organizationId,
      userId,
      role,
      joinedAt,
    ]);
  }

  /** The one organization a user belongs to, with their role. */
  async membershipOf(userId: string): Promise<{ organizationId: string; role: OrganizationRole } | undefined> {
    const r = await this.db.get<{ organization_id: string; role: OrganizationRole }>(
      'SELECT organization_id, role FROM organization_members WHERE user_id = ?',
      [userId],
    );
    return r && { organizationId: r.organization_id, role: r.role };
  }

  async member(organizationId: string, userId: string): Promise<OrganizationMember | undefined> {
    const r = await this.db.get<MemberRow>(
      `SELECT m.organization_id, m.user_id, m.role, m.joined_at, u.name, u.email
       FROM organization_members m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ? AND m.user_id = ?`,
      [organizationId, userId],
    );
    return r && toMember(r);
  }

  async listMembers(organizationId: string, q: Page<keyof typeof ORGANIZATION_MEMBER_SORT_COLUMNS>): Promise<OrganizationMember[]> {
    const page = keyset({ column: ORGANIZATION_MEMBER_SORT_COLUMNS[q.sortBy], idColumn: 'm.user_id', order: q.sortOrder, after: q.after, limit: q.limit });
    const d = this.db.dialect;
    const rows = await this.db.all<MemberRow>(
      `SELECT m.organization_id, m.user_id, m.role, m.joined_at, u.name, u.email
       FROM organization_members m JOIN users u ON u.id = m.user_id
       WHERE m.organization_id = ? AND (CAST(? AS TEXT) IS NULL OR ${d.contains('lower(u.name)', 'lower(?)')} OR ${d.contains('lower(u.email)', 'lower(?)')})
         AND ${page.where}
       ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [organizationId, q.search ?? null, q.search ?? null, q.search ?? null, ...page.whereParams],
    );
    return rows.map(toMember);
  }

  /** Every member's user id (for fan-out: group membership, seat counts). */
  async memberIds(organizationId: string): Promise<string[]> {
    return (await this.db.all<{ user_id: string }>('SELECT user_id FROM organization_members WHERE organization_id = ? ORDER BY user_id', [organizationId])).map(
      (r) => r.user_id,
    );
  }

  async setRole(organizationId: string, userId: string, role: OrganizationRole): Promise<boolean> {
    return (await this.db.run('UPDATE organization_members SET role = ? WHERE organization_id = ? AND user_id = ?', [role, organizationId, userId])).changes > 0;
  }

  async removeMember(organizationId: string, userId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM organization_members WHERE organization_id = ? AND user_id = ?', [organizationId, userId])).changes > 0;
  }

  // ---- per-person credit limits

  async creditLimit(organizationId: string, userId: string): Promise<number | null> {
    const r = await this.db.get<{ credit_limit: number }>('SELECT credit_limit FROM organization_credit_limits WHERE organization_id = ? AND user_id = ?', [
      organizationId,
      userId,
    ]);
    return r ? Number(r.credit_limit) : null;
  }

  /** null clears the cap. */
  async setCreditLimit(organizationId: string, userId: string, creditLimit: number | null, now: string): Promise<void> {
    if (creditLimit === null) {
      await this.db.run('DELETE FROM organization_credit_limits WHERE organization_id = ? AND user_id = ?', [organizationId, userId]);
      return;
    }
    await this.db.run(
      `INSERT INTO organization_credit_limits (organization_id, user_id, credit_limit, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (organization_id, user_id) DO UPDATE SET credit_limit = excluded.credit_limit, updated_at = excluded.updated_at`,
      [organizationId, userId, creditLimit, now],
    );
  }

  // ---- workspaces

  /** The organization that owns a workspace, or null for a personal one (undefined: no such workspace). */
  async organizationOfWorkspace(workspaceId: string): Promise<string | null | undefined> {
    const r = await this.db.get<{ organization_id: string | null }>('SELECT organization_id FROM workspaces WHERE id = ?', [workspaceId]);
    return r ? r.organization_id : undefined;
  }

  /** Moves a workspace into an organization (billing to `billingAccountId`), or out of it. */
  async setWorkspaceOrganization(workspaceId: string, organizationId: string | null, billingAccountId: string, now: string): Promise<boolean> {
    return (
      await this.db.run('UPDATE workspaces SET organization_id = ?, billing_account_id = ?, updated_at = ? WHERE id = ?', [
        organizationId,
        billingAccountId,
        now,
        workspaceId,
      ])
    ).changes > 0;
  }

  async workspaceIds(organizationId: string): Promise<string[]> {
    return (await this.db.all<{ id: string }>('SELECT id FROM workspaces WHERE organization_id = ? ORDER BY id', [organizationId])).map((r) => r.id);
  }

  async listWorkspaces(organizationId: string, q: Page<keyof typeof ORGANIZATION_WORKSPACE_SORT_COLUMNS>): Promise<{ id: string; name: string }[]> {
    const page = keyset({ column: ORGANIZATION_WORKSPACE_SORT_COLUMNS[q.sortBy], idColumn: 'w.id', order: q.sortOrder, after: q.after, limit: q.limit });
    return this.db.all<{ id: string; name: string }>(
      `SELECT w.id, w.name FROM workspaces w
       WHERE w.organization_id = ? AND (CAST(? AS TEXT) IS NULL OR ${this.db.dialect.contains('lower(w.name)', 'lower(?)')}) AND ${page.where}
       ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [organizationId, q.search ?? null, q.search ?? null, ...page.whereParams],
    );
  }

  /** Users with access to one of the organization's workspaces who are not its members (external collaborators). */
  async isExternalCollaborator(organizationId: string, userId: string): Promise<boolean> {
    const r = await this.db.get(
      `SELECT 1 AS x FROM workspace_members wm JOIN workspaces w ON w.id = wm.workspace_id
       WHERE w.organization_id = ? AND wm.user_id = ?
         AND NOT EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = ? AND m.user_id = ?)`,
      [organizationId, userId, organizationId, userId],
    );
    return r !== undefined;
  }

  // ---- usage charged to the organization (usage_records of its billing account)

  /** Usage records charged to `billingAccountId` in [from, to), with the names reports label them by. */
  async usageIn(billingAccountId: string, from: string, to: string, workspaceId: string | null): Promise<OrganizationUsageRow[]> {
    const rows = await this.db.all<Record<string, unknown>>(
      `SELECT u.recorded_at, u.cost, u.category, u.user_id, u.workspace_id, u.workflow_id,
              us.name AS user_name, us.email AS user_email, ws.name AS workspace_name, wf.name AS workflow_name
       FROM usage_records u
       LEFT JOIN users us ON us.id = u.user_id LEFT JOIN workspaces ws ON ws.id = u.workspace_id LEFT JOIN workflows wf ON wf.id = u.workflow_id
       WHERE u.billing_account_id = ? AND u.recorded_at >= ? AND u.recorded_at < ? AND (CAST(? AS TEXT) IS NULL OR u.workspace_id = ?)`,
      [billingAccountId, from, to, workspaceId, workspaceId],
    );
    return rows.map((r) => ({
      recordedAt: String(r.recorded_at),
      cost: Number(r.cost),
      category: String(r.category),
      userId: (r.user_id as string | null) ?? null,
      userLabel: (r.user_name as string | null) ?? (r.user_email as string | null) ?? null,
      workspaceId: String(r.workspace_id),
      workspaceName: (r.workspace_name as string | null) ?? null,
      workflowId: (r.workflow_id as string | null) ?? null,
      workflowName: (r.workflow_name as string | null) ?? null,
    }));
  }

  /** What one person's use cost the account in [from, to). */
  async usageCostOf(billingAccountId: string, userId: string, from: string, to: string): Promise<number> {
    const r = await this.db.get<{ cost: number | null }>(
      'SELECT SUM(cost) AS cost FROM usage_records WHERE billing_account_id = ? AND user_id = ? AND recorded_at >= ? AND recorded_at < ?',
      [billingAccountId, userId, from, to],
    );
    return Number(r?.cost ?? 0);
  }
}

export interface OrganizationUsageRow {
  recordedAt: string;
  cost: number;
  category: string;
  userId: string | null;
  userLabel: string | null;
  workspaceId: string;
  workspaceName: string | null;
  workflowId: string | null;
  workflowName: string | null;
}

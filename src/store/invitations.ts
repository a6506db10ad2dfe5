// Invitations to an organization or to workspaces, and their per-workspace grants. The rules (who may invite,
// one pending invitation per e-mail and organization, expiry, accepting) live in src/organizations/invitations.ts.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';
import type { WorkspaceRole } from './workspaces.ts';

export type InvitationStatus = 'pending' | 'accepted' | 'rejected' | 'cancelled' | 'expired';

export interface Invitation {
  id: string;
  organizationId: string | null;
  email: string;
  role: 'member' | 'admin';
  kind: 'organization' | 'workspace';
  membershipIntent: 'internal' | 'external';
  status: InvitationStatus;
  tokenHash: string;
  invitedBy: string | null;
  createdAt: string;
  expiresAt: string;
  updatedAt: string;
}

export interface InvitationGrant {
  workspaceId: string;
  name: string;
  permission: WorkspaceRole;
}

interface Row {
  id: string;
  organization_id: string | null;
  email: string;
  role: 'member' | 'admin';
  kind: 'organization' | 'workspace';
  membership_intent: 'internal' | 'external';
  status: InvitationStatus;
  token_hash: string;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
  updated_at: string;
}

const toInvitation = (r: Row): Invitation => ({
  id: r.id,
  organizationId: r.organization_id,
  email: r.email,
  role: r.role,
  kind: r.kind,
  membershipIntent: r.membership_intent,
  status: r.status,
  tokenHash: r.token_hash,
  invitedBy: r.invited_by,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  updatedAt: r.updated_at,
});

export const INVITATION_SORT_COLUMNS = { email: 'email', createdAt: 'created_at' } as const;
export const GRANT_SORT_COLUMNS = { name: 'w.name', id: 'w.id' } as const;

export class InvitationRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(i: Invitation): Promise<void> {
    await this.db.run(
      `INSERT INTO invitations (id, organization_id, email, role, kind, membership_intent, status, token_hash, invited_by, created_at, expires_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [i.id, i.organizationId, i.email, i.role, i.kind, i.membershipIntent, i.status, i.tokenHash, i.invitedBy, i.createdAt, i.expiresAt, i.updatedAt],
    );
  }

  async delete(id: string): Promise<void> {
    await this.db.run('DELETE FROM invitations WHERE id = ?', [id]);
  }

  async get(id: string): Promise<Invitation | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM invitations WHERE id = ?', [id]);
    return r && toInvitation(r);
  }

  async getByTokenHash(tokenHash: string): Promise<Invitation | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM invitations WHERE token_hash = ?', [tokenHash]);
    return r && toInvitation(r);
  }

  /** The pending invitation of an e-mail (lower-cased) in an organization, whatever its expiry. */
  async pendingFor(organizationId: string, email: string): Promise<Invitation | undefined> {
    const r = await this.db.get<Row>("SELECT * FROM invitations WHERE organization_id = ? AND email = ? AND status = 'pending'", [organizationId, email]);
    return r && toInvitation(r);
  }

  /** A pending, unexpired invitation of `email` that grants `workspaceId`. */
  async pendingForWorkspace(workspaceId: string, email: string, now: string): Promise<Invitation | undefined> {
    const r = await this.db.get<Row>(
      `SELECT i.* FROM invitations i JOIN invitation_workspace_grants g ON g.invitation_id = i.id
       WHERE g.workspace_id = ? AND i.email = ? AND i.status = 'pending' AND i.expires_at > ?`,
      [workspaceId, email, now],
    );
    return r && toInvitation(r);
  }

  /** Marks pending invitations past their expiry as expired (all, or one organization's); returns how many. */
  async expireDue(now: string, organizationId?: string): Promise<number> {
    const scope = organizationId === undefined ? '' : ' AND organization_id = ?';
    const args: SqlValue[] = [now, now, ...(organizationId === undefined ? [] : [organizationId])];
    return (await this.db.run(`UPDATE invitations SET status = 'expired', updated_at = ? WHERE status = 'pending' AND expires_at <= ?${scope}`, args)).changes;
  }

  /** Moves a pending invitation to a final status; false when it was no longer pending. */
  async settle(id: string, status: Exclude<InvitationStatus, 'pending'>, now: string): Promise<boolean> {
    return (await this.db.run("UPDATE invitations SET status = ?, updated_at = ? WHERE id = ? AND status = 'pending'", [status, now, id])).changes > 0;
  }

  /** A new accept-link token and a fresh expiry, for a pending invitation. */
  async rotate(id: string, tokenHash: string, expiresAt: string, now: string): Promise<boolean> {
    return (
      await this.db.run("UPDATE invitations SET token_hash = ?, expires_at = ?, updated_at = ? WHERE id = ? AND status = 'pending'", [tokenHash, expiresAt, now, id])
    ).changes > 0;
  }

  async setKind(id: string, kind: Invitation['kind'], now: string): Promise<void> {
    await this.db.run('UPDATE invitations SET kind = ?, updated_at = ? WHERE id = ?', [kind, now, id]);
  }

  async list(
    organizationId: string,
    q: { search?: string; status?: InvitationStatus; sortBy: keyof typeof INVITATION_SORT_COLUMNS; sortOrder: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number },
  ): Promise<Invitation[]> {
    const page = keyset({ column: INVITATION_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const rows = await this.db.all<Row>(
      `SELECT * FROM invitations WHERE organization_id = ? AND (CAST(? AS TEXT) IS NULL OR ${this.db.dialect.contains('email', 'lower(?)')})
         AND (CAST(? AS TEXT) IS NULL OR status = ?) AND ${page.where}
       ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [organizationId, q.search ?? null, q.search ?? null, q.status ?? null, q.status ?? null, ...page.whereParams],
    );
    return rows.map(toInvitation);
  }

  // ---- grants

  async putGrant(invitationId: string, workspaceId: string, permission: WorkspaceRole): Promise<void> {
    await this.db.run(
      `INSERT INTO invitation_workspace_grants (invitation_id, workspace_id, permission) VALUES (?, ?, ?)
       ON CONFLICT (invitation_id, workspace_id) DO UPDATE SET permission = excluded.permission`,
      [invitationId, workspaceId, permission],
    );
  }

  async grants(invitationId: string): Promise<InvitationGrant[]> {
    return (
      await this.db.all<{ workspace_id: string; name: string; permission: WorkspaceRole }>(
        `SELECT g.workspace_id, w.name, g.permission FROM invitation_workspace_grants g JOIN workspaces w ON w.id = g.workspace_id
         WHERE g.invitation_id = ? ORDER BY w.name, w.id`,
        [invitationId],
      )
    ).map((r) => ({ workspaceId: r.workspace_id, name: r.name, permission: r.permission }));
  }

  async listGrants(
    invitationId: string,
    q: { search?: string; sortBy: keyof typeof GRANT_SORT_COLUMNS; sortOrder: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number },
  ): Promise<InvitationGrant[]> {
    const page = keyset({ column: GRANT_SORT_COLUMNS[q.sortBy], idColumn: 'w.id', order: q.sortOrder, after: q.after, limit: q.limit });
    return (
      await this.db.all<{ workspace_id: string; name: string; permission: WorkspaceRole }>(
        `SELECT g.workspace_id, w.name, g.permission FROM invitation_workspace_grants g JOIN workspaces w ON w.id = g.workspace_id
         WHERE g.invitation_id = ? AND (CAST(? AS TEXT) IS NULL OR ${this.db.dialect.contains('lower(w.name)', 'lower(?)')}) AND ${page.where}
         ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
        [invitationId, q.search ?? null, q.search ?? null, ...page.whereParams],
      )
    ).map((r) => ({ workspaceId: r.workspace_id, name: r.name, permission: r.permission }));
  }
}

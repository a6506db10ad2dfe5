// Access requests and each organization's switch for them. The status machine and who may move a request
// live in src/access-control/requests.ts; here they are rows.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type AccessRequestStatus = 'pending' | 'fulfilled' | 'declined' | 'cancelled' | 'closed';

export interface AccessRequestRecord {
  id: string;
  organizationId: string;
  workspaceId: string | null;
  requesterId: string;
  targetKind: string;
  targetId: string;
  targetLabel: string;
  reason: string;
  status: AccessRequestStatus;
  decisionReason: string | null;
  decidedBy: string | null;
  groupId: string | null;
  groupName: string | null;
  createdAt: string;
  decidedAt: string | null;
  requesterName: string | null;
  requesterEmail: string;
}

interface Row {
  id: string;
  organization_id: string;
  workspace_id: string | null;
  requester_id: string;
  target_kind: string;
  target_id: string;
  target_label: string;
  reason: string;
  status: AccessRequestStatus;
  decision_reason: string | null;
  decided_by: string | null;
  group_id: string | null;
  group_name: string | null;
  created_at: string;
  decided_at: string | null;
  requester_name: string | null;
  requester_email: string | null;
}

const toRecord = (r: Row): AccessRequestRecord => ({
  id: r.id,
  organizationId: r.organization_id,
  workspaceId: r.workspace_id,
  requesterId: r.requester_id,
  targetKind: r.target_kind,
  targetId: r.target_id,
  targetLabel: r.target_label,
  reason: r.reason,
  status: r.status,
  decisionReason: r.decision_reason,
  decidedBy: r.decided_by,
  groupId: r.group_id,
  groupName: r.group_name,
  createdAt: r.created_at,
  decidedAt: r.decided_at,
  requesterName: r.requester_name,
  requesterEmail: r.requester_email ?? '',
});

const SELECT = `SELECT a.*, u.name AS requester_name, u.email AS requester_email FROM access_requests a LEFT JOIN users u ON u.id = a.requester_id`;

export const ACCESS_REQUEST_SORT_COLUMNS = { createdAt: 'a.created_at', targetLabel: 'a.target_label' } as const;

export interface AccessRequestQuery {
  organizationId: string;
  /** Only this person's requests. */
  requesterId?: string;
  /** Only requests filed in this workspace. */
  workspaceId?: string;
  status?: AccessRequestStatus;
  /** Substring of the target label or the requester's name or e-mail. */
  search?: string;
  sortBy: keyof typeof ACCESS_REQUEST_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

export class AccessRequestRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(r: Omit<AccessRequestRecord, 'requesterName' | 'requesterEmail'>): Promise<void> {
    await this.db.run(
      `INSERT INTO access_requests (id, organization_id, workspace_id, scope_id, requester_id, target_kind, target_id, target_label, reason, status,
         decision_reason, decided_by, group_id, group_name, created_at, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        r.id,
        r.organizationId,
        r.workspaceId,
        r.workspaceId ?? '',
        r.requesterId,
        r.targetKind,
        r.targetId,
        r.targetLabel,
        r.reason,
        r.status,
        r.decisionReason,
        r.decidedBy,
        r.groupId,
        r.groupName,
        r.createdAt,
        r.decidedAt,
      ],
    );
  }

  async get(id: string): Promise<AccessRequestRecord | undefined> {
    const r = await this.db.get<Row>(`${SELECT} WHERE a.id = ?`, [id]);
    return r && toRecord(r);
  }

  /** Moves a pending request to a final status; false when it is no longer pending (someone else moved it). */
  async settle(id: string, change: { status: Exclude<AccessRequestStatus, 'pending'>; decisionReason: string | null; decidedBy: string | null; decidedAt: string }): Promise<boolean> {
    return (
      await this.db.run(`UPDATE access_requests SET status = ?, decision_reason = ?, decided_by = ?, decided_at = ? WHERE id = ? AND status = 'pending'`, [
        change.status,
        change.decisionReason,
        change.decidedBy,
        change.decidedAt,
        id,
      ])
    ).changes > 0;
  }

  /** The requester's pending requests in the organization (to show on discovery, and to close when granted). */
  async pendingOf(organizationId: string, requesterId: string): Promise<AccessRequestRecord[]> {
    return (await this.db.all<Row>(`${SELECT} WHERE a.organization_id = ? AND a.requester_id = ? AND a.status = 'pending' ORDER BY a.created_at, a.id`, [organizationId, requesterId])).map(
      toRecord,
    );
  }

  /** Pending requests filed while `groupId` governed the requester. */
  async pendingForGroup(groupId: string): Promise<AccessRequestRecord[]> {
    return (await this.db.all<Row>(`${SELECT} WHERE a.group_id = ? AND a.status = 'pending' ORDER BY a.created_at, a.id`, [groupId])).map(toRecord);
  }

  async list(q: AccessRequestQuery): Promise<AccessRequestRecord[]> {
    const page = keyset({ column: ACCESS_REQUEST_SORT_COLUMNS[q.sortBy], idColumn: 'a.id', order: q.sortOrder, after: q.after, limit: q.limit });
    const d = this.db.dialect;
    const search = q.search ?? null;
    const rows = await this.db.all<Row>(
      `${SELECT}
       WHERE a.organization_id = ? AND (CAST(? AS TEXT) IS NULL OR a.requester_id = ?) AND (CAST(? AS TEXT) IS NULL OR a.workspace_id = ?) AND (CAST(? AS TEXT) IS NULL OR a.status = ?)
         AND (CAST(? AS TEXT) IS NULL OR ${d.contains('lower(a.target_label)', 'lower(?)')} OR ${d.contains('lower(u.name)', 'lower(?)')} OR ${d.contains('lower(u.email)', 'lower(?)')})
         AND ${page.where}
       ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [
        q.organizationId,
        q.requesterId ?? null,
        q.requesterId ?? null,
        q.workspaceId ?? null,
        q.workspaceId ?? null,
        q.status ?? null,
        q.status ?? null,
        search,
        search,
        search,
        search,
        ...page.whereParams,
      ],
    );
    return rows.map(toRecord);
  }

  // ---- the organization switch

  async allowRequests(organizationId: string): Promise<boolean> {
    const r = await this.db.get<{ allow_requests: number }>('SELECT allow_requests FROM organization_access_settings WHERE organization_id = ?', [organizationId]);
    return r ? Number(r.allow_requests) === 1 : true;
  }

  async setAllowRequests(organizationId: string, allow: boolean, now: string): Promise<void> {
    await this.db.run(
      `INSERT INTO organization_access_settings (organization_id, allow_requests, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (organization_id) DO UPDATE SET allow_requests = excluded.allow_requests, updated_at = excluded.updated_at`,
      [organizationId, allow ? 1 : 0, now],
    );
  }
}

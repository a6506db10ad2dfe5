import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface AuditEvent {
  id: string;
  createdAt: string;
  workspaceId: string | null;
  actorUserId: string | null;
  actorName: string | null;
  actorEmail: string | null;
  credentialKind: string | null;
  credentialId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  resourceName: string | null;
  description: string | null;
  metadata: Record<string, unknown>;
}

interface Row {
  id: string;
  created_at: string;
  workspace_id: string | null;
  actor_user_id: string | null;
  actor_name: string | null;
  actor_email: string | null;
  credential_kind: string | null;
  credential_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  resource_name: string | null;
  description: string | null;
  metadata: string;
}

const toEvent = (r: Row): AuditEvent => ({
  id: r.id,
  createdAt: r.created_at,
  workspaceId: r.workspace_id,
  actorUserId: r.actor_user_id,
  actorName: r.actor_name,
  actorEmail: r.actor_email,
  credentialKind: r.credential_kind,
  credentialId: r.credential_id,
  action: r.action,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  resourceName: r.resource_name,
  description: r.description,
  metadata: JSON.parse(r.metadata) as Record<string, unknown>,
});

export interface AuditQuery {
  /** Only events in these workspaces (the caller's reach). */
  workspaceIds: readonly string[];
  action?: string;
  resourceTypes?: readonly string[];
  resourceId?: string;
  actorEmail?: string;
  startDate?: string;
  endDate?: string;
  /** Also events by people no longer members of the event's workspace. */
  includeDeparted: boolean;
  after: readonly [SqlValue, string] | null;
  limit: number;
}

export class AuditEventRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(e: AuditEvent): Promise<void> {
    await this.db.run(
      `INSERT INTO audit_events (id, created_at, workspace_id, actor_user_id, actor_name, actor_email, credential_kind, credential_id,
         action, resource_type, resource_id, resource_name, description, metadata)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        e.id,
        e.createdAt,
        e.workspaceId,
        e.actorUserId,
        e.actorName,
        e.actorEmail,
        e.credentialKind,
        e.credentialId,
        e.action,
        e.resourceType,
        e.resourceId,
        e.resourceName,
        e.description,
        JSON.stringify(e.metadata),
      ],
    );
  }

  async get(id: string): Promise<AuditEvent | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM audit_events WHERE id = ?', [id]);
    return r && toEvent(r);
  }

  /** Newest first. */
  async list(q: AuditQuery): Promise<AuditEvent[]> {
    if (q.workspaceIds.length === 0) return [];
    const page = keyset({ column: 'created_at', idColumn: 'id', order: 'desc', after: q.after, limit: q.limit });
    const where = [`workspace_id IN (${q.workspaceIds.map(() => '?').join(', ')})`, page.where];
    const params: SqlValue[] = [...q.workspaceIds, ...page.whereParams];
    if (q.action) where.push('action = ?'), params.push(q.action);
    if (q.resourceTypes?.length) {
      where.push(`resource_type IN (${q.resourceTypes.map(() => '?').join(', ')})`);
      params.push(...q.resourceTypes);
    }
    if (q.resourceId) where.push('resource_id = ?'), params.push(q.resourceId);
    if (q.actorEmail) where.push('lower(actor_email) = lower(?)'), params.push(q.actorEmail);
    if (q.startDate) where.push('created_at >= ?'), params.push(q.startDate);
    if (q.endDate) where.push('created_at <= ?'), params.push(q.endDate);
    if (!q.includeDeparted) {
      where.push(
        '(actor_user_id IS NULL OR EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = audit_events.workspace_id AND m.user_id = audit_events.actor_user_id))',
      );
    }
    const rows = await this.db.all<Row>(`SELECT * FROM audit_events WHERE ${where.join(' AND ')} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params);
    return rows.map(toEvent);
  }

  async count(): Promise<number> {
    return Number((await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM audit_events'))?.n ?? 0);
  }
}

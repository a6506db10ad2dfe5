// Durable receipts of committed workspace mutations. The receipt is stored as the JSON the API answers, so
// what a client polls is exactly what the mutation answered (and what follow-up work updated since).
import type { SqlExecutor } from './database.ts';
import { limitClause } from './keyset.ts';

export interface WorkspaceOperationRecord {
  id: string;
  workspaceId: string;
  requestId: string;
  kind: string;
  status: string;
  /** What the request asked for; a retry with the same request id must ask for the same. */
  inputFingerprint: string;
  receipt: string;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  request_id: string;
  kind: string;
  status: string;
  input_fingerprint: string;
  receipt: string;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): WorkspaceOperationRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  requestId: r.request_id,
  kind: r.kind,
  status: r.status,
  inputFingerprint: r.input_fingerprint,
  receipt: r.receipt,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class WorkspaceOperationRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(o: WorkspaceOperationRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO workspace_operations (id, workspace_id, request_id, kind, status, input_fingerprint, receipt, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [o.id, o.workspaceId, o.requestId, o.kind, o.status, o.inputFingerprint, o.receipt, o.createdAt, o.updatedAt],
    );
  }

  async get(workspaceId: string, id: string): Promise<WorkspaceOperationRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM workspace_operations WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return r && toRecord(r);
  }

  async byRequest(workspaceId: string, requestId: string): Promise<WorkspaceOperationRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM workspace_operations WHERE workspace_id = ? AND request_id = ?', [workspaceId, requestId]);
    return r && toRecord(r);
  }

  /** Newest first (ids are time-ordered). */
  async list(q: { workspaceId: string; requestId?: string; beforeId: string | null; limit: number }): Promise<WorkspaceOperationRecord[]> {
    const rows = await this.db.all<Row>(
      `SELECT * FROM workspace_operations WHERE workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR request_id = ?) AND (CAST(? AS TEXT) IS NULL OR id < ?)
       ORDER BY id DESC ${limitClause(q.limit)}`,
      [q.workspaceId, q.requestId ?? null, q.requestId ?? null, q.beforeId, q.beforeId],
    );
    return rows.map(toRecord);
  }

  async update(id: string, fields: { status: string; receipt: string; updatedAt: string }): Promise<void> {
    await this.db.run('UPDATE workspace_operations SET status = ?, receipt = ?, updated_at = ? WHERE id = ?', [fields.status, fields.receipt, fields.updatedAt, id]);
  }
}

// Idempotency keys: one row per key in its scope (caller, workspace, operation, key). The row is written in the
// same transaction as the change the first request commits ('applied', naming what it created), and completed
// with the answer to replay. See src/http/idempotency.ts for the rules.
import type { SqlExecutor } from './database.ts';

export interface IdempotencyScope {
  /** Who: `user:<id>` for personal keys and tokens, `key:<id>` for a workspace key. */
  subject: string;
  /** Where: the workspace id, or the path of the resource an operation is addressed by. */
  scope: string;
  operationId: string;
  key: string;
}

export type IdempotencyState = 'applied' | 'completed';

export interface IdempotencyRecord extends IdempotencyScope {
  /** JSON of what identifies the request (method, path, body hash, headers). */
  fingerprint: string;
  state: IdempotencyState;
  /** The process instance that applied it and is still answering; null once nobody is (answered, or left for recovery). */
  owner: string | null;
  resourceKind: string | null;
  resourceId: string | null;
  status: number | null;
  /** JSON object of the response headers to replay. */
  headers: string | null;
  /** JSON text of the response body. */
  body: string | null;
  createdAt: string;
  expiresAt: string;
}

interface Row {
  subject: string;
  scope: string;
  operation_id: string;
  idem_key: string;
  fingerprint: string;
  state: IdempotencyState;
  owner: string | null;
  resource_kind: string | null;
  resource_id: string | null;
  status: number | null;
  headers: string | null;
  body: string | null;
  created_at: string;
  expires_at: string;
}

const toRecord = (r: Row): IdempotencyRecord => ({
  subject: r.subject,
  scope: r.scope,
  operationId: r.operation_id,
  key: r.idem_key,
  fingerprint: r.fingerprint,
  state: r.state,
  owner: r.owner,
  resourceKind: r.resource_kind,
  resourceId: r.resource_id,
  status: r.status === null ? null : Number(r.status),
  headers: r.headers,
  body: r.body,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const WHERE = 'subject = ? AND scope = ? AND operation_id = ? AND idem_key = ?';
const at = (s: IdempotencyScope) => [s.subject, s.scope, s.operationId, s.key];

export class IdempotencyKeyRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(s: IdempotencyScope): Promise<IdempotencyRecord | undefined> {
    const row = await this.db.get<Row>(`SELECT * FROM idempotency_keys WHERE ${WHERE}`, at(s));
    return row ? toRecord(row) : undefined;
  }

  /**
   * In the transaction of the request's change: the key is applied (with what the change created) together
   * with it. False when a live row of another owner holds the key (the caller rolls its change back).
   */
  async apply(s: IdempotencyScope, fingerprint: string, owner: string, resource: { kind: string; id: string } | null, now: string, expiresAt: string): Promise<boolean> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE} AND expires_at <= ?`, [...at(s), now]);
    const r = await this.db.run(
      `INSERT INTO idempotency_keys (subject, scope, operation_id, idem_key, fingerprint, state, owner, resource_kind, resource_id, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, 'applied', ?, ?, ?, ?, ?)
       ON CONFLICT (subject, scope, operation_id, idem_key) DO UPDATE SET
         resource_kind = COALESCE(excluded.resource_kind, idempotency_keys.resource_kind),
         resource_id = COALESCE(excluded.resource_id, idempotency_keys.resource_id)
       WHERE idempotency_keys.owner = excluded.owner AND idempotency_keys.state = 'applied'`,
      [...at(s), fingerprint, owner, resource?.kind ?? null, resource?.id ?? null, now, expiresAt],
    );
    return r.changes === 1;
  }

  /** Stores the answer to replay (the row exists when the request's change applied it, else it is created). */
  async complete(s: IdempotencyScope, fingerprint: string, answer: { status: number; headers: string; body: string | null }, now: string, expiresAt: string): Promise<void> {
    await this.db.run(
      `INSERT INTO idempotency_keys (subject, scope, operation_id, idem_key, fingerprint, state, owner, status, headers, body, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, 'completed', NULL, ?, ?, ?, ?, ?)
       ON CONFLICT (subject, scope, operation_id, idem_key) DO UPDATE SET
         state = 'completed', owner = NULL, status = excluded.status, headers = excluded.headers, body = excluded.body`,
      [...at(s), fingerprint, answer.status, answer.headers, answer.body, now, expiresAt],
    );
  }

  /** Nobody works on it any more; a repeat answers from what it created (or says the outcome is unknown). */
  async disown(s: IdempotencyScope, owner: string): Promise<void> {
    await this.db.run(`UPDATE idempotency_keys SET owner = NULL WHERE ${WHERE} AND owner = ?`, [...at(s), owner]);
  }

  async delete(s: IdempotencyScope): Promise<void> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE}`, at(s));
  }

  /** Deletes keys past their expiry; returns how many. */
  async purgeExpired(now: string): Promise<number> {
    return (await this.db.run('DELETE FROM idempotency_keys WHERE expires_at <= ?', [now])).changes;
  }
}

// Idempotency keys: one row per key in its scope (caller, workspace, operation, key). The row is reserved
// when the first request with the key starts, marked applied in the same transaction as the change the request
// commits, and completed with the answer to replay. See src/http/idempotency.ts for the rules.
import type { SqlExecutor } from './database.ts';

export interface IdempotencyScope {
  /** Who: `user:<id>` for personal keys and tokens, `key:<id>` for a workspace key. */
  subject: string;
  /** Where: the workspace id, or the path of the resource an operation is addressed by. */
  scope: string;
  operationId: string;
  key: string;
}

export type IdempotencyState = 'processing' | 'applied' | 'completed';

export interface IdempotencyRecord extends IdempotencyScope {
  /** JSON of what identifies the request (method, path, body hash, headers). */
  fingerprint: string;
  state: IdempotencyState;
  /** The process instance working on it; null once nobody is (answered, or left for recovery). */
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

  /** Reserves the key for `owner`; false when a row already holds it. */
  async reserve(s: IdempotencyScope, fingerprint: string, owner: string, now: string, expiresAt: string): Promise<boolean> {
    const r = await this.db.run(
      `INSERT INTO idempotency_keys (subject, scope, operation_id, idem_key, fingerprint, state, owner, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, 'processing', ?, ?, ?) ON CONFLICT DO NOTHING`,
      [...at(s), fingerprint, owner, now, expiresAt],
    );
    return r.changes === 1;
  }

  /** A reservation whose process is gone and that committed nothing is taken over by `owner`. */
  async takeOver(s: IdempotencyScope, from: string | null, owner: string): Promise<boolean> {
    const r = await this.db.run(`UPDATE idempotency_keys SET owner = ? WHERE ${WHERE} AND state = 'processing' AND owner IS ?`, [owner, ...at(s), from]);
    return r.changes === 1;
  }

  /** In the transaction of the request's change: the change committed, and (optionally) what it created. */
  async markApplied(s: IdempotencyScope, owner: string, resource: { kind: string; id: string } | null): Promise<void> {
    await this.db.run(
      `UPDATE idempotency_keys SET state = 'applied', resource_kind = COALESCE(?, resource_kind), resource_id = COALESCE(?, resource_id)
       WHERE ${WHERE} AND owner = ? AND state IN ('processing', 'applied')`,
      [resource?.kind ?? null, resource?.id ?? null, ...at(s), owner],
    );
  }

  /** Stores the answer to replay. */
  async complete(s: IdempotencyScope, answer: { status: number; headers: string; body: string | null }): Promise<void> {
    await this.db.run(`UPDATE idempotency_keys SET state = 'completed', owner = NULL, status = ?, headers = ?, body = ? WHERE ${WHERE}`, [
      answer.status,
      answer.headers,
      answer.body,
      ...at(s),
    ]);
  }

  /** Nobody works on it any more; a repeat answers from what it created (or says the outcome is unknown). */
  async disown(s: IdempotencyScope, owner: string): Promise<void> {
    await this.db.run(`UPDATE idempotency_keys SET owner = NULL WHERE ${WHERE} AND owner = ?`, [...at(s), owner]);
  }

  /** Frees a key whose request changed nothing, so a retry is processed afresh. */
  async release(s: IdempotencyScope, owner: string): Promise<void> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE} AND owner = ? AND state = 'processing'`, [...at(s), owner]);
  }

  async delete(s: IdempotencyScope): Promise<void> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE}`, at(s));
  }

  /** Deletes keys past their expiry; returns how many. */
  async purgeExpired(now: string): Promise<number> {
    return (await this.db.run('DELETE FROM idempotency_keys WHERE expires_at <= ?', [now])).changes;
  }
}

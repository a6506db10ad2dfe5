// Idempotency keys: one row per key in its scope (caller, workspace, operation, key). The first request reserves
// the key ('in_flight', leased by the request's server: `lease_owner`, `lease_until`, renewed while it works),
// marks it 'applied' (naming what it created) in the same transaction as the change it commits, and completes
// it with the answer to replay. A reservation whose lease ran out (its process died before committing) frees
// the key. See src/http/idempotency.ts for the rules.
import type { SqlExecutor } from './database.ts';

export interface IdempotencyScope {
  /** Who: `user:<id>` for personal keys and tokens, `key:<id>` for a workspace key. */
  subject: string;
  /** Where: the workspace id, or the path of the resource an operation is addressed by. */
  scope: string;
  operationId: string;
  key: string;
}

export type IdempotencyState = 'in_flight' | 'applied' | 'completed';

export interface IdempotencyRecord extends IdempotencyScope {
  /** JSON of what identifies the request (method, path, body hash, headers). */
  fingerprint: string;
  state: IdempotencyState;
  /** The server instance answering it, and until when (renewed while it works); null once nobody is (answered, or left for recovery). */
  leaseOwner: string | null;
  leaseUntil: string | null;
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
  lease_owner: string | null;
  lease_until: string | null;
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
  leaseOwner: r.lease_owner,
  leaseUntil: r.lease_until,
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
   * Reserves the key for a first request (`in_flight`, leased to `owner`); undefined when reserved, else the
   * row that holds the key (in flight elsewhere, applied or completed). An expired key, or a reservation whose
   * lease ran out (its server died before committing anything), is replaced.
   */
  async reserve(s: IdempotencyScope, fingerprint: string, owner: string, now: string, leaseUntil: string, expiresAt: string): Promise<IdempotencyRecord | undefined> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE} AND (expires_at <= ? OR (state = 'in_flight' AND lease_until <= ?))`, [...at(s), now, now]);
    const r = await this.db.run(
      `INSERT INTO idempotency_keys (subject, scope, operation_id, idem_key, fingerprint, state, lease_owner, lease_until, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, 'in_flight', ?, ?, ?, ?) ON CONFLICT (subject, scope, operation_id, idem_key) DO NOTHING`,
      [...at(s), fingerprint, owner, leaseUntil, now, expiresAt],
    );
    return r.changes === 1 ? undefined : this.get(s);
  }

  /** Extends the lease of a key `owner` is still answering; false when it no longer holds it. */
  async renew(s: IdempotencyScope, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.run(`UPDATE idempotency_keys SET lease_until = ? WHERE ${WHERE} AND lease_owner = ? AND state IN ('in_flight', 'applied')`, [
      leaseUntil, ...at(s), owner,
    ]);
    return r.changes === 1;
  }

  /** Frees a reservation that committed nothing (the request failed or answered an error), if `owner` still holds it. */
  async release(s: IdempotencyScope, owner: string): Promise<void> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE} AND lease_owner = ? AND state = 'in_flight'`, [...at(s), owner]);
  }

  /**
   * In the transaction of the request's change: the key is applied (with what the change created) together
   * with it. False when the key is not `owner`'s (its reservation was lost to another request; the caller
   * rolls its change back).
   */
  async apply(s: IdempotencyScope, fingerprint: string, owner: string, resource: { kind: string; id: string } | null, now: string, expiresAt: string): Promise<boolean> {
    const held = await this.db.run(
      `UPDATE idempotency_keys SET state = 'applied', resource_kind = COALESCE(?, resource_kind), resource_id = COALESCE(?, resource_id)
       WHERE ${WHERE} AND lease_owner = ? AND state IN ('in_flight', 'applied')`,
      [resource?.kind ?? null, resource?.id ?? null, ...at(s), owner],
    );
    if (held.changes === 1) return true;
    // Not reserved first (no reservation was made for this request): applied now, unless someone holds the key.
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE} AND expires_at <= ?`, [...at(s), now]);
    const r = await this.db.run(
      `INSERT INTO idempotency_keys (subject, scope, operation_id, idem_key, fingerprint, state, lease_owner, resource_kind, resource_id, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, 'applied', ?, ?, ?, ?, ?) ON CONFLICT (subject, scope, operation_id, idem_key) DO NOTHING`,
      [...at(s), fingerprint, owner, resource?.kind ?? null, resource?.id ?? null, now, expiresAt],
    );
    return r.changes === 1;
  }

  /**
   * Stores the answer to replay (the row exists when the request's change applied it or `owner` reserved it,
   * else it is created); never over another request's reservation.
   */
  async complete(s: IdempotencyScope, fingerprint: string, owner: string, answer: { status: number; headers: string; body: string | null }, now: string, expiresAt: string): Promise<void> {
    await this.db.run(
      `INSERT INTO idempotency_keys (subject, scope, operation_id, idem_key, fingerprint, state, status, headers, body, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, 'completed', ?, ?, ?, ?, ?)
       ON CONFLICT (subject, scope, operation_id, idem_key) DO UPDATE SET
         state = 'completed', lease_owner = NULL, lease_until = NULL, status = excluded.status, headers = excluded.headers, body = excluded.body
       WHERE idempotency_keys.state <> 'in_flight' OR idempotency_keys.lease_owner = ?`,
      [...at(s), fingerprint, answer.status, answer.headers, answer.body, now, expiresAt, owner],
    );
  }

  /** Nobody works on it any more; a repeat answers from what it created (or says the outcome is unknown). */
  async disown(s: IdempotencyScope, owner: string): Promise<void> {
    await this.db.run(`UPDATE idempotency_keys SET lease_owner = NULL, lease_until = NULL WHERE ${WHERE} AND lease_owner = ?`, [...at(s), owner]);
  }

  async delete(s: IdempotencyScope): Promise<void> {
    await this.db.run(`DELETE FROM idempotency_keys WHERE ${WHERE}`, at(s));
  }

  /** Deletes keys past their expiry; returns how many. */
  async purgeExpired(now: string): Promise<number> {
    return (await this.db.run('DELETE FROM idempotency_keys WHERE expires_at <= ?', [now])).changes;
  }
}

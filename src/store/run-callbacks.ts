// Completion callbacks: a workflow's default callback URL, the URL a run reports to, the workspaces' signing
// secrets (sealed; only the last four characters are plain) and the delivery outbox with its attempt log.
// A delivery row is written in the transaction that settles its run (src/runs/transitions.ts); the worker in
// src/callbacks/ claims due rows with a lease (`lease_owner`, `lease_until`: the shape of every claimed queue,
// src/workers/lease.ts) so a delivery is never sent twice at once; a lease that expired (its process died) is
// simply due again, and whoever claims it next logs the attempt that was cut off.
import type { SqlExecutor } from './database.ts';
import { limitClause } from './keyset.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
export type AttemptOutcome = 'delivered' | 'retry' | 'failed';

export interface CallbackDefault {
  workflowId: string;
  url: string;
  updatedBy: string | null;
  updatedAt: string;
}

export interface SigningSecretRecord {
  id: string;
  workspaceId: string;
  /** Sealed with the secret vault; opened only to sign. */
  sealed: string;
  lastFour: string;
  createdBy: string | null;
  createdAt: string;
  /** Null for the current secret; when a rotation keeps the previous one signing, until when. */
  expiresAt: string | null;
}

export interface DeliveryRecord {
  id: string;
  runId: string;
  workspaceId: string;
  url: string;
  event: string;
  /** The JSON body sent, fixed when the run settled. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: string | null;
  attemptStartedAt: string | null;
  /** Who is sending the current attempt, and until when (null between attempts). */
  leaseOwner: string | null;
  leaseUntil: string | null;
  createdAt: string;
  deliveredAt: string | null;
  lastError: string | null;
}

export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  outcome: AttemptOutcome;
  nextAttemptAt: string | null;
}

interface DeliveryRow {
  id: string;
  run_id: string;
  workspace_id: string;
  url: string;
  event: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  attempt_started_at: string | null;
  lease_owner: string | null;
  lease_until: string | null;
  created_at: string;
  delivered_at: string | null;
  last_error: string | null;
}

const toDelivery = (r: DeliveryRow): DeliveryRecord => ({
  id: r.id,
  runId: r.run_id,
  workspaceId: r.workspace_id,
  url: r.url,
  event: r.event,
  payload: r.payload,
  status: r.status,
  attempts: Number(r.attempts),
  nextAttemptAt: r.next_attempt_at,
  attemptStartedAt: r.attempt_started_at,
  leaseOwner: r.lease_owner,
  leaseUntil: r.lease_until,
  createdAt: r.created_at,
  deliveredAt: r.delivered_at,
  lastError: r.last_error,
});

/** A delivery as the outbox writes it: nobody holds it yet. */
export type NewDelivery = Omit<DeliveryRecord, 'leaseOwner' | 'leaseUntil'>;

const CUT_OFF = 'The server stopped during this attempt; the delivery is sent again.';

interface SecretRow {
  id: string;
  workspace_id: string;
  sealed: string;
  last_four: string;
  created_by: string | null;
  created_at: string;
  expires_at: string | null;
}

const toSecret = (r: SecretRow): SigningSecretRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  sealed: r.sealed,
  lastFour: r.last_four,
  createdBy: r.created_by,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

export class RunCallbackRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** Deliveries still to be sent or retried (metrics); counted on the partial due index. */
  async pendingCount(): Promise<number> {
    const r = await this.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM run_callback_deliveries WHERE status = 'pending'");
    return Number(r?.n ?? 0);
  }

  // --- workflow defaults

  async getDefault(workflowId: string): Promise<CallbackDefault | undefined> {
    const r = await this.db.get<{ workflow_id: string; url: string; updated_by: string | null; updated_at: string }>(
      'SELECT * FROM workflow_callback_defaults WHERE workflow_id = ?',
      [workflowId],
    );
    return r && { workflowId: r.workflow_id, url: r.url, updatedBy: r.updated_by, updatedAt: r.updated_at };
  }

  async setDefault(d: CallbackDefault): Promise<void> {
    await this.db.run(
      `INSERT INTO workflow_callback_defaults (workflow_id, url, updated_by, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (workflow_id) DO UPDATE SET url = excluded.url, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
      [d.workflowId, d.url, d.updatedBy, d.updatedAt],
    );
  }

  async clearDefault(workflowId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM workflow_callback_defaults WHERE workflow_id = ?', [workflowId])).changes === 1;
  }

  // --- run targets

  async setTarget(runId: string, url: string, source: 'run' | 'workflow'): Promise<void> {
    await this.db.run('INSERT INTO run_callback_targets (run_id, url, source) VALUES (?, ?, ?)', [runId, url, source]);
  }

  async target(runId: string): Promise<{ url: string; source: 'run' | 'workflow' } | undefined> {
    return this.db.get<{ url: string; source: 'run' | 'workflow' }>('SELECT url, source FROM run_callback_targets WHERE run_id = ?', [runId]);
  }

  // --- signing secrets

  async insertSecret(s: SigningSecretRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO callback_signing_secrets (id, workspace_id, sealed, last_four, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [s.id, s.workspaceId, s.sealed, s.lastFour, s.createdBy, s.createdAt, s.expiresAt],
    );
  }

  /**
   * Before a new secret becomes current: every earlier previous secret stops at `at`, and the current one keeps
   * signing until `currentUntil` (= `at` for no grace).
   */
  async retireSecrets(workspaceId: string, at: string, currentUntil: string): Promise<void> {
    await this.db.run('UPDATE callback_signing_secrets SET expires_at = ? WHERE workspace_id = ? AND expires_at IS NOT NULL AND expires_at > ?', [at, workspaceId, at]);
    await this.db.run('UPDATE callback_signing_secrets SET expires_at = ? WHERE workspace_id = ? AND expires_at IS NULL', [currentUntil, workspaceId]);
  }

  /** The secrets that sign at `at`: the current one first, then a previous one still in its grace period. */
  async activeSecrets(workspaceId: string, at: string): Promise<SigningSecretRecord[]> {
    const rows = await this.db.all<SecretRow>(
      `SELECT * FROM callback_signing_secrets WHERE workspace_id = ? AND (expires_at IS NULL OR expires_at > ?)
       ORDER BY expires_at IS NOT NULL, created_at DESC, id DESC`,
      [workspaceId, at],
    );
    return rows.map(toSecret);
  }

  // --- deliveries

  async insertDelivery(d: NewDelivery): Promise<void> {
    await this.db.run(
      `INSERT INTO run_callback_deliveries (id, run_id, workspace_id, url, event, payload, status, attempts, next_attempt_at, attempt_started_at,
         created_at, delivered_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [d.id, d.runId, d.workspaceId, d.url, d.event, d.payload, d.status, d.attempts, d.nextAttemptAt, d.attemptStartedAt, d.createdAt, d.deliveredAt, d.lastError],
    );
  }

  /** Pending deliveries due at `at` and not held by a live lease, oldest first. */
  async dueIds(at: string, limit: number): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>(
      `SELECT id FROM run_callback_deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
       ORDER BY next_attempt_at, id ${limitClause(limit)}`,
      [at, at],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Takes a due delivery for one attempt (counted now) for `owner` until `leaseUntil`; undefined when someone
   * else has it. A delivery whose previous holder's lease ran out gets that cut-off attempt logged first
   * (call inside a transaction).
   */
  async claim(id: string, at: string, owner: string, leaseUntil: string): Promise<DeliveryRecord | undefined> {
    const due = `id = ? AND status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)`;
    const prior = await this.db.get<DeliveryRow>(`SELECT * FROM run_callback_deliveries WHERE ${due}`, [id, at, at]);
    if (!prior) return undefined;
    if (prior.lease_until !== null && Number(prior.attempts) > 0) {
      await this.db.run(
        `INSERT INTO run_callback_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, outcome, next_attempt_at)
         VALUES (?, ?, ?, 0, NULL, ?, 'retry', ?) ON CONFLICT DO NOTHING`,
        [id, Number(prior.attempts), prior.attempt_started_at ?? at, CUT_OFF, at],
      );
    }
    const r = await this.db.get<DeliveryRow>(
      `UPDATE run_callback_deliveries SET attempts = attempts + 1, attempt_started_at = ?, lease_owner = ?, lease_until = ?, last_error = COALESCE(?, last_error)
       WHERE ${due} RETURNING *`,
      [at, owner, leaseUntil, prior.lease_until !== null ? CUT_OFF : null, id, at, at],
    );
    return r && toDelivery(r);
  }

  /**
   * Writes one attempt's outcome and moves the delivery accordingly, only while `owner` still holds the
   * attempt's lease (call inside a transaction); false when the lease was lost and the outcome is dropped.
   */
  async recordAttempt(a: AttemptRecord, status: DeliveryStatus, owner: string): Promise<boolean> {
    const endedAt = new Date(Date.parse(a.startedAt) + a.durationMs).toISOString();
    const moved = await this.db.run(
      `UPDATE run_callback_deliveries SET status = ?, next_attempt_at = ?, lease_owner = NULL, lease_until = NULL, attempt_started_at = NULL,
         delivered_at = ?, last_error = ? WHERE id = ? AND attempts = ? AND lease_owner = ?`,
      [status, a.nextAttemptAt, status === 'delivered' ? endedAt : null, a.error ?? (a.statusCode !== null && status !== 'delivered' ? `HTTP ${a.statusCode}` : null), a.deliveryId, a.attempt, owner],
    );
    if (moved.changes !== 1) return false;
    await this.db.run(
      'INSERT INTO run_callback_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, outcome, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [a.deliveryId, a.attempt, a.startedAt, a.durationMs, a.statusCode, a.error, a.outcome, a.nextAttemptAt],
    );
    return true;
  }

  async forRun(runId: string): Promise<DeliveryRecord[]> {
    const rows = await this.db.all<DeliveryRow>('SELECT * FROM run_callback_deliveries WHERE run_id = ? ORDER BY created_at, id', [runId]);
    return rows.map(toDelivery);
  }

  async attemptsOf(deliveryId: string): Promise<AttemptRecord[]> {
    const rows = await this.db.all<{
      delivery_id: string;
      attempt: number;
      started_at: string;
      duration_ms: number;
      status_code: number | null;
      error: string | null;
      outcome: AttemptOutcome;
      next_attempt_at: string | null;
    }>('SELECT * FROM run_callback_attempts WHERE delivery_id = ? ORDER BY attempt', [deliveryId]);
    return rows.map((r) => ({
      deliveryId: r.delivery_id,
      attempt: Number(r.attempt),
      startedAt: r.started_at,
      durationMs: Number(r.duration_ms),
      statusCode: r.status_code === null ? null : Number(r.status_code),
      error: r.error,
      outcome: r.outcome,
      nextAttemptAt: r.next_attempt_at,
    }));
  }
}

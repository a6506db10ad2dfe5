// Idempotency-Key for the operations the spec marks `x-idempotent` (execute and every create operation).
//
// A key is scoped to (caller, workspace, operation, key): the caller is the user behind a personal key or an
// OAuth token, or the workspace key itself; the workspace is the one the request names, or, for an operation
// addressed by a resource (execute names a workflow), that resource's path. The first request with a key
// reserves it; its change and the mark "applied" (with what it created, e.g. the run) commit in one
// transaction (ctx.mutate); its 2xx answer is then stored and a repeat with the same fingerprint (method,
// path, canonical body hash, declared headers such as X-Run-Id) gets it back with `Idempotent-Replayed: true`.
// While the first request is processed, its key is reserved in the database ('in_flight', leased to this server
// and renewed while it works), so every server on the database sees it; the mark "applied" commits with the
// change. A reservation whose server died before committing anything frees the key when its lease runs out.
// The requests this server is answering are also kept in memory, so a repeat here can wait for the answer.
//
// - Another fingerprint under the same key: 422 IDEMPOTENCY_KEY_REUSED, `details.conflicts` naming what differs.
// - A repeat while the first is still being processed (here or by another server): 409
//   IDEMPOTENCY_REQUEST_IN_PROGRESS + Retry-After.
// - An answer that is not a 2xx, when nothing was committed: the key is released, so a retry runs afresh
//   (a 4xx with nothing written changed nothing; a 5xx or 429 may succeed next time).
// - An answer that cannot be stored (a stream), an error after the change committed, or a crash between the
//   commit and storing the answer: the key stays "applied" and a repeat is answered from what was created,
//   through the replay source registered for its kind (runs: src/handlers/run-support.ts); without one, 409
//   IDEMPOTENCY_OUTCOME_UNKNOWN (the change was made; read it back rather than repeat it).
// - A process that died before the change committed left a reservation: once its lease runs out (LEASE_TTL_MS),
//   the retry is processed as a first request.
// Keys expire after IDEMPOTENCY_TTL_SECONDS (24 h); expired ones are purged (at most once a minute) when an
// answer is stored.
import { createHash, randomUUID } from 'node:crypto';
import type { Request } from 'express';
import type { OperationSpec } from '../../generated/operations.ts';
import type { Principal } from '../identity/principal.ts';
import type { Services } from '../services.ts';
import type { Repositories } from '../store/index.ts';
import type { IdempotencyRecord, IdempotencyScope } from '../store/idempotency-keys.ts';
import type { RequestContext } from './context.ts';
import { ApiError, conflict } from './errors.ts';
import { StreamBody } from './stream-body.ts';
import { LeaseKeeper, leaseUntil } from '../workers/lease.ts';

/** What a handler answers (the generated result types, loosely). */
export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A stored JSON body, sent as it was stored (it was validated when first sent). */
export class StoredJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * Answers a repeat from the resource the first request created when its answer was not stored (a streamed
 * run, a crash): the answer, or null while the resource is not ready to answer (a run still going).
 */
export type ReplaySource = (ctx: RequestContext, resourceId: string, requestBody: unknown) => Promise<Answer | null>;

const sources = new Map<string, ReplaySource>();

/** Registers how a repeat is answered from a resource of this kind (see ctx.createdResource). */
export function registerReplaySource(kind: string, source: ReplaySource): void {
  sources.set(kind, source);
}

const REPLAYED = 'Idempotent-Replayed';
const KEY_HEADER = 'idempotency-key';

interface Fingerprint {
  method: string;
  path: string;
  body: string;
  headers: Record<string, string>;
}

/** JSON with object keys in sorted order, so two spellings of one body hash the same. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.keys(value as object)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

function fingerprintOf(operation: OperationSpec, req: Request): Fingerprint {
  const headers: Record<string, string> = {};
  for (const name of operation.headerParams) {
    const v = req.headers[name];
    if (name !== KEY_HEADER && typeof v === 'string') headers[name] = v;
  }
  return {
    method: req.method,
    path: req.originalUrl,
    body: createHash('sha256').update(canonical(req.body ?? null)).digest('base64url'),
    headers,
  };
}

function conflictsOf(stored: string, current: string): string[] {
  if (stored === current) return [];
  const was = JSON.parse(stored) as Fingerprint;
  const now = JSON.parse(current) as Fingerprint;
  const out: string[] = [];
  if (was.method !== now.method) out.push('method');
  if (was.path !== now.path) out.push('path');
  if (was.body !== now.body) out.push('body');
  for (const name of new Set([...Object.keys(was.headers), ...Object.keys(now.headers)]).values()) {
    if (was.headers[name] !== now.headers[name]) out.push(`header ${name}`);
  }
  return out;
}

const keyReused = (conflicts: string[]) =>
  new ApiError(
    'IDEMPOTENCY_KEY_REUSED',
    `This Idempotency-Key was already used for a different request (its ${conflicts.join(', ')} differ${conflicts.length === 1 ? 's' : ''}); send a new key for a new request.`,
    { conflicts },
  );

const inProgress = () =>
  new ApiError('CONFLICT', 'A request with this Idempotency-Key is still being processed; retry shortly to get its answer.', { code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' }, { 'Retry-After': '1' });

const outcomeUnknown = () =>
  conflict(
    'A request with this Idempotency-Key was applied, but its answer was lost (the server stopped before storing it). Read the resource back instead of repeating the request, or send a new key.',
    { code: 'IDEMPOTENCY_OUTCOME_UNKNOWN' },
  );

function replay(row: IdempotencyRecord): Answer {
  const headers = { ...(JSON.parse(row.headers ?? '{}') as Record<string, string>), [REPLAYED]: 'true' };
  return { status: row.status!, headers, body: row.body === null ? undefined : new StoredJson(row.body) };
}

/**
 * Test-only fault hook: with NODE_ENV=test and IDEMPOTENCY_TEST_CRASH_BEFORE_STORE=<operationId>, the process
 * kills itself after that operation's handler answered and before the answer is stored (the crash test).
 */
function crashPointReached(operationId: string): void {
  if (process.env.NODE_ENV === 'test' && process.env.IDEMPOTENCY_TEST_CRASH_BEFORE_STORE === operationId) process.kill(process.pid, 'SIGKILL');
}

interface InFlight {
  fingerprint: string;
  /** Set once the first request answered: the write of its answer. */
  storing: Promise<void> | null;
}

/** Idempotency for one server: the process instance, the requests it is answering now, the purge pace. */
export class Idempotency {
  /** The lease owner of the keys this server reserves, so it only ever changes (releases, disowns) its own. */
  readonly owner = randomUUID();
  /**
   * Keys whose first request this server is processing, with its fingerprint: a repeat here is answered
   * without a read, and can wait for the answer being stored. The database reservation is what every server
   * (this one included) goes by.
   */
  readonly inFlight = new Map<string, InFlight>();
  private readonly services: Services;
  private nextPurge = 0;
  constructor(services: Services) {
    this.services = services;
  }

  /** The request's key handling, or null when the operation takes no key or none was sent. */
  begin(operation: OperationSpec, req: Request, principal: Principal | null, workspaceId: string | null): IdempotentRequest | null {
    if (!operation.idempotent || !principal) return null;
    const key = req.headers[KEY_HEADER];
    if (typeof key !== 'string' || key === '') return null;
    const scope: IdempotencyScope = {
      subject: principal.kind === 'workspace' ? `key:${principal.credentialId}` : `user:${principal.userId}`,
      scope: workspaceId ?? `path:${req.path}`,
      operationId: operation.operationId,
      key,
    };
    return new IdempotentRequest(this, this.services, scope, fingerprintOf(operation, req), req.body);
  }

  /** Purges expired keys at most once a minute (or once a TTL, when shorter), inside a write it makes anyway. */
  async maybePurge(tx: Repositories, now: number): Promise<void> {
    if (now < this.nextPurge) return;
    this.nextPurge = now + Math.min(60_000, this.services.config.idempotency.ttlMs);
    await tx.idempotencyKeys.purgeExpired(new Date(now).toISOString());
  }
}

export class IdempotentRequest {
  private readonly manager: Idempotency;
  private readonly services: Services;
  readonly scope: IdempotencyScope;
  private readonly id: string;
  private readonly fingerprint: string;
  private readonly body: unknown;
  private resource: { kind: string; id: string } | null = null;
  /** A ctx.mutate of this request committed (with the key applied). */
  private applied = false;
  private readonly startedAt = Date.now();

  constructor(manager: Idempotency, services: Services, scope: IdempotencyScope, fingerprint: Fingerprint, body: unknown) {
    this.manager = manager;
    this.services = services;
    this.scope = scope;
    this.id = JSON.stringify([scope.subject, scope.scope, scope.operationId, scope.key]);
    this.fingerprint = JSON.stringify(fingerprint);
    this.body = body;
  }

  private get expiresAt(): string {
    return new Date(this.startedAt + this.services.config.idempotency.ttlMs).toISOString();
  }

  /** Names what the request creates; recorded with the key by the next ctx.mutate. */
  created(kind: string, id: string): void {
    this.resource = { kind, id };
  }

  /** Inside each ctx.mutate transaction: the key is applied together with the change (or the change is refused). */
  async markApplied(tx: Repositories): Promise<void> {
    const applied = await tx.idempotencyKeys.apply(this.scope, this.fingerprint, this.manager.owner, this.resource, new Date().toISOString(), this.expiresAt);
    if (!applied) throw inProgress();
  }

  /** After that transaction committed. */
  committed(): void {
    this.applied = true;
  }

  /** Processes the request once: a repeat is answered from the first, and the first's answer is kept. */
  async run(ctx: RequestContext, invoke: () => Promise<Answer>): Promise<Answer> {
    const { inFlight } = this.manager;
    const current = inFlight.get(this.id);
    if (current !== undefined) {
      const conflicts = conflictsOf(current.fingerprint, this.fingerprint);
      if (conflicts.length > 0) throw keyReused(conflicts);
      // The first request has answered and its answer is being written: wait for it and replay it.
      if (!current.storing) throw inProgress();
      await current.storing;
      const row = await this.services.store.idempotencyKeys.get(this.scope);
      if (row?.state !== 'completed') throw inProgress();
      return replay(row);
    }
    // Taken before the first await, so parallel repeats see it.
    const entry: InFlight = { fingerprint: this.fingerprint, storing: null };
    inFlight.set(this.id, entry);
    let release = true;
    let keeper: LeaseKeeper | null = null;
    try {
      const { ttlMs, renewMs } = this.services.config.leases;
      const now = new Date().toISOString();
      const row = await this.services.store.transaction((tx) =>
        tx.idempotencyKeys.reserve(this.scope, this.fingerprint, this.manager.owner, now, leaseUntil(ttlMs), this.expiresAt),
      );
      if (row) {
        const conflicts = conflictsOf(row.fingerprint, this.fingerprint);
        if (conflicts.length > 0) throw keyReused(conflicts);
        if (row.state === 'in_flight') throw inProgress(); // reserved by a live request of another server
        return row.state === 'completed' ? replay(row) : await this.recover(ctx, row);
      }
      keeper = new LeaseKeeper(
        () => this.services.store.transaction((tx) => tx.idempotencyKeys.renew(this.scope, this.manager.owner, leaseUntil(ttlMs))),
        renewMs,
        ctx.log,
      );
      let result: Answer;
      try {
        result = await invoke();
      } catch (err) {
        await this.letGo();
        throw err;
      }
      if (result.status < 200 || result.status >= 300 || result.body instanceof StreamBody) {
        // Not stored: a request that changed nothing leaves no trace, so a retry runs afresh; one whose change
        // committed (a streamed run) is answered from what it created.
        await this.letGo();
        return result;
      }
      crashPointReached(this.scope.operationId);
      // The answer goes out while it is written; a repeat meanwhile waits for the write and replays it.
      release = false;
      entry.storing = this.store(result)
        .catch((err: unknown) => ctx.log.error({ err, operationId: this.scope.operationId }, 'storing an idempotent answer failed'))
        .finally(() => inFlight.delete(this.id));
      return result;
    } finally {
      keeper?.stop();
      if (release) inFlight.delete(this.id);
    }
  }

  /** Without a stored answer: a committed change is left for recovery from its resource; a reservation is freed. */
  private async letGo(): Promise<void> {
    if (this.applied) await this.disown();
    else await this.services.store.transaction((tx) => tx.idempotencyKeys.release(this.scope, this.manager.owner));
  }

  /** The first request's change committed but its answer was not stored: answer from what it created. */
  private async recover(ctx: RequestContext, row: IdempotencyRecord): Promise<Answer> {
    const source = row.resourceKind ? sources.get(row.resourceKind) : undefined;
    if (!source || !row.resourceId) throw outcomeUnknown();
    const answer = await source(ctx, row.resourceId, this.body);
    if (!answer) throw inProgress();
    if (answer.status >= 200 && answer.status < 300 && !(answer.body instanceof StreamBody)) await this.store(answer);
    return { ...answer, headers: { ...answer.headers, [REPLAYED]: 'true' } };
  }

  private async store(answer: Answer): Promise<void> {
    const now = Date.now();
    await this.services.store.transaction(async (tx) => {
      await this.manager.maybePurge(tx, now);
      await tx.idempotencyKeys.complete(this.scope, this.fingerprint, this.manager.owner, stored(answer), new Date(now).toISOString(), this.expiresAt);
    });
  }

  private async disown(): Promise<void> {
    await this.services.store.transaction((tx) => tx.idempotencyKeys.disown(this.scope, this.manager.owner));
  }
}

function stored(answer: Answer): { status: number; headers: string; body: string | null } {
  return { status: answer.status, headers: JSON.stringify(answer.headers ?? {}), body: answer.body === undefined ? null : JSON.stringify(answer.body) };
}

// Idempotency-Key for the operations the spec marks `x-idempotent` (execute and every create operation).
//
// A key is scoped to (caller, workspace, operation, key): the caller is the user behind a personal key or an
// OAuth token, or the workspace key itself; the workspace is the one the request names, or, for an operation
// addressed by a resource (execute names a workflow), that resource's path. The first request with a key
// reserves it; its change and the mark "applied" (with what it created, e.g. the run) commit in one
// transaction (ctx.mutate); its 2xx answer is then stored and a repeat with the same fingerprint (method,
// path, canonical body hash, declared headers such as X-Run-Id) gets it back with `Idempotent-Replayed: true`.
//
// - Another fingerprint under the same key: 422 IDEMPOTENCY_KEY_REUSED, `details.conflicts` naming what differs.
// - A repeat while the first is still being processed here: 409 IDEMPOTENCY_REQUEST_IN_PROGRESS + Retry-After.
// - An answer that is not a 2xx, when nothing was committed: the key is released, so a retry runs afresh
//   (a 4xx with nothing written changed nothing; a 5xx or 429 may succeed next time).
// - An answer that cannot be stored (a stream), an error after the change committed, or a crash between the
//   commit and storing the answer: the key stays "applied" and a repeat is answered from what was created,
//   through the replay source registered for its kind (runs: src/handlers/run-support.ts); without one, 409
//   IDEMPOTENCY_OUTCOME_UNKNOWN (the change was made; read it back rather than repeat it).
// - A reservation left by a process that died before committing anything is taken over by the retry.
// Keys expire after IDEMPOTENCY_TTL_SECONDS (24 h); expired ones are purged while claiming new ones.
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

function conflictsOf(stored: string, now: Fingerprint): string[] {
  const was = JSON.parse(stored) as Fingerprint;
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

/** Idempotency for one server: the process instance that owns reservations, and the purge pace. */
export class Idempotency {
  /** Reservations made by this process; any other owner found on a row is a process that is gone. */
  readonly owner = randomUUID();
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

  /** Purges expired keys at most once a minute (or once a TTL, when shorter), inside a claim. */
  async maybePurge(tx: Repositories, now: number): Promise<void> {
    if (now < this.nextPurge) return;
    this.nextPurge = now + Math.min(60_000, this.services.config.idempotency.ttlMs);
    await tx.idempotencyKeys.purgeExpired(new Date(now).toISOString());
  }
}

type Decision = { kind: 'claimed' } | { kind: 'conflict'; conflicts: string[] } | { kind: 'replay'; row: IdempotencyRecord } | { kind: 'busy' } | { kind: 'recover'; row: IdempotencyRecord };

export class IdempotentRequest {
  private readonly owner: string;
  private resource: { kind: string; id: string } | null = null;
  /** A ctx.mutate of this request committed (with the key marked applied). */
  private applied = false;
  private readonly fingerprint: Fingerprint;
  private readonly manager: Idempotency;
  private readonly services: Services;
  readonly scope: IdempotencyScope;
  private readonly body: unknown;

  constructor(manager: Idempotency, services: Services, scope: IdempotencyScope, fingerprint: Fingerprint, body: unknown) {
    this.manager = manager;
    this.services = services;
    this.owner = manager.owner;
    this.scope = scope;
    this.fingerprint = fingerprint;
    this.body = body;
  }

  /** Names what the request creates; recorded with the key by the next ctx.mutate. */
  created(kind: string, id: string): void {
    this.resource = { kind, id };
  }

  /** Inside each ctx.mutate transaction: the key is applied together with the change. */
  async markApplied(tx: Repositories): Promise<void> {
    await tx.idempotencyKeys.markApplied(this.scope, this.owner, this.resource);
  }

  /** After that transaction committed. */
  committed(): void {
    this.applied = true;
  }

  /** Processes the request once: a repeat is answered from the first, and the first's answer is kept. */
  async run(ctx: RequestContext, invoke: () => Promise<Answer>): Promise<Answer> {
    const early = await this.claim(ctx);
    if (early) return early;
    let result: Answer;
    try {
      result = await invoke();
    } catch (err) {
      await this.letGo();
      throw err;
    }
    await this.settle(result);
    return result;
  }

  private async claim(ctx: RequestContext): Promise<Answer | null> {
    const { store } = this.services;
    const now = Date.now();
    const nowIso = new Date(now).toISOString();
    // The common repeat, a stored answer, needs no write lock.
    const seen = await store.idempotencyKeys.get(this.scope);
    if (seen && seen.state === 'completed' && seen.expiresAt > nowIso) {
      const conflicts = conflictsOf(seen.fingerprint, this.fingerprint);
      if (conflicts.length > 0) throw keyReused(conflicts);
      return replay(seen);
    }
    const expiresAt = new Date(now + this.services.config.idempotency.ttlMs).toISOString();
    const decision = await store.transaction(async (tx): Promise<Decision> => {
      await this.manager.maybePurge(tx, now);
      let row = await tx.idempotencyKeys.get(this.scope);
      if (row && row.expiresAt <= nowIso) {
        await tx.idempotencyKeys.delete(this.scope);
        row = undefined;
      }
      if (!row) {
        await tx.idempotencyKeys.reserve(this.scope, JSON.stringify(this.fingerprint), this.owner, nowIso, expiresAt);
        return { kind: 'claimed' };
      }
      const conflicts = conflictsOf(row.fingerprint, this.fingerprint);
      if (conflicts.length > 0) return { kind: 'conflict', conflicts };
      if (row.state === 'completed') return { kind: 'replay', row };
      if (row.owner === this.owner) return { kind: 'busy' };
      // Whoever held it is gone: nothing committed means the request can simply run again.
      if (row.state === 'processing' && (await tx.idempotencyKeys.takeOver(this.scope, row.owner, this.owner))) return { kind: 'claimed' };
      return { kind: 'recover', row };
    });
    switch (decision.kind) {
      case 'claimed':
        return null;
      case 'conflict':
        throw keyReused(decision.conflicts);
      case 'replay':
        return replay(decision.row);
      case 'busy':
        throw inProgress();
      case 'recover':
        return this.recover(ctx, decision.row);
    }
  }

  /** The first request's change committed but its answer was not stored: answer from what it created. */
  private async recover(ctx: RequestContext, row: IdempotencyRecord): Promise<Answer> {
    const source = row.resourceKind ? sources.get(row.resourceKind) : undefined;
    if (!source || !row.resourceId) throw outcomeUnknown();
    const answer = await source(ctx, row.resourceId, this.body);
    if (!answer) throw inProgress();
    if (answer.status >= 200 && answer.status < 300 && !(answer.body instanceof StreamBody)) {
      await this.services.store.transaction((tx) => tx.idempotencyKeys.complete(this.scope, stored(answer)));
    }
    return { ...answer, headers: { ...answer.headers, [REPLAYED]: 'true' } };
  }

  /** The handler answered: keep a 2xx answer; otherwise release the key, or leave it for recovery if applied. */
  private async settle(result: Answer): Promise<void> {
    if (result.status < 200 || result.status >= 300 || result.body instanceof StreamBody) return this.letGo();
    crashPointReached(this.scope.operationId);
    await this.services.store.transaction((tx) => tx.idempotencyKeys.complete(this.scope, stored(result)));
  }

  private async letGo(): Promise<void> {
    await this.services.store.transaction((tx) => (this.applied ? tx.idempotencyKeys.disown(this.scope, this.owner) : tx.idempotencyKeys.release(this.scope, this.owner)));
  }
}

function stored(answer: Answer): { status: number; headers: string; body: string | null } {
  return { status: answer.status, headers: JSON.stringify(answer.headers ?? {}), body: answer.body === undefined ? null : JSON.stringify(answer.body) };
}

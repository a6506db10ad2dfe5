// Token-bucket rate limits per credential subject, one bucket each for API calls, synchronous executions and
// asynchronous executions, sized by the caller's plan. The bucket state lives behind RateLimitStore so a
// shared store (e.g. Postgres or Redis) can serve several server instances; the default is in process memory.
import type { RequestHandler } from 'express';
import type { OperationSpec } from '../../generated/operations.ts';
import type { RateBucket, RateLimits } from '../billing/plans.ts';
import type { Principal } from '../identity/principal.ts';
import type { Plan } from '../store/billing-accounts.ts';
import type { TokenBuckets } from '../store/coordination.ts';
import { ApiError } from './errors.ts';

export interface TakeResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the bucket will be full again (ms since epoch). */
  resetAtMs: number;
  /** When one more request would be allowed (ms since epoch); equals now when allowed. */
  retryAtMs: number;
}

export interface RateLimitStore {
  /** Takes one token from the bucket `key` holding `capacity` tokens refilled evenly over a minute. */
  take(key: string, capacity: number, nowMs: number): TakeResult | Promise<TakeResult>;
  /** The bucket's state without taking a token (for usage reports); optional for shared stores. */
  peek?(key: string, capacity: number, nowMs: number): Omit<TakeResult, 'allowed' | 'retryAtMs'> | Promise<Omit<TakeResult, 'allowed' | 'retryAtMs'>>;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
  capacity: number;
}

export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, Bucket>();
  private sweeps = 0;

  take(key: string, capacity: number, nowMs: number): TakeResult {
    const perMs = capacity / 60_000;
    let b = this.buckets.get(key);
    if (!b || b.capacity !== capacity) {
      b = { tokens: capacity, updatedMs: nowMs, capacity };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(capacity, b.tokens + (nowMs - b.updatedMs) * perMs);
      b.updatedMs = nowMs;
    }
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    if (++this.sweeps % 10_000 === 0) this.sweep(nowMs);
    return {
      allowed,
      limit: capacity,
      remaining: Math.floor(b.tokens),
      resetAtMs: nowMs + Math.ceil((capacity - b.tokens) / perMs),
      retryAtMs: allowed ? nowMs : nowMs + Math.ceil((1 - b.tokens) / perMs),
    };
  }

  peek(key: string, capacity: number, nowMs: number): Omit<TakeResult, 'allowed' | 'retryAtMs'> {
    const perMs = capacity / 60_000;
    const b = this.buckets.get(key);
    const tokens = !b || b.capacity !== capacity ? capacity : Math.min(capacity, b.tokens + (nowMs - b.updatedMs) * perMs);
    return { limit: capacity, remaining: Math.floor(tokens), resetAtMs: nowMs + Math.ceil((capacity - tokens) / perMs) };
  }

  /** Drops buckets that have refilled completely; they are indistinguishable from new ones. */
  private sweep(nowMs: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + (nowMs - b.updatedMs) * (b.capacity / 60_000) >= b.capacity) this.buckets.delete(key);
    }
  }
}

/**
 * Buckets the servers of one database share (Postgres): a plan's limit then holds across all of them, not once
 * per server. The arithmetic of each take runs in the database (store.tokenBuckets); this only reports it.
 */
export class SharedRateLimitStore implements RateLimitStore {
  private readonly buckets: TokenBuckets;
  constructor(buckets: TokenBuckets) {
    this.buckets = buckets;
  }

  async take(key: string, capacity: number, nowMs: number): Promise<TakeResult> {
    const perMs = capacity / 60_000;
    const { allowed, tokens } = await this.buckets.take(key, capacity, nowMs);
    return {
      allowed,
      limit: capacity,
      remaining: Math.floor(tokens),
      resetAtMs: nowMs + Math.ceil((capacity - tokens) / perMs),
      retryAtMs: allowed ? nowMs : nowMs + Math.ceil((1 - tokens) / perMs),
    };
  }

  async peek(key: string, capacity: number, nowMs: number): Promise<Omit<TakeResult, 'allowed' | 'retryAtMs'>> {
    const tokens = await this.buckets.peek(key, capacity, nowMs);
    return { limit: capacity, remaining: Math.floor(tokens), resetAtMs: nowMs + Math.ceil((capacity - tokens) / (capacity / 60_000)) };
  }
}

/** The store for a server: shared buckets when its database has them (several servers), otherwise process memory. */
export function rateLimitStoreFor(buckets: TokenBuckets | null): RateLimitStore {
  return buckets ? new SharedRateLimitStore(buckets) : new MemoryRateLimitStore();
}

/** An execution is asynchronous when its body says `async: true` or (legacy endpoint) `X-Execution-Mode: async`. */
export function bucketFor(operation: OperationSpec, body: unknown, executionMode?: string): RateBucket {
  if (operation.rateBucket !== 'execution') return 'api';
  return (body as { async?: unknown } | undefined)?.async === true || executionMode === 'async' ? 'async' : 'sync';
}

/** What the middleware reads from the services (declared here, so this module does not import the whole container). */
export interface RateLimitServices {
  config: { rateLimits: Record<Plan, RateLimits> };
  rateLimits: RateLimitStore;
}

interface RateLimitLocals {
  rateLimited?: RateBucket;
}

/** The bucket whose limit refused this request, when this middleware answered it 429 (metrics count these). */
export function rateLimitedBucket(res: { locals?: Record<string, unknown> }): RateBucket | undefined {
  return (res.locals as RateLimitLocals | undefined)?.rateLimited;
}

export function rateLimit(services: RateLimitServices, operation: OperationSpec, principalOf: (res: Parameters<RequestHandler>[1]) => Principal | null): RequestHandler {
  return async (req, res, next) => {
    try {
      // Callers of public operations are counted by address (the forwarded one from a trusted proxy), on the free plan's buckets.
      const principal = principalOf(res) ?? { subject: `address:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`, plan: 'free' as const };
      const bucket = bucketFor(operation, req.body, req.get('x-execution-mode'));
      const capacity = services.config.rateLimits[principal.plan][bucket];
      const now = Date.now();
      const r = await services.rateLimits.take(`${principal.subject}:${bucket}`, capacity, now);
      res.setHeader('X-RateLimit-Limit', String(r.limit));
      res.setHeader('X-RateLimit-Remaining', String(r.remaining));
      res.setHeader('X-RateLimit-Reset', String(Math.ceil(r.resetAtMs / 1000)));
      if (!r.allowed) {
        (res.locals as RateLimitLocals).rateLimited = bucket;
        const seconds = Math.max(1, Math.ceil((r.retryAtMs - now) / 1000));
        throw new ApiError(
          'RATE_LIMITED',
          `Rate limit of ${r.limit} ${bucket === 'api' ? 'API calls' : `${bucket} executions`} per minute reached; retry in ${seconds} s.`,
          { retryAfter: new Date(r.retryAtMs).toISOString(), bucket, limit: r.limit },
          { 'Retry-After': String(seconds) },
        );
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}

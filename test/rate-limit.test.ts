// The token bucket itself, and which bucket an operation draws from.
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore, bucketFor } from '../src/http/rate-limit.ts';
import type { OperationSpec } from '../generated/operations.ts';

describe('token bucket', () => {
  it('allows a full minute of requests at once, then refills evenly', () => {
    const store = new MemoryRateLimitStore();
    const t0 = 1_000_000;
    for (let i = 0; i < 60; i++) expect(store.take('k', 60, t0).allowed).toBe(true);
    const denied = store.take('k', 60, t0);
    expect(denied).toMatchObject({ allowed: false, limit: 60, remaining: 0 });
    expect(denied.retryAtMs - t0).toBe(1000);
    expect(denied.resetAtMs - t0).toBe(60_000);
    expect(store.take('k', 60, t0 + 999).allowed).toBe(false);
    expect(store.take('k', 60, t0 + 2000).allowed).toBe(true);
  });

  it('keeps separate buckets independent', () => {
    const store = new MemoryRateLimitStore();
    for (let i = 0; i < 10; i++) store.take('user:a:sync', 10, 0);
    expect(store.take('user:a:sync', 10, 0).allowed).toBe(false);
    expect(store.take('user:a:async', 50, 0).allowed).toBe(true);
    expect(store.take('user:a:api', 600, 0).allowed).toBe(true);
    expect(store.take('user:b:sync', 10, 0).allowed).toBe(true);
  });

  it('picks the sync or async bucket for executions by the body, and api for the rest', () => {
    const exec = { rateBucket: 'execution' } as OperationSpec;
    const plain = { rateBucket: 'api' } as OperationSpec;
    expect(bucketFor(exec, { async: true })).toBe('async');
    expect(bucketFor(exec, { async: false })).toBe('sync');
    expect(bucketFor(exec, undefined)).toBe('sync');
    expect(bucketFor(plain, { async: true })).toBe('api');
  });
});

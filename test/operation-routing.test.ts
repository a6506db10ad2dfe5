// Every operation of the spec is reachable at its path, also in upper case and with a trailing slash, now that
// routes are filed by segment count and leading segments (src/http/operation-router.ts) instead of tried in one list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS, type OperationSpec } from '../generated/operations.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '1000000', RATE_LIMIT_FREE_SYNC: '1000000', RATE_LIMIT_FREE_ASYNC: '1000000' });
});
afterAll(() => s.stop());

const concrete = (op: OperationSpec) => op.path.replace(/\{[^}]+\}/g, 'x-1');

/** The answer of noRoute (404 "No route for …" or 405) means no operation took the request. */
async function reached(op: OperationSpec, path: string): Promise<{ status: number; unrouted: boolean }> {
  const res = await s.request(path, { method: op.method.toUpperCase(), key: null });
  const text = op.method === 'head' ? '' : await res.text();
  return { status: res.status, unrouted: res.status === 405 || (res.status === 404 && text.includes('No route for')) };
}

describe('operation routing', () => {
  it('routes every operation, in any letter case and with a trailing slash', async () => {
    const misses: string[] = [];
    for (const op of Object.values(OPERATIONS) as OperationSpec[]) {
      const path = concrete(op);
      for (const variant of [path, path.toUpperCase().replace(/X-1/g, 'x-1'), `${path}/`]) {
        const r = await reached(op, variant);
        // Without a credential an operation that needs one answers 401 before anything else runs.
        if (r.unrouted || (!op.public && r.status !== 401)) misses.push(`${op.method.toUpperCase()} ${variant} -> ${r.status} (${op.operationId})`);
      }
    }
    expect(misses).toEqual([]);
  });

  it('still answers 404 for a path no operation has and 405 with Allow for a method its path lacks', async () => {
    for (const path of ['/api/v2/workspaces/x/y/z/w/v/u', '/api/v2//workspaces', '/api/v2/workspacesx', '/api']) {
      const res = await s.request(path, { key: null });
      expect(res.status, path).toBe(404);
    }
    const res = await s.request('/api/v2/workspaces', { method: 'PUT', key: null });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });
});

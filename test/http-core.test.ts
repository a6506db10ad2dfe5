// The server core through HTTP: authentication, validation, error mapping, pagination.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startTestServer, type TestServer } from './support/server.ts';
import { createApiKey, revokeApiKey, setPersonalKeysAllowed } from '../src/identity/admin.ts';
import { Gate } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ BODY_LIMIT: '2kb' });
});
afterAll(() => s.stop());

async function json(res: Response): Promise<any> {
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  return res.json();
}

function expectError(body: any, code: string) {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|node_modules|stack/i);
}

describe('authentication', () => {
  it('reports the calling credential on /meta', async () => {
    const res = await s.request('/api/v2/meta');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ data: { v2Enabled: true, keyType: 'personal', expiresAt: null } });
  });

  it('answers 401 without a key, with an unknown key, and with a bearer token it does not know', async () => {
    for (const init of [{ key: null }, { key: 'sk-owa-not-a-real-key-000000' }, { key: null, headers: { Authorization: 'Bearer nope' } }]) {
      const res = await s.request('/api/v2/workspaces', init);
      expect(res.status).toBe(401);
      expectError(await json(res), 'UNAUTHORIZED');
    }
  });

  it('answers 401 for a revoked key, at once in this process', async () => {
    const issued = await createApiKey(s.services.store, { kind: 'personal', userId: s.userId });
    expect((await s.request('/api/v2/meta', { key: issued.key })).status).toBe(200);
    await revokeApiKey(s.services.store, issued.record.id);
    s.services.credentials.invalidate();
    const res = await s.request('/api/v2/meta', { key: issued.key });
    expect(res.status).toBe(401);
    expectError(await json(res), 'UNAUTHORIZED');
  });

  it('answers 401 for a revoked key within the recheck window even without a local invalidation', async () => {
    const issued = await createApiKey(s.services.store, { kind: 'personal', userId: s.userId });
    expect((await s.request('/api/v2/meta', { key: issued.key })).status).toBe(200);
    // As the admin command would: only the store changes.
    await revokeApiKey(s.services.store, issued.record.id);
    await new Promise((r) => setTimeout(r, s.services.config.credentialRecheckMs + 50));
    expect((await s.request('/api/v2/meta', { key: issued.key })).status).toBe(401);
  });

  it('answers 401 for an expired key and reports expiry for a live one', async () => {
    const soon = new Date(Date.now() + 60 * 60 * 1000).toISOString();
    const live = await createApiKey(s.services.store, { kind: 'personal', userId: s.userId, expiresAt: soon });
    const meta = await json(await s.request('/api/v2/meta', { key: live.key }));
    expect(meta.data.expiresAt).toBe(soon);
    const past = await createApiKey(s.services.store, { kind: 'personal', userId: s.userId, expiresAt: '2020-01-01T00:00:00Z' });
    expect((await s.request('/api/v2/meta', { key: past.key })).status).toBe(401);
  });

  it('never stores the key itself', async () => {
    const rows = await s.services.store.apiKeys.listForUser(s.userId);
    for (const r of rows) expect(JSON.stringify(r)).not.toContain(s.key);
  });
});

describe('request validation', () => {
  it('rejects an unknown query parameter such as a cache buster', async () => {
    const res = await s.request('/api/v2/workspaces?_=123');
    expect(res.status).toBe(400);
    const body = await json(res);
    expectError(body, 'BAD_REQUEST');
    expect(body.error.details).toEqual([expect.objectContaining({ code: 'unrecognized_keys', keys: ['_'] })]);
  });

  it('rejects a misspelled parameter instead of ignoring it', async () => {
    const res = await s.request('/api/v2/workspaces?sortby=name');
    expect(res.status).toBe(400);
    expect((await json(res)).error.details[0].keys).toEqual(['sortby']);
  });

  it.each([
    ['limit=0', 'too_small'],
    ['limit=101', 'too_big'],
    ['limit=abc', 'invalid_type'],
    ['limit=1.5', 'invalid_type'],
    ['sortBy=color', 'invalid_enum_value'],
    ['sortOrder=up', 'invalid_enum_value'],
  ])('rejects %s with a %s issue', async (qs, code) => {
    const res = await s.request(`/api/v2/workspaces?${qs}`);
    expect(res.status).toBe(400);
    const body = await json(res);
    expectError(body, 'BAD_REQUEST');
    expect(body.error.details[0]).toEqual({ code, keys: [], path: ['query', qs.split('=')[0]], message: expect.any(String) });
  });

  it.each(['1e309', '-1e309', 'Infinity'])('rejects limit=%s (an infinite number the validator alone would pass)', async (v) => {
    const res = await s.request(`/api/v2/workspaces?limit=${v}`);
    expect(res.status).toBe(400);
    const body = await json(res);
    expectError(body, 'BAD_REQUEST');
    expect(body.error.details[0].path).toEqual(['query', 'limit']);
  });

  it('accepts limit 1 and 100', async () => {
    expect((await s.request('/api/v2/workspaces?limit=1')).status).toBe(200);
    expect((await s.request('/api/v2/workspaces?limit=100')).status).toBe(200);
  });

  it('reports every problem, not just the first', async () => {
    const body = await json(await s.request('/api/v2/workspaces?limit=0&sortBy=x'));
    expect(body.error.details.map((d: any) => d.path.join('.')).sort()).toEqual(['query.limit', 'query.sortBy']);
  });

  it('answers 415 for a body that is not JSON', async () => {
    const res = await rawRequest(`${s.url}/api/v2/workspaces`, { headers: { 'X-API-Key': s.key, 'Content-Type': 'text/plain' }, body: 'hello' });
    expect(res.status).toBe(415);
    expectError(res.body, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 400 for a JSON body the operation does not declare', async () => {
    const res = await rawRequest(`${s.url}/api/v2/meta`, { headers: { 'X-API-Key': s.key, 'Content-Type': 'application/json' }, body: '{"a":1}' });
    expect(res.status).toBe(400);
    expectError(res.body, 'BAD_REQUEST');
  });

  it('answers 413 for a body over the configured limit before reading it all', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(4096) });
    const res = await rawRequest(`${s.url}/api/v2/workspaces`, { headers: { 'X-API-Key': s.key, 'Content-Type': 'application/json' }, body: big });
    expect(res.status).toBe(413);
    expectError(res.body, 'PAYLOAD_TOO_LARGE');
  });

  it('answers 404 NOT_FOUND for unknown routes, 405 for a method the path lacks', async () => {
    for (const [method, path] of [
      ['GET', '/api/v2/nothing-here'],
      ['GET', '/'],
    ]) {
      const res = await s.request(path!, { method });
      expect(res.status).toBe(404);
      expectError(await json(res), 'NOT_FOUND');
    }
    const res = await s.request('/api/v2/meta', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expectError(await json(res), 'METHOD_NOT_ALLOWED');
  });

  it('gives every response a request id', async () => {
    const res = await s.request('/api/v2/meta', { headers: { 'X-Request-Id': 'trace-123' } });
    expect(res.headers.get('x-request-id')).toBe('trace-123');
    expect((await s.request('/api/v2/meta')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('workspaces', () => {
  it('gets a workspace the caller belongs to', async () => {
    const body = await json(await s.request(`/api/v2/workspaces/${s.workspaceId}`));
    expect(body.data).toEqual({
      id: s.workspaceId,
      name: 'My workspace',
      color: expect.stringMatching(/^#[0-9A-F]{6}$/i),
      logoUrl: null,
      memberCount: 1,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('answers the same 404 for a workspace that exists elsewhere and one that does not', async () => {
    const outsider = await s.newUser('outsider@example.com');
    const theirs = await s.newWorkspace('Theirs', outsider.userId);
    const foreign = await s.request(`/api/v2/workspaces/${theirs}`);
    const missing = await s.request('/api/v2/workspaces/00000000-0000-4000-8000-000000000000');
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(await foreign.json()).toEqual(await missing.json());
    const members = await s.request(`/api/v2/workspaces/${theirs}/members`);
    expect(members.status).toBe(404);
  });

  it('lists members with their roles', async () => {
    const ws = await s.newWorkspace('Team');
    await new Promise((r) => setTimeout(r, 5));
    const reader = await s.newUser('reader@example.com', { [ws]: 'read' });
    const body = await json(await s.request(`/api/v2/workspaces/${ws}/members`));
    expect(body.nextCursor).toBeNull();
    expect(body.data.map((m: any) => [m.email, m.role])).toEqual([
      ['admin@localhost.localdomain', 'admin'],
      ['reader@example.com', 'read'],
    ]);
    // A read member can see the roster too.
    expect((await s.request(`/api/v2/workspaces/${ws}/members`, { key: reader.key })).status).toBe(200);
  });

  it('limits a workspace key to its own workspace', async () => {
    const other = await s.newWorkspace('Other');
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: other });
    const list = await json(await s.request('/api/v2/workspaces?limit=100', { key: wsKey.key }));
    expect(list.data.map((w: any) => w.id)).toEqual([other]);
    expect((await s.request(`/api/v2/workspaces/${s.workspaceId}`, { key: wsKey.key })).status).toBe(404);
    expect((await json(await s.request('/api/v2/meta', { key: wsKey.key }))).data.keyType).toBe('workspace');
  });

  it('refuses personal keys where an admin turned them off, and leaves the workspace out of their lists', async () => {
    const locked = await s.newWorkspace('No personal keys');
    await setPersonalKeysAllowed(s.services.store, locked, false);
    s.services.credentials.invalidate();
    const res = await s.request(`/api/v2/workspaces/${locked}`);
    expect(res.status).toBe(403);
    expectError(await json(res), 'FORBIDDEN');
    const list = await json(await s.request('/api/v2/workspaces?limit=100'));
    expect(list.data.map((w: any) => w.id)).not.toContain(locked);
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: locked });
    expect((await s.request(`/api/v2/workspaces/${locked}`, { key: wsKey.key })).status).toBe(200);
  });
});

describe('pagination', () => {
  let user: { userId: string; key: string };
  const names = ['delta', 'Bravo', 'alpha', 'Charlie', 'echo', 'foxtrot', 'Golf'];
  beforeAll(async () => {
    user = await s.newUser('pager@example.com');
    for (const name of names) {
      await s.newWorkspace(name, user.userId);
      await new Promise((r) => setTimeout(r, 2));
    }
  });

  async function all(query: string, limit: number): Promise<{ ids: string[]; pages: number; names: string[] }> {
    const ids: string[] = [];
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const qs = `${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await s.request(`/api/v2/workspaces?${qs}`, { key: user.key });
      expect(res.status).toBe(200);
      const body: any = await res.json();
      expect(body.data.length).toBeLessThanOrEqual(limit);
      ids.push(...body.data.map((w: any) => w.id));
      seen.push(...body.data.map((w: any) => w.name));
      cursor = body.nextCursor;
      pages++;
    } while (cursor);
    return { ids, pages, names: seen };
  }

  it('walks every page once, in order, ending with a null cursor', async () => {
    const r = await all('sortBy=createdAt&sortOrder=asc', 3);
    expect(r.pages).toBe(3);
    expect(new Set(r.ids).size).toBe(names.length);
    expect(r.names).toEqual(names);
  });

  it('sorts by name case-sensitively, both ways', async () => {
    const asc = await all('sortBy=name&sortOrder=asc', 2);
    expect(asc.names).toEqual([...names].sort());
    const desc = await all('sortBy=name&sortOrder=desc', 4);
    expect(desc.names).toEqual([...names].sort().reverse());
  });

  it('lets limit change between pages but nothing else', async () => {
    const first: any = await (await s.request('/api/v2/workspaces?sortBy=name&limit=2', { key: user.key })).json();
    const cursor = encodeURIComponent(first.nextCursor);
    expect((await s.request(`/api/v2/workspaces?sortBy=name&limit=5&cursor=${cursor}`, { key: user.key })).status).toBe(200);
    for (const changed of ['sortBy=createdAt', 'sortBy=name&sortOrder=asc']) {
      const res = await s.request(`/api/v2/workspaces?${changed}&limit=2&cursor=${cursor}`, { key: user.key });
      expect(res.status).toBe(400);
      const body: any = await res.json();
      expectError(body, 'BAD_REQUEST');
      expect(body.error.details[0].path).toEqual(['query', 'cursor']);
    }
  });

  it('rejects a cursor it did not issue', async () => {
    for (const bad of ['abc', 'eyJrIjpbMSwiYSJdLCJmIjoiIn0.AAAAAAAAAAAAAAAAAAAAAA', '.']) {
      const res = await s.request(`/api/v2/workspaces?cursor=${encodeURIComponent(bad)}`, { key: user.key });
      expect(res.status).toBe(400);
    }
  });
});

describe('unexpected failures', () => {
  it('answers 500 INTERNAL_ERROR without internals', async () => {
    const original = s.services.store.workspaces.list;
    s.services.store.workspaces.list = async () => {
      throw new Error('disk on fire at /secret/path');
    };
    try {
      const res = await s.request('/api/v2/workspaces');
      expect(res.status).toBe(500);
      const body = await json(res);
      expect(body).toEqual({ error: { code: 'INTERNAL_ERROR', message: 'An unexpected error occurred.' } });
    } finally {
      s.services.store.workspaces.list = original;
    }
  });
});

describe('graceful shutdown', () => {
  it('finishes a request already in flight, then refuses new connections', async () => {
    const t = await startTestServer();
    const original = t.services.store.workspaces.list.bind(t.services.store.workspaces);
    // The request is held inside the server until the close has begun.
    const reached = new Gate();
    const release = new Gate();
    t.services.store.workspaces.list = async (q) => {
      reached.open();
      await release.opened;
      return original(q);
    };
    const inFlight = t.request('/api/v2/workspaces');
    await reached.opened;
    const closing = t.close();
    release.open();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect((await res.json() as any).data).toHaveLength(1);
    await closing;
    await expect(t.request('/api/v2/meta')).rejects.toThrow();
    await t.stop();
  });
});

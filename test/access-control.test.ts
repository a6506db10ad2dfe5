// Issue 3 through HTTP: credentials, scopes, roles, plans, cross-workspace ids, rate limits and the audit trail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createApiKey, setMember, setPersonalKeysAllowed, setWorkspacePlan } from '../src/identity/admin.ts';
import { createOAuthClient, issueTokens, refreshTokens, revokeApplication, revokeOAuthGrant, revokeOAuthToken } from '../src/identity/oauth.ts';
import { createApiClient } from '../generated/client.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ CREDENTIAL_RECHECK_MS: '0' });
});
afterAll(() => s.stop());

const bearer = (token: string) => ({ key: null, headers: { Authorization: `Bearer ${token}` } });

async function body(res: Response): Promise<any> {
  return res.json();
}

describe('API keys across workspaces', () => {
  it('a personal key works in every workspace of its user and nowhere else', async () => {
    const mine = await s.newWorkspace('Mine 2');
    const stranger = await s.newUser('stranger@example.com');
    const theirs = await s.newWorkspace('Theirs 2', stranger.userId);
    expect((await s.request(`/api/v2/workspaces/${mine}`)).status).toBe(200);
    expect((await s.request(`/api/v2/workspaces/${s.workspaceId}`)).status).toBe(200);
    expect((await s.request(`/api/v2/workspaces/${theirs}`)).status).toBe(404);
  });

  it('a workspace key works only in its workspace and is refused by operations that reject workspace keys', async () => {
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    expect((await s.request(`/api/v2/workspaces/${s.workspaceId}/members`, { key: wsKey.key })).status).toBe(200);
    const other = await s.newWorkspace('Elsewhere');
    expect((await s.request(`/api/v2/workspaces/${other}`, { key: wsKey.key })).status).toBe(404);
    const res = await s.request('/api/v2/audit-logs', { key: wsKey.key });
    expect(res.status).toBe(403);
    const b = await body(res);
    expect(b.error).toMatchObject({ code: 'FORBIDDEN', details: { code: 'WORKSPACE_KEY_NOT_ALLOWED' } });
  });

  it('personal keys stop working where an admin disables them, and start again when re-enabled', async () => {
    const ws = await s.newWorkspace('Toggle');
    await setPersonalKeysAllowed(s.services.store, ws, false);
    const denied = await s.request(`/api/v2/workspaces/${ws}`);
    expect(denied.status).toBe(403);
    expect((await body(denied)).error.details.code).toBe('PERSONAL_KEYS_DISABLED');
    await setPersonalKeysAllowed(s.services.store, ws, true);
    expect((await s.request(`/api/v2/workspaces/${ws}`)).status).toBe(200);
  });
});

describe('credential cache', () => {
  it('does not read the key from the database on every request once warm', async () => {
    const issued = await createApiKey(s.services.store, { kind: 'personal', userId: s.userId });
    const repo = s.services.store.apiKeys;
    const original = repo.getByHash.bind(repo);
    let reads = 0;
    repo.getByHash = async (hash) => {
      reads++;
      return original(hash);
    };
    try {
      for (let i = 0; i < 25; i++) expect((await s.request('/api/v2/meta', { key: issued.key })).status).toBe(200);
    } finally {
      repo.getByHash = original;
    }
    expect(reads).toBe(1);
  });
});

describe('OAuth access tokens', () => {
  let appId: string;
  beforeAll(async () => {
    appId = (await createOAuthClient(s.services.store, 'Test app')).id;
  });

  it('authenticates with a bearer token and reports its type and expiry', async () => {
    const t = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:read'] });
    const res = await s.request('/api/v2/meta', bearer(t.accessToken));
    expect(res.status).toBe(200);
    expect((await body(res)).data).toEqual({ v2Enabled: true, keyType: 'oauth_access_token', expiresAt: t.expiresAt });
    expect((await s.request(`/api/v2/workspaces/${s.workspaceId}`, bearer(t.accessToken))).status).toBe(200);
    expect(t.refreshToken).toBeNull();
  });

  it('refuses expired and revoked tokens with 401', async () => {
    const expired = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:read'], accessTtlSeconds: -1 });
    expect((await s.request('/api/v2/meta', bearer(expired.accessToken))).status).toBe(401);
    const revoked = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:write'] });
    expect((await s.request('/api/v2/meta', bearer(revoked.accessToken))).status).toBe(200);
    await revokeOAuthToken(s.services.store, revoked.accessTokenId);
    const res = await s.request('/api/v2/meta', bearer(revoked.accessToken));
    expect(res.status).toBe(401);
    expect((await body(res)).error.code).toBe('UNAUTHORIZED');
  });

  it('scopes only narrow: membership still applies to a token', async () => {
    const outsider = await s.newUser('token-outsider@example.com');
    const t = await issueTokens(s.services.store, { clientId: appId, userId: outsider.userId, scopes: ['api:write'] });
    expect((await s.request(`/api/v2/workspaces/${s.workspaceId}`, bearer(t.accessToken))).status).toBe(404);
  });

  it('refreshes with offline_access, rotating the refresh token', async () => {
    const t = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:read', 'offline_access'] });
    expect(t.refreshToken).toMatch(/^owa_rt_/);
    const next = await refreshTokens(s.services.store, t.refreshToken!);
    expect((await s.request('/api/v2/meta', bearer(next.accessToken))).status).toBe(200);
    await expect(refreshTokens(s.services.store, t.refreshToken!)).rejects.toThrow(/unknown, expired or revoked/);
  });

  it('revoking the application grant ends all of its tokens', async () => {
    const a = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:read', 'offline_access'] });
    const b = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:read'] });
    await revokeApplication(s.services.store, appId, s.userId);
    expect((await s.request('/api/v2/meta', bearer(a.accessToken))).status).toBe(401);
    expect((await s.request('/api/v2/meta', bearer(b.accessToken))).status).toBe(401);
    await expect(refreshTokens(s.services.store, a.refreshToken!)).rejects.toThrow();
    const c = await issueTokens(s.services.store, { clientId: appId, userId: s.userId, scopes: ['api:read'] });
    await revokeOAuthGrant(s.services.store, c.grantId);
    expect((await s.request('/api/v2/meta', bearer(c.accessToken))).status).toBe(401);
  });
});

describe('roles and plans', () => {
  let ws: string;
  const people: Record<string, { userId: string; key: string }> = {};
  beforeAll(async () => {
    ws = await s.newWorkspace('Roles');
    for (const role of ['read', 'write', 'admin'] as const) people[role] = await s.newUser(`${role}-role@example.com`, { [ws]: role });
  });

  it('the audit trail refuses non-enterprise plans, even to admins', async () => {
    const res = await s.request(`/api/v2/audit-logs?workspaceId=${ws}`, { key: people.admin!.key });
    expect(res.status).toBe(403);
    expect((await body(res)).error.details).toMatchObject({ code: 'PLAN_UPGRADE_REQUIRED', plan: 'free' });
    const all = await s.request('/api/v2/audit-logs', { key: people.admin!.key });
    expect(all.status).toBe(403);
  });

  it('on enterprise, each role is held against the audit trail minimum (admin)', async () => {
    await setWorkspacePlan(s.services.store, ws, 'enterprise');
    for (const role of ['read', 'write'] as const) {
      const res = await s.request(`/api/v2/audit-logs?workspaceId=${ws}`, { key: people[role]!.key });
      expect(res.status).toBe(403);
      expect((await body(res)).error.details).toMatchObject({ code: 'INSUFFICIENT_WORKSPACE_ROLE', requiredRole: 'admin', role });
    }
    expect((await s.request(`/api/v2/audit-logs?workspaceId=${ws}`, { key: people.admin!.key })).status).toBe(200);
    // The read minimum lets every role in.
    for (const role of ['read', 'write', 'admin'] as const) {
      expect((await s.request(`/api/v2/workspaces/${ws}/members`, { key: people[role]!.key })).status).toBe(200);
    }
  });
});

describe('cross-workspace ids', () => {
  it('answer the same 404, with the same body and no telling difference in time', async () => {
    const owner = await s.newUser('hidden-owner@example.com');
    const hidden = await s.newWorkspace('Hidden', owner.userId);
    const missing = '00000000-0000-4000-8000-00000000abcd';
    const a = await s.request(`/api/v2/workspaces/${hidden}/members`);
    const b = await s.request(`/api/v2/workspaces/${missing}/members`);
    expect([a.status, b.status]).toEqual([404, 404]);
    expect(await a.json()).toEqual(await b.json());

    const time = async (id: string) => {
      const t = process.hrtime.bigint();
      await (await s.request(`/api/v2/workspaces/${id}`)).arrayBuffer();
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    const hiddenTimes: number[] = [];
    const missingTimes: number[] = [];
    for (let i = 0; i < 200; i++) {
      hiddenTimes.push(await time(hidden));
      missingTimes.push(await time(missing));
    }
    // The lower decile is what a request costs when nothing else on the machine gets in its way: other
    // processes only ever add time, so on a busy machine the median measures them, not the server.
    const lowerDecile = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 10)]!;
    expect(Math.abs(lowerDecile(hiddenTimes) - lowerDecile(missingTimes))).toBeLessThan(1.5);
  });
});

describe('rate limits', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ RATE_LIMIT_FREE_API: '60', RATE_LIMIT_PRO_API: '120' });
  });
  afterAll(() => limited.stop());

  /**
   * Holds the rate limiter's clock still until `run` ends (advancing it only through `advance`): a bucket refills
   * one token a second, so on a busy machine a burst of requests would otherwise never empty it.
   */
  async function withStillClock(run: (clock: { now: number; advance(ms: number): void }) => Promise<void>): Promise<void> {
    const store = limited.services.rateLimits;
    const take = store.take;
    const clock = { now: Date.now(), advance: (ms: number) => void (clock.now += ms) };
    store.take = (key, capacity) => take.call(store, key, capacity, clock.now);
    try {
      await run(clock);
    } finally {
      store.take = take;
    }
  }

  it('every successful response carries the rate-limit headers', async () => {
    const before = Date.now();
    const res = await limited.request('/api/v2/meta');
    const after = Date.now();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(Number(res.headers.get('x-ratelimit-remaining'))).toBeLessThanOrEqual(59);
    // Within a minute of the moment the request was served (somewhere between sending and the answer).
    const reset = Number(res.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil(after / 1000) + 61);
  });

  it('answers 429 with Retry-After and details.retryAfter once the bucket is empty; other subjects are unaffected', () => withStillClock(async (clock) => {
    const a = await limited.newUser('limited-a@example.com', { [limited.workspaceId]: 'read' });
    const b = await limited.newUser('limited-b@example.com', { [limited.workspaceId]: 'read' });
    let last: Response | undefined;
    for (let i = 0; i < 61; i++) last = await limited.request('/api/v2/meta', { key: a.key });
    expect(last!.status).toBe(429);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const err = (await body(last!)).error;
    expect(err.code).toBe('RATE_LIMITED');
    expect(Date.parse(err.details.retryAfter)).toBeGreaterThan(clock.now - 1000);
    expect(new Date(err.details.retryAfter).toISOString()).toBe(err.details.retryAfter);
    // A second user has a bucket of their own.
    expect((await limited.request('/api/v2/meta', { key: b.key })).status).toBe(200);
    // Another key of the same user shares that user's bucket.
    const second = await createApiKey(limited.services.store, { kind: 'personal', userId: a.userId });
    expect((await limited.request('/api/v2/meta', { key: second.key })).status).toBe(429);
  }));

  it('sizes buckets by plan', async () => {
    const c = await limited.newUser('limited-pro@example.com');
    const ws = await limited.newWorkspace('Pro ws', c.userId);
    await setWorkspacePlan(limited.services.store, ws, 'pro');
    const res = await limited.request('/api/v2/meta', { key: c.key });
    expect(res.headers.get('x-ratelimit-limit')).toBe('120');
  });

  it('the generated client waits for Retry-After and then succeeds', () => withStillClock(async (clock) => {
    const d = await limited.newUser('limited-client@example.com');
    for (let i = 0; i < 60; i++) await limited.request('/api/v2/meta', { key: d.key });
    const sleeps: number[] = [];
    const client = createApiClient({
      baseUrl: limited.url,
      apiKey: d.key,
      // The wait passes on the limiter's clock.
      sleep: async (ms) => {
        sleeps.push(ms);
        clock.advance(ms);
      },
    });
    const { data, response } = await client.GET('/api/v2/meta');
    expect(response.status).toBe(200);
    expect(data?.data.v2Enabled).toBe(true);
    expect(sleeps.length).toBeGreaterThanOrEqual(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(1000);
  }));
});

describe('audit trail', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await s.newWorkspace('Audited');
    await setWorkspacePlan(s.services.store, ws, 'enterprise');
  });

  it('records one event per mutation, none for reads, none for a failed change', async () => {
    const member = await s.newUser('audited-member@example.com');
    const before = await s.services.store.auditEvents.count();
    await setMember(s.services.store, { workspaceId: ws, userId: member.userId, role: 'read' });
    expect(await s.services.store.auditEvents.count()).toBe(before + 1);
    for (let i = 0; i < 3; i++) {
      await s.request(`/api/v2/workspaces/${ws}`);
      await s.request(`/api/v2/workspaces/${ws}/members`);
      await s.request(`/api/v2/audit-logs?workspaceId=${ws}`);
    }
    expect(await s.services.store.auditEvents.count()).toBe(before + 1);
    await expect(setMember(s.services.store, { workspaceId: ws, userId: 'no-such-user', role: 'read' })).rejects.toThrow();
    expect(await s.services.store.auditEvents.count()).toBe(before + 1);
  });

  it('lists events newest first with filters, and reads one by id', async () => {
    const member = await s.newUser('audited-2@example.com');
    await setMember(s.services.store, { workspaceId: ws, userId: member.userId, role: 'write' });
    await setMember(s.services.store, { workspaceId: ws, userId: member.userId, role: 'admin' });
    const res = await s.request(`/api/v2/audit-logs?workspaceId=${ws}&resourceType=member,member&resourceId=${member.userId}`);
    expect(res.status).toBe(200);
    const list = await body(res);
    expect(list.data.map((e: any) => e.action)).toEqual(['member.role_changed', 'member.added']);
    expect(list.data[0]).toMatchObject({ workspaceId: ws, resourceType: 'member', actorName: 'Admin command', metadata: { role: 'admin', previousRole: 'write' } });
    const one = await s.request(`/api/v2/audit-logs/${list.data[0].id}`);
    expect((await body(one)).data).toEqual(list.data[0]);
    expect((await s.request('/api/v2/audit-logs/no-such-event')).status).toBe(404);
  });

  it('pages through events with a bound cursor, and validates dates', async () => {
    const first = await body(await s.request(`/api/v2/audit-logs?workspaceId=${ws}&limit=1`));
    expect(first.data).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    const c = encodeURIComponent(first.nextCursor);
    expect((await s.request(`/api/v2/audit-logs?workspaceId=${ws}&limit=1&cursor=${c}`)).status).toBe(200);
    expect((await s.request(`/api/v2/audit-logs?workspaceId=${ws}&action=x&limit=1&cursor=${c}`)).status).toBe(400);
    for (const bad of ['2026-01-01', '2026-01-01T00:00:00+02:00', '0000-01-01T00:00:00Z', 'yesterday']) {
      expect((await s.request(`/api/v2/audit-logs?startDate=${encodeURIComponent(bad)}`)).status).toBe(400);
    }
    const future = await body(await s.request(`/api/v2/audit-logs?workspaceId=${ws}&startDate=2999-01-01T00:00:00Z`));
    expect(future.data).toEqual([]);
  });

  it('hides events of workspaces the caller cannot read', async () => {
    const outsider = await s.newUser('audit-outsider@example.com');
    const own = await s.newWorkspace('Outsider enterprise', outsider.userId);
    await setWorkspacePlan(s.services.store, own, 'enterprise');
    const list = await body(await s.request('/api/v2/audit-logs?limit=100', { key: outsider.key }));
    expect(list.data.every((e: any) => e.workspaceId === own)).toBe(true);
    const foreign = await body(await s.request(`/api/v2/audit-logs?workspaceId=${ws}&limit=1`));
    expect((await s.request(`/api/v2/audit-logs/${foreign.data[0].id}`, { key: outsider.key })).status).toBe(404);
    expect((await s.request(`/api/v2/audit-logs?workspaceId=${ws}`, { key: outsider.key })).status).toBe(404);
  });

  it('records exactly one event for each mutation made through the API, and none for reads, dry runs or failures', async () => {
    const count = () => s.services.store.auditEvents.count();
    const post = (path: string, body: unknown, method = 'POST') =>
      s.request(path, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    let n = await count();
    const created = await post('/api/v2/workflows', { workspaceId: ws, name: 'Audited workflow' });
    expect(created.status).toBe(201);
    const workflowId = ((await created.json()) as any).data.id;
    expect(await count()).toBe(++n);
    const events = await body(await s.request(`/api/v2/audit-logs?workspaceId=${ws}&resourceId=${workflowId}`));
    expect(events.data).toHaveLength(1);
    expect(events.data[0]).toMatchObject({ action: 'workflow.created', resourceType: 'workflow', resourceId: workflowId, actorEmail: 'admin@localhost.localdomain' });

    // Reads, including HEAD of the state, record nothing.
    await s.request(`/api/v2/workflows/${workflowId}`);
    await s.request(`/api/v2/workflows/${workflowId}/state`);
    await s.request(`/api/v2/workflows/${workflowId}/state`, { method: 'HEAD' });
    await s.request(`/api/v2/workflows?workspaceId=${ws}`);
    expect(await count()).toBe(n);

    // A dry run records nothing; the committed write records one event.
    const state: any = (await body(await s.request(`/api/v2/workflows/${workflowId}/state`))).data;
    expect((await post(`/api/v2/workflows/${workflowId}/state?dryRun=true`, state, 'PUT')).status).toBe(200);
    expect(await count()).toBe(n);
    expect((await post(`/api/v2/workflows/${workflowId}/state`, state, 'PUT')).status).toBe(200);
    expect(await count()).toBe(++n);

    // Failed requests record nothing: validation, authorization, missing resources.
    const reader = await s.newUser('audit-reader@example.com', { [ws]: 'read' });
    n = await count();
    expect((await post('/api/v2/workflows', { workspaceId: ws, name: 'x', bogus: 1 })).status).toBe(400);
    const denied = await s.request('/api/v2/workflows', {
      method: 'POST',
      key: reader.key,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ workspaceId: ws, name: 'nope' }),
    });
    expect(denied.status).toBe(403);
    expect((await body(denied)).error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
    expect((await s.request('/api/v2/workflows/00000000-0000-4000-8000-000000000000', { method: 'DELETE' })).status).toBe(404);
    expect(await count()).toBe(n);
  });

  it('a read-only token cannot write, and a write token can', async () => {
    const app = await createOAuthClient(s.services.store, 'writer');
    const ro = await issueTokens(s.services.store, { clientId: app.id, userId: s.userId, scopes: ['api:read'] });
    const rw = await issueTokens(s.services.store, { clientId: app.id, userId: s.userId, scopes: ['api:write'] });
    const attempt = (token: string) =>
      s.request('/api/v2/workflows', {
        method: 'POST',
        key: null,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ workspaceId: ws, name: `by token ${token.slice(-4)}` }),
      });
    const res = await attempt(ro.accessToken);
    expect(res.status).toBe(403);
    expect((await body(res)).error.details).toMatchObject({ code: 'INSUFFICIENT_SCOPE', requiredScope: 'api:write' });
    expect((await attempt(rw.accessToken)).status).toBe(201);
    const events = await body(await s.request(`/api/v2/audit-logs?workspaceId=${ws}&action=workflow.created&limit=1`));
    expect(events.data[0].metadata).not.toHaveProperty('accessToken');
    expect(JSON.stringify(events.data[0])).not.toContain(rw.accessToken);
  });

  it('never stores key material in events', async () => {
    const issued = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws });
    const list = await body(await s.request(`/api/v2/audit-logs?workspaceId=${ws}&action=api_key.created`));
    expect(list.data).toHaveLength(1);
    expect(JSON.stringify(list.data)).not.toContain(issued.key);
  });
});

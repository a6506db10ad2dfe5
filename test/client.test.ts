// The generated client against a live server, and its retry policy against a scripted fetch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, retryAfterMs, ApiError } from '../generated/client.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe('generated client, live', () => {
  it('reads typed data with an API key', async () => {
    const client = createApiClient({ baseUrl: s.url, apiKey: s.key });
    const { data, error } = await client.GET('/api/v2/workspaces/{workspaceId}', { params: { path: { workspaceId: s.workspaceId } } });
    expect(error).toBeUndefined();
    expect(data?.data.id).toBe(s.workspaceId);
  });

  it('iterates every page of a list', async () => {
    const user = await s.newUser('client-pages@example.com');
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push(await s.newWorkspace(`ws-${i}`, user.userId));
    const client = createApiClient({ baseUrl: s.url, apiKey: user.key });
    const seen: string[] = [];
    let pages = 0;
    const counting = createApiClient({
      baseUrl: s.url,
      apiKey: user.key,
      fetch: (input, init) => {
        pages++;
        return fetch(input, init);
      },
    });
    for await (const w of counting.paginate('/api/v2/workspaces', { query: { limit: 2, sortBy: 'name', sortOrder: 'asc' } })) seen.push(w.name);
    expect(seen).toEqual(['ws-0', 'ws-1', 'ws-2', 'ws-3', 'ws-4']);
    expect(pages).toBe(3);
    const ids: string[] = [];
    for await (const w of client.paginate('/api/v2/workspaces', {})) ids.push(w.id);
    expect(ids.sort()).toEqual(created.sort());
  });

  it('surfaces API errors as ApiError from paginate', async () => {
    const client = createApiClient({ baseUrl: s.url, apiKey: 'sk-owa-wrong-key-0000000000' });
    const iterate = async () => {
      for await (const _ of client.paginate('/api/v2/workspaces', {})) void _;
    };
    await expect(iterate()).rejects.toMatchObject({ name: 'ApiError', status: 401, code: 'UNAUTHORIZED' });
  });

  it('sends bearer tokens when given one', async () => {
    const client = createApiClient({ baseUrl: s.url, accessToken: 'not-a-token' });
    const { response } = await client.GET('/api/v2/meta');
    expect(response.status).toBe(401);
  });
});

describe('generated client, retries', () => {
  function scripted(statuses: { status: number; retryAfter?: string }[]) {
    const calls: number[] = [];
    const sleeps: number[] = [];
    const fetchStub = async () => {
      const next = statuses[calls.length] ?? { status: 200 };
      calls.push(next.status);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (next.retryAfter) headers['retry-after'] = next.retryAfter;
      const body = next.status === 200 ? { data: { v2Enabled: true, keyType: 'personal', expiresAt: null } } : { error: { code: 'RATE_LIMITED', message: 'slow down' } };
      return new Response(JSON.stringify(body), { status: next.status, headers });
    };
    return { calls, sleeps, fetch: fetchStub as typeof fetch, sleep: async (ms: number) => void sleeps.push(ms) };
  }

  it('waits for Retry-After on 429, then succeeds', async () => {
    const t = scripted([{ status: 429, retryAfter: '2' }, { status: 200 }]);
    const client = createApiClient({ baseUrl: 'http://x.invalid', apiKey: 'k', fetch: t.fetch, sleep: t.sleep });
    const { data } = await client.GET('/api/v2/meta');
    expect(data?.data.v2Enabled).toBe(true);
    expect(t.calls).toEqual([429, 200]);
    expect(t.sleeps).toEqual([2000]);
  });

  it('backs off exponentially on 503 without Retry-After, and gives up after maxRetries', async () => {
    const t = scripted([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }]);
    const client = createApiClient({ baseUrl: 'http://x.invalid', apiKey: 'k', fetch: t.fetch, sleep: t.sleep, maxRetries: 2, baseDelayMs: 100 });
    const { response } = await client.GET('/api/v2/meta');
    expect(response.status).toBe(503);
    expect(t.calls).toEqual([503, 503, 503]);
    expect(t.sleeps).toHaveLength(2);
    expect(t.sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(t.sleeps[0]).toBeLessThanOrEqual(100);
    expect(t.sleeps[1]).toBeGreaterThanOrEqual(100);
    expect(t.sleeps[1]).toBeLessThanOrEqual(200);
  });

  it('does not retry other errors', async () => {
    const t = scripted([{ status: 400 }]);
    const client = createApiClient({ baseUrl: 'http://x.invalid', apiKey: 'k', fetch: t.fetch, sleep: t.sleep });
    await client.GET('/api/v2/meta');
    expect(t.calls).toEqual([400]);
  });

  it('caps a long Retry-After at maxDelayMs', async () => {
    const t = scripted([{ status: 429, retryAfter: '3600' }]);
    const client = createApiClient({ baseUrl: 'http://x.invalid', apiKey: 'k', fetch: t.fetch, sleep: t.sleep, maxDelayMs: 5000 });
    await client.GET('/api/v2/meta');
    expect(t.sleeps).toEqual([5000]);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
    expect(new ApiError(429, { error: { code: 'RATE_LIMITED', message: 'm' } }).code).toBe('RATE_LIMITED');
  });
});

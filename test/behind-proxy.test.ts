// Behind a reverse proxy: X-Forwarded-For/-Proto/-Host count only from peers TRUST_PROXY trusts. The client
// address keys the per-address rate limit; the forwarded scheme and host build the links in answers unless
// BASE_URL is set; cookies are Secure when the public URL is https.
import { afterEach, describe, expect, it } from 'vitest';
import { rawRequest, startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';

let s: TestServer | null = null;
afterEach(async () => {
  await s?.stop();
  s = null;
});

/** A public operation (no key), so it is rate limited by the client's address. */
const anonymous = async (server: TestServer, forwardedFor: string) => {
  const r = await server.request('/shared/files/not-a-real-token', { key: null, headers: { 'X-Forwarded-For': forwardedFor } });
  await r.text();
  return r.status;
};

describe('the client address', () => {
  it('ignores a spoofed X-Forwarded-For without TRUST_PROXY: every request counts against the peer address', async () => {
    s = await startTestServer({ RATE_LIMIT_FREE_API: '1' });
    expect(await anonymous(s, '203.0.113.1')).toBe(404);
    // Another forwarded address does not buy a fresh bucket.
    expect(await anonymous(s, '203.0.113.2')).toBe(429);
  });

  it('is the forwarded address from a trusted proxy, and keys the rate limit', async () => {
    s = await startTestServer({ RATE_LIMIT_FREE_API: '1', TRUST_PROXY: '127.0.0.1/8' });
    expect(await anonymous(s, '203.0.113.1')).toBe(404);
    expect(await anonymous(s, '203.0.113.2')).toBe(404);
    expect(await anonymous(s, '203.0.113.1')).toBe(429);
    // With a chain, the address the trusted proxy saw (the rightmost untrusted one) counts, not what the client claims.
    expect(await anonymous(s, '198.51.100.7, 203.0.113.2')).toBe(429);
  });

  it('refuses a TRUST_PROXY that is not true, a hop count or addresses', async () => {
    await expect(startTestServer({ TRUST_PROXY: 'the proxy' })).rejects.toThrow(/TRUST_PROXY/);
  });
});

describe('links in answers', () => {
  const webUrlOf = async (server: TestServer, headers: Record<string, string>) => {
    const wf = await buildWorkflow(server, `Linked ${Math.random()}`, [apiBlock('start_trigger', 'Start')], [], { deploy: false });
    const r = await server.request(`/api/v2/workflows/${wf.id}`, { headers });
    expect(r.status).toBe(200);
    return ((await r.json()) as any).data.webUrl as string;
  };
  const forwarded = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'automation.example.com' };

  it('use the forwarded scheme and host from a trusted proxy when BASE_URL is not set', async () => {
    s = await startTestServer({ TRUST_PROXY: 'loopback' });
    expect(await webUrlOf(s, forwarded)).toMatch(/^https:\/\/automation\.example\.com\/workspace\//);
    // Without X-Forwarded-Host the Host the proxy sent is used (fetch cannot set Host: a raw request does).
    const wf = await buildWorkflow(s, 'Linked by Host', [apiBlock('start_trigger', 'Start')], [], { deploy: false });
    const r = await rawRequest(`${s.url}/api/v2/workflows/${wf.id}`, { headers: { 'X-API-Key': s.key, 'X-Forwarded-Proto': 'https', Host: 'owa.example.org' } });
    expect(r.status).toBe(200);
    expect(r.body.data.webUrl).toMatch(/^https:\/\/owa\.example\.org\/workspace\//);
  });

  it('ignore forwarded headers without TRUST_PROXY', async () => {
    s = await startTestServer();
    expect(await webUrlOf(s, forwarded)).toMatch(new RegExp(`^${s.url.replace(/\./g, '\\.')}/workspace/`));
  });

  it('use BASE_URL when it is set, whatever a proxy forwards', async () => {
    s = await startTestServer({ TRUST_PROXY: 'true', BASE_URL: 'https://public.example.net/owa' });
    expect(await webUrlOf(s, forwarded)).toMatch(/^https:\/\/public\.example\.net\/owa\/workspace\//);
  });
});

describe('cookies', () => {
  const csrfCookie = async (server: TestServer, headers: Record<string, string> = {}) => {
    const r = await server.request('/login', { key: null, headers });
    await r.text();
    const cookie = r.headers.getSetCookie().find((c) => c.startsWith('owa_csrf='));
    expect(cookie).toBeDefined();
    return cookie!;
  };

  it('are Secure when the public URL (BASE_URL) is https', async () => {
    s = await startTestServer({ BASE_URL: 'https://automation.example.com' });
    expect(await csrfCookie(s)).toMatch(/;\s*Secure/);
  });

  it('are not Secure on a plain http URL, nor for a spoofed X-Forwarded-Proto', async () => {
    s = await startTestServer();
    expect(await csrfCookie(s, { 'X-Forwarded-Proto': 'https' })).not.toMatch(/Secure/);
  });

  it('are Secure when a trusted proxy forwards https', async () => {
    s = await startTestServer({ TRUST_PROXY: '1' });
    expect(await csrfCookie(s, { 'X-Forwarded-Proto': 'https' })).toMatch(/;\s*Secure/);
  });
});

// The shared HTTP mechanisms under hostile or careless input: malformed escapes, deep nesting, wrong methods,
// oversized headers, stalled bodies, wrongly typed bodies; error bodies in the shape the operation declares;
// authentication challenges and cache headers.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../generated/operations.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { PATIENCE_MS } from './support/wait.ts';

let s: TestServer;
let workflowId: string;
beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '1000000', RATE_LIMIT_FREE_SYNC: '1000000', RATE_LIMIT_FREE_ASYNC: '1000000', BODY_TIMEOUT_MS: '400' });
  const created = await s.call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'hardening' });
  workflowId = created.body.data.id;
  await s.call('POST', `/api/v2/workflows/${workflowId}/deploy`, {});
});
afterAll(() => s.stop());

const ops = Object.values(OPERATIONS);

/** The error body in the shape the operation declares. */
function expectErrorShape(format: 'standard' | 'legacy', body: any, code: string) {
  if (format === 'legacy') expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code }));
  else expect(body.error).toEqual(expect.objectContaining({ code, message: expect.any(String) }));
}

/** Sends raw bytes and collects the answer until the server closes (or, should it never, `ms` pass). */
function rawExchange(payload: string, ms = PATIENCE_MS): Promise<{ text: string; closed: boolean; elapsed: number }> {
  return new Promise((resolve, reject) => {
    const url = new URL(s.url);
    const started = Date.now();
    const socket = net.connect(Number(url.port), url.hostname);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false, elapsed: Date.now() - started });
    }, ms);
    socket.on('data', (c) => (text += c.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true, elapsed: Date.now() - started });
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      if (text) resolve({ text, closed: true, elapsed: Date.now() - started });
      else reject(e);
    });
    socket.write(payload);
  });
}

const parseRaw = (text: string) => {
  const [head, ...rest] = text.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]);
  return { status, head: head ?? '', body: JSON.parse(rest.join('\r\n\r\n')) };
};

describe('malformed percent-escapes in path parameters', () => {
  const withParams = ops.filter((o) => o.path.includes('{'));
  it.each(withParams.map((o) => [o.operationId, o] as const))('%s answers 400 in its own error shape', async (_id, op) => {
    const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    for (const bad of names) {
      const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === bad ? '%E0%A4%A' : name === 'workflowId' ? workflowId : 'x'));
      const res = await s.request(path, { method: op.method.toUpperCase() });
      expect(res.status, `${op.operationId} ${bad}`).toBe(400);
      if (op.method === 'head') continue;
      const body: any = await res.json();
      expectErrorShape(op.errorFormat, body, 'BAD_REQUEST');
      const details = op.errorFormat === 'legacy' ? body.details : body.error.details;
      expect(details[0]).toEqual(expect.objectContaining({ code: 'invalid_string', path: ['path', bad] }));
    }
  });
});

describe('malformed percent-escapes elsewhere', () => {
  it('in a query value: a 4xx, never a 500', async () => {
    const res = await s.request(`/api/v2/workflows?workspaceId=%E0%A4%A&limit=%`);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
  it('in a literal segment: 404', async () => {
    const res = await s.request('/api/v2/work%E0%A4%Aflows');
    expect(res.status).toBe(404);
  });
});

describe('deeply nested JSON bodies', () => {
  const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
  it('the legacy execute endpoint refuses 5,000 levels in the legacy shape', async () => {
    const res = await s.request(`/api/workflows/${workflowId}/execute`, { method: 'POST', body: deep(5000), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expectErrorShape('legacy', body, 'BAD_REQUEST');
    expect(body.details[0]).toEqual(expect.objectContaining({ code: 'too_big', path: ['body'] }));
  });
  it('v2 bodies are bounded by the same rule', async () => {
    const res = await s.request(`/api/v2/workflows/${workflowId}/execute`, { method: 'POST', body: `{"input":${deep(200)}}`, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expect(body.error.details[0]).toEqual(expect.objectContaining({ code: 'too_big', path: ['body'] }));
  });
  it('nesting within the bound is accepted', async () => {
    const res = await s.request(`/api/v2/workflows/${workflowId}/execute`, { method: 'POST', body: `{"input":${deep(50)}}`, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
  });
  it('a workflow document sent as a JSON string is bounded the same way', async () => {
    const state = `{"blocks":{},"edges":[],"loops":{},"parallels":{},"variables":{"v":{"id":"v","name":"v","type":"object","value":${deep(3000)}}}}`;
    const body = { workspaceId: s.workspaceId, workflow: state };
    for (const path of ['/api/v2/workflows/import/preview', '/api/v2/workflows/import']) {
      const res = await s.call('POST', path, body);
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.message).toMatch(/nested more than 100 levels/);
    }
  });
  it('deep arrays count too', async () => {
    const res = await s.request(`/api/workflows/${workflowId}/execute`, { method: 'POST', body: '['.repeat(3000) + ']'.repeat(3000), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
  });
});

describe('legacy operations answer every error in the legacy shape', () => {
  it('a body that is not JSON', async () => {
    const res = await s.request(`/api/workflows/${workflowId}/execute`, { method: 'POST', body: '{nope', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expectErrorShape('legacy', await res.json(), 'BAD_REQUEST');
  });
  it('a missing credential', async () => {
    const res = await s.request(`/api/workflows/${workflowId}/status`, { key: null });
    expect(res.status).toBe(401);
    expectErrorShape('legacy', await res.json(), 'UNAUTHORIZED');
  });
  it('a wrong method on a legacy path', async () => {
    const res = await s.request(`/api/workflows/${workflowId}/execute`, { method: 'GET' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expectErrorShape('legacy', await res.json(), 'METHOD_NOT_ALLOWED');
  });
  it('a v2 path keeps the v2 shape', async () => {
    const res = await s.request('/api/v2/workflows/%E0%A4%A');
    expectErrorShape('standard', await res.json(), 'BAD_REQUEST');
  });
});

describe('wrong methods on existing paths', () => {
  it('answer 405 with Allow listing the path\'s methods', async () => {
    const res = await s.request(`/api/v2/workflows/${workflowId}`, { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH');
    expectErrorShape('standard', await res.json(), 'METHOD_NOT_ALLOWED');
  });
  it('on every path, for a method it lacks', async () => {
    const byPath = new Map<string, Set<string>>();
    for (const o of ops) byPath.set(o.path, (byPath.get(o.path) ?? new Set()).add(o.method.toUpperCase()));
    // A method another (parameterized) path serves at the same URL is routed there, so it is not "missing".
    const servedAt = (url: string, method: string) =>
      ops.some((o) => o.method.toUpperCase() === method && new RegExp(`^${o.path.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(url));
    for (const [path, methods] of byPath) {
      const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === 'workflowId' ? workflowId : 'x'));
      const missing = ['DELETE', 'PATCH', 'PUT', 'POST'].find((m) => !methods.has(m) && !servedAt(url, m));
      if (!missing) continue;
      const res = await s.request(url, { method: missing });
      expect(res.status, `${missing} ${path}`).toBe(405);
      const allow = (res.headers.get('allow') ?? '').split(', ');
      for (const m of methods) expect(allow).toContain(m);
    }
  });
  it('an unknown path is still a 404', async () => {
    const res = await s.request('/api/v2/nothing-here', { method: 'DELETE' });
    expect(res.status).toBe(404);
    expectErrorShape('standard', await res.json(), 'NOT_FOUND');
  });
});

describe('authentication challenge and caching', () => {
  it('401 carries WWW-Authenticate', async () => {
    const res = await s.request('/api/v2/workflows', { key: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const bad = await s.request('/api/v2/workflows', { key: 'sk-nope' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/Bearer/);
  });
  it('authenticated JSON answers, with or without an ETag, are private and not stored', async () => {
    const list = await s.request(`/api/v2/workflows?workspaceId=${s.workspaceId}`);
    expect(list.headers.get('cache-control')).toBe('private, no-store');
    const state = await s.request(`/api/v2/workflows/${workflowId}/state`);
    expect(state.status).toBe(200);
    expect(state.headers.get('cache-control')).toBe('private, no-store');
    const missing = await s.request('/api/v2/workflows/nope');
    expect(missing.headers.get('cache-control')).toBe('private, no-store');
  });
});

describe('request bodies are not type-coerced', () => {
  it('a number where a string belongs is 400 invalid_type', async () => {
    const res = await s.call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 42 });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'invalid_type', path: ['body', 'name'] })]));
  });
  it('a string where a boolean belongs is 400 invalid_type', async () => {
    const res = await s.call('POST', `/api/v2/workflows/${workflowId}/execute`, { async: 'true' });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'invalid_type', path: ['body', 'async'] })]));
  });
  it('query strings are still read as numbers', async () => {
    const res = await s.call('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}&limit=5`);
    expect(res.status).toBe(200);
  });
});

describe('limits on the request line, headers and body', () => {
  it('headers over the limit get a 431 in the documented shape', async () => {
    const { text } = await rawExchange(`GET /api/v2/meta HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const { status, head, body } = parseRaw(text);
    expect(status).toBe(431);
    expect(head).toMatch(/content-type: application\/json/i);
    expectErrorShape('standard', body, 'HEADERS_TOO_LARGE');
  });
  it('on a legacy path, in the legacy shape', async () => {
    const { text } = await rawExchange(`GET /api/workflows/${workflowId}/status HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const { status, body } = parseRaw(text);
    expect(status).toBe(431);
    expectErrorShape('legacy', body, 'HEADERS_TOO_LARGE');
  });
  it('a request line over the limit gets the same answer', async () => {
    const { text } = await rawExchange(`GET /api/v2/meta?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(parseRaw(text).status).toBe(431);
  });
  it('a malformed request gets a JSON 400', async () => {
    const { text } = await rawExchange('NOT HTTP AT ALL\r\n\r\n');
    const { status, body } = parseRaw(text);
    expect(status).toBe(400);
    expectErrorShape('standard', body, 'BAD_REQUEST');
  });
  it('a body shorter than its Content-Length times out with a JSON 408', async () => {
    const { text, closed, elapsed } = await rawExchange(
      `POST /api/v2/workflows HTTP/1.1\r\nHost: x\r\nX-API-Key: ${s.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"workspaceId":`,
    );
    expect(closed).toBe(true);
    expect(elapsed).toBeLessThan(2500);
    const { status, body } = parseRaw(text);
    expect(status).toBe(408);
    expectErrorShape('standard', body, 'REQUEST_TIMEOUT');
  });
  it('the same on a legacy path, in the legacy shape', async () => {
    const { text } = await rawExchange(
      `POST /api/workflows/${workflowId}/execute HTTP/1.1\r\nHost: x\r\nX-API-Key: ${s.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`,
    );
    const { status, body } = parseRaw(text);
    expect(status).toBe(408);
    expectErrorShape('legacy', body, 'REQUEST_TIMEOUT');
  });
});

describe('Node\'s own request and header timeouts', () => {
  it('headers that never finish get a JSON 408 after HEADERS_TIMEOUT_MS', async () => {
    const slow = await startTestServer({ HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '600' });
    try {
      const url = new URL(slow.url);
      const started = Date.now();
      const text = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(url.port), url.hostname);
        let out = '';
        socket.on('data', (c) => (out += c.toString('utf8')));
        socket.on('close', () => resolve(out));
        socket.on('error', reject);
        socket.write('GET /api/v2/meta HTTP/1.1\r\nHost: x\r\nX-Partial: ');
        setTimeout(() => socket.destroy(), PATIENCE_MS).unref();
      });
      expect(Date.now() - started).toBeLessThan(3000);
      const { status, body } = parseRaw(text);
      expect(status).toBe(408);
      expectErrorShape('standard', body, 'REQUEST_TIMEOUT');
    } finally {
      await slow.stop();
    }
  });
  it('refuses a header timeout longer than the request timeout', async () => {
    const { loadConfig, ConfigError } = await import('../src/config.ts');
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' })).toThrow(ConfigError);
  });
});

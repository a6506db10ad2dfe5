// Provider selectors from the catalog, table-driven: for every catalogued key, a connection to its provider is made
// through a local fake of the provider's OAuth and API, and the selector is run against it; the fake checks the
// method, path (with the context URL-encoded), auth header and paging parameters, and serves a canned page and its
// continuation. Adding a catalog entry adds a case. Then the error paths: missing context, another provider's
// credential, a provider refusing the token, keys this server cannot answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { SELECTOR_CATALOG, UNAVAILABLE_SELECTORS, type CatalogEntry } from '../src/selectors/catalog.ts';
import { envKeyOf } from '../src/credentials/providers.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let fake: http.Server;
let fakeUrl: string;
const ws = () => s.workspaceId;
const list = (body: Record<string, unknown>) => s.call('POST', '/api/v2/selectors/list', { workspaceId: ws(), ...body });
const get = (body: Record<string, unknown>) => s.call('POST', '/api/v2/selectors/get', { workspaceId: ws(), ...body });

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown> | null;
}
/** The entry under test and what the fake saw; `refuse` makes the fake answer 401. */
let current: { key: string; entry: CatalogEntry; provider: string } | null = null;
let seen: Seen[] = [];
let refuse = false;
let graphqlError = false;

const providersUsed = [...new Set(Object.values(SELECTOR_CATALOG).map((e) => e.providers[0]!))];
const tokenOf = (provider: string) => `tok-${provider}`;
/** The Authorization header the provider expects: `<scheme> <token>`, or the bare token where the scheme is ''. */
const authOf = (entry: CatalogEntry, provider: string) => (entry.authScheme === '' ? tokenOf(provider) : `${entry.authScheme ?? 'Bearer'} ${tokenOf(provider)}`);
/** The value at a dotted path. */
const getAt = (obj: unknown, path: string): unknown => path.split('.').reduce<unknown>((cur, k) => (cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined), obj);
/** A request parameter, from the query or (dotted path) the JSON body. */
const paramOf = (r: Seen, where: 'query' | 'body' | undefined, name: string): string | null => {
  if (where !== 'body') return r.query.get(name);
  const v = getAt(r.body, name);
  return v === undefined || v === null ? null : String(v);
};

/** Writes `value` at a catalog path (`a.b`, or `a[].b` as a one-element array). */
function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const [head, rest] = path.split('[].') as [string, string | undefined];
  const parts = head.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) cur = (cur[p] ??= {}) as Record<string, unknown>;
  const last = parts.at(-1)!;
  if (rest === undefined) cur[last] = value;
  else {
    const el: Record<string, unknown> = {};
    setPath(el, rest, value);
    cur[last] = [el];
  }
}
function item(entry: CatalogEntry, n: number): Record<string, unknown> {
  const it: Record<string, unknown> = {};
  setPath(it, entry.id, `id-${n}`);
  setPath(it, entry.label[0]!, `Label ${n}`);
  if (entry.only) setPath(it, entry.only, {});
  return it;
}
/** The answer with `items` at the entry's items path and, when `next`, the continuation where the provider puts it. */
function answer(entry: CatalogEntry, items: unknown[], next: string | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  setPath(out, entry.items, items);
  const p = entry.paging;
  if (next && (p.kind === 'token' || p.kind === 'link')) setPath(out, p.next, p.kind === 'token' && p.fromLink ? `/next/page?limit=2&${p.param}=${encodeURIComponent(next)}` : next);
  // A GraphQL connection keeps its end cursor on the last page; only `hasNextPage` says there is no more.
  if (p.kind === 'token' && p.more) {
    setPath(out, p.more, next !== null);
    if (!next) setPath(out, p.next, 'end-of-list');
  }
  return out;
}
/** Where the request carried the provider's continuation (null: first page). */
function continuation(entry: CatalogEntry, r: Seen): string | null {
  const p = entry.paging;
  if (p.kind === 'token') return paramOf(r, p.in, p.param);
  if (p.kind === 'link') return r.path.endsWith('/next-page') ? r.query.get('page') : null;
  if (p.kind === 'offset') return paramOf(r, p.in, p.param) === '0' ? null : paramOf(r, p.in, p.param);
  if (p.kind === 'page') return paramOf(r, p.in, p.param) === '1' ? null : paramOf(r, p.in, p.param);
  return null;
}
/** The next-page marker the fake hands out after page 1. */
function nextMarker(entry: CatalogEntry, provider: string): string | null {
  const p = entry.paging;
  if (p.kind === 'token') return 'page-2-token';
  if (p.kind === 'link') return `${fakeUrl}/api/${provider}/next-page?page=2`;
  return null;
}

beforeAll(async () => {
  fake = http.createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const json = (body: unknown, status = 200) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const oauth = url.pathname.match(/^\/oauth\/([\w-]+)\/(authorize|token)$/);
    if (oauth?.[2] === 'authorize') {
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', `code-${oauth[1]}`);
      back.searchParams.set('state', url.searchParams.get('state')!);
      return res.writeHead(302, { location: back.href }).end();
    }
    if (oauth?.[2] === 'token') return json({ access_token: tokenOf(oauth[1]!), token_type: 'bearer', expires_in: 3600 });
    if (!current) return res.writeHead(404).end();
    const { entry, provider } = current;
    const text = Buffer.concat(chunks).toString('utf8');
    // The Atlassian gateway: the sites a connection was granted (the test's domain, written as a URL, and another).
    if (url.pathname === `/api/${provider}/oauth/token/accessible-resources`) {
      if (req.headers.authorization !== `Bearer ${tokenOf(provider)}`) return json({ error: 'invalid token' }, 401);
      return json([
        { id: 'other-cloud', url: 'https://elsewhere.atlassian.net', name: 'Elsewhere' },
        { id: ATLASSIAN_CLOUD_ID, url: `https://${ATLASSIAN_DOMAIN}/`, name: 'Ours' },
      ]);
    }
    const r: Seen = { method: req.method!, path: url.pathname, query: url.searchParams, headers: req.headers, body: text ? JSON.parse(text) : null };
    seen.push(r);
    if (refuse || req.headers.authorization !== authOf(entry, provider)) return json({ error: 'invalid token' }, 401);
    if (graphqlError) return json({ errors: [{ message: 'Argument first is too large' }] });
    const size = entry.size ? Number(paramOf(r, entry.size.in, entry.size.param)) : 2;
    if (continuation(entry, r) === null) {
      const first = [item(entry, 1), item(entry, 2)];
      // Offset and page paging continue only after a full page.
      return json(answer(entry, entry.paging.kind === 'offset' || entry.paging.kind === 'page' ? first.slice(0, size) : first, nextMarker(entry, provider)));
    }
    return json(answer(entry, [item(entry, 3)], null));
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()));
  fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  const env: Record<string, string> = { EGRESS_ALLOW_CIDRS: '127.0.0.1/32' };
  for (const p of providersUsed) {
    const k = `OAUTH_${envKeyOf(p)}`;
    Object.assign(env, {
      [`${k}_CLIENT_ID`]: `client-${p}`,
      [`${k}_CLIENT_SECRET`]: `secret-${p}`,
      [`${k}_AUTHORIZATION_URL`]: `${fakeUrl}/oauth/${p}/authorize`,
      [`${k}_TOKEN_URL`]: `${fakeUrl}/oauth/${p}/token`,
      [`${k}_API_BASE_URL`]: `${fakeUrl}/api/${p}`,
    });
  }
  s = await startTestServer(env);
  for (const p of providersUsed) {
    const started = await s.ok('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: p, displayName: `conn ${p}` });
    const atProvider = await fetch(started.authorizationUrl, { redirect: 'manual' });
    const back = await fetch(atProvider.headers.get('location')!);
    expect(back.status, `connecting ${p}`).toBe(200);
  }
  const creds = await s.ok('GET', `/api/v2/credentials?workspaceId=${ws()}`);
  for (const c of creds) credentialOf[c.providerId] = c.id;
}, 120_000);
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => fake.close(r));
});
const credentialOf: Record<string, string> = {};
const ATLASSIAN_DOMAIN = 'team.atlassian.net';
const ATLASSIAN_CLOUD_ID = 'cloud/1';

/** Context for an entry: the credential plus a value with characters that must be encoded for every required key. */
const contextFor = (entry: CatalogEntry, provider: string) => ({
  oauthCredential: credentialOf[provider]!,
  ...Object.fromEntries((entry.requires ?? []).map((k) => [k, k === 'domain' ? ATLASSIAN_DOMAIN : `${k} v/1`])),
});
const encodedPath = (entry: CatalogEntry, context: Record<string, string>) => {
  const all: Record<string, string> = entry.site === 'atlassian' ? { ...context, cloudId: ATLASSIAN_CLOUD_ID } : context;
  return entry.path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(all[k]!));
};

describe.each(Object.entries(SELECTOR_CATALOG))('%s', (key, entry) => {
  const provider = entry.providers[0]!;

  it('lists through the provider API with the credential token, and pages with its continuation', async () => {
    current = { key, entry, provider };
    seen = [];
    const context = contextFor(entry, provider);
    const first = await list({ selectorKey: key, context, limit: 2 });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.map((o: any) => [o.id, o.label])).toEqual([
      ['id-1', 'Label 1'],
      ['id-2', 'Label 2'],
    ]);
    const r = seen[0]!;
    expect(r.method).toBe(entry.method ?? 'GET');
    expect(r.path).toBe(`/api/${provider}${encodedPath(entry, context)}`);
    expect(r.headers.authorization).toBe(authOf(entry, provider));
    const fillIn = (v: string) => v.replace(/\{(\w+)\}/g, (_, k: string) => context[k as keyof typeof context]!);
    for (const [k, v] of Object.entries((entry.body?.variables ?? {}) as Record<string, string>)) expect(getAt(r.body, `variables.${k}`)).toBe(fillIn(v));
    if (entry.body?.query) expect(r.body?.query).toBe(entry.body.query);
    for (const [h, v] of Object.entries(entry.headers ?? {})) expect(r.headers[h.toLowerCase()]).toBe(fillIn(v));
    for (const [q, v] of Object.entries(entry.query ?? {})) expect(r.query.get(q)).toBe(fillIn(v));
    if (entry.size) expect(Number(paramOf(r, entry.size.in, entry.size.param))).toBe(2);

    if (entry.paging.kind === 'none') {
      expect(first.body.nextCursor).toBeNull();
      return;
    }
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await list({ selectorKey: key, context, limit: 2, cursor: first.body.nextCursor });
    expect(second.status, second.text).toBe(200);
    expect(second.body.data.map((o: any) => o.id)).toEqual(['id-3']);
    expect(second.body.nextCursor).toBeNull();
    const expected = { token: 'page-2-token', link: '2', offset: '2', page: '2' }[entry.paging.kind];
    expect(continuation(entry, seen[1]!)).toBe(expected);
  });

  it('resolves an id by walking the pages, null when absent', async () => {
    current = { key, entry, provider };
    const context = contextFor(entry, provider);
    const hit = await get({ selectorKey: key, context, id: 'id-2' });
    expect(hit.status, hit.text).toBe(200);
    expect(hit.body.data).toMatchObject({ id: 'id-2', label: 'Label 2' });
    expect((await get({ selectorKey: key, context, id: 'id-404' })).body).toEqual({ data: null });
  });
});

describe('the real CLI on a catalogued selector', () => {
  it('sim selectors list drains the provider pages; sim selectors get resolves one', async () => {
    const entry = SELECTOR_CATALOG['google.calendar']!;
    current = { key: 'google.calendar', entry, provider: 'google-calendar' };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], { endpoint: s.url, apiKey: s.key, workspace: ws() });
    const context = JSON.stringify({ oauthCredential: credentialOf['google-calendar'] });
    const listed = await cli('selectors', 'list', '--selector-key', 'google.calendar', '--context', context, '--limit', '0');
    expect(listed.code, listed.stderr).toBe(0);
    for (const id of ['id-1', 'id-2', 'id-3']) expect(JSON.stringify(listed.json)).toContain(id);
    const one = await cli('selectors', 'get', '--selector-key', 'google.calendar', '--context', context, '--id', 'id-3');
    expect(one.code, one.stderr).toBe(0);
    expect(one.json).toMatchObject({ id: 'id-3', label: 'Label 3' });
  });
});

describe('catalog selector errors', () => {
  it('a missing context key is a 400 at that key', async () => {
    const entry = SELECTOR_CATALOG['bigquery.tables']!;
    const res = await list({ selectorKey: 'bigquery.tables', context: { oauthCredential: credentialOf[entry.providers[0]!], projectId: 'p' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].path).toEqual(['body', 'context', 'datasetId']);
    expect((await list({ selectorKey: 'gmail.labels', context: {} })).body.error.message).toContain('context.oauthCredential');
  });

  it("another provider's credential is a 400 naming the connection needed", async () => {
    const res = await list({ selectorKey: 'gmail.labels', context: { oauthCredential: credentialOf.airtable } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('needs an OAuth connection to Gmail');
  });

  it('a provider refusing the token (401) is a 400 asking to reconnect', async () => {
    const entry = SELECTOR_CATALOG['airtable.bases']!;
    current = { key: 'airtable.bases', entry, provider: 'airtable' };
    refuse = true;
    try {
      const res = await list({ selectorKey: 'airtable.bases', context: { oauthCredential: credentialOf.airtable } });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain('reconnect');
      expect(res.body.error.details[0]).toMatchObject({ code: 'credential_refused', path: ['body', 'context', 'oauthCredential'] });
    } finally {
      refuse = false;
    }
  });

  it('a GraphQL answer carrying errors is a 503 quoting the first', async () => {
    const entry = SELECTOR_CATALOG['linear.teams']!;
    current = { key: 'linear.teams', entry, provider: 'linear' };
    graphqlError = true;
    try {
      const res = await list({ selectorKey: 'linear.teams', context: { oauthCredential: credentialOf.linear } });
      expect(res.status).toBe(503);
      expect(res.body.error.message).toContain('Argument first is too large');
    } finally {
      graphqlError = false;
    }
  });

  it('an Atlassian domain the connection was not granted is a 400 naming the sites it has', async () => {
    const entry = SELECTOR_CATALOG['jira.projects']!;
    current = { key: 'jira.projects', entry, provider: 'jira' };
    const res = await list({ selectorKey: 'jira.projects', context: { oauthCredential: credentialOf.jira, domain: 'nope.atlassian.net' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].path).toEqual(['body', 'context', 'domain']);
    expect(res.body.error.message).toContain('team.atlassian.net');
  });

  it.each(Object.entries(UNAVAILABLE_SELECTORS))('%s is a 400 saying why', async (key, why) => {
    const res = await list({ selectorKey: key, context: { oauthCredential: 'x' } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(`The selector ${key} is not available on this server: ${why}.`);
  });

  it('keys this server cannot answer are a 400 saying why', async () => {
    const res = await list({ selectorKey: 'snowflake.databases', context: { oauthCredential: 'x' } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('key pair');
    expect(Object.keys(UNAVAILABLE_SELECTORS).filter((k) => k in SELECTOR_CATALOG)).toEqual([]);
  });
});

// Enrichment groups: built-in enrichments run a cascade of providers from the registry on the group-run
// machinery. An unconfigured provider is `skipped` (never a made-up value); a configured one (an HTTP endpoint,
// here a local server allowed through the egress policy) fills the columns; a cascade falls through no_match
// to the next provider; unknown enrichments, outputs and inputs are refused with 400.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { PATIENCE_MS } from './support/wait.ts';

let s: TestServer;
let ws: string;
let provider: Server;
const calls: { path: string; auth: string | undefined; body: any }[] = [];

beforeAll(async () => {
  provider = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw);
      calls.push({ path: req.url!, auth: req.headers.authorization, body });
      res.setHeader('content-type', 'application/json');
      if (req.url === '/hunter') res.end(JSON.stringify({ matched: false, cost: 0.01 }));
      else res.end(JSON.stringify({ matched: true, cost: 0.05, outputs: { domain: `${String(body.input.companyName).toLowerCase()}.example` } }));
    });
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  ws = s.workspaceId;
});
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => provider.close(r));
});

async function ok(method: string, p: string, body?: unknown, srv: TestServer = s) {
  const r = await srv.call(method, p, body);
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${r.text}`);
  return r.body.data;
}

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = PATIENCE_MS): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function setup(name: string, srv: TestServer = s) {
  const ws = srv.workspaceId;
  const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name, schema: { columns: [{ name: 'company', type: 'string' }] } }, srv);
  const base = `/api/v2/tables/${t.id}`;
  const added = await ok('POST', `${base}/groups`, {
    workspaceId: ws,
    group: {
      type: 'enrichment', enrichmentId: 'company-domain', autoRun: false, dependencies: { columns: ['company'] },
      outputs: [{ outputId: 'domain', columnName: 'domain' }], inputMappings: [{ inputName: 'companyName', columnName: 'company' }],
    },
    outputColumns: [{ name: 'domain', type: 'string' }],
  }, srv);
  const rows = await ok('POST', `${base}/rows`, { workspaceId: ws, rows: [{ company: 'Acme' }] }, srv);
  const rowId = (rows.rows ?? rows)[0].id;
  return { base, groupId: added.group.id as string, group: added.group, rowId };
}

const enrichmentOf = (base: string, rowId: string, groupId: string, srv: TestServer = s) => ok('GET', `${base}/rows/${rowId}/enrichment/${groupId}?workspaceId=${srv.workspaceId}`, undefined, srv);

describe('enrichment groups', () => {
  it('skip every cell when no provider of the cascade is configured, writing nothing', async () => {
    const { base, groupId, group, rowId } = await setup('unconfigured');
    expect(group).toMatchObject({ type: 'enrichment', enrichmentId: 'company-domain', workflowId: '', outputs: [{ outputId: 'domain', columnName: 'domain' }] });
    const { dispatchId } = await ok('POST', `${base}/rows/${rowId}/enrichment/${groupId}`, { workspaceId: ws });
    expect(dispatchId).toBeTruthy();
    const e = await until(() => enrichmentOf(base, rowId, groupId), (v: any) => v.runState?.status === 'skipped');
    expect(e.runState.status).toBe('skipped');
    expect(e.runState.error).toMatch(/No provider of "company-domain" is configured/);
    expect(e.outputs).toEqual({ domain: null });
    expect(e.cascade.matchedProvider).toBeNull();
    expect(e.cascade.providers.map((p: any) => [p.id, p.status])).toEqual([['hunter', 'skipped'], ['pdl', 'skipped']]);
    expect(e.cascade.providers[0].error).toMatch(/ENRICHMENT_HUNTER_URL/);
  });

  it('fills the columns from a configured provider, falling through a no_match to the next one', async () => {
    // Providers are configured when the server starts (ENRICHMENT_<ID>_URL, _API_KEY).
    const port = (provider.address() as AddressInfo).port;
    const c = await startTestServer({
      EGRESS_ALLOW_CIDRS: '127.0.0.1/32', ENRICHMENT_HUNTER_URL: `http://127.0.0.1:${port}/hunter`, ENRICHMENT_PDL_URL: `http://127.0.0.1:${port}/pdl`, ENRICHMENT_PDL_API_KEY: 'k-test',
    });
    try {
      const { base, groupId, rowId } = await setup('configured', c);
      await ok('POST', `${base}/dispatches`, { workspaceId: c.workspaceId, groupIds: [groupId] }, c);
      const e = await until(() => enrichmentOf(base, rowId, groupId, c), (v: any) => v.runState?.status === 'completed');
      expect(e.runState).toMatchObject({ status: 'completed', error: null });
      expect(e.outputs).toEqual({ domain: 'acme.example' });
      expect(e.cascade).toMatchObject({ matchedProvider: 'pdl', aborted: false });
      expect(e.cascade.totalCost).toBeCloseTo(0.06);
      expect(e.cascade.providers.map((p: any) => [p.id, p.status])).toEqual([['hunter', 'no_match'], ['pdl', 'matched']]);
      const row = await ok('GET', `${base}/rows/${rowId}?workspaceId=${c.workspaceId}`, undefined, c);
      expect(JSON.stringify(row)).toContain('acme.example');
      const pdl = calls.find((x) => x.path === '/pdl')!;
      expect(pdl.auth).toBe('Bearer k-test');
      expect(pdl.body).toEqual({ enrichmentId: 'company-domain', input: { companyName: 'Acme' } });
    } finally {
      await c.stop();
    }
  });

  it('refuses a provider endpoint that is not an http(s) URL at start-up', async () => {
    const { loadConfig, ConfigError } = await import('../src/config.ts');
    expect(() => loadConfig({ DATA_DIR: '/tmp/x', ENRICHMENT_HUNTER_URL: 'ftp://example.com' })).toThrow(ConfigError);
  });

  it('refuses unknown enrichments, outputs and inputs, and enrichmentId on a workflow group, with 400', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'bad', schema: { columns: [{ name: 'company', type: 'string' }] } });
    const post = (group: unknown) => s.call('POST', `/api/v2/tables/${t.id}/groups`, { workspaceId: ws, group, outputColumns: [{ name: 'domain', type: 'string' }] });
    const cases = [
      { type: 'enrichment', enrichmentId: 'no-such', outputs: [{ outputId: 'domain', columnName: 'domain' }] },
      { type: 'enrichment', enrichmentId: 'company-domain', outputs: [{ outputId: 'nope', columnName: 'domain' }] },
      { type: 'enrichment', enrichmentId: 'company-domain', outputs: [{ outputId: 'domain', columnName: 'domain' }], inputMappings: [{ inputName: 'x', columnName: 'company' }] },
      { type: 'manual', enrichmentId: 'company-domain', workflowId: 'wf', outputs: [{ blockId: 'b', columnName: 'domain' }] },
    ];
    for (const g of cases) {
      const r = await post(g);
      expect(r.status, JSON.stringify(g)).toBe(400);
      expect(r.body.error).toBeTruthy();
    }
    const { base, groupId } = await setup('bad_update');
    for (const patch of [{ workflowId: 'wf' }, { outputs: [{ outputId: 'nope', columnName: 'domain' }] }, { inputMappings: [{ inputName: 'x', columnName: 'company' }] }]) {
      const r = await s.call('PATCH', `${base}/groups`, { workspaceId: ws, groupId, ...patch });
      expect(r.status, JSON.stringify(patch)).toBe(400);
    }
    const renamed = await ok('PATCH', `${base}/groups`, { workspaceId: ws, groupId, name: 'Domains' });
    expect(renamed.group ?? renamed).toMatchObject({ name: 'Domains', type: 'enrichment', enrichmentId: 'company-domain' });
    const after = await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`);
    expect(JSON.stringify(after)).not.toContain('"domain"');
  });
});

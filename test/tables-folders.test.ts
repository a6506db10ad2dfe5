// Table folders on the shared tree (HTTP and CLI), folder bulk delete and move, and the admin verb that sets
// a table's locks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin, startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let ws: string;
beforeAll(async () => {
  s = await startTestServer({ TABLES_LIMIT_FREE: '100' });
  ws = s.workspaceId;
});
afterAll(async () => {
  await s.stop();
});

async function ok(method: string, p: string, body?: unknown) {
  const r = await s.call(method, p, body);
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${r.text}`);
  return r.body.data;
}
const table = (name: string, folderPath?: string) => ok('POST', '/api/v2/tables', { workspaceId: ws, name, schema: { columns: [] }, ...(folderPath ? { folderPath } : {}) });

describe('table folders', () => {
  it('create, list, relocate with tables, delete recursively and restore the batch', async () => {
    const f = await ok('POST', '/api/v2/tables/folders', { workspaceId: ws, path: '/Sales%20team/2024' });
    expect(f).toMatchObject({ name: '2024', path: '/Sales%20team/2024', parentPath: '/Sales%20team' });
    expect((await s.call('POST', '/api/v2/tables/folders', { workspaceId: ws, path: '/Sales%20team/2024' })).status).toBe(409);
    const t = await table('q1', '/Sales%20team/2024');
    expect((await ok('GET', `/api/v2/tables/folders?workspaceId=${ws}&parentPath=/Sales%20team`)).map((x: any) => x.path)).toEqual(['/Sales%20team/2024']);
    await ok('POST', '/api/v2/tables/folders', { workspaceId: ws, path: '/Archive' });
    const moved = await ok('PATCH', '/api/v2/tables/folders', { workspaceId: ws, path: '/Sales%20team', destinationPath: '/Archive' });
    expect(moved.path).toBe('/Archive/Sales%20team');
    expect((await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).folderPath).toBe('/Archive/Sales%20team/2024');
    expect((await s.call('PATCH', '/api/v2/tables/folders', { workspaceId: ws, path: '/Archive', destinationPath: '/Archive/Sales%20team/x' })).status).toBe(409);

    expect((await s.call('DELETE', `/api/v2/tables/folders?workspaceId=${ws}&path=/Archive`)).status).toBe(409);
    expect((await s.call('DELETE', `/api/v2/tables/folders?workspaceId=${ws}&path=/Archive&recursive=maybe`)).status).toBe(400);
    const del = await ok('DELETE', `/api/v2/tables/folders?workspaceId=${ws}&path=/Archive/Sales%20team&recursive=yes`);
    expect(del).toEqual({ path: '/Archive/Sales%20team', deleted: true, deletedItems: { folders: 2, tables: 1 } });
    expect((await s.call('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).body.data.name).toBe('q1');
    expect((await ok('GET', `/api/v2/tables?workspaceId=${ws}&scope=archived`)).map((x: any) => x.id)).toContain(t.id);
    // The parent is archived too: the folder comes back at the root, with its table.
    await ok('DELETE', `/api/v2/tables/folders?workspaceId=${ws}&path=/Archive&recursive=true`);
    const back = await ok('POST', '/api/v2/tables/folders/restore', { workspaceId: ws, path: '/Archive/Sales%20team' });
    expect(back).toMatchObject({ folder: { path: '/Sales%20team' }, restoredItems: { folders: 2, tables: 1 } });
    expect((await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).folderPath).toBe('/Sales%20team/2024');
    expect((await s.call('POST', '/api/v2/tables/folders/restore', { workspaceId: ws, path: '/Never' })).status).toBe(404);
  });

  it('bulk deletes and moves folders with their tables', async () => {
    await ok('POST', '/api/v2/tables/folders', { workspaceId: ws, path: '/B1/inner' });
    const a = await table('b_a', '/B1/inner');
    const b = await table('b_b');
    const moved = await ok('POST', '/api/v2/tables/move', { workspaceId: ws, folderPaths: ['/B1', '/Nope'], tableIds: [b.id], targetFolderPath: '/Target' });
    expect(moved.moved.map((m: any) => m.kind)).toEqual(['table', 'folder']);
    expect(moved.notFound).toEqual([{ kind: 'folder', id: '/Nope' }]);
    expect((await ok('GET', `/api/v2/tables/${a.id}?workspaceId=${ws}`)).folderPath).toBe('/Target/B1/inner');
    const deleted = await ok('POST', '/api/v2/tables/bulk-delete', { workspaceId: ws, folderPaths: ['/Target'] });
    expect(deleted.deletedItems).toEqual({ tables: 2, folders: 3 });
  });

  it('through the CLI: folders create/list/ls/mv/delete/restore and tables ls', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = async (...args: string[]) => {
      const r = await runCli(['--output', 'json', ...args], env);
      if (r.code !== 0) throw new Error(`${args.join(' ')}: ${r.stdout} ${r.stderr}`);
      return r.json;
    };
    expect(await cli('tables', 'folders', 'create', '/Cli box')).toMatchObject({ path: '/Cli%20box' });
    await cli('tables', 'mkdir', '/Cli box/sub');
    const t = await table('cli_t', '/Cli%20box');
    expect(JSON.stringify(await cli('tables', 'folders', 'list'))).toContain('/Cli%20box/sub');
    const ls = await cli('tables', 'ls', '/Cli box');
    expect(JSON.stringify(ls)).toContain(t.id);
    expect(JSON.stringify(ls)).toContain('sub');
    expect(await cli('tables', 'folders', 'mv', '/Cli box', '/Cli moved')).toMatchObject({ path: '/Cli%20moved' });
    expect(await cli('tables', 'folders', 'delete', '/Cli moved', '--recursive', '--yes')).toMatchObject({ deleted: true, deletedItems: { folders: 2, tables: 1 } });
    expect(await cli('tables', 'folders', 'restore', '/Cli moved')).toMatchObject({ restoredItems: { folders: 2, tables: 1 } });
  });
});

describe('locks', () => {
  it('the admin verb sets the flags; the API then answers 423 with details.lock', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'ledger', schema: { columns: [{ name: 'amount', type: 'number' }] } });
    const admin = (...args: string[]) =>
      runAdmin(s, args);
    const r = await admin('table', 'lock', '--table', t.id, '--preset', 'append-only');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).locks).toEqual({ schemaLocked: false, insertLocked: false, updateLocked: true, deleteLocked: true });
    expect((await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).locks.updateLocked).toBe(true);
    const row = await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, data: { amount: 5 } });
    const upd = await s.call('PATCH', `/api/v2/tables/${t.id}/rows/${row.id}`, { workspaceId: ws, data: { amount: 6 } });
    expect(upd.status).toBe(423);
    expect(upd.body.error).toMatchObject({ code: 'LOCKED', details: { lock: 'update' } });
    expect((await s.call('POST', `/api/v2/tables/${t.id}/exports`, { workspaceId: ws })).status).toBe(200);
    expect((await admin('table', 'lock', '--table', t.id, '--schema', 'maybe')).status).toBe(1);
    expect((await admin('table', 'lock', '--table', 'tbl_missing', '--preset', 'none')).status).toBe(1);
    expect((await admin('table', 'lock', '--table', t.id, '--preset', 'none', '--insert', 'true')).status).toBe(0);
    expect((await s.call('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, data: { amount: 1 } })).body.error.details.lock).toBe('insert');
    expect((await s.call('PATCH', `/api/v2/tables/${t.id}/rows/${row.id}`, { workspaceId: ws, data: { amount: 7 } })).status).toBe(200);
  });
});

describe('row limits', () => {
  it("follow the workspace's plan: the admin plan change and a restart bring maxRows to the plan's limit", async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'limits', schema: { columns: [{ name: 'a', type: 'string' }] } });
    const before = (await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).maxRows;
    const admin = (...args: string[]) =>
      runAdmin(s, args, { TABLE_ROWS_LIMIT_PRO: '7' });
    expect((await admin('workspace', 'plan', '--workspace', ws, '--plan', 'pro')).status).toBe(0);
    expect((await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).maxRows).toBe(7);
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: Array.from({ length: 7 }, (_, i) => ({ a: String(i) })) });
    const full = await s.call('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, data: { a: 'one more' } });
    expect(full.status).toBe(403);
    expect(full.body.error.details).toMatchObject({ code: 'TABLE_ROW_LIMIT', maxRows: 7, rowCount: 7 });
    // Back on the free plan; the server applies its own configured limits when it starts (as here).
    expect((await admin('workspace', 'plan', '--workspace', ws, '--plan', 'free')).status).toBe(0);
    const { syncTableRowLimits } = await import('../src/tables/service.ts');
    await syncTableRowLimits(s.services.store, s.services.config.tables.perPlan);
    expect((await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).maxRows).toBe(before);
  });
});

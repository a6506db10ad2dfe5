// Saved views through HTTP and the CLI: a new table's Default view, config replace and configPatch, the one
// default view, filters and sorts checked against the columns and kept across a rename, and delete.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let ws: string;
beforeAll(async () => {
  s = await startTestServer();
  ws = s.workspaceId;
});
afterAll(async () => {
  await s.stop();
});

async function ok(method: string, path: string, body?: unknown) {
  const r = await s.call(method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
  return r.body.data;
}

describe('views', () => {
  it('creates, patches, replaces, switches the default, follows renames and deletes', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'tasks', schema: { columns: [{ name: 'title', type: 'string' }, { name: 'done', type: 'boolean' }] } });
    const base = `/api/v2/tables/${t.id}/views`;
    const [def] = (await s.call('GET', `${base}?workspaceId=${ws}`)).body.data;
    expect(def).toMatchObject({ name: 'Default', isDefault: true, tableId: t.id, config: {} });
    const config = { filter: { field: 'done', op: 'eq', value: false }, sort: [{ field: 'title', direction: 'asc' }], columnWidths: { title: 240 }, hiddenColumns: ['done'] };
    const open = await ok('POST', base, { workspaceId: ws, name: 'Open', config });
    expect(open).toMatchObject({ name: 'Open', isDefault: false, config });
    const patched = await ok('PATCH', `${base}/${open.id}`, { workspaceId: ws, configPatch: { sort: null, pinnedColumns: ['title'] }, isDefault: true });
    expect(patched.config).toEqual({ ...config, sort: null, pinnedColumns: ['title'] });
    expect(patched.isDefault).toBe(true);
    expect((await ok('GET', `${base}/${def.id}?workspaceId=${ws}`)).isDefault).toBe(false);

    await ok('PATCH', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, columnName: 'done', updates: { name: 'finished' } });
    const renamed = await ok('GET', `${base}/${open.id}?workspaceId=${ws}`);
    expect(renamed.config.filter).toEqual({ field: 'finished', op: 'eq', value: false });
    expect(renamed.config.hiddenColumns).toEqual(['finished']);

    const replaced = await ok('PATCH', `${base}/${open.id}`, { workspaceId: ws, name: 'All', config: { columnOrder: ['finished', 'title'] } });
    expect(replaced).toMatchObject({ name: 'All', config: { columnOrder: ['finished', 'title'] } });

    const bad = async (body: unknown) => (await s.call('POST', base, { workspaceId: ws, name: 'x', ...(body as object) })).status;
    expect(await bad({ config: { filter: { field: 'nope', op: 'eq', value: 1 } } })).toBe(400);
    expect(await bad({ config: { filter: { all: [] } } })).toBe(400);
    expect(await bad({ config: { sort: [{ field: 'title', direction: 'up' }] } })).toBe(400);
    expect(await bad({ config: { extra: 1 } })).toBe(400);
    expect((await s.call('PATCH', `${base}/${open.id}`, { workspaceId: ws, config: {}, configPatch: {} })).status).toBe(400);
    expect((await s.call('GET', `${base}/view_missing?workspaceId=${ws}`)).status).toBe(404);

    await ok('DELETE', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, columnName: 'finished' });
    expect((await ok('GET', `${base}/${open.id}?workspaceId=${ws}`)).config).toEqual({ columnOrder: ['title'] });
    expect(await ok('DELETE', `${base}/${open.id}?workspaceId=${ws}`)).toEqual({ id: open.id, deleted: true });
    expect((await ok('GET', `${base}/${def.id}?workspaceId=${ws}`)).isDefault).toBe(true);
  });

  it('through the CLI', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = async (...args: string[]) => {
      const r = await runCli(['--output', 'json', ...args], env);
      if (r.code !== 0) throw new Error(`${args.join(' ')}: ${r.stdout} ${r.stderr}`);
      return r.json;
    };
    const t = await cli('tables', 'create', '--name', 'cli_views', '--schema', JSON.stringify({ columns: [{ name: 'a', type: 'number' }] }));
    const v = await cli('tables', 'views', 'create', t.id, '--name', 'Big', '--config', JSON.stringify({ filter: { field: 'a', op: 'gt', value: 10 } }));
    expect(v).toMatchObject({ name: 'Big', config: { filter: { field: 'a', op: 'gt', value: 10 } } });
    expect(JSON.stringify(await cli('tables', 'views', 'list', t.id))).toContain(v.id);
    expect(await cli('tables', 'views', 'update', t.id, v.id, '--config-patch', JSON.stringify({ hiddenColumns: ['a'] }), '--default')).toMatchObject({ isDefault: true, config: { hiddenColumns: ['a'] } });
    expect(await cli('tables', 'views', 'get', t.id, v.id)).toMatchObject({ id: v.id });
    expect(await cli('tables', 'views', 'delete', t.id, v.id, '--yes')).toMatchObject({ deleted: true });
  });
});

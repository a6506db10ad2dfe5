// The official CLI's tables commands, unchanged, against this server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
const cli = async (...args: string[]) => {
  const r = await runCli(['--output', 'json', ...args], env);
  if (r.code !== 0) throw new Error(`sim ${args.join(' ')} → ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.json;
};

beforeAll(async () => {
  s = await startTestServer({ TABLES_LIMIT_FREE: '100' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(async () => {
  await s.stop();
});

describe('sim tables', () => {
  it('create, get, list, update, columns, mv, move, delete, restore, batch-delete', async () => {
    const schema = JSON.stringify({ columns: [{ name: 'email', type: 'string', unique: true }, { name: 'score', type: 'number' }] });
    const t = await cli('tables', 'create', '--name', 'leads', '--schema', schema, '--folder', 'Sales');
    expect(t).toMatchObject({ name: 'leads', folderPath: '/Sales' });
    expect(await cli('tables', 'get', t.id)).toMatchObject({ id: t.id, name: 'leads' });
    const list = await cli('tables', 'list');
    expect(JSON.stringify(list)).toContain(t.id);
    expect(await cli('tables', 'update', t.id, '--name', 'leads2', '--description', 'Hot')).toMatchObject({ name: 'leads2', description: 'Hot' });

    const added = await cli('tables', 'columns', 'create', t.id, '--column', JSON.stringify({ name: 'active', type: 'boolean' }));
    expect(added.columns.map((c: any) => c.name)).toEqual(['email', 'score', 'active']);
    const updated = await cli('tables', 'columns', 'update', t.id, '--column-name', 'score', '--updates', JSON.stringify({ name: 'points', type: 'currency', currencyCode: 'EUR' }));
    expect(updated.columns[1]).toMatchObject({ name: 'points', type: 'currency', currencyCode: 'EUR' });
    const deleted = await cli('tables', 'columns', 'delete', t.id, '--column-name', 'active', '--yes');
    expect(deleted.columns.map((c: any) => c.name)).toEqual(['email', 'points']);

    await cli('tables', 'mv', t.id, '/Archive/Old');
    expect(await cli('tables', 'get', t.id)).toMatchObject({ folderPath: '/Archive/Old' });
    const moved = await cli('tables', 'move', '--table-ids', JSON.stringify([t.id]), '--to', '/');
    expect(moved.moved).toEqual([{ kind: 'table', id: t.id, name: 'leads2' }]);

    expect(await cli('tables', 'delete', t.id, '--yes')).toMatchObject({ id: t.id, deleted: true });
    expect(await cli('tables', 'restore', t.id)).toMatchObject({ id: t.id, name: 'leads2' });
    const batch = await cli('tables', 'batch-delete', '--table-ids', JSON.stringify([t.id, 'tbl_missing']), '--yes');
    expect(batch).toMatchObject({ deleted: [{ kind: 'table', id: t.id }], notFound: [{ kind: 'table', id: 'tbl_missing' }], deletedItems: { tables: 1, folders: 0 } });
  });

  it('rows query with an unknown operator says which operators there are', async () => {
    const t = await cli('tables', 'create', '--name', 'ops', '--schema', JSON.stringify({ columns: [{ name: 'qty', type: 'number' }] }));
    const r = await runCli(['--output', 'json', 'tables', 'rows', 'query', t.id, '--filter', JSON.stringify({ all: [{ field: 'qty', op: 'above', value: 1 }] })], env);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/above\\?" is not one of the allowed values: eq, ne, gt/);
    expect(r.stdout + r.stderr).not.toContain("required property 'any'");
  });

  it('rows create/list/get/update/delete, batch-update, update-each, batch-delete, query, count, search, upsert', async () => {
    const schema = JSON.stringify({ columns: [{ name: 'sku', type: 'string', unique: true }, { name: 'qty', type: 'number' }, { name: 'color', type: 'select', options: [{ id: 'r', name: 'red' }, { id: 'g', name: 'green' }] }] });
    const t = await cli('tables', 'create', '--name', 'stock', '--schema', schema);
    const created = await cli('tables', 'rows', 'create', t.id, '--rows', JSON.stringify([{ sku: 'A1', qty: 5, color: 'red' }, { sku: 'B2', qty: 0, color: 'green' }, { sku: 'C3', qty: 12 }]));
    expect(created.insertedCount).toBe(3);
    const one = await cli('tables', 'rows', 'create', t.id, '--data', JSON.stringify({ sku: 'D4', qty: 1 }));
    expect(one.data).toMatchObject({ sku: 'D4', qty: 1 });
    const list = await cli('tables', 'rows', 'list', t.id);
    expect(JSON.stringify(list)).toContain('C3');
    expect(await cli('tables', 'rows', 'get', t.id, one.id)).toMatchObject({ id: one.id });
    expect((await cli('tables', 'rows', 'update', t.id, one.id, '--data', JSON.stringify({ qty: 2 }))).data.qty).toBe(2);
    const q = await cli('tables', 'rows', 'query', t.id, '--filter', JSON.stringify({ field: 'qty', op: 'gt', value: 1 }), '--sort', JSON.stringify([{ field: 'qty', direction: 'desc' }]));
    expect(JSON.stringify(q)).toMatch(/C3.*A1.*D4/);
    expect(await cli('tables', 'rows', 'count', t.id, '--filter', JSON.stringify({ field: 'color', op: 'eq', value: 'red' }))).toMatchObject({ totalCount: 1 });
    const found = await cli('tables', 'rows', 'search', t.id, '--query', 'gre');
    expect(found.matches).toEqual([{ ordinal: 1, rowId: created.rows[1].id, column: 'color' }]);
    const bu = await cli('tables', 'rows', 'batch-update', t.id, '--filter', JSON.stringify({ field: 'qty', op: 'lt', value: 3 }), '--data', JSON.stringify({ qty: 3 }), '--yes');
    expect(bu.updatedCount).toBe(2);
    const each = await cli('tables', 'rows', 'update-each', t.id, '--updates', JSON.stringify([{ rowId: created.rows[0].id, data: { qty: 50 } }]));
    expect(each.updatedCount).toBe(1);
    const up = await cli('tables', 'upsert', t.id, '--data', JSON.stringify({ sku: 'A1', qty: 7 }), '--on', 'sku');
    expect(up).toMatchObject({ operation: 'update', row: { data: { sku: 'A1', qty: 7, color: null } } });
    expect(await cli('tables', 'rows', 'delete', t.id, one.id, '--yes')).toMatchObject({ id: one.id, deleted: true });
    const bd = await cli('tables', 'rows', 'batch-delete', t.id, '--row', created.rows[2].id, '--yes');
    expect(bd.deletedCount).toBe(1);
    const bf = await cli('tables', 'rows', 'batch-delete', t.id, '--filter', JSON.stringify({ field: 'sku', op: 'startsWith', value: 'a' }), '--yes');
    expect(bf.deletedCount).toBe(1);
    expect((await cli('tables', 'get', t.id)).rowCount).toBe(1);
  });
});

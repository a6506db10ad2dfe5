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
});

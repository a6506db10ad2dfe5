// Tables through HTTP: tables, columns (rename, retype with conversion or refusal naming the rows), archive and
// restore, bulk delete and move, and the bad inputs the issue names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let ws: string;
beforeAll(async () => {
  s = await startTestServer({ TABLES_LIMIT_FREE: '500' });
  ws = s.workspaceId;
});
afterAll(async () => {
  await s.stop();
});

const call = (method: string, path: string, body?: unknown) => s.call(method, path, body);
const ok = (method: string, path: string, body?: unknown) => s.ok(method, path, body);
let n = 0;
export async function createTable(columns: unknown[], extra: Record<string, unknown> = {}) {
  return ok('POST', '/api/v2/tables', { workspaceId: ws, name: `t_${++n}`, schema: { columns }, ...extra });
}

describe('tables', () => {
  it('creates, reads, lists, renames and archives a table', async () => {
    const t = await ok('POST', '/api/v2/tables', {
      workspaceId: ws,
      name: 'contacts',
      description: 'People',
      folderPath: '/CRM/2024',
      schema: { columns: [{ name: 'email', type: 'string', unique: true }, { name: 'age', type: 'number' }, { name: 'plan', type: 'select', options: [{ id: 'p1', name: 'Free' }] }] },
    });
    expect(t).toMatchObject({ name: 'contacts', description: 'People', folderPath: '/CRM/2024', rowCount: 0, maxRows: 50000, job: null });
    expect(t.id).toMatch(/^tbl_[0-9a-f]{32}$/);
    expect(t.locks).toEqual({ schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false });
    expect(t.schema.columns[0]).toMatchObject({ name: 'email', type: 'string', required: false, unique: true });
    expect(t.schema.columns[0].id).toMatch(/^col_[0-9a-f]{32}$/);
    expect(t.schema.columns[2]).toMatchObject({ options: [{ id: 'p1', name: 'Free' }], multiple: false });
    expect(t.webUrl).toContain(`/workspace/${ws}/tables/${t.id}`);

    expect(await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).toEqual(t);
    const inFolder = await ok('GET', `/api/v2/tables?workspaceId=${ws}&folderPath=/CRM/2024`);
    expect(inFolder.map((x: any) => x.id)).toEqual([t.id]);
    expect(await ok('GET', `/api/v2/tables?workspaceId=${ws}&folderPath=/nope`)).toEqual([]);
    expect((await ok('GET', `/api/v2/tables?workspaceId=${ws}&search=CONTACT`)).map((x: any) => x.id)).toContain(t.id);

    expect((await call('POST', '/api/v2/tables', { workspaceId: ws, name: 'contacts', schema: { columns: [] } })).status).toBe(409);
    const renamed = await ok('PATCH', `/api/v2/tables/${t.id}`, { workspaceId: ws, name: 'people', description: null, folderPath: '/' });
    expect(renamed).toMatchObject({ name: 'people', description: null, folderPath: '/' });

    expect(await ok('DELETE', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).toEqual({ id: t.id, deleted: true });
    expect((await ok('GET', `/api/v2/tables?workspaceId=${ws}&scope=archived`)).map((x: any) => x.id)).toContain(t.id);
    expect((await ok('GET', `/api/v2/tables?workspaceId=${ws}`)).map((x: any) => x.id)).not.toContain(t.id);
    // A new table takes the name meanwhile; the restored one comes back under a free name.
    await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'people', schema: { columns: [] } });
    const back = await ok('POST', `/api/v2/tables/${t.id}/restore`, { workspaceId: ws });
    expect(back.name).toBe('people_2');
    expect(await ok('POST', `/api/v2/tables/${t.id}/restore`, { workspaceId: ws })).toMatchObject({ name: 'people_2' });
  });

  it('pages with a signed cursor and clamps the limit', async () => {
    for (let i = 0; i < 3; i++) await createTable([]);
    const first = await call('GET', `/api/v2/tables?workspaceId=${ws}&limit=0`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(1);
    const second = await call('GET', `/api/v2/tables?workspaceId=${ws}&limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
    expect((await call('GET', `/api/v2/tables?workspaceId=${ws}&limit=5000`)).status).toBe(200);
    expect((await call('GET', `/api/v2/tables?workspaceId=${ws}&sortBy=name&cursor=${encodeURIComponent(first.body.nextCursor)}`)).status).toBe(400);
  });

  it('refuses bad definitions with a 400 naming the field', async () => {
    const bad = async (columns: unknown[], name = 'bad_def') => (await call('POST', '/api/v2/tables', { workspaceId: ws, name, schema: { columns } })).status;
    expect(await bad([{ name: '1st', type: 'string' }])).toBe(400);
    expect(await bad([{ name: 'a', type: 'string' }, { name: 'a', type: 'number' }])).toBe(400);
    expect(await bad([{ name: 'a', type: 'uuid' }])).toBe(400);
    expect(await bad([{ name: 's', type: 'select', unique: true, options: [] }])).toBe(400);
    expect(await bad([{ name: 'n', type: 'number', options: [{ id: 'x', name: 'x' }] }])).toBe(400);
    expect(await bad([{ name: 'id', type: 'string' }])).toBe(400);
    expect(await bad([], 'has space')).toBe(400);
    expect(await bad(Array.from({ length: 1001 }, (_, i) => ({ name: `c${i}`, type: 'string' })))).toBe(400);
    const r = await call('POST', '/api/v2/tables', { workspaceId: ws, name: 'x', schema: { columns: [{ name: 'a', type: 'string', extra: 1 }] } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
  });

  it('enforces the plan table limit', async () => {
    const p = await startTestServer({ TABLES_LIMIT_FREE: '1' });
    try {
      const body = (name: string) => ({ workspaceId: p.workspaceId, name, schema: { columns: [] } });
      expect((await p.call('POST', '/api/v2/tables', body('one'))).status).toBe(201);
      const r = await p.call('POST', '/api/v2/tables', body('two'));
      expect(r.status).toBe(403);
      expect(r.body.error.details.code).toBe('PLAN_LIMIT');
    } finally {
      await p.stop();
    }
  });

  it('hides tables of other workspaces (404)', async () => {
    const t = await createTable([]);
    const other = await s.newWorkspace('Other');
    expect((await call('GET', `/api/v2/tables/${t.id}?workspaceId=${other}`)).status).toBe(404);
    expect((await call('GET', `/api/v2/tables/tbl_nope?workspaceId=${ws}`)).status).toBe(404);
  });
});

describe('columns', () => {
  it('adds at a position, renames without touching rows, and deletes', async () => {
    const t = await createTable([{ name: 'a', type: 'string' }, { name: 'b', type: 'number' }]);
    const added = await ok('POST', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, column: { name: 'mid', type: 'boolean', position: 1 } });
    expect(added.columns.map((c: any) => c.name)).toEqual(['a', 'mid', 'b']);
    expect((await call('POST', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, column: { name: 'a', type: 'string' } })).status).toBe(409);
    const renamed = await ok('PATCH', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, columnName: 'a', updates: { name: 'alpha' } });
    expect(renamed.columns.map((c: any) => c.name)).toEqual(['alpha', 'mid', 'b']);
    expect(renamed.columns[0].id).toBe(t.schema.columns[0].id);
    expect(renamed.unmigrated).toEqual([]);
    expect((await call('PATCH', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, columnName: 'alpha', updates: { name: 'b' } })).status).toBe(409);
    expect((await call('PATCH', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, columnName: 'zzz', updates: { name: 'q' } })).status).toBe(400);
    const del = await ok('DELETE', `/api/v2/tables/${t.id}/columns`, { workspaceId: ws, columnName: 'mid' });
    expect(del.columns.map((c: any) => c.name)).toEqual(['alpha', 'b']);
  });
});

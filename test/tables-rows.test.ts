// Table rows through HTTP: inserts (batch and positioned), merges, deletes, filter updates, bulk updates,
// upserts (also concurrent), queries with predicates, sorts and cursors, counts, find, retyping with rows,
// and every bad input the issue names.
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
async function table(columns: unknown[]) {
  const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: `rows_${++n}`, schema: { columns } });
  const base = `/api/v2/tables/${t.id}`;
  return {
    t,
    base,
    insert: (rows: unknown[]) => ok('POST', `${base}/rows`, { workspaceId: ws, rows }),
    query: (body: Record<string, unknown> = {}) => call('POST', `${base}/query`, { workspaceId: ws, ...body }),
    rows: async (body: Record<string, unknown> = {}) => (await ok('POST', `${base}/query`, { workspaceId: ws, limit: 0, ...body })) as any[],
  };
}

const PEOPLE: Record<string, unknown>[] = [
  { name: 'name', type: 'string' },
  { name: 'email', type: 'string', unique: true },
  { name: 'age', type: 'number' },
  { name: 'vip', type: 'boolean' },
  { name: 'joined', type: 'date' },
  { name: 'meta', type: 'json' },
  { name: 'tier', type: 'select', options: [{ id: 'o_gold', name: 'Gold' }, { id: 'o_silver', name: 'Silver' }] },
  { name: 'tags', type: 'select', multiple: true, options: [{ id: 'o_a', name: 'A' }, { id: 'o_b', name: 'B' }] },
  { name: 'price', type: 'currency', currencyCode: 'EUR' },
  { name: 'ttl', type: 'ttl' },
];

describe('filters', () => {
  it('an unknown operator, in any filter position, is named with the operators there are', async () => {
    const { base, query } = await table(PEOPLE);
    const leaf = { field: 'name', op: 'equals', value: 'Ada' };
    const answers = [
      await query({ predicate: leaf }),
      await query({ predicate: { all: [{ field: 'age', op: 'gt', value: 1 }, { any: [{ field: 'vip', op: 'isNull' }, leaf] }] } }),
      await call('POST', `${base}/query/count`, { workspaceId: ws, predicate: { any: [leaf] } }),
      await call('PATCH', `${base}/rows`, { workspaceId: ws, filter: { all: [leaf] }, data: { age: 1 } }),
      await call('POST', `${base}/views`, { workspaceId: ws, name: 'v', config: { filter: { all: [leaf] } } }),
    ];
    for (const r of answers) {
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
      expect(r.body.error.message).toContain('"equals" is not one of the allowed values: eq, ne, gt, gte, lt, lte, in, nin, contains');
      expect(r.body.error.message).not.toMatch(/and \d+ more|required property/);
      expect(r.body.error.details).toHaveLength(1);
      expect(r.body.error.details[0]).toMatchObject({ code: 'invalid_enum_value' });
      expect(r.body.error.details[0].path.at(-1)).toBe('op');
    }
    expect(answers[1]!.body.error.details[0].path).toEqual(['body', 'predicate', 'all', 1, 'any', 1, 'op']);
    // A group that is neither a condition nor all/any still reports what it could be.
    const shapeless = await query({ predicate: { every: [leaf] } });
    expect(shapeless.status).toBe(400);
  });
});

describe('rows', () => {
  it('inserts a batch and single rows at a position, in table order', async () => {
    const { base, insert, rows } = await table(PEOPLE);
    const created = await insert([
      { name: 'Ada', email: 'ada@x.io', age: 36, vip: true, joined: '2024-01-02', meta: { k: [1] }, tier: 'Gold', tags: ['A', 'o_b'], price: 9.5, ttl: 60 },
      { name: 'Bob', email: 'bob@x.io' },
    ]);
    expect(created.insertedCount).toBe(2);
    expect(created.rows[0].data).toEqual({ name: 'Ada', email: 'ada@x.io', age: 36, vip: true, joined: '2024-01-02T00:00:00.000Z', meta: { k: [1] }, tier: 'o_gold', tags: ['o_a', 'o_b'], price: 9.5, ttl: 60 });
    expect(created.rows[1].data.age).toBeNull();
    const [ada, bob] = created.rows;
    const mid = await ok('POST', `${base}/rows`, { workspaceId: ws, data: { name: 'Mid' }, afterRowId: ada.id });
    const first = await ok('POST', `${base}/rows`, { workspaceId: ws, data: { name: 'First' }, beforeRowId: ada.id });
    expect((await rows()).map((r) => r.data.name)).toEqual(['First', 'Ada', 'Mid', 'Bob']);
    expect(await ok('GET', `${base}/rows/${mid.id}?workspaceId=${ws}`)).toMatchObject({ id: mid.id, data: { name: 'Mid' } });
    const listed = await call('GET', `${base}/rows?workspaceId=${ws}&limit=2`);
    expect(listed.body.data.map((r: any) => r.data.name)).toEqual(['First', 'Ada']);
    const rest = await call('GET', `${base}/rows?workspaceId=${ws}&limit=2&cursor=${encodeURIComponent(listed.body.nextCursor)}`);
    expect(rest.body.data.map((r: any) => r.data.name)).toEqual(['Mid', 'Bob']);
    expect(rest.body.nextCursor).toBeNull();
    expect((await ok('GET', `/api/v2/tables/${created.rows[0].id ? (await ok('GET', `${base}?workspaceId=${ws}`)).id : ''}?workspaceId=${ws}`)).rowCount).toBe(4);
    void first;
    void bob;
  });

  it('refuses bad rows with a 400 and writes nothing', async () => {
    const { base, insert, rows } = await table(PEOPLE.concat([{ name: 'must', type: 'string', required: true }]));
    const post = (body: unknown) => call('POST', `${base}/rows`, { workspaceId: ws, ...(body as object) });
    const unknown = await post({ rows: [{ must: 'x' }, { must: 'y', nope: 1 }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].path).toEqual(['body', 'rows', 1, 'nope']);
    expect((await post({ rows: [{ must: 'x', age: 'old' }] })).status).toBe(400);
    expect((await post({ rows: [{ must: 'x', vip: 'yes' }] })).status).toBe(400);
    expect((await post({ rows: [{ must: 'x', joined: '2024-02-30' }] })).status).toBe(400);
    expect((await post({ rows: [{ must: 'x', tier: 'Platinum' }] })).status).toBe(400);
    expect((await post({ rows: [{ must: 'x', ttl: -1 }] })).status).toBe(400);
    expect((await post({ rows: [{ name: 'no must' }] })).status).toBe(400);
    expect((await post({ rows: Array.from({ length: 1001 }, () => ({ must: 'x' })) })).status).toBe(400);
    expect((await post({ rows: [{ must: 'x' }], data: { must: 'y' } })).status).toBe(400);
    expect((await post({ data: { must: 'y' }, afterRowId: 'row_nope' })).status).toBe(400);
    expect((await post({ rows: [{ must: 'x', name: 'x'.repeat(500 * 1024) }] })).status).toBe(413);
    await insert([{ must: 'a', email: 'dup@x.io' }]);
    const dup = await post({ rows: [{ must: 'b', email: 'dup@x.io' }] });
    expect(dup.status).toBe(409);
    expect(dup.body.error.details).toMatchObject({ code: 'UNIQUE_VIOLATION', column: 'email' });
    expect((await post({ rows: [{ must: 'c', email: 'same@x.io' }, { must: 'd', email: 'same@x.io' }] })).status).toBe(409);
    expect((await rows()).length).toBe(1);
  });

  it('merges updates, deletes, and updates or deletes by filter or ids', async () => {
    const { base, insert, rows } = await table(PEOPLE);
    const { rows: r } = await insert([{ name: 'a', age: 1, email: 'a' }, { name: 'b', age: 2 }, { name: 'c', age: 3 }, { name: 'd', age: 4 }]);
    const merged = await ok('PATCH', `${base}/rows/${r[0].id}`, { workspaceId: ws, data: { age: 10, vip: false } });
    expect(merged.data).toMatchObject({ name: 'a', age: 10, vip: false, email: 'a' });
    expect((await call('PATCH', `${base}/rows/${r[1].id}`, { workspaceId: ws, data: { email: 'a' } })).status).toBe(409);
    expect((await call('PATCH', `${base}/rows/row_missing`, { workspaceId: ws, data: { age: 1 } })).status).toBe(404);

    const byFilter = await ok('PATCH', `${base}/rows`, { workspaceId: ws, filter: { field: 'age', op: 'gte', value: 3 }, data: { vip: true } });
    expect(byFilter).toEqual({ updatedCount: 3, updatedRowIds: [r[0].id, r[2].id, r[3].id] });
    expect((await call('PATCH', `${base}/rows`, { workspaceId: ws, filter: { all: [] }, data: { vip: true } })).status).toBe(400);
    expect((await call('PATCH', `${base}/rows`, { workspaceId: ws, filter: { field: 'age', op: 'gt', value: 0 }, data: { email: 'same' } })).status).toBe(409);

    const bulk = await ok('POST', `${base}/rows/bulk-update`, { workspaceId: ws, updates: [{ rowId: r[1].id, data: { name: 'B' } }, { rowId: r[2].id, data: { name: 'C' } }] });
    expect(bulk).toEqual({ updatedCount: 2, updatedRowIds: [r[1].id, r[2].id] });
    expect((await call('POST', `${base}/rows/bulk-update`, { workspaceId: ws, updates: [{ rowId: r[1].id, data: {} }, { rowId: r[1].id, data: {} }] })).status).toBe(400);
    const missing = await call('POST', `${base}/rows/bulk-update`, { workspaceId: ws, updates: [{ rowId: r[1].id, data: { name: 'X' } }, { rowId: 'row_gone', data: {} }] });
    expect(missing.status).toBe(404);
    expect((await rows()).map((x) => x.data.name)).toEqual(['a', 'B', 'C', 'd']);

    expect((await call('DELETE', `${base}/rows`, { workspaceId: ws })).status).toBe(400);
    expect((await call('DELETE', `${base}/rows`, { workspaceId: ws, filter: { field: 'age', op: 'eq', value: 4 }, rowIds: [r[0].id] })).status).toBe(400);
    expect((await call('DELETE', `${base}/rows`, { workspaceId: ws, filter: { any: [] } })).status).toBe(400);
    const delIds = await ok('DELETE', `${base}/rows`, { workspaceId: ws, rowIds: [r[0].id, 'row_gone'] });
    expect(delIds).toEqual({ deletedCount: 1, deletedRowIds: [r[0].id], requestedCount: 2, missingRowIds: ['row_gone'] });
    const delFilter = await ok('DELETE', `${base}/rows`, { workspaceId: ws, filter: { field: 'vip', op: 'eq', value: true }, limit: 1 });
    expect(delFilter.deletedCount).toBe(1);
    expect(await ok('DELETE', `${base}/rows/${r[1].id}?workspaceId=${ws}`)).toEqual({ id: r[1].id, deleted: true });
    expect((await call('DELETE', `${base}/rows/${r[1].id}?workspaceId=${ws}`)).status).toBe(404);
    expect((await ok('GET', `${base}?workspaceId=${ws}`)).rowCount).toBe(1);
  });

  it('upserts on a unique column, replacing the whole row, and concurrent upserts make one row', async () => {
    const { base, rows } = await table([{ name: 'key', type: 'string', unique: true }, { name: 'a', type: 'number' }, { name: 'b', type: 'string' }]);
    const up = (data: unknown, conflictTarget?: string) => call('POST', `${base}/rows/upsert`, { workspaceId: ws, data, ...(conflictTarget ? { conflictTarget } : {}) });
    const ins = await up({ key: 'k1', a: 1, b: 'x' });
    expect(ins.body.data).toMatchObject({ operation: 'insert', row: { data: { key: 'k1', a: 1, b: 'x' } } });
    const upd = await up({ key: 'k1', a: 2 }, 'key');
    expect(upd.body.data).toMatchObject({ operation: 'update', row: { id: ins.body.data.row.id, data: { key: 'k1', a: 2, b: null } } });
    expect((await up({ a: 1 })).status).toBe(400);
    expect((await up({ key: 'k2' }, 'a')).status).toBe(400);
    expect((await up({ key: 'k2' }, 'nope')).status).toBe(400);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => up({ key: 'same', a: i })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => r.body.data.operation === 'insert')).toHaveLength(1);
    expect((await rows({ predicate: { field: 'key', op: 'eq', value: 'same' } })).length).toBe(1);

    const none = await table([{ name: 'x', type: 'string' }]);
    expect((await call('POST', `${none.base}/rows/upsert`, { workspaceId: ws, data: { x: '1' } })).status).toBe(400);
    const two = await table([{ name: 'x', type: 'string', unique: true }, { name: 'y', type: 'number', unique: true }]);
    expect((await call('POST', `${two.base}/rows/upsert`, { workspaceId: ws, data: { x: '1', y: 1 } })).status).toBe(400);
  });
});

describe('query', () => {
  it('filters with every operator family, sorts type-aware, pages, counts and finds', async () => {
    const { base, insert, rows, query } = await table(PEOPLE);
    await insert([
      { name: 'Ada Lovelace', email: 'ada@x.io', age: 36, vip: true, joined: '2024-03-01', tier: 'Gold', tags: ['A'], meta: { x: 1 } },
      { name: 'bob', email: 'bob@y.io', age: 9, vip: false, joined: '2023-12-31T23:00:00Z', tier: 'Silver', tags: [] },
      { name: '', email: 'c%_\\@x.io', age: null, tags: ['A', 'B'] },
      { name: 'Dan*', age: 100 },
    ]);
    const names = async (predicate: unknown, sort?: unknown) => (await rows({ predicate, ...(sort ? { sort } : {}) })).map((r) => r.data.name);
    expect(await names({ field: 'age', op: 'gt', value: 10 })).toEqual(['Ada Lovelace', 'Dan*']);
    expect(await names({ field: 'age', op: 'gt', value: '10' })).toEqual(['Ada Lovelace', 'Dan*']);
    expect(await names({ field: 'age', op: 'ne', value: 9 })).toEqual(['Ada Lovelace', '', 'Dan*']);
    expect(await names({ field: 'age', op: 'nin', value: [9, 36] })).toEqual(['', 'Dan*']);
    expect(await names({ field: 'tier', op: 'eq', value: 'Gold' })).toEqual(['Ada Lovelace']);
    expect(await names({ field: 'tier', op: 'in', value: ['o_silver', 'Gold'] })).toEqual(['Ada Lovelace', 'bob']);
    expect(await names({ field: 'tags', op: 'contains', value: 'B' })).toEqual(['']);
    expect(await names({ field: 'tags', op: 'ncontains', value: 'A' })).toEqual(['bob', 'Dan*']);
    expect(await names({ field: 'tags', op: 'isEmpty' })).toEqual(['bob', 'Dan*']);
    expect(await names({ field: 'name', op: 'isEmpty' })).toEqual(['']);
    expect(await names({ field: 'name', op: 'isNull' })).toEqual([]);
    expect(await names({ field: 'name', op: 'contains', value: 'LOVE' })).toEqual(['Ada Lovelace']);
    expect(await names({ field: 'email', op: 'endsWith', value: '@X.IO' })).toEqual(['Ada Lovelace', '']);
    expect(await names({ field: 'email', op: 'like', value: 'c%_\\*' })).toEqual(['']);
    expect(await names({ field: 'email', op: 'like', value: 'C*' })).toEqual([]);
    expect(await names({ field: 'email', op: 'ilike', value: 'C*' })).toEqual(['']);
    expect(await names({ field: 'name', op: 'like', value: 'Dan*' })).toEqual(['Dan*']);
    expect(await names({ field: 'name', op: 'nlike', value: '*a*' })).toEqual(['bob', '']);
    expect(await names({ field: 'joined', op: 'lt', value: '2024-01-01' })).toEqual(['bob']);
    expect(await names({ any: [{ field: 'vip', op: 'eq', value: true }, { all: [{ field: 'age', op: 'gte', value: 100 }] }] })).toEqual(['Ada Lovelace', 'Dan*']);
    expect(await names({ field: 'meta', op: 'eq', value: { x: 1 } })).toEqual(['Ada Lovelace']);
    expect(await names(undefined, [{ field: 'age', direction: 'desc' }])).toEqual(['Dan*', 'Ada Lovelace', 'bob', '']);
    expect(await names(undefined, [{ field: 'age', direction: 'asc' }])).toEqual(['bob', 'Ada Lovelace', 'Dan*', '']);
    expect((await names(undefined, [{ field: 'tier', direction: 'desc' }])).slice(0, 2)).toEqual(['bob', 'Ada Lovelace']);
    expect(await names({ field: 'id', op: 'isNotNull' }, [{ field: 'createdAt', direction: 'desc' }, { field: 'name', direction: 'asc' }])).toHaveLength(4);

    const p1 = await query({ sort: [{ field: 'age', direction: 'asc' }], limit: 3 });
    expect(p1.body.data).toHaveLength(3);
    const p2 = await query({ sort: [{ field: 'age', direction: 'asc' }], limit: 3, cursor: p1.body.nextCursor });
    expect(p2.body.data.map((r: any) => r.data.name)).toEqual(['']);
    expect((await query({ sort: [{ field: 'age', direction: 'desc' }], limit: 3, cursor: p1.body.nextCursor })).status).toBe(400);

    expect(await ok('POST', `${base}/query/count`, { workspaceId: ws, predicate: { field: 'age', op: 'isNotNull' } })).toEqual({ totalCount: 3 });
    expect(await ok('POST', `${base}/query/count`, { workspaceId: ws })).toEqual({ totalCount: 4 });
    const found = await ok('POST', `${base}/rows/search`, { workspaceId: ws, q: 'gold' });
    expect(found.matches).toEqual([{ ordinal: 0, rowId: expect.any(String), column: 'tier' }]);
    const many = await ok('POST', `${base}/rows/search`, { workspaceId: ws, q: 'X.IO', sort: [{ field: 'age', direction: 'desc' }] });
    expect(many.matches.map((m: any) => [m.ordinal, m.column])).toEqual([[1, 'email'], [3, 'email']]);
  });

  it('refuses predicates that are malformed, mistyped or over the limits', async () => {
    const { query } = await table(PEOPLE);
    const status = async (predicate: unknown, sort?: unknown) => (await query({ predicate, ...(sort ? { sort } : {}) })).status;
    expect(await status({ field: 'nope', op: 'eq', value: 1 })).toBe(400);
    expect(await status({ field: 'age', op: 'eq', value: 'old' })).toBe(400);
    expect(await status({ field: 'age', op: 'eq', value: 1, extra: true })).toBe(400);
    expect(await status({ field: 'age', op: 'between', value: 1 })).toBe(400);
    expect(await status({ field: 'vip', op: 'gt', value: true })).toBe(400);
    expect(await status({ field: 'meta', op: 'lt', value: 1 })).toBe(400);
    expect(await status({ field: 'tier', op: 'contains', value: 'G' })).toBe(400);
    expect(await status({ field: 'tags', op: 'eq', value: 'A' })).toBe(400);
    expect(await status({ field: 'name', op: 'contains', value: '' })).toBe(400);
    expect(await status({ field: 'name', op: 'isNull', value: 1 })).toBe(400);
    expect(await status({ field: 'joined', op: 'gt', value: 'yesterday' })).toBe(400);
    expect(await status({ all: [] })).toBe(400);
    expect(await status({ all: Array.from({ length: 101 }, () => ({ field: 'age', op: 'isNull' })) })).toBe(400);
    let deep: unknown = { field: 'age', op: 'isNull' };
    for (let i = 0; i < 10; i++) deep = { all: [deep] };
    expect(await status(deep)).toBe(400);
    const wide = { any: Array.from({ length: 100 }, () => ({ all: Array.from({ length: 5 }, () => ({ field: 'age', op: 'isNull' })) })) };
    expect(await status(wide)).toBe(400);
    expect(await status({ field: 'age', op: 'in', value: Array.from({ length: 1001 }, (_, i) => i) })).toBe(400);
    expect(await status(undefined, Array.from({ length: 17 }, () => ({ field: 'age', direction: 'asc' })))).toBe(400);
    expect(await status(undefined, [{ field: 'nope', direction: 'asc' }])).toBe(400);
  });
});

describe('page size', () => {
  it('ends a bounded page early at 5 MB with a cursor, and refuses an unbounded one', async () => {
    const { insert, query } = await table([{ name: 'blob', type: 'string' }]);
    const big = 'x'.repeat(380 * 1024);
    await insert(Array.from({ length: 8 }, () => ({ blob: big })));
    await insert(Array.from({ length: 8 }, () => ({ blob: big })));
    const page = await query({ limit: 100 });
    expect(page.status).toBe(200);
    expect(page.body.data.length).toBeLessThan(16);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const rest = await query({ limit: 100, cursor: page.body.nextCursor });
    expect(page.body.data.length + rest.body.data.length).toBe(16);
    expect((await query({ limit: 0 })).status).toBe(413);
  });
});

describe('columns with rows', () => {
  it('retypes converting every row, or refuses naming the rows that cannot convert', async () => {
    const { base, insert, rows } = await table([{ name: 'v', type: 'string' }, { name: 'u', type: 'string' }]);
    const { rows: r } = await insert([{ v: '1', u: 'a' }, { v: ' 2.5 ', u: 'a' }, { v: 'three', u: 'b' }, { v: null }]);
    const refused = await call('PATCH', `/api/v2/tables/${r[0] && (await ok('GET', `${base}?workspaceId=${ws}`)).id}/columns`, { workspaceId: ws, columnName: 'v', updates: { type: 'number' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.map((d: any) => d.keys[0])).toEqual([r[2].id]);
    expect((await rows()).map((x) => x.data.v)).toEqual(['1', ' 2.5 ', 'three', null]);
    await ok('PATCH', `${base}/rows/${r[2].id}`, { workspaceId: ws, data: { v: '3' } });
    const done = await ok('PATCH', `${base}/columns`, { workspaceId: ws, columnName: 'v', updates: { type: 'number', name: 'num' } });
    expect(done.columns[0]).toMatchObject({ name: 'num', type: 'number' });
    expect((await rows()).map((x) => x.data.num)).toEqual([1, 2.5, 3, null]);
    expect((await call('PATCH', `${base}/columns`, { workspaceId: ws, columnName: 'u', updates: { unique: true } })).status).toBe(400);
    expect((await call('PATCH', `${base}/columns`, { workspaceId: ws, columnName: 'u', updates: { required: true } })).status).toBe(400);
    const sel = await ok('PATCH', `${base}/columns`, { workspaceId: ws, columnName: 'u', updates: { type: 'select', options: [{ id: 'oa', name: 'a' }, { id: 'ob', name: 'b' }] } });
    expect(sel.columns[1]).toMatchObject({ type: 'select', multiple: false });
    expect((await rows()).map((x) => x.data.u)).toEqual(['oa', 'oa', 'ob', null]);
    await ok('PATCH', `${base}/columns`, { workspaceId: ws, columnName: 'u', updates: { type: 'string' } });
    expect((await rows()).map((x) => x.data.u)).toEqual(['a', 'a', 'b', null]);
    await ok('PATCH', `${base}/columns`, { workspaceId: ws, columnName: 'num', updates: { type: 'boolean' } }).catch((e) => expect(String(e)).toContain('400'));
  });

  it('answers 423 LOCKED with details.lock for each locked verb', async () => {
    const { t, base, insert } = await table([{ name: 'k', type: 'string', unique: true }]);
    const { rows: r } = await insert([{ k: 'a' }]);
    const set = (locks: Partial<Record<string, boolean>>) =>
      s.services.store.transaction((tx) =>
        tx.userTables.setLocks(t.id, { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false, ...locks }, new Date().toISOString()),
      );
    await set({ insertLocked: true });
    const ins = await call('POST', `${base}/rows`, { workspaceId: ws, rows: [{ k: 'b' }] });
    expect(ins.status).toBe(423);
    expect(ins.body.error).toMatchObject({ code: 'LOCKED', details: { lock: 'insert' } });
    await set({ updateLocked: true });
    expect((await call('PATCH', `${base}/rows/${r[0].id}`, { workspaceId: ws, data: { k: 'z' } })).body.error.details.lock).toBe('update');
    expect((await call('POST', `${base}/rows/upsert`, { workspaceId: ws, data: { k: 'a' } })).status).toBe(423);
    await set({ deleteLocked: true });
    expect((await call('DELETE', `${base}/rows/${r[0].id}?workspaceId=${ws}`)).body.error.details.lock).toBe('delete');
    expect((await call('DELETE', `${base}?workspaceId=${ws}`)).status).toBe(423);
    await set({ schemaLocked: true });
    expect((await call('POST', `${base}/columns`, { workspaceId: ws, column: { name: 'x', type: 'string' } })).body.error.details.lock).toBe('schema');
    await set({ schemaLocked: true, insertLocked: true, updateLocked: true, deleteLocked: true });
    expect((await call('POST', `${base}/query`, { workspaceId: ws })).status).toBe(200);
    expect((await call('GET', `${base}/rows/${r[0].id}?workspaceId=${ws}`)).status).toBe(200);
  });
});

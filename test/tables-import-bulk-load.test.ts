// A CSV import's rows reach the database through the engine's bulk load (COPY on Postgres, multi-row INSERTs on
// SQLite): the same file gives the same rows, the same rejected lines and the same errors on both engines
// (this file runs on both; see POSTGRES_FILES in vitest.config.ts). Values that COPY's text format escapes
// (backslashes, tabs, line breaks, `\N`, `\.`) and number edge cases are checked cell by cell.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { testDatabaseIsPostgres } from './support/postgres.ts';
import { waitUntil } from './support/wait.ts';
import { PostgresDatabase } from '../src/store/postgres.ts';
import { TableRowsRepository } from '../src/store/table-rows.ts';
import type { SqlExecutor } from '../src/store/database.ts';
import { UniqueViolation } from '../src/store/errors.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '100000' });
});
afterAll(async () => {
  await s?.stop();
});

async function ok(method: string, p: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) };
  const r = await s.request(p, init);
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${text}`);
  return JSON.parse(text).data;
}

async function importCsv(csv: string, target: unknown) {
  const bytes = Buffer.from(csv);
  const ws = s.workspaceId;
  const created = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'data.csv', contentType: 'text/csv', size: bytes.length }, target });
  expect(created.transfer.method).toBe('put');
  expect((await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: bytes })).status).toBe(200);
  await ok('POST', `/api/v2/tables/imports/${created.session.id}/complete?workspaceId=${ws}`, undefined, { 'upload-token': created.uploadToken });
  return waitUntil('the import to end', async () => {
    const imp = await ok('GET', `/api/v2/tables/imports/${created.session.id}?workspaceId=${ws}`);
    return imp.status !== 'processing' && imp.status !== 'uploading' ? imp : null;
  });
}

const quote = (v: string) => `"${v.replace(/"/g, '""')}"`;
/** Text cells COPY's text format must escape, and ones that look like its markers. */
const TRICKY = ['back\\slash', 'tab\there', 'line\nbreak', 'cr\r\nlf', '\\N', '\\.', 'end\\', 'é ✓ 🙂', '  spaced  ', "it's", '"quoted"'];
const NUMBERS = ['0', '-0', '0.1', '1e300', '-2.5e-300', '123456789012345', '3.14159'];

describe('a CSV import loads in bulk with the same rows and rejections on both engines', () => {
  it('keeps every escaped character and number, rejects the same lines with the same codes', async () => {
    const ws = s.workspaceId;
    const t = await ok('POST', '/api/v2/tables', {
      workspaceId: ws,
      name: 'bulk_target',
      schema: { columns: [{ name: 'k', type: 'string', unique: true }, { name: 'text', type: 'string' }, { name: 'n', type: 'number' }, { name: 'ok', type: 'boolean' }, { name: 'on', type: 'date' }] },
    });
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: [{ k: 'taken', text: 'x', n: 1 }] });
    // 300 rows: well past the bulk-load threshold, with the tricky values spread through them.
    const lines = ['k,text,n,ok,on'];
    const expected: Record<string, unknown>[] = [{ k: 'taken', text: 'x', n: 1, ok: null, on: null }];
    for (let i = 0; i < 300; i++) {
      const text = i % 3 === 0 ? TRICKY[(i / 3) % TRICKY.length]! : `plain ${i}`;
      const n = NUMBERS[i % NUMBERS.length]!;
      const bool = i % 4 === 0 ? '' : i % 2 === 0 ? 'true' : 'false';
      lines.push([`k${i}`, quote(text), n, bool, i % 5 === 0 ? '' : '2024-03-0' + ((i % 9) + 1)].join(','));
      expected.push({ k: `k${i}`, text, n: Number(n) === 0 ? 0 : Number(n), ok: bool === '' ? null : bool === 'true', on: i % 5 === 0 ? null : `2024-03-0${(i % 9) + 1}T00:00:00.000Z` });
    }
    // Rejected: a bad number, a bad boolean, a short row, a repeat within the file, a value the table holds.
    lines.push('bad1,a,notanumber,true,', 'bad2,b,1,maybe,', 'bad3,c', 'k7,again,1,true,', 'taken,d,1,true,');
    const csv = lines.join('\n') + '\n';
    // A record's line counts the line breaks inside the quoted fields before it.
    const lineOf = (start: string) => csv.slice(0, csv.indexOf(`\n${start}`) + 1).split('\n').length;
    const imp = await importCsv(csv, { type: 'existing', tableId: t.id, mode: 'append' });
    expect(imp).toMatchObject({ status: 'completed', rowsProcessed: 305, rowsRejected: 5 });
    expect(imp.rejectedSamples.map((r: any) => [r.line, r.code])).toEqual([
      [lineOf('bad1,'), 'INVALID_VALUE'],
      [lineOf('bad2,'), 'INVALID_VALUE'],
      [lineOf('bad3,'), 'FIELD_COUNT'],
      [lineOf('k7,again'), 'UNIQUE'],
      [lineOf('taken,'), 'UNIQUE'],
    ]);
    const got = (await ok('POST', `/api/v2/tables/${t.id}/query`, { workspaceId: ws, limit: 0 })).map((r: any) => r.data);
    expect(got).toEqual(expected);
    // Filters on what was loaded answer alike (typed columns on Postgres, untyped on SQLite).
    const big = await ok('POST', `/api/v2/tables/${t.id}/query`, { workspaceId: ws, limit: 0, predicate: { field: 'n', op: 'gt', value: 1e299 } });
    expect(big.length).toBe(expected.filter((r) => (r.n as number) > 1e299).length);
    const slash = await ok('POST', `/api/v2/tables/${t.id}/query`, { workspaceId: ws, limit: 0, predicate: { field: 'text', op: 'eq', value: '\\N' } });
    expect(slash.length).toBe(expected.filter((r) => r.text === '\\N').length);
  });

  it.runIf(testDatabaseIsPostgres())('goes through COPY on Postgres, and a failed COPY is the same typed error as a failed INSERT', async () => {
    const ws = s.workspaceId;
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'copy_probe', schema: { columns: [{ name: 'k', type: 'string', unique: true }] } });
    const columns = (await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).schema.columns;
    const db = new PostgresDatabase(s.databaseEnv.DATABASE_URL!);
    try {
      const rows = (n: number, from = 0) => {
        const ids = Array.from({ length: n }, (_, i) => `row_${String(from + i).padStart(32, '0')}`);
        const keys = ids.map((_, i) => `a${String(from + i).padStart(6, '0')}`);
        const stamps = ids.map(() => new Date().toISOString());
        return { ids, orderKeys: keys, createdAt: stamps, updatedAt: stamps, cells: ids.map((_, i) => `v${from + i}`) };
      };
      const copied = await db.transaction(async (tx) => {
        let copies = 0;
        const counting: SqlExecutor = { dialect: tx.dialect, all: tx.all.bind(tx), get: tx.get.bind(tx), run: tx.run.bind(tx), copyIn: (...a) => (copies++, tx.copyIn!(...a)) };
        await new TableRowsRepository(counting).insertFlat(t.id, columns, rows(100));
        return copies;
      });
      expect(copied).toBe(1);
      // The same unique value again: COPY fails with the store's UniqueViolation, naming the column.
      const err = await db.transaction((tx) => new TableRowsRepository(tx).insertFlat(t.id, columns, rows(100, 50))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UniqueViolation);
      expect(await new TableRowsRepository(db.read).count(t.id, null)).toBe(100);
    } finally {
      await db.close();
    }
  });
});

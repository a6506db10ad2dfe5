// Filters and sorts that users run often use an index: the query plan of each searches an index (or walks one
// in sort order) instead of scanning the table's rows. Substring and pattern filters scan, by design.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNKeysBetween } from 'fractional-indexing';
import { openSqliteStore, type Store } from '../src/store/index.ts';
import { defineColumn } from '../src/tables/columns.ts';
import { parsePredicate, parseSort } from '../src/tables/predicate.ts';
import { newRowId, newTableId, storedCells } from '../src/tables/service.ts';
import { rowsTable } from '../src/store/table-rows.ts';

let store: Store;
let dir: string;
const tableId = newTableId();
const columns = [
  defineColumn({ name: 'email', type: 'string', unique: true }, []),
  defineColumn({ name: 'status', type: 'select', options: [{ id: 'a', name: 'active' }, { id: 'b', name: 'blocked' }] }, []),
  defineColumn({ name: 'score', type: 'number' }, []),
  defineColumn({ name: 'joined', type: 'date' }, []),
  defineColumn({ name: 'notes', type: 'string' }, []),
  defineColumn({ name: 'meta', type: 'json' }, []),
];
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-tplan-'));
  store = await openSqliteStore(path.join(dir, 'db.sqlite'));
  const keys = generateNKeysBetween(null, null, 6000);
  await store.transaction(async (tx) => {
    await tx.tableRows.createTable(tableId, columns);
    await tx.tableRows.insert(
      tableId,
      columns,
      keys.map((k, i) => ({
        id: newRowId(),
        orderKey: k,
        createdAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString(),
        updatedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString(),
        cells: storedCells(columns, { email: `u${i}@x.io`, status: i % 3 ? 'a' : 'b', score: i % 97, joined: '2024-02-01', notes: `note ${i}` }, 'insert', [], 1e9),
      })),
    );
  });
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function plan(predicate: unknown, sort: unknown[] = []): Promise<string> {
  const where = predicate === undefined ? null : parsePredicate(columns, predicate, []);
  return (await store.tableRows.explain(tableId, { where, sort: parseSort(columns, sort, []), limit: 100 })).join('\n');
}
const table = rowsTable(tableId).slice(1, -1);
const fullScan = new RegExp(`^SCAN ${table}$`, 'm');

describe('table query plans', () => {
  it('table order and system-field sorts walk an index, without a temporary sort', async () => {
    for (const p of [await plan(undefined), await plan(undefined, [{ field: 'createdAt', direction: 'desc' }])]) {
      expect(p).toMatch(/USING (COVERING )?INDEX/);
      expect(p).not.toMatch(/TEMP B-TREE/);
    }
  });

  it('the next page in table order seeks in the order index', async () => {
    const next = (await store.tableRows.explain(tableId, { where: null, sort: [], limit: 100, after: ['a0', 'row_0'] })).join('\n');
    expect(next).toMatch(/SEARCH .* USING (COVERING )?INDEX .*_order \(\(order_key,id\)>/);
  });

  it('equality, in and ranges on a column search its index', async () => {
    for (const predicate of [
      { field: 'email', op: 'eq', value: 'u5@x.io' },
      { field: 'status', op: 'eq', value: 'active' },
      { field: 'status', op: 'in', value: ['active', 'blocked'] },
      { field: 'score', op: 'gte', value: 90 },
      { all: [{ field: 'joined', op: 'lt', value: '2024-03-01' }, { field: 'score', op: 'eq', value: 3 }] },
    ]) {
      const p = await plan(predicate);
      expect(p, JSON.stringify(predicate)).toMatch(/USING (COVERING )?INDEX/);
      expect(p).not.toMatch(fullScan);
    }
  });

  it('an equality filter with a sort on another column, and a sort alone, use indexes', async () => {
    const filtered = await plan({ field: 'status', op: 'eq', value: 'active' }, [{ field: 'score', direction: 'desc' }]);
    expect(filtered).toMatch(/USING (COVERING )?INDEX/);
    expect(filtered).not.toMatch(fullScan);
    const sorted = await plan(undefined, [{ field: 'score', direction: 'asc' }]);
    expect(sorted).toMatch(/SCAN .* USING INDEX/);
    expect(sorted).not.toMatch(/TEMP B-TREE/);
  });

  it('a broad filter with a sort walks the sort key\'s index; a narrow one searches its own', async () => {
    const broad = await plan({ field: 'status', op: 'eq', value: 'active' }, [{ field: 'score', direction: 'desc' }]);
    expect(broad).toMatch(/SCAN .* USING INDEX .*_c_/);
    expect(broad).not.toMatch(/TEMP B-TREE/);
    const narrow = await plan({ field: 'email', op: 'eq', value: 'u5@x.io' }, [{ field: 'score', direction: 'desc' }]);
    expect(narrow).toMatch(/SEARCH .* USING INDEX .*_unique/);
  });

  it('prints the plans', async () => {
    for (const [p, s] of [[{ field: 'status', op: 'eq', value: 'active' }, [{ field: 'score', direction: 'desc' }]], [{ field: 'score', op: 'gte', value: 90 }, []], [undefined, [{ field: 'createdAt', direction: 'desc' }]]] as const) console.log(JSON.stringify([p, s]), await plan(p, s as unknown as unknown[]));
  });

  it('substring and pattern filters, and json cells, scan', async () => {
    expect(await plan({ field: 'notes', op: 'contains', value: '12' })).toMatch(/SCAN/);
    expect(await plan({ field: 'meta', op: 'isNull' })).not.toMatch(/SEARCH .* USING INDEX .*meta/);
  });
});

// Property: for random rows and random predicates (and sorts), the SQL the store compiles returns exactly the rows,
// in exactly the order, that the in-memory reference evaluator picks. Values come from small pools so that
// equality, ranges, case folding, wildcards and GLOB metacharacters actually collide.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type Store } from '../src/store/index.ts';
import { defineColumn, type Column } from '../src/tables/columns.ts';
import { parsePredicate, parseSort, type Operator } from '../src/tables/predicate.ts';
import { newRowId, newTableId, storedCells } from '../src/tables/service.ts';
import type { StoredRow } from '../src/store/table-rows.ts';
import { evaluate, sortRows } from './support/table-reference.ts';
import { generateNKeysBetween } from 'fractional-indexing';

let store: Store;
let dir: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-tq-'));
  store = await openSqliteStore(path.join(dir, 'db.sqlite'));
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const OPTIONS = [{ id: 'o1', name: 'Beta' }, { id: 'o2', name: 'alpha' }, { id: 'o3', name: 'Gamma' }];
const COLUMNS: Column[] = [
  defineColumn({ name: 's', type: 'string' }, []),
  defineColumn({ name: 'n', type: 'number' }, []),
  defineColumn({ name: 'b', type: 'boolean' }, []),
  defineColumn({ name: 'd', type: 'date' }, []),
  defineColumn({ name: 'sel', type: 'select', options: OPTIONS }, []),
  defineColumn({ name: 'multi', type: 'select', multiple: true, options: OPTIONS }, []),
  defineColumn({ name: 'j', type: 'json' }, []),
  defineColumn({ name: 'ttl', type: 'ttl' }, []),
];

const CHARS = ['a', 'A', 'b', 'é', 'É', 'İ', 'ß', '*', '%', '_', '?', '[', ']', '\\', ' ', 'x'];
const text = fc.array(fc.constantFrom(...CHARS), { maxLength: 4 }).map((cs) => cs.join(''));
const num = fc.constantFrom(-1, 0, 1, 2.5, 100, 1e6);
const date = fc.constantFrom('2024-01-01', '2024-01-01T12:00:00Z', '2023-06-30T23:59:59.500Z', '2025-12-31');
const optionRef = fc.constantFrom('o1', 'o2', 'o3', 'Beta', 'alpha');
const jsonValue = fc.constantFrom<unknown>(1, 'x', true, [1, 2], { a: 1 }, 'A*');

const cell: Record<string, fc.Arbitrary<unknown>> = {
  s: text,
  n: num,
  b: fc.boolean(),
  d: date,
  sel: fc.constantFrom('o1', 'o2', 'o3'),
  multi: fc.uniqueArray(fc.constantFrom('o1', 'o2', 'o3'), { maxLength: 3 }),
  j: jsonValue,
  ttl: fc.constantFrom(0, 1, 60, 3600),
};
const rowArb = fc.record(Object.fromEntries(Object.entries(cell).map(([k, a]) => [k, fc.option(a, { nil: null, freq: 4 })])));

const OPS: Record<string, Operator[]> = {
  s: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'ncontains', 'startsWith', 'endsWith', 'like', 'ilike', 'nlike', 'nilike', 'isEmpty', 'isNotEmpty', 'isNull', 'isNotNull'],
  n: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'isEmpty', 'isNotEmpty', 'isNull', 'isNotNull'],
  b: ['eq', 'ne', 'in', 'nin', 'isNull', 'isNotNull'],
  d: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'startsWith', 'like', 'isNull', 'isNotEmpty'],
  sel: ['eq', 'ne', 'in', 'nin', 'isEmpty', 'isNotEmpty', 'isNull', 'isNotNull'],
  multi: ['contains', 'ncontains', 'isEmpty', 'isNotEmpty', 'isNull', 'isNotNull'],
  j: ['eq', 'ne', 'contains', 'ncontains', 'ilike', 'isNull', 'isNotNull'],
  ttl: ['eq', 'ne', 'gt', 'lte', 'in', 'nin', 'isNull'],
};
const NO_OPERAND = new Set(['isEmpty', 'isNotEmpty', 'isNull', 'isNotNull']);
const nonEmptyText = text.filter((t) => t.length > 0);

function operandFor(field: string, op: Operator): fc.Arbitrary<unknown> {
  if (NO_OPERAND.has(op)) return fc.constant(undefined);
  const base = field === 'sel' || field === 'multi' ? optionRef : field === 'j' && op !== 'eq' && op !== 'ne' ? nonEmptyText : field === 's' && ['contains', 'ncontains', 'startsWith', 'endsWith'].includes(op) ? nonEmptyText : field === 'd' && ['contains', 'startsWith', 'like'].includes(op) ? fc.constantFrom('2024', '2024-01-01T*', '*Z', '12:') : cell[field]!;
  return op === 'in' || op === 'nin' ? fc.array(base, { maxLength: 4 }) : base;
}

const leaf = fc.constantFrom(...Object.keys(OPS)).chain((field) =>
  fc.constantFrom(...OPS[field]!).chain((op) => operandFor(field, op).map((value) => (value === undefined ? { field, op } : { field, op, value }))),
);
const systemLeaf = fc.oneof(
  fc.constantFrom('2024-01-01', '2030-01-01').map((v) => ({ field: 'createdAt', op: 'lt', value: v })),
  fc.constant({ field: 'id', op: 'isNotNull' }),
);
const { predicate } = fc.letrec<{ predicate: unknown }>((tie) => ({
  predicate: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    systemLeaf,
    fc.array(tie('predicate'), { minLength: 1, maxLength: 3 }).map((all) => ({ all })),
    fc.array(tie('predicate'), { minLength: 1, maxLength: 3 }).map((any) => ({ any })),
  ),
}));
const sortArb = fc.array(fc.record({ field: fc.constantFrom('s', 'n', 'b', 'd', 'sel', 'ttl', 'createdAt', 'id'), direction: fc.constantFrom('asc', 'desc') }), { maxLength: 3 });

describe('compiled predicates agree with the reference evaluator', () => {
  it('on random tables, predicates and sorts', async () => {
    let tables = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { maxLength: 25 }), fc.array(fc.tuple(predicate, sortArb), { minLength: 1, maxLength: 8 }), async (data, queries) => {
        const tableId = newTableId();
        tables++;
        const now = new Date(Date.UTC(2024, 0, 1, 0, 0, tables)).toISOString();
        const keys = generateNKeysBetween(null, null, data.length);
        const rows: StoredRow[] = data.map((d, i) => ({ id: newRowId(), orderKey: keys[i]!, createdAt: now, updatedAt: now, cells: storedCells(COLUMNS, d, 'insert', [], 1e9) }));
        for (const r of rows) for (const k of Object.keys(r.cells)) if (r.cells[k] === null) delete r.cells[k];
        await store.transaction(async (tx) => {
          await tx.tableRows.createTable(tableId, COLUMNS);
          await tx.tableRows.insert(tableId, COLUMNS, rows);
        });
        for (const [raw, rawSort] of queries) {
          const where = parsePredicate(COLUMNS, raw, []);
          const sort = parseSort(COLUMNS, rawSort, []);
          const got = (await store.tableRows.query(tableId, COLUMNS, { where, sort, limit: null })).map((r) => r.id);
          const want = sortRows(rows.filter((r) => evaluate(where, r)), sort).map((r) => r.id);
          expect(got, JSON.stringify({ raw, rawSort })).toEqual(want);
          // The same query answered by walking the sort's index (the plan a broad filter gets) agrees too.
          const walked = (await store.tableRows.query(tableId, COLUMNS, { where, sort, limit: 1000, walkSortIndex: true })).map((r) => r.id);
          expect(walked, JSON.stringify({ raw, rawSort, walked: true })).toEqual(want);
          expect(await store.tableRows.count(tableId, where)).toBe(want.length);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('never puts an operand into the SQL text', () => {
    fc.assert(
      fc.property(predicate, (raw) => {
        const where = parsePredicate(COLUMNS, raw, []);
        const { sql } = store.tableRows.querySql(newTableId(), { where, sort: [], limit: 10 });
        // Only identifiers, operators, placeholders and the fixed literals '' and '[]' may appear.
        const stripped = sql.replace(/"(trows|c)_[0-9a-f]{32}"/g, 'X').replace(/''|'\[\]'/g, '');
        expect(stripped).not.toMatch(/'/);
        expect(stripped).toMatch(/^[A-Za-z_ ()?,=<>!.0-9*-]+$/);
      }),
      { numRuns: 300 },
    );
  });
});

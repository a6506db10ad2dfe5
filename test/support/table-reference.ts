// An in-memory reference evaluator of resolved table predicates and sorts, written from the rules of the
// predicate language rather than from the SQL, so the property test can compare the compiled SQL against it.
import type { Column, StoredValue } from '../../src/tables/columns.ts';
import type { FieldRef, Predicate, SortKey } from '../../src/tables/predicate.ts';
import type { StoredRow } from '../../src/store/table-rows.ts';

const fold = (s: string) => s.toLowerCase();

function value(row: StoredRow, f: FieldRef): StoredValue {
  if (f.kind === 'system') return f.name === 'id' ? row.id : f.name === 'createdAt' ? row.createdAt : row.updatedAt;
  return row.cells[f.column.id] ?? null;
}

/** SQLite's BINARY order: numbers before text, numbers numerically, text by UTF-8 bytes. */
export function compareStored(a: StoredValue, b: StoredValue): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

/** A like pattern (`*` the only wildcard; every other character literal) as an anchored regular expression. */
function likeRegex(pattern: string): RegExp {
  return new RegExp(`^${[...pattern].map((c) => (c === '*' ? '.*' : escape(c))).join('')}$`, 'su');
}
const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const isMulti = (f: FieldRef) => f.kind === 'column' && f.column.type === 'select' && Boolean(f.column.multiple);
const isText = (f: FieldRef) => f.kind === 'column' && f.column.type === 'string';

export function evaluate(p: Predicate, row: StoredRow): boolean {
  if ('all' in p) return p.all.every((x) => evaluate(x, row));
  if ('any' in p) return p.any.some((x) => evaluate(x, row));
  const v = value(row, p.field);
  const op = p.value;
  const text = () => fold(String(v));
  const members = () => JSON.parse(String(v)) as string[];
  switch (p.op) {
    case 'eq':
      return v !== null && compareStored(v, op as StoredValue) === 0;
    case 'ne':
      return v === null || compareStored(v, op as StoredValue) !== 0;
    case 'gt':
      return v !== null && compareStored(v, op as StoredValue) > 0;
    case 'gte':
      return v !== null && compareStored(v, op as StoredValue) >= 0;
    case 'lt':
      return v !== null && compareStored(v, op as StoredValue) < 0;
    case 'lte':
      return v !== null && compareStored(v, op as StoredValue) <= 0;
    case 'in':
      return v !== null && (op as StoredValue[]).some((x) => compareStored(v, x) === 0);
    case 'nin':
      return v === null || !(op as StoredValue[]).some((x) => compareStored(v, x) === 0);
    case 'contains':
      return v !== null && (isMulti(p.field) ? members().includes(op as string) : text().includes(op as string));
    case 'ncontains':
      return v === null || !(isMulti(p.field) ? members().includes(op as string) : text().includes(op as string));
    case 'startsWith':
      return v !== null && text().startsWith(op as string);
    case 'endsWith':
      return v !== null && text().endsWith(op as string);
    case 'like':
      return v !== null && likeRegex(op as string).test(String(v));
    case 'nlike':
      return v === null || !likeRegex(op as string).test(String(v));
    case 'ilike':
      return v !== null && likeRegex(op as string).test(text());
    case 'nilike':
      return v === null || !likeRegex(op as string).test(text());
    case 'isNull':
      return v === null;
    case 'isNotNull':
      return v !== null;
    case 'isEmpty':
      return v === null || (isText(p.field) && v === '') || (isMulti(p.field) && v === '[]');
    case 'isNotEmpty':
      return !(v === null || (isText(p.field) && v === '') || (isMulti(p.field) && v === '[]'));
  }
}

function sortValue(row: StoredRow, f: FieldRef): StoredValue {
  const v = value(row, f);
  if (v !== null && f.kind === 'column' && f.column.type === 'select' && !f.column.multiple && (f.column.options?.length ?? 0) > 0) {
    return (f.column as Column).options!.find((o) => o.id === v)?.name ?? v;
  }
  return v;
}

/** Rows in sort order: each key with nulls last, then the id in the last key's direction (table order when there are no keys). */
export function sortRows(rows: StoredRow[], keys: SortKey[]): StoredRow[] {
  return [...rows].sort((a, b) => {
    for (const k of keys) {
      const x = sortValue(a, k.field);
      const y = sortValue(b, k.field);
      if (x === null && y === null) continue;
      if (x === null) return 1;
      if (y === null) return -1;
      const c = compareStored(x, y);
      if (c !== 0) return k.direction === 'asc' ? c : -c;
    }
    if (keys.length === 0) return compareStored(a.orderKey, b.orderKey) || compareStored(a.id, b.id);
    return keys.at(-1)!.direction === 'desc' ? compareStored(b.id, a.id) : compareStored(a.id, b.id);
  });
}

// The table predicate language: `{field, op, value}` leaves and `{all: [...]}` / `{any: [...]}` groups, with the
// limits and type rules of the platform. `parsePredicate` checks a client's predicate against the table's columns
// and returns a resolved tree whose operands are already in stored form (option ids, canonical dates, 0/1), so the
// SQL compiler in the store and the reference evaluator in the tests work on the same meaning. No SQL here.
import { type Column, type StoredValue, ColumnError, parseDate, sortKind, toStored } from './columns.ts';

export const OPERATORS = [
  'eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'ncontains', 'startsWith', 'endsWith',
  'like', 'ilike', 'nlike', 'nilike', 'isEmpty', 'isNotEmpty', 'isNull', 'isNotNull',
] as const;
export type Operator = (typeof OPERATORS)[number];

export const PREDICATE_LIMITS = { members: 100, depth: 10, nodes: 500, inList: 1000, sortKeys: 16 } as const;

const NO_OPERAND = new Set<Operator>(['isEmpty', 'isNotEmpty', 'isNull', 'isNotNull']);
const RANGE = new Set<Operator>(['gt', 'gte', 'lt', 'lte']);
const TEXT_MATCH = new Set<Operator>(['contains', 'ncontains', 'startsWith', 'endsWith', 'like', 'ilike', 'nlike', 'nilike']);
const SINGLE_SELECT_OPS = new Set<Operator>(['eq', 'ne', 'in', 'nin', ...NO_OPERAND]);
const MULTI_SELECT_OPS = new Set<Operator>(['contains', 'ncontains', ...NO_OPERAND]);

export type SystemField = 'id' | 'createdAt' | 'updatedAt';
export const SYSTEM_FIELDS: readonly SystemField[] = ['id', 'createdAt', 'updatedAt'];

/** What a leaf or sort key reads: a column, or a system field (never null; id is text, the times are dates). */
export type FieldRef = { kind: 'system'; name: SystemField } | { kind: 'column'; column: Column };

/** How the field's values behave: its column type, with the system fields typed as string and date. */
export function fieldType(f: FieldRef): { type: Column['type']; multiple: boolean } {
  if (f.kind === 'column') return { type: f.column.type, multiple: Boolean(f.column.multiple) };
  return { type: f.name === 'id' ? 'string' : 'date', multiple: false };
}

export type Leaf = {
  field: FieldRef;
  op: Operator;
  /**
   * Stored-form operand: a value for comparisons, a list for in/nin, folded text for contains-like operators, a
   * pattern whose only wildcard is `*` for like (folded for ilike); the store's dialect turns it into its own syntax.
   */
  value: StoredValue | StoredValue[];
};
export type Predicate = { all: Predicate[] } | { any: Predicate[] } | Leaf;
export interface SortKey {
  field: FieldRef;
  direction: 'asc' | 'desc';
}

/** A predicate or sort the table cannot run; `path` points into the request body. */
export class PredicateError extends Error {
  readonly path: (string | number)[];
  constructor(message: string, path: (string | number)[]) {
    super(message);
    this.path = path;
  }
}

export function resolveField(columns: Column[], name: unknown, path: (string | number)[]): FieldRef {
  if (typeof name !== 'string' || name.length < 1 || name.length > 128) throw new PredicateError('A field is a column name of 1–128 characters.', path);
  if ((SYSTEM_FIELDS as readonly string[]).includes(name)) return { kind: 'system', name: name as SystemField };
  const column = columns.find((c) => c.name === name) ?? columns.find((c) => c.id === name);
  if (!column) throw new PredicateError(`The table has no column "${name}".`, path);
  return { kind: 'column', column };
}

/** Case folding for case-insensitive operators; the store folds cells the same way (its dialect's fold). */
export const fold = (s: string) => s.toLowerCase();

function operand(field: FieldRef, v: unknown, path: (string | number)[]): StoredValue {
  if (v === null || v === undefined) throw new PredicateError('This operator needs a value; use isNull or isEmpty to find empty cells.', path);
  const { type } = fieldType(field);
  if (field.kind === 'system') {
    if (field.name === 'id') {
      if (typeof v !== 'string') throw new PredicateError('id is compared with text.', path);
      return v;
    }
    const d = typeof v === 'string' ? parseDate(v) : null;
    if (d === null) throw new PredicateError(`${field.name} is compared with an ISO 8601 date.`, path);
    return d;
  }
  const column = field.column;
  try {
    // Operands are coerced to the column's type: "42" for a number column, "true" for a boolean, a name for an option.
    if ((type === 'number' || type === 'currency' || type === 'ttl') && typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) {
      return Number(v);
    }
    if (type === 'boolean' && typeof v === 'string' && (v === 'true' || v === 'false')) return v === 'true' ? 1 : 0;
    if (type === 'string' && (typeof v === 'number' || typeof v === 'boolean')) return String(v);
    if (type === 'ttl' && typeof v === 'number') return v;
    if (type === 'select') return toStored({ ...column, multiple: false }, v, path);
    return toStored(column, v, path);
  } catch (err) {
    if (err instanceof ColumnError) throw new PredicateError(err.message, path);
    throw err;
  }
}

function textOperand(v: unknown, path: (string | number)[], allowEmpty: boolean): string {
  if (typeof v !== 'string') throw new PredicateError('This operator takes text.', path);
  if (!allowEmpty && v === '') throw new PredicateError('The text to look for may not be empty.', path);
  return v;
}

function parseLeaf(columns: Column[], raw: Record<string, unknown>, path: (string | number)[]): Leaf {
  for (const k of Object.keys(raw)) {
    if (k !== 'field' && k !== 'op' && k !== 'value') throw new PredicateError(`Unknown key "${k}" in a condition.`, [...path, k]);
  }
  const op = raw.op as Operator;
  if (!OPERATORS.includes(op)) throw new PredicateError(`Unknown operator "${String(raw.op)}"; the operators are ${OPERATORS.join(', ')}.`, [...path, 'op']);
  const field = resolveField(columns, raw.field, [...path, 'field']);
  const { type, multiple } = fieldType(field);
  const at = [...path, 'value'];
  const refuse = (why: string): never => {
    throw new PredicateError(`${op} cannot be used on ${type}${multiple ? ' (multiple)' : ''} field "${String(raw.field)}": ${why}.`, [...path, 'op']);
  };
  if (type === 'select' && !multiple && !SINGLE_SELECT_OPS.has(op)) refuse('a single select takes eq, ne, in, nin and the emptiness operators');
  if (type === 'select' && multiple && !MULTI_SELECT_OPS.has(op)) refuse('a multiple select takes contains, ncontains and the emptiness operators');
  if (RANGE.has(op) && (type === 'boolean' || type === 'json')) refuse('values of this type are not ordered');
  if (TEXT_MATCH.has(op) && !(type === 'string' || type === 'json' || type === 'date' || (type === 'select' && multiple))) refuse('only text is matched');

  if (NO_OPERAND.has(op)) {
    if (raw.value !== undefined) throw new PredicateError(`${op} takes no value.`, at);
    return { field, op, value: null };
  }
  if (op === 'in' || op === 'nin') {
    if (!Array.isArray(raw.value)) throw new PredicateError(`${op} takes an array of values.`, at);
    if (raw.value.length > PREDICATE_LIMITS.inList) throw new PredicateError(`${op} takes at most ${PREDICATE_LIMITS.inList} values.`, at);
    return { field, op, value: raw.value.map((v, i) => operand(field, v, [...at, i])) };
  }
  if (type === 'select' && multiple) {
    // Multi-select contains is membership of one option.
    return { field, op, value: operand(field, raw.value, at) };
  }
  if (op === 'contains' || op === 'ncontains' || op === 'startsWith' || op === 'endsWith') return { field, op, value: fold(textOperand(raw.value, at, false)) };
  if (op === 'like' || op === 'nlike') return { field, op, value: textOperand(raw.value, at, true) };
  if (op === 'ilike' || op === 'nilike') return { field, op, value: fold(textOperand(raw.value, at, true)) };
  if (RANGE.has(op) && sortKind({ type, multiple }) === 'none') refuse('values of this type are not ordered');
  return { field, op, value: operand(field, raw.value, at) };
}

/**
 * Checks and resolves a predicate. A bare leaf at the root is read as `{all: [leaf]}`. Empty groups, unknown
 * keys, unknown columns, operators the column type does not allow, operands of the wrong type, and anything over
 * the limits are PredicateErrors.
 */
export function parsePredicate(columns: Column[], raw: unknown, path: (string | number)[]): Predicate {
  let nodes = 0;
  const walk = (node: unknown, at: (string | number)[], depth: number): Predicate => {
    if (++nodes > PREDICATE_LIMITS.nodes) throw new PredicateError(`A predicate has at most ${PREDICATE_LIMITS.nodes} nodes.`, at);
    if (depth > PREDICATE_LIMITS.depth) throw new PredicateError(`Predicates nest at most ${PREDICATE_LIMITS.depth} levels.`, at);
    if (node === null || typeof node !== 'object' || Array.isArray(node)) throw new PredicateError('A predicate node is an object.', at);
    const o = node as Record<string, unknown>;
    const group = 'all' in o ? 'all' : 'any' in o ? 'any' : null;
    if (group === null) return parseLeaf(columns, o, at);
    if (Object.keys(o).length !== 1) throw new PredicateError('A group has exactly one key, all or any.', at);
    const members = o[group];
    if (!Array.isArray(members) || members.length === 0) throw new PredicateError('A group needs at least one member (an empty group would match every row).', [...at, group]);
    if (members.length > PREDICATE_LIMITS.members) throw new PredicateError(`A group has at most ${PREDICATE_LIMITS.members} members.`, [...at, group]);
    const parsed = members.map((m, i) => walk(m, [...at, group, i], depth + 1));
    return group === 'all' ? { all: parsed } : { any: parsed };
  };
  const root = walk(raw, path, 1);
  return 'field' in root ? { all: [root] } : root;
}

export function parseSort(columns: Column[], raw: unknown, path: (string | number)[]): SortKey[] {
  if (!Array.isArray(raw)) throw new PredicateError('sort is an array of {field, direction}.', path);
  if (raw.length > PREDICATE_LIMITS.sortKeys) throw new PredicateError(`At most ${PREDICATE_LIMITS.sortKeys} sort keys.`, path);
  return raw.map((k, i) => {
    const key = k as { field?: unknown; direction?: unknown };
    if (key.direction !== 'asc' && key.direction !== 'desc') throw new PredicateError('direction is asc or desc.', [...path, i, 'direction']);
    const field = resolveField(columns, key.field, [...path, i, 'field']);
    return { field, direction: key.direction };
  });
}

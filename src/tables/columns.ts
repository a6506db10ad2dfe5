// Table columns: the eight types, how a column definition is checked, how a cell value sent by a client becomes
// the stored value (and back), and how a stored value converts when a column changes type. Stored values are
// plain scalars so the store can index and compare them: text, numbers, 0/1 for booleans, UTC ISO 8601 text for
// dates, JSON text for json and multi-select cells, the option id for a single select. No HTTP, no SQL here.
import { randomBytes } from 'node:crypto';

export const COLUMN_TYPES = ['string', 'number', 'currency', 'boolean', 'date', 'ttl', 'json', 'select'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export interface SelectOption {
  id: string;
  name: string;
}

export interface Column {
  /** Stable internal id, `col_<32 hex>`: rows, filters, sorts and views key on it, so a rename rewrites nothing. */
  id: string;
  name: string;
  type: ColumnType;
  required: boolean;
  unique: boolean;
  workflowGroupId?: string;
  options?: SelectOption[];
  multiple?: boolean;
  currencyCode?: string;
}

export type StoredValue = string | number | null;

export const COLUMN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_COLUMN_NAME = 50;
export const MAX_COLUMNS = 1000;
export const MAX_OPTIONS = 100;
export const COLUMN_ID = /^col_[0-9a-f]{32}$/;

export const newColumnId = () => `col_${randomBytes(16).toString('hex')}`;

/** A cell or a definition is wrong; `path` says where in the request (the HTTP layer adds "body"). */
export class ColumnError extends Error {
  readonly path: (string | number)[];
  readonly details: Record<string, unknown>;
  constructor(message: string, path: (string | number)[] = [], details: Record<string, unknown> = {}) {
    super(message);
    this.path = path;
    this.details = details;
  }
}

export interface ColumnInput {
  id?: string;
  name: string;
  type: ColumnType;
  required?: boolean;
  unique?: boolean;
  options?: SelectOption[];
  multiple?: boolean;
  currencyCode?: string;
}

/** Checks a column definition against its type's rules and returns it normalized (with a fresh id). */
export function defineColumn(input: ColumnInput, path: (string | number)[]): Column {
  if (!COLUMN_NAME.test(input.name) || input.name.length > MAX_COLUMN_NAME) {
    throw new ColumnError(`Column names use letters, digits and underscores (at most ${MAX_COLUMN_NAME}) and do not start with a digit.`, [...path, 'name']);
  }
  const column: Column = { id: newColumnId(), name: input.name, type: input.type, required: input.required ?? false, unique: input.unique ?? false };
  applyTypeFields(column, input, path);
  return column;
}

/** Sets the type-specific fields (options, multiple, currencyCode) and refuses those the type does not take. */
export function applyTypeFields(column: Column, input: Partial<ColumnInput>, path: (string | number)[]): void {
  if (column.type === 'select') {
    const options = input.options ?? column.options ?? [];
    if (options.length > MAX_OPTIONS) throw new ColumnError(`A select column has at most ${MAX_OPTIONS} options.`, [...path, 'options']);
    const ids = new Set<string>();
    const names = new Set<string>();
    for (const [i, o] of options.entries()) {
      if (ids.has(o.id) || names.has(o.name)) throw new ColumnError(`Option ids and names must be distinct ("${o.name}").`, [...path, 'options', i]);
      ids.add(o.id);
      names.add(o.name);
    }
    column.options = options.map((o) => ({ id: o.id, name: o.name }));
    column.multiple = input.multiple ?? column.multiple ?? false;
    if (column.unique) throw new ColumnError('A select column cannot be unique.', [...path, 'unique']);
  } else {
    if (input.options !== undefined) throw new ColumnError('Only select columns have options.', [...path, 'options']);
    if (input.multiple !== undefined) throw new ColumnError('Only select columns take multiple.', [...path, 'multiple']);
    delete column.options;
    delete column.multiple;
  }
  if (column.type === 'currency') column.currencyCode = input.currencyCode ?? column.currencyCode ?? 'USD';
  else {
    if (input.currencyCode !== undefined) throw new ColumnError('Only currency columns have a currency code.', [...path, 'currencyCode']);
    delete column.currencyCode;
  }
  if (column.unique && column.type === 'json') throw new ColumnError('A json column cannot be unique.', [...path, 'unique']);
}

/** The kinds of value the store compares: text, number, or none (json and multi-select are not ordered). */
export function sortKind(column: Pick<Column, 'type' | 'multiple'>): 'text' | 'number' | 'none' {
  switch (column.type) {
    case 'number':
    case 'currency':
    case 'ttl':
    case 'boolean':
      return 'number';
    case 'string':
    case 'date':
      return 'text';
    case 'select':
      return column.multiple ? 'none' : 'text';
    case 'json':
      return 'none';
  }
}

/** Columns worth an index of their own: scalar values that filters and sorts compare. */
export const indexable = (c: Column) => c.type !== 'json' && !(c.type === 'select' && c.multiple);

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** A date in ISO 8601 (a date alone is midnight UTC; no zone means UTC) as canonical UTC text, or null. */
const PLAIN_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function parseDate(text: string): string | null {
  // Fast path for the commonest form, a plain date (imports read millions of them).
  const plain = PLAIN_DATE.exec(text);
  if (plain) {
    const [, y, mo, d] = plain;
    const month = Number(mo);
    const day = Number(d);
    const leap = (Number(y) % 4 === 0 && Number(y) % 100 !== 0) || Number(y) % 400 === 0;
    if (month < 1 || month > 12 || day < 1 || day > (month === 2 && !leap ? 28 : DAYS_IN_MONTH[month - 1]!)) return null;
    return `${y}-${mo}-${d}T00:00:00.000Z`;
  }
  const m = ISO_DATE.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '0', zone = 'Z'] = m;
  const ms = Number(frac.padEnd(3, '0').slice(0, 3));
  const z = zone === 'Z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${String(ms).padStart(3, '0')}${z}`);
  if (Number.isNaN(t)) return null;
  const date = new Date(t);
  // Date.parse rolls over impossible days (Feb 30); refuse them instead.
  if (zone === 'Z' && (date.getUTCDate() !== Number(d) || date.getUTCMonth() + 1 !== Number(mo))) return null;
  return date.toISOString();
}

/**
 * A stored date as text for a file a person reads (CSV): the date alone when it is midnight UTC, which is how a
 * date without a time is stored, else the full UTC date-time. parseDate reads either back to the same value.
 */
export function dateText(stored: string): string {
  return stored.endsWith('T00:00:00.000Z') ? stored.slice(0, -'T00:00:00.000Z'.length) : stored;
}

const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`);

function optionId(column: Column, v: unknown, path: (string | number)[]): string {
  if (typeof v !== 'string') throw new ColumnError(`Column "${column.name}" takes option ids or names, not ${describe(v)}.`, path);
  const o = column.options?.find((x) => x.id === v) ?? column.options?.find((x) => x.name === v);
  if (!o) throw new ColumnError(`Column "${column.name}" has no option "${v}".`, path, { column: column.name, value: v });
  return o.id;
}

/** A client's cell value as the stored value, or a ColumnError naming what is wrong. `undefined` means null. */
export function toStored(column: Column, v: unknown, path: (string | number)[]): StoredValue {
  if (v === null || v === undefined) return null;
  const wrong = (what: string): never => {
    throw new ColumnError(`Column "${column.name}" (${column.type}) takes ${what}, not ${describe(v)}.`, path, { column: column.name, type: column.type });
  };
  switch (column.type) {
    case 'string':
      return typeof v === 'string' ? v : wrong('text');
    case 'number':
    case 'currency':
      return typeof v === 'number' && Number.isFinite(v) ? v : wrong('a finite number');
    case 'ttl':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : wrong('a whole number of seconds (0 or more)');
    case 'boolean':
      return typeof v === 'boolean' ? (v ? 1 : 0) : wrong('true or false');
    case 'date': {
      const d = typeof v === 'string' ? parseDate(v) : null;
      return d ?? wrong('an ISO 8601 date or date-time');
    }
    case 'json':
      return JSON.stringify(v);
    case 'select': {
      if (!column.multiple) return optionId(column, v, path);
      if (!Array.isArray(v)) return wrong('an array of option ids or names');
      const ids = [...new Set(v.map((x, i) => optionId(column, x, [...path, i])))];
      return JSON.stringify(ids);
    }
  }
}

/** A stored value as the client sees it. */
export function fromStored(column: Column, v: StoredValue | bigint | Uint8Array): unknown {
  if (v === null || v === undefined) return null;
  switch (column.type) {
    case 'boolean':
      return Number(v) === 1;
    case 'number':
    case 'currency':
    case 'ttl':
      return Number(v);
    case 'json':
      return JSON.parse(String(v));
    case 'select':
      return column.multiple ? JSON.parse(String(v)) : String(v);
    default:
      return String(v);
  }
}

/** The text a search (and a conversion to string) sees in a cell: select cells show their option names. */
export function cellText(column: Column, v: StoredValue): string | null {
  if (v === null) return null;
  const value = fromStored(column, v);
  switch (column.type) {
    case 'select': {
      const name = (id: string) => column.options?.find((o) => o.id === id)?.name ?? id;
      return column.multiple ? (value as string[]).map(name).join(', ') : name(value as string);
    }
    case 'json':
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return String(value);
  }
}

/**
 * The stored value of a cell after its column changes from `from` to `to`, or a ColumnError when it cannot be
 * converted without losing what it says (a word in a number column, an option that no longer exists).
 */
export function convertStored(from: Column, to: Column, v: StoredValue): StoredValue {
  if (v === null) return null;
  const fail = (): never => {
    throw new ColumnError(`The value ${JSON.stringify(cellText(from, v))} cannot become ${to.type}.`);
  };
  const value = fromStored(from, v);
  // A json cell holding a scalar converts like that scalar.
  if (from.type === 'json' && to.type !== 'json') {
    if (value === null || typeof value === 'object') return value === null ? null : fail();
    const asType: Column = { ...from, type: typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'string' };
    return convertStored(asType, to, toStored(asType, value, []));
  }
  switch (to.type) {
    case 'string':
      return cellText(from, v);
    case 'json':
      return from.type === 'select' || from.type === 'date' || from.type === 'string' ? JSON.stringify(from.type === 'select' ? value : cellText(from, v)) : JSON.stringify(value);
    case 'number':
    case 'currency':
    case 'ttl': {
      let n: number;
      if (typeof value === 'number') n = value;
      else if (typeof value === 'boolean') n = value ? 1 : 0;
      else if (from.type === 'date') n = Date.parse(String(value));
      else if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value.trim()))) n = Number(value.trim());
      else if (typeof value === 'string' && value.trim() === '') return null;
      else return fail();
      if (to.type === 'ttl' && !(Number.isSafeInteger(n) && n >= 0)) return fail();
      return n;
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value ? 1 : 0;
      if (typeof value === 'number') return value === 1 ? 1 : value === 0 ? 0 : fail();
      if (typeof value === 'string') {
        const t = value.trim().toLowerCase();
        if (t === '') return null;
        if (['true', '1', 'yes', 'y'].includes(t)) return 1;
        if (['false', '0', 'no', 'n'].includes(t)) return 0;
      }
      return fail();
    }
    case 'date': {
      if (from.type === 'number' || from.type === 'currency' || from.type === 'ttl') {
        const d = new Date(Number(value));
        return Number.isNaN(d.getTime()) ? fail() : d.toISOString();
      }
      if (typeof value === 'string') return value.trim() === '' ? null : (parseDate(value) ?? fail());
      return fail();
    }
    case 'select': {
      let ids: string[];
      if (from.type === 'select') {
        // Same option id first (a renamed option keeps its cells), else an option of the same name.
        ids = (from.multiple ? (value as string[]) : [value as string]).map((id) => {
          if (to.options?.some((o) => o.id === id)) return id;
          const name = from.options?.find((o) => o.id === id)?.name;
          return to.options?.find((o) => o.name === name)?.id ?? fail();
        });
      } else {
        const text = typeof value === 'string' ? value.trim() : String(cellText(from, v));
        ids = text === '' ? [] : [(to.options?.find((o) => o.name === text) ?? to.options?.find((o) => o.id === text))?.id ?? fail()];
      }
      if (to.multiple) return JSON.stringify([...new Set(ids)]);
      if (ids.length === 0) return null;
      return ids.length === 1 ? ids[0]! : fail();
    }
  }
}

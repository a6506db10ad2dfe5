// Saved views: a filter, a sort and a column layout. They are stored with column ids where the wire has column
// names (filter and sort fields, layout keys), so renaming a column never breaks a view; reads put the current
// names back. A deleted column disappears from every view.
import type { Repositories } from '../store/index.ts';
import type { Column } from './columns.ts';
import { parsePredicate, parseSort, SYSTEM_FIELDS } from './predicate.ts';

export type ViewConfig = {
  columnWidths?: Record<string, number>;
  columnOrder?: string[];
  pinnedColumns?: string[];
  hiddenColumns?: string[];
  filter?: unknown;
  sort?: { field: string; direction: 'asc' | 'desc' }[] | null;
};

const isSystem = (f: string) => (SYSTEM_FIELDS as readonly string[]).includes(f);

function mapFields(node: unknown, map: (field: string) => string | null): unknown {
  if (node === null || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  for (const g of ['all', 'any'] as const) {
    if (Array.isArray(o[g])) {
      const members = (o[g] as unknown[]).map((m) => mapFields(m, map)).filter((m) => m !== null);
      return members.length === 0 ? null : { [g]: members };
    }
  }
  if (typeof o.field !== 'string') return node;
  const field = map(o.field);
  return field === null ? null : { ...o, field };
}

function mapConfig(config: ViewConfig, map: (field: string) => string | null): ViewConfig {
  const out: ViewConfig = {};
  const list = (xs: string[] | undefined) => xs?.map(map).filter((x): x is string => x !== null);
  if (config.columnWidths) out.columnWidths = Object.fromEntries(Object.entries(config.columnWidths).flatMap(([k, v]) => (map(k) === null ? [] : [[map(k)!, v]])));
  if (config.columnOrder) out.columnOrder = list(config.columnOrder);
  if (config.pinnedColumns) out.pinnedColumns = list(config.pinnedColumns);
  if (config.hiddenColumns) out.hiddenColumns = list(config.hiddenColumns);
  if (config.filter !== undefined) out.filter = config.filter === null ? null : mapFields(config.filter, map);
  if (config.sort !== undefined) out.sort = config.sort === null ? null : config.sort.flatMap((k) => (map(k.field) === null ? [] : [{ ...k, field: map(k.field)! }]));
  return out;
}

/**
 * Checks a config from a client (its filter and sort must run on this table; layout keys must be columns) and
 * returns it in stored form, with column ids. Throws PredicateError or ColumnError-like PredicateErrors.
 */
export function storedViewConfig(columns: Column[], config: ViewConfig, path: (string | number)[]): ViewConfig {
  if (config.filter !== undefined && config.filter !== null) parsePredicate(columns, config.filter, [...path, 'filter']);
  if (config.sort !== undefined && config.sort !== null) parseSort(columns, config.sort, [...path, 'sort']);
  const byName = (f: string) => (isSystem(f) ? f : (columns.find((c) => c.name === f) ?? columns.find((c) => c.id === f))?.id ?? null);
  return mapConfig(config, byName);
}

/** A stored config with the current column names, as the wire shows it. */
export function wireViewConfig(columns: Column[], config: ViewConfig): ViewConfig {
  return mapConfig(config, (f) => (isSystem(f) ? f : (columns.find((c) => c.id === f)?.name ?? null)));
}

export async function dropColumnFromViews(tx: Repositories, tableId: string, columnId: string): Promise<void> {
  const now = new Date().toISOString();
  for (const v of await tx.tableViews.list(tableId)) {
    const next = mapConfig(v.config as ViewConfig, (f) => (f === columnId ? null : f));
    if (JSON.stringify(next) !== JSON.stringify(v.config)) await tx.tableViews.update(v.id, { config: next as Record<string, unknown>, updatedAt: now });
  }
}

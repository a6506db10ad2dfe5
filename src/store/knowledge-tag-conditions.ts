// Tag filters on knowledge documents compiled to SQL: shared by the document list and the search's full-text
// leg (both repositories read it, so it lives apart from either).
import type { SqlDialect } from './dialect.ts';

/** One tag filter on a document's tag slot column (resolved and checked by src/knowledge/tags.ts). */
export interface TagCondition {
  slot: string;
  operator: string;
  value: string | number | boolean;
  valueTo?: string | number;
}

type Compiled = { sql: string; params: (string | number)[] };

/** SQL (on the knowledge_documents columns, table alias `alias`) that every condition holds; text matches ignore case. */
export function conditionsSql(d: SqlDialect, conditions: readonly TagCondition[], alias: string): Compiled {
  const parts: string[] = [];
  const params: (string | number)[] = [];
  for (const f of conditions) {
    const col = `${alias}.${f.slot}`;
    const v = typeof f.value === 'boolean' ? (f.value ? 1 : 0) : f.value;
    switch (f.operator) {
      case 'eq': parts.push(`${col} = ?`); params.push(v); break;
      case 'neq': parts.push(`(${col} IS NULL OR ${col} <> ?)`); params.push(v); break;
      case 'gt': parts.push(`${col} > ?`); params.push(v); break;
      case 'gte': parts.push(`${col} >= ?`); params.push(v); break;
      case 'lt': parts.push(`${col} < ?`); params.push(v); break;
      case 'lte': parts.push(`${col} <= ?`); params.push(v); break;
      case 'between': parts.push(`${col} BETWEEN ? AND ?`); params.push(v, f.valueTo!); break;
      case 'contains': parts.push(d.contains(d.fold(col), d.fold('?'))); params.push(v); break;
      case 'not_contains': parts.push(`(${col} IS NULL OR NOT (${d.contains(d.fold(col), d.fold('?'))}))`); params.push(v); break;
      case 'starts_with': parts.push(d.startsWith(d.fold(col), d.fold('?'))); params.push(v); break;
      case 'ends_with': parts.push(d.endsWith(d.fold(col), 'length(?)', d.fold('?'))); params.push(v, v); break;
      default: throw new Error(`Unknown tag filter operator ${f.operator}`);
    }
  }
  return { sql: parts.length ? parts.join(' AND ') : '1 = 1', params };
}

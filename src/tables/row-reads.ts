// Reading rows: pages in table order or by a sort (bounded in bytes), one row, the count of a predicate, and the
// text search over every cell. Rows read with their run state carry each group's run on them. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { SqlValue } from '../store/database.ts';
import type { RowQuery } from '../store/table-rows.ts';
import type { RowRunRecord } from '../store/table-groups.ts';
import type { UserTableRecord } from '../store/user-tables.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { cellText } from './columns.ts';
import { fold, parseSort, type FieldRef, type Predicate, type SortKey } from './predicate.ts';
import { asBadRequest, loadTable, rowView, type RunStateView } from './service.ts';
import { predicateOf } from './row-writes.ts';

export { predicateOf };

/** Most bytes of rows one page carries; a bounded page ends early there, an unbounded query fails. */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024;
const MAX_SEARCH_MATCHES = 1000;
const SEARCH_BATCH = 1000;

type RowView = ReturnType<typeof rowView>;
/** Where a page starts: (order key, id) in table order, [offset, 'offset'] under a sort. */
export type PageKey = readonly [SqlValue, string];
/** The blocks of a running run that are executing now (the run engine knows). */
export type RunningBlocks = (runId: string) => string[];
/** Builds the indexes a predicate or sort reads, on first use (the table job runner). */
export interface IndexBuilder {
  ensureIndexes(tableId: string, fields: FieldRef[]): void;
}

/** A cell's run as the wire shows it; `runningBlocks` names the blocks of a running run that are executing now. */
export function runStateView(r: RowRunRecord, runningBlocks: RunningBlocks): RunStateView {
  const runningBlockIds = r.status === 'running' && r.runId ? runningBlocks(r.runId) : r.runningBlockIds;
  return { status: r.status, executionId: r.runId, workflowId: r.workflowId, error: r.error, runningBlockIds, blockErrors: r.blockErrors, canceledAt: r.canceledAt };
}

export function sortOf(t: UserTableRecord, raw: unknown, path: (string | number)[]): SortKey[] {
  if (raw === undefined) return [];
  try {
    return parseSort(t.columns, raw, path.slice(1));
  } catch (err) {
    asBadRequest(err, path.slice(0, 1));
  }
}

/** The fields a predicate and sort read: their indexes are built on first use. */
function fieldsOf(where: Predicate | null, sort: SortKey[]): FieldRef[] {
  const out: FieldRef[] = sort.map((k) => k.field);
  const walk = (p: Predicate) => {
    if ('all' in p) p.all.forEach(walk);
    else if ('any' in p) p.any.forEach(walk);
    else out.push(p.field);
  };
  if (where) walk(where);
  return out;
}

/** The run state of each row (group id → state), for rows read with their run state. */
async function runStates(repos: Repositories, tableId: string, rowIds: string[], runningBlocks: RunningBlocks): Promise<Map<string, Record<string, RunStateView>>> {
  const out = new Map<string, Record<string, RunStateView>>();
  for (const r of await repos.tableGroupRuns.forRows(tableId, rowIds)) {
    const m = out.get(r.rowId) ?? {};
    m[r.groupId] = runStateView(r, runningBlocks);
    out.set(r.rowId, m);
  }
  return out;
}

export interface PageRequest {
  where: Predicate | null;
  sort: SortKey[];
  /** null is unbounded (and refused past MAX_PAGE_BYTES). */
  limit: number | null;
  after: PageKey | null;
  /** Given: each row carries its run state. */
  runState: RunningBlocks | null;
}

/**
 * One page of a query: table order pages by (order_key, id), a sort by offset. A bounded page stops early at
 * MAX_PAGE_BYTES with a key to the rest.
 */
export async function readPage(repos: Repositories, t: UserTableRecord, q: PageRequest): Promise<{ rows: RowView[]; next: PageKey | null }> {
  const sorted = q.sort.length > 0;
  const offset = sorted && q.after ? Number(q.after[0]) : 0;
  const query: RowQuery = {
    where: q.where,
    sort: q.sort,
    limit: q.limit === null ? null : q.limit + 1,
    after: !sorted && q.after ? [String(q.after[0]), q.after[1]] : null,
    offset,
  };
  const found = await repos.tableRows.query(t.id, t.columns, query);
  const more = q.limit !== null && found.length > q.limit;
  const page = { rows: more ? found.slice(0, q.limit!) : found };
  const views: RowView[] = [];
  let bytes = 0;
  let cut = page.rows.length;
  const states = q.runState ? await runStates(repos, t.id, page.rows.map((r) => r.id), q.runState) : null;
  for (const [i, r] of page.rows.entries()) {
    const v = rowView(t.columns, r, states ? (states.get(r.id) ?? {}) : undefined);
    bytes += Buffer.byteLength(JSON.stringify(v));
    if (bytes > MAX_PAGE_BYTES) {
      if (q.limit === null) throw new DomainError('too_large', `The result passes ${MAX_PAGE_BYTES} bytes; page through it with a limit.`, { limit: MAX_PAGE_BYTES });
      cut = Math.max(1, i);
      if (i === 0) views.push(v);
      break;
    }
    views.push(v);
  }
  const ended = cut < page.rows.length || more;
  const last = page.rows[Math.min(cut, page.rows.length) - 1];
  const next: PageKey | null = !ended || !last ? null : sorted ? [offset + views.length, 'offset'] : [last.orderKey, last.id];
  return { rows: views, next };
}

/** The table of a query (to bind its cursor to) and the page; the indexes the query reads are built on first use. */
export async function queryTable(repos: Repositories, indexes: IndexBuilder, t: UserTableRecord, q: PageRequest) {
  indexes.ensureIndexes(t.id, fieldsOf(q.where, q.sort));
  return readPage(repos, t, q);
}

/** How many rows match a predicate (in the request at body.predicate). */
export async function countRows(repos: Repositories, indexes: IndexBuilder, workspaceId: string, tableId: string, predicate: unknown): Promise<number> {
  const t = await loadTable(repos, workspaceId, tableId);
  const where = predicateOf(t, predicate, ['body', 'predicate']);
  indexes.ensureIndexes(t.id, fieldsOf(where, []));
  return repos.tableRows.count(t.id, where);
}

export async function getRow(repos: Repositories, workspaceId: string, tableId: string, rowId: string, runState: RunningBlocks | null): Promise<RowView> {
  const t = await loadTable(repos, workspaceId, tableId);
  const row = await repos.tableRows.get(t.id, t.columns, rowId);
  if (!row) throw domainNotFound('Row');
  const states = runState ? await runStates(repos, t.id, [row.id], runState) : null;
  return rowView(t.columns, row, states ? (states.get(row.id) ?? {}) : undefined);
}

/** Every cell whose text contains `q` (case-folded), in query order, up to MAX_SEARCH_MATCHES. */
export async function searchRows(repos: Repositories, workspaceId: string, tableId: string, input: { q: string; predicate: unknown; sort: unknown }) {
  const t = await loadTable(repos, workspaceId, tableId);
  const where = predicateOf(t, input.predicate, ['body', 'predicate']);
  const sort = sortOf(t, input.sort, ['body', 'sort']);
  const needle = fold(input.q);
  const matches: { ordinal: number; rowId: string; column: string }[] = [];
  let truncated = false;
  let ordinal = 0;
  let after: readonly [string, string] | null = null;
  scan: for (;;) {
    const rows = await repos.tableRows.query(t.id, t.columns, { where, sort, limit: SEARCH_BATCH, offset: sort.length > 0 ? ordinal : 0, after: sort.length > 0 ? null : after });
    for (const r of rows) {
      for (const c of t.columns) {
        const text = cellText(c, r.cells[c.id] ?? null);
        if (text !== null && fold(text).includes(needle)) {
          if (matches.length === MAX_SEARCH_MATCHES) {
            truncated = true;
            break scan;
          }
          matches.push({ ordinal, rowId: r.id, column: c.name });
        }
      }
      ordinal++;
    }
    if (rows.length < SEARCH_BATCH) break;
    after = [rows.at(-1)!.orderKey, rows.at(-1)!.id];
  }
  return { matches, truncated };
}

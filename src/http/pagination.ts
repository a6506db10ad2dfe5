// Opaque, signed cursors for every list. A cursor remembers the sort key of the last row it returned and a
// fingerprint of the sort and filters it was issued for; sending it back with anything else changed (other
// than `limit`) is a 400, as is a cursor that was tampered with.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { SqlValue } from '../store/database.ts';
import { badRequest } from './errors.ts';
import type { RequestContext } from './context.ts';

export type SortKey = readonly [SqlValue, string];

function fingerprint(operationId: string, binding: Record<string, unknown>): string {
  const canonical = JSON.stringify([operationId, Object.keys(binding).sort().map((k) => [k, binding[k] ?? null])]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

function sign(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url').slice(0, 22);
}

const invalidCursor = (message: string) =>
  badRequest(message, [{ code: 'invalid_cursor', keys: ['cursor'], path: ['query', 'cursor'], message }]);

/**
 * The position to continue after, or null for the first page.
 * `binding` holds every sort and filter parameter of the request except `limit` and `cursor`.
 */
export function readCursor(ctx: RequestContext, cursor: string | undefined, binding: Record<string, unknown>): SortKey | null {
  if (cursor === undefined) return null;
  const [payload, mac] = cursor.split('.');
  const expected = payload ? sign(ctx.services.signingKey, payload) : '';
  if (!payload || !mac || mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected))) {
    throw invalidCursor('The cursor is not one this server issued.');
  }
  let decoded: { k: [SqlValue, string]; f: string };
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor('The cursor is not one this server issued.');
  }
  if (decoded.f !== fingerprint(ctx.operation.operationId, binding)) {
    throw invalidCursor('The cursor was issued for a different sort or filter; only limit may change. Restart without a cursor.');
  }
  return decoded.k;
}

function writeCursor(ctx: RequestContext, key: SortKey, binding: Record<string, unknown>): string {
  const payload = Buffer.from(JSON.stringify({ k: key, f: fingerprint(ctx.operation.operationId, binding) })).toString('base64url');
  return `${payload}.${sign(ctx.services.signingKey, payload)}`;
}

/**
 * Builds a page from rows fetched with `limit + 1`: the extra row only says whether another page exists.
 */
export function toPage<R, T>(
  ctx: RequestContext,
  rows: R[],
  limit: number,
  binding: Record<string, unknown>,
  keyOf: (row: R) => SortKey,
  map: (row: R) => T,
): { data: T[]; nextCursor: string | null } {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows.at(-1);
  return {
    data: pageRows.map(map),
    nextCursor: more && last !== undefined ? writeCursor(ctx, keyOf(last), binding) : null,
  };
}

/** A cursor for a page built by other means than toPage (e.g. one cut short by size). */
export function cursorFor(ctx: RequestContext, key: SortKey, binding: Record<string, unknown>): string {
  return writeCursor(ctx, key, binding);
}

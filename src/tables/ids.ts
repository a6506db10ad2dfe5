// Ids of tables, rows and views. Kept apart from the table service so the import worker can make row ids
// without loading the HTTP side.
import { randomBytes } from 'node:crypto';

export const newTableId = () => `tbl_${randomBytes(16).toString('hex')}`;
/**
 * Row ids grow with time (milliseconds and a counter, then random bits), so inserts append to the id index
 * instead of landing at random places in it; random bytes come from a pool rather than one call per row.
 */
let pool = Buffer.alloc(0);
let poolAt = 0;
let lastMs = 0;
let counter = 0;
export function newRowId(): string {
  const ms = Date.now();
  if (ms === lastMs) counter++;
  else {
    lastMs = ms;
    counter = 0;
  }
  if (poolAt + 5 > pool.length) {
    pool = randomBytes(4096);
    poolAt = 0;
  }
  const rand = pool.toString('hex', poolAt, poolAt + 5);
  poolAt += 5;
  return `row_${ms.toString(16).padStart(12, '0')}${counter.toString(16).padStart(5, '0')}${rand}`;
}
export const newViewId = () => `view_${randomBytes(12).toString('hex')}`;

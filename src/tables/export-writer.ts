// Writes a table to a CSV (RFC 4180) or JSON file batch by batch, in table order, without holding the table in
// memory. Small exports run it on the server thread within the request; larger ones in a worker thread
// (src/tables/export-worker.ts) with its own connection.
import fs from 'node:fs';
import { once } from 'node:events';
import { stringify } from 'csv-stringify/sync';
import type { Store } from '../store/index.ts';
import { type Column, dateText, fromStored, type StoredValue } from './columns.ts';

const EXPORT_BATCH = 2000;

/** The export stopped on request: canceled (seen in the store), or the server is shutting down. */
export class ExportStopped extends Error {
  readonly canceled: boolean;
  constructor(canceled: boolean) {
    super(canceled ? 'canceled' : 'The server is shutting down.');
    this.canceled = canceled;
  }
}

/** RFC 4180 cell text: select cells by option name, json as JSON, dates without a time as the date, empty cells empty. */
function csvCell(c: Column, v: StoredValue): string {
  if (v === null) return '';
  const value = fromStored(c, v);
  if (c.type === 'select') {
    const name = (id: string) => c.options?.find((o) => o.id === id)?.name ?? id;
    return c.multiple ? (value as string[]).map(name).join(', ') : name(value as string);
  }
  if (c.type === 'json') return JSON.stringify(value);
  if (c.type === 'date') return dateText(String(value));
  return String(value);
}

/**
 * Writes every row of the export's table into `file`; the number of rows. Progress is recorded after each batch;
 * an export found canceled, or `stopping()`, ends it with ExportStopped (the file is then incomplete).
 */
export async function writeTableExport(store: Store, e: { id: string; tableId: string; format: 'csv' | 'json' }, file: string, stopping: () => boolean): Promise<number> {
  const t = await store.userTables.get(e.tableId);
  if (!t) throw new Error('The table no longer exists.');
  const out = fs.createWriteStream(file);
  try {
    const write = async (s: string) => {
      if (!out.write(s)) await once(out, 'drain');
    };
    const columns = t.columns;
    if (e.format === 'csv') await write(stringify([columns.map((c) => c.name)], { bom: false }));
    else await write('[');
    let after: [string, string] | null = null;
    let count = 0;
    for (;;) {
      const rows = await store.tableRows.batchAfter(t.id, columns, after, EXPORT_BATCH);
      if (rows.length === 0) break;
      if (e.format === 'csv') {
        await write(stringify(rows.map((r) => columns.map((c) => csvCell(c, r.cells[c.id] ?? null)))));
      } else {
        const parts = rows.map((r) => {
          const data: Record<string, unknown> = {};
          for (const c of columns) data[c.name] = fromStored(c, r.cells[c.id] ?? null);
          return JSON.stringify({ id: r.id, ...data, createdAt: r.createdAt, updatedAt: r.updatedAt });
        });
        await write((count === 0 ? '\n' : ',\n') + parts.join(',\n'));
      }
      count += rows.length;
      after = [rows.at(-1)!.orderKey, rows.at(-1)!.id];
      const status = await store.tableExports.get(e.id);
      if (status?.status !== 'processing') throw new ExportStopped(true);
      if (stopping()) throw new ExportStopped(false);
      await store.transaction((tx) => tx.tableExports.progress(e.id, count, new Date().toISOString()));
    }
    if (e.format === 'json') await write(count === 0 ? ']\n' : '\n]\n');
    out.end();
    await once(out, 'finish');
    return count;
  } catch (err) {
    out.destroy();
    throw err;
  }
}

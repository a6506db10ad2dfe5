// Issue 20: how fast a CSV import's rows reach the database. The import worker (src/tables/import-worker.ts)
// writes its staged rows in batches of IMPORT_BATCH through TableRowsRepository.insertFlat, one transaction per
// batch; this measures that leg alone (parsing is the same on every engine): 100,000 rows of 5 columns into a
// fresh rows table with its order index, on SQLite, on Postgres with multi-row INSERTs (the path before COPY)
// and on Postgres with COPY, each the median of `rounds` (at least 3) in the same run.
import path from 'node:path';
import { figure, fmt, median, tempDir } from '../lib.ts';
import type { Database, SqlExecutor } from '../../src/store/database.ts';
import { SqliteDatabase } from '../../src/store/sqlite.ts';
import { PostgresDatabase } from '../../src/store/postgres.ts';
import { TableRowsRepository } from '../../src/store/table-rows.ts';
import type { Column } from '../../src/tables/columns.ts';
import { IMPORT_BATCH } from '../../src/tables/jobs.ts';
import { createTestDatabase, postgresAvailable, prepareTestPostgres, stopTestPostgres } from '../../test/support/postgres.ts';

const ROWS = 100_000;
const hex = (i: number) => i.toString(16).padStart(32, '0');
const COLUMNS: Column[] = (['string', 'number', 'boolean', 'date', 'string'] as const).map((type, i) => ({ id: `col_${hex(i + 1)}`, name: `c${i}`, type }) as Column);

/** The rows of batch `b`, as the import worker builds them (flat cells, row after row). */
function batch(b: number, count: number) {
  const ids: string[] = [];
  const keys: string[] = [];
  const cells: (string | number | null)[] = [];
  const now = new Date().toISOString();
  for (let i = b * IMPORT_BATCH; i < b * IMPORT_BATCH + count; i++) {
    ids.push(`row_${hex(i)}`);
    keys.push(`a${String(i).padStart(7, '0')}`);
    cells.push(`customer ${i} "quoted", with\ttab`, i * 1.5, i % 2, `2024-01-${String((i % 28) + 1).padStart(2, '0')}T00:00:00.000Z`, i % 7 === 0 ? null : `note ${i}`);
  }
  return { ids, orderKeys: keys, createdAt: ids.map(() => now), updatedAt: ids.map(() => now), cells };
}

/** Rows per second loading ROWS rows into a new rows table of `db`; `insertsOnly` hides the engine's bulk load. */
async function load(db: Database, round: number, insertsOnly: boolean): Promise<number> {
  const tableId = `tbl_${hex(0xb000 + round)}`;
  const through = (tx: SqlExecutor): SqlExecutor => (insertsOnly ? { dialect: tx.dialect, all: tx.all.bind(tx), get: tx.get.bind(tx), run: tx.run.bind(tx) } : tx);
  await db.transaction((tx) => new TableRowsRepository(tx).createTable(tableId, COLUMNS, { indexes: false }).then(() => new TableRowsRepository(tx).createIndexes(tableId, COLUMNS, { lazy: true })));
  const t0 = performance.now();
  for (let b = 0; b * IMPORT_BATCH < ROWS; b++) {
    const rows = batch(b, Math.min(IMPORT_BATCH, ROWS - b * IMPORT_BATCH));
    await db.transaction((tx) => new TableRowsRepository(through(tx)).insertFlat(tableId, COLUMNS, rows));
  }
  const rate = ROWS / ((performance.now() - t0) / 1000);
  await db.transaction((tx) => new TableRowsRepository(tx).dropTable(tableId));
  return rate;
}

/** The bulk-load figures; Postgres ones only when a Postgres cluster can be started (the caller set it up). */
export async function bulkLoad(rounds: number, withPostgres: boolean): Promise<void> {
  const n = Math.max(3, rounds);
  console.log(`\nscale: a CSV import's database writes, ${fmt(ROWS, 0)} rows × ${COLUMNS.length} columns in batches of ${IMPORT_BATCH} (median of ${n})`);
  const sqlite = new SqliteDatabase(path.join(tempDir('owa-bench-load-'), 'load.sqlite'));
  const pgDb = withPostgres ? await createTestDatabase({ empty: true }) : null;
  const postgres = pgDb ? new PostgresDatabase(pgDb.url) : null;
  const rates: Record<'sqlite' | 'inserts' | 'copy', number[]> = { sqlite: [], inserts: [], copy: [] };
  try {
    // Interleaved rounds, so a burst of load on the shared machine falls on every configuration alike.
    for (let r = 0; r < n; r++) {
      rates.sqlite.push(await load(sqlite, r, false));
      if (postgres) {
        rates.inserts.push(await load(postgres, r, true));
        rates.copy.push(await load(postgres, r + 100, false));
      }
    }
  } finally {
    await sqlite.close();
    await postgres?.close();
    await pgDb?.drop();
  }
  const line = (label: string, xs: number[]) => console.log(`  ${label.padEnd(30)} ${fmt(median(xs), 0).padStart(8)} rows/s   (rounds: ${xs.map((x) => fmt(x, 0)).join(', ')})`);
  line('SQLite, multi-row INSERT', rates.sqlite);
  figure('scale', 'import load, SQLite', median(rates.sqlite), 'rows/s', 'higher');
  if (!postgres) return;
  line('Postgres, multi-row INSERT', rates.inserts);
  line('Postgres, COPY', rates.copy);
  figure('scale', 'import load, Postgres INSERT', median(rates.inserts), 'rows/s', 'higher');
  figure('scale', 'import load, Postgres COPY', median(rates.copy), 'rows/s', 'higher');
  figure('scale', 'import load, Postgres COPY / INSERT', median(rates.copy) / median(rates.inserts), 'ratio', 'higher');
  figure('scale', 'import load, Postgres COPY / SQLite', median(rates.copy) / median(rates.sqlite), 'ratio', 'higher');
}

/** `npm run bench -- bulk-load`: these figures alone (`scale` prints them after its drains). */
export async function bulkLoadSuite(options: { rounds: number }): Promise<void> {
  if (!postgresAvailable()) return bulkLoad(options.rounds, false);
  process.env.OWA_TEST_POSTGRES_DIR ??= prepareTestPostgres();
  try {
    await bulkLoad(options.rounds, true);
  } finally {
    await stopTestPostgres();
  }
}

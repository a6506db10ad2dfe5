// Background table jobs: CSV/TSV imports and CSV/JSON exports. An import stages its rows in a table of its own,
// in short batches (so other writes go on), written by a worker thread that parses the file
// (src/tables/import-worker.ts), and becomes visible in one final transaction: a crash or restart
// before that leaves nothing of it in the target. An export streams the table in batches into a file under
// $DATA_DIR/table-exports without holding it in memory.
//
// A running job is leased by its process (src/workers/lease.ts), renewed while it works, and ended only while
// held. A job whose lease expired (its process died) is failed by the next poll of any process, with the
// staging rows of an import dropped; the client starts it again. Nothing is reset at start-up.
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { generateNKeysBetween } from 'fractional-indexing';
import type { Logger } from 'pino';
import type { Store, Repositories } from '../store/index.ts';
import type { BlobStore } from '../files/blob-store.ts';
import type { Config } from '../config.ts';
import type { TableImportRecord } from '../store/table-jobs.ts';
import type { UserTableRecord } from '../store/user-tables.ts';
import { type Column, defineColumn } from './columns.ts';
import { columnNamesFor, inferType, sniffDelimiter } from './csv.ts';
import { JobWorker, JobWorkerError } from '../workers/job-worker.ts';
import type { ImportPlan, ImportSummary, ImportWorkerData } from './import-worker.ts';
import type { ExportWorkerData } from './export-worker.ts';
import { ExportStopped, writeTableExport } from './export-writer.ts';
import { DEFAULT_VIEW_NAME, newTableId, newViewId, syncTableRowLimits } from './service.ts';
import { FolderTree } from '../domain/folder-tree.ts';
import type { FieldRef } from './predicate.ts';
import { newDispatchId } from './group-runs.ts';
import { LeaseKeeper, PROCESS_OWNER, leaseUntil } from '../workers/lease.ts';

const IMPORT_INTERRUPTED = 'The import was interrupted by a server restart; nothing of it was written. Start it again.';
const EXPORT_INTERRUPTED = 'The export was interrupted by a server restart. Start it again.';

/** The import's lease was lost (reclaimed by another process): its outcome is not written. */
class LeaseLost extends Error {}

/** Rows staged per transaction. */
export const IMPORT_BATCH = 2000;
const MAX_SAMPLES = 20;
/** Tables up to this many rows export within the request; larger ones queue. */
export const INLINE_EXPORT_ROWS = 10_000;

export interface TableJobDeps {
  store: Store;
  blobs: BlobStore;
  config: Config;
  logger: Logger;
}

class ImportFailure extends Error {}

/** An import's worker and the messages of its own it sends: the header and samples, then the summary. */
type ImportJob = JobWorker<{ type: 'head'; headers: string[] | null; samples: string[][] } | ({ type: 'done' } & ImportSummary)>;

export class TableJobRunner {
  private readonly deps: TableJobDeps;
  private readonly running = new Set<Promise<void>>();
  /** Workers of running imports and exports, told to stop when the server shuts down. */
  private readonly workers = new Set<JobWorker<{ type: string }>>();
  private purgeTimer: NodeJS.Timeout | null = null;
  private reclaimTimer: NodeJS.Timeout | null = null;
  private closed = false;
  readonly exportDir: string;

  constructor(deps: TableJobDeps) {
    this.deps = deps;
    this.exportDir = path.join(deps.config.dataDir, 'table-exports');
  }

  /**
   * Fails the imports and exports whose lease expired (their process died), or that nobody claimed within a
   * lease time, and drops an import's staging rows; live leases, whoever holds them, are left alone. Polled
   * every renewal period; returns how many were failed.
   */
  async reclaimExpired(): Promise<{ imports: number; exports: number }> {
    const { store, config } = this.deps;
    const now = new Date().toISOString();
    const unclaimedBefore = new Date(Date.now() - config.leases.ttlMs).toISOString();
    let imports = 0;
    let exports = 0;
    for (const imp of await store.tableImports.expired(now, unclaimedBefore)) {
      await store.transaction(async (tx) => {
        if (!(await tx.tableImports.failExpired(imp.id, IMPORT_INTERRUPTED, now, unclaimedBefore))) return;
        imports++;
        if (imp.stagingId && imp.stagingId !== imp.tableId) await tx.tableRows.dropTable(imp.stagingId);
        else if (imp.stagingId && !(await tx.userTables.get(imp.stagingId))) await tx.tableRows.dropTable(imp.stagingId);
        if (imp.target.type === 'existing') await clearJob(tx, imp.target.tableId, imp.id);
      });
    }
    for (const e of await store.tableExports.expired(now, unclaimedBefore)) {
      if (await store.transaction((tx) => tx.tableExports.failExpired(e.id, EXPORT_INTERRUPTED, now, unclaimedBefore))) exports++;
    }
    if (imports + exports > 0) this.deps.logger.warn({ imports, exports }, 'table jobs whose process lost its lease were failed');
    return { imports, exports };
  }

  /** Starts the periodic work: reclaiming expired leases and purging ended exports. */
  async start(): Promise<void> {
    const { store } = this.deps;
    if (this.reclaimTimer) clearInterval(this.reclaimTimer);
    this.reclaimTimer = setInterval(
      () => this.track(this.reclaimExpired().then(() => undefined, (err) => this.deps.logger.warn({ err }, 'reclaiming table jobs failed'))),
      this.deps.config.leases.renewMs,
    );
    this.reclaimTimer.unref();
    await syncTableRowLimits(store, this.deps.config.tables.perPlan);
    // Ended exports and their files go once their retention is over (checked twice per retention, at most hourly).
    const every = Math.max(1000, Math.min(this.deps.config.tables.exportRetentionMs / 2, 3600_000));
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = setInterval(() => this.track(this.purgeExports().then(() => undefined, (err) => this.deps.logger.warn({ err }, 'purging table exports failed'))), every);
    this.purgeTimer.unref();
  }

  /** Deletes exports that ended longer ago than the retention, with their files; the number deleted. */
  async purgeExports(): Promise<number> {
    const { store, config } = this.deps;
    const cutoff = new Date(Date.now() - config.tables.exportRetentionMs).toISOString();
    let deleted = 0;
    for (;;) {
      const ended = await store.tableExports.endedBefore(cutoff, 200);
      if (ended.length === 0 || this.closed) return deleted;
      for (const e of ended) {
        await fsp.rm(this.exportPath(e.id, e.format), { force: true });
        await store.transaction((tx) => tx.tableExports.delete(e.id));
        deleted++;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    if (this.reclaimTimer) clearInterval(this.reclaimTimer);
    for (const worker of this.workers) worker.stop();
    await Promise.allSettled([...this.running]);
  }

  private track(p: Promise<void>): void {
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  startImport(importId: string, blobKey: string): void {
    this.track(this.runImport(importId, blobKey).catch((err) => this.deps.logger.error({ err, importId }, 'table import crashed')));
  }

  startExport(exportId: string): void {
    this.track(this.runExport(exportId, true).catch((err) => this.deps.logger.error({ err, exportId }, 'table export crashed')));
  }

  // ───────────── indexes on first use

  private readonly building = new Set<string>();
  private readonly indexed = new Set<string>();

  /**
   * Columns (and system fields) that filters and sorts use get their index when first used: a bulk import does
   * not build indexes nobody queries, and the first query on a column starts its build in the background (each
   * index in its own short transaction); the queries after it search the index.
   */
  ensureIndexes(tableId: string, fields: FieldRef[]): void {
    if (fields.length === 0 || this.closed) return;
    const key = `${tableId}:${fields.map((f) => (f.kind === 'system' ? f.name : f.column.id)).sort().join(',')}`;
    if (this.building.has(key) || this.indexed.has(key)) return;
    this.building.add(key);
    this.track(
      (async () => {
        try {
          for (const f of await this.deps.store.tableRows.missingIndexes(tableId, fields)) {
            if (this.closed) return;
            await this.deps.store.transaction((tx) => tx.tableRows.ensureFieldIndex(tableId, f));
          }
          this.indexed.add(key);
        } catch (err) {
          this.deps.logger.warn({ err, tableId }, 'building a table index failed');
        } finally {
          this.building.delete(key);
        }
      })(),
    );
  }

  // ───────────── imports

  private keeper(renew: (until: string) => Promise<boolean>): LeaseKeeper {
    const { ttlMs, renewMs } = this.deps.config.leases;
    return new LeaseKeeper(() => renew(leaseUntil(ttlMs)), renewMs, this.deps.logger);
  }

  async runImport(importId: string, blobKey: string): Promise<void> {
    const { store, config } = this.deps;
    if (!(await store.transaction((tx) => tx.tableImports.claim(importId, PROCESS_OWNER, leaseUntil(config.leases.ttlMs))))) return;
    const keeper = this.keeper((until) => store.transaction((tx) => tx.tableImports.renew(importId, PROCESS_OWNER, until)));
    try {
      await this.leasedImport(importId, blobKey);
    } finally {
      keeper.stop();
    }
  }

  private async leasedImport(importId: string, blobKey: string): Promise<void> {
    const { store } = this.deps;
    const imp = (await store.tableImports.get(importId))!;
    let stagingId: string | null = null;
    try {
      await this.importRows(imp, blobKey, (id) => (stagingId = id));
    } catch (err) {
      // Whoever reclaimed the lease failed the import and dropped its staging rows.
      if (err instanceof LeaseLost) return;
      const message = err instanceof ImportFailure ? err.message : `The import failed: ${err instanceof Error ? err.message : String(err)}`;
      if (!(err instanceof ImportFailure)) this.deps.logger.warn({ err, importId }, 'table import failed');
      const now = new Date().toISOString();
      await store.transaction(async (tx) => {
        const current = await tx.tableImports.get(importId);
        // Still running but held by another process (this one lost its lease): the outcome is theirs to write.
        if (current?.status === 'processing' && !(await tx.tableImports.holds(importId, PROCESS_OWNER))) return;
        if (current?.status === 'processing') await tx.tableImports.update(importId, { status: 'failed', error: message, updatedAt: now, completedAt: now });
        if (stagingId && !(await tx.userTables.get(stagingId))) await tx.tableRows.dropTable(stagingId);
        else if (stagingId && imp.target.type === 'existing') await tx.tableRows.dropTable(stagingId);
        if (imp.target.type === 'existing') await clearJob(tx, imp.target.tableId, importId);
      });
    }
  }

  private async importRows(imp: TableImportRecord, blobKey: string, onStaging: (id: string) => void): Promise<void> {
    const { blobs, store } = this.deps;
    const head = await readHead(blobs.read(blobKey, { start: 0, end: 64 * 1024 - 1 }));
    const delimiter = sniffDelimiter(head);
    if (!store.connection) throw new ImportFailure('Imports need the database in a file; this server keeps it in memory.');
    const data: ImportWorkerData = { delimiter, store: store.connection, importId: imp.id };
    const worker: ImportJob = new JobWorker(new URL('./import-worker.ts', import.meta.url), data, 'import', blobs.read(blobKey));
    this.workers.add(worker);
    try {
      await this.stageRows(imp, worker, onStaging);
    } catch (err) {
      throw err instanceof JobWorkerError ? new ImportFailure(err.message) : err;
    } finally {
      this.workers.delete(worker);
      await worker.close();
    }
  }

  private async stageRows(imp: TableImportRecord, worker: ImportJob, onStaging: (id: string) => void): Promise<void> {
    const { store, config } = this.deps;
    const head = await worker.take();
    if (head.type !== 'head') throw new Error(`unexpected ${head.type} from the import worker`);
    const { headers, samples: sampled } = head;
    if (!headers) throw new ImportFailure('The file is empty: a header row is needed.');
    const infer = (i: number) => inferType(sampled.map((r) => r[i] ?? ''));

    // Which column each header fills (null: skipped), and the columns of the staging table.
    let target: UserTableRecord | null = null;
    let columns: Column[];
    let added: Column[] = [];
    let byHeader: (Column | null)[];
    if (imp.target.type === 'new') {
      const names = columnNamesFor(headers);
      columns = names.map((name, i) => defineColumn({ name, type: infer(i) }, []));
      byHeader = columns;
    } else {
      target = (await store.userTables.get(imp.target.tableId)) ?? null;
      if (!target || target.archivedAt) throw new ImportFailure('The target table no longer exists.');
      const mapping = imp.options.mapping ?? {};
      const create = new Set(imp.options.createColumns ?? []);
      const taken = new Set(target.columns.map((c) => c.name));
      const createdNames = columnNamesFor(headers.map((h) => h)).map((n) => n);
      byHeader = headers.map((h, i) => {
        if (create.has(h)) {
          let name = createdNames[i]!;
          for (let n = 2; taken.has(name); n++) name = `${createdNames[i]!.slice(0, 45)}_${n}`;
          taken.add(name);
          const c = defineColumn({ name, type: infer(i) }, []);
          added.push(c);
          return c;
        }
        const name = h in mapping ? mapping[h] : h;
        if (name === null || name === undefined) return null;
        const c = target!.columns.find((x) => x.name === name) ?? target!.columns.find((x) => x.name === createdNames[i]);
        if (!c && h in mapping) throw new ImportFailure(`The mapping names column "${name}", which the table does not have.`);
        return c ?? null;
      });
      columns = [...target.columns, ...added];
    }
    if (columns.length > 1000) throw new ImportFailure('A table has at most 1000 columns.');

    const stagingId = newTableId();
    onStaging(stagingId);
    await store.transaction(async (tx) => {
      // The order index from the start: rows arrive in key order, so it grows by appending and never needs the
      // large in-memory sort that building it over a million rows at the end would.
      await tx.tableRows.createTable(stagingId, columns, { indexes: false });
      // Unique columns get their index now: the worker checks each staged value against the rows staged before.
      await tx.tableRows.createIndexes(stagingId, columns.filter((c) => c.unique), { lazy: true });
      await tx.tableImports.update(imp.id, { stagingId, updatedAt: new Date().toISOString() });
    });

    const append = imp.target.type === 'existing' && imp.target.mode === 'append';
    const firstKeyBase = append ? await store.tableRows.lastOrderKey(target!.id) : null;
    const plan: ImportPlan = {
      byHeader, columns, stagingId, lastKey: firstKeyBase, timeZone: imp.options.timezone, maxRowBytes: config.tables.maxRowBytes, batchSize: IMPORT_BATCH,
      maxSamples: MAX_SAMPLES, target: target ? { id: target.id, columns: target.columns, append } : null,
    };
    worker.post({ type: 'plan', plan });
    const done = await worker.take();
    if (done.type !== 'done') throw new Error(`unexpected ${done.type} from the import worker`);
    const { processed, accepted, rejected, cellsRejected, samples } = done;
    if (this.closed) throw new ImportFailure('The server is shutting down.');
    samples.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));

    // The one transaction that makes the import visible.
    await store.transaction(async (tx) => {
      const current = await tx.tableImports.get(imp.id);
      if (current?.status !== 'processing') throw new ImportFailure('The import was canceled.');
      if (!(await tx.tableImports.holds(imp.id, PROCESS_OWNER))) throw new LeaseLost();
      const at = new Date().toISOString();
      let tableId: string;
      if (imp.target.type === 'new') {
        const ws = await tx.workspaces.get(imp.workspaceId);
        const limits = config.tables.perPlan[ws?.plan ?? 'free'] ?? config.tables.perPlan.free;
        if (accepted > limits.rowsPerTable) throw new ImportFailure(`The file has ${accepted} rows; a table may hold ${limits.rowsPerTable} on this plan.`);
        if ((await tx.userTables.countActive(imp.workspaceId)) >= limits.tables) throw new ImportFailure(`This workspace's plan allows ${limits.tables} tables.`);
        if (await tx.userTables.activeByName(imp.workspaceId, imp.target.name)) throw new ImportFailure(`A table named "${imp.target.name}" already exists.`);
        const folderPath = imp.target.folderPath ?? '/';
        await new FolderTree(tx.tableFolders).ensure(imp.workspaceId, folderPath, at);
        await tx.tableRows.createIndexes(stagingId, columns, { lazy: true });
        const owner = await tx.users.get(imp.userId);
        await tx.userTables.insert({
          id: stagingId, workspaceId: imp.workspaceId, name: imp.target.name, description: null, folderPath, columns, ownerId: imp.userId, ownerEmail: owner?.email ?? '',
          rowCount: accepted, maxRows: limits.rowsPerTable, locks: { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false },
          job: null, archivedAt: null, archiveBatch: null, createdAt: at, updatedAt: at,
        });
        await tx.tableViews.insert({ id: newViewId(), tableId: stagingId, name: DEFAULT_VIEW_NAME, config: {}, isDefault: true, createdByEmail: owner?.email ?? '', createdAt: at, updatedAt: at });
        tableId = stagingId;
      } else {
        const t = await tx.userTables.get(imp.target.tableId);
        if (!t || t.archivedAt) throw new ImportFailure('The target table no longer exists.');
        if (t.locks.insertLocked) throw new ImportFailure('The target table is insert-locked.');
        const replace = imp.target.mode === 'replace';
        if (replace && t.locks.deleteLocked) throw new ImportFailure('The target table is delete-locked; replace needs to delete its rows.');
        const total = (replace ? 0 : t.rowCount) + accepted;
        if (total > t.maxRows) throw new ImportFailure(`The table would hold ${total} rows; it may hold ${t.maxRows}.`);
        for (const c of added) {
          if (t.columns.some((x) => x.name === c.name)) throw new ImportFailure(`The table already has a column "${c.name}".`);
          await tx.tableRows.addColumn(t.id, c);
        }
        if (replace) await tx.tableRows.deleteAll(t.id);
        else {
          // Rows appended to the table meanwhile sort after the staged keys: give the staged rows new ones.
          const last = await tx.tableRows.lastOrderKey(t.id);
          const first = await tx.tableRows.firstOrderKey(stagingId);
          if (first !== null && last !== null && last !== firstKeyBase && last >= first) await rekey(tx, stagingId, columns, last);
        }
        await tx.tableRows.copyRows(stagingId, t.id, columns);
        await tx.tableRows.dropTable(stagingId);
        await tx.userTables.update(t.id, { columns: [...t.columns, ...added], rowCount: total, job: null, updatedAt: at });
        // Groups with autoRun run on the imported rows whose dependencies are filled (a dispatch in mode new,
        // which the group runner picks up and which skips rows that already ran).
        const auto = (t.groups ?? []).filter((g) => g.autoRun).map((g) => g.id);
        if (auto.length > 0 && accepted > 0) {
          await tx.tableGroupRuns.insertDispatch({
            id: newDispatchId(), tableId: t.id, workspaceId: t.workspaceId, userId: imp.userId, status: 'pending', mode: 'new', scope: { groupIds: auto },
            filter: null, limit: null, processedCount: 0, isManualRun: false, requestedAt: at, completedAt: null, canceledAt: null,
          });
        }
        tableId = t.id;
      }
      await tx.tableImports.update(imp.id, {
        status: 'completed', tableId, rowsProcessed: processed, rowsRejected: rejected, cellsRejected, rejectedSamples: samples, updatedAt: at, completedAt: at,
      });
    });
  }

  // ───────────── exports

  exportPath(exportId: string, format: 'csv' | 'json'): string {
    return path.join(this.exportDir, `${exportId}.${format}`);
  }

  /**
   * Runs an export: within the caller (small tables, answered in the request) or in a worker thread (`inWorker`,
   * larger ones queued by startExport). The file is written under a temporary name and renamed once complete.
   */
  async runExport(exportId: string, inWorker = false): Promise<void> {
    const { store } = this.deps;
    const e = (await store.tableExports.get(exportId))!;
    const now = () => new Date().toISOString();
    if (!(await store.transaction((tx) => tx.tableExports.claim(e.id, PROCESS_OWNER, leaseUntil(this.deps.config.leases.ttlMs), now())))) return;
    const file = this.exportPath(e.id, e.format);
    // Named per attempt, so a reclaimed export's leftover never mixes with a new attempt's bytes.
    const temp = `${file}.${process.pid}.part`;
    const keeper = this.keeper((until) => store.transaction((tx) => tx.tableExports.renew(e.id, PROCESS_OWNER, until)));
    try {
      await fsp.mkdir(this.exportDir, { recursive: true });
      let count: number;
      if (inWorker && store.connection) {
        const data: ExportWorkerData = { store: store.connection, exportId: e.id, tableId: e.tableId, format: e.format, file: temp };
        const worker = new JobWorker<{ type: 'done'; count: number }>(new URL('./export-worker.ts', import.meta.url), data, 'export');
        this.workers.add(worker);
        try {
          count = (await worker.take()).count;
        } finally {
          this.workers.delete(worker);
          await worker.close();
        }
      } else count = await writeTableExport(store, e, temp, () => this.closed);
      if (keeper.lost) throw new LeaseLost('The export lost its lease.');
      await fsp.rename(temp, file);
      const size = (await fsp.stat(file)).size;
      await store.transaction((tx) => tx.tableExports.transition(e.id, ['processing'], 'completed', { rowsProcessed: count, size, completedAt: now() }, now(), PROCESS_OWNER));
    } catch (err) {
      await fsp.rm(temp, { force: true });
      const canceled = (err instanceof JobWorkerError || err instanceof ExportStopped) && err.canceled;
      if (!canceled) {
        const message = err instanceof Error ? err.message : String(err);
        await store.transaction((tx) => tx.tableExports.transition(e.id, ['processing'], 'failed', { error: message, completedAt: now() }, now(), PROCESS_OWNER));
      }
    } finally {
      keeper.stop();
    }
  }
}

async function readHead(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function rekey(tx: Repositories, stagingId: string, columns: Column[], after: string): Promise<void> {
  // Read every id in table order first, then give each a key after `after`, in that order.
  const ids: string[] = [];
  let cursor: [string, string] | null = null;
  for (;;) {
    const rows = await tx.tableRows.batchAfter(stagingId, columns.slice(0, 0), cursor, 5000);
    if (rows.length === 0) break;
    ids.push(...rows.map((r) => r.id));
    cursor = [rows.at(-1)!.orderKey, rows.at(-1)!.id];
  }
  const keys = generateNKeysBetween(after, null, ids.length);
  for (const [i, id] of ids.entries()) await tx.tableRows.setOrderKey(stagingId, id, keys[i]!);
}

export async function clearJob(tx: Repositories, tableId: string, jobId: string): Promise<void> {
  const t = await tx.userTables.get(tableId);
  if (t?.job?.id === jobId) await tx.userTables.update(tableId, { job: null });
}

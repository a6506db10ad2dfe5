// Table imports (CSV/TSV into a new or existing table) and exports (CSV/JSON files), with their progress.
// A running import or export is leased by the process working on it (`lease_owner`, `lease_until`,
// src/workers/lease.ts), which renews it and ends the job only while it holds it; one whose lease expired, or
// that nobody claimed within a lease time, is reclaimed by the next poll of any process.
import type { SqlExecutor, SqlValue } from './database.ts';
import { limitClause } from './keyset.ts';

export type ImportStatus = 'uploading' | 'processing' | 'completed' | 'failed' | 'canceled' | 'expired';
export type ImportSource = { type: 'upload'; name: string; contentType: string; size: number } | { type: 'workspace_file'; fileId: string };
export type ImportTarget = { type: 'new'; name: string; folderPath?: string } | { type: 'existing'; tableId: string; mode: 'append' | 'replace' };
export interface RejectedSample {
  code: string;
  line: number | null;
  message: string;
}

export interface TableImportRecord {
  id: string;
  workspaceId: string;
  userId: string;
  /** The file upload session carrying the bytes (upload sources). */
  uploadId: string | null;
  source: ImportSource;
  target: ImportTarget;
  options: { mapping?: Record<string, string | null>; createColumns?: string[]; timezone?: string };
  status: ImportStatus;
  tableId: string | null;
  /** The table the rows are staged in until the import commits. */
  stagingId: string | null;
  rowsProcessed: number;
  rowsRejected: number;
  cellsRejected: number;
  rejectedSamples: RejectedSample[];
  error: string | null;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

interface ImportRow {
  id: string;
  workspace_id: string;
  user_id: string;
  upload_id: string | null;
  source: string;
  target: string;
  options: string;
  status: ImportStatus;
  table_id: string | null;
  staging_id: string | null;
  rows_processed: number;
  rows_rejected: number;
  cells_rejected: number;
  rejected_samples: string;
  error: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

const toImport = (r: ImportRow): TableImportRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  userId: r.user_id,
  uploadId: r.upload_id,
  source: JSON.parse(r.source),
  target: JSON.parse(r.target),
  options: JSON.parse(r.options),
  status: r.status,
  tableId: r.table_id,
  stagingId: r.staging_id,
  rowsProcessed: Number(r.rows_processed),
  rowsRejected: Number(r.rows_rejected),
  cellsRejected: Number(r.cells_rejected),
  rejectedSamples: JSON.parse(r.rejected_samples),
  error: r.error,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  completedAt: r.completed_at,
});

const IMPORT_EXPIRED = "status = 'processing' AND (lease_until < ? OR (lease_owner IS NULL AND updated_at < ?))";
const EXPORT_EXPIRED = "((status = 'processing' AND lease_until < ?) OR (status IN ('queued', 'processing') AND lease_owner IS NULL AND updated_at < ?))";

const IMPORT_FIELDS: Record<string, string> = {
  status: 'status', tableId: 'table_id', stagingId: 'staging_id', rowsProcessed: 'rows_processed', rowsRejected: 'rows_rejected',
  cellsRejected: 'cells_rejected', rejectedSamples: 'rejected_samples', error: 'error', updatedAt: 'updated_at', completedAt: 'completed_at',
};

export class TableImportRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** Jobs by status (metrics); read from the status index alone. */
  async countsByStatus(): Promise<Record<string, number>> {
    const rows = await this.db.all<{ status: string; n: number }>('SELECT status, COUNT(*) AS n FROM table_imports GROUP BY status');
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  async insert(i: TableImportRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO table_imports (id, workspace_id, user_id, upload_id, source, target, options, status, table_id, staging_id, rows_processed,
         rows_rejected, cells_rejected, rejected_samples, error, expires_at, created_at, updated_at, completed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [i.id, i.workspaceId, i.userId, i.uploadId, JSON.stringify(i.source), JSON.stringify(i.target), JSON.stringify(i.options), i.status, i.tableId,
        i.stagingId, i.rowsProcessed, i.rowsRejected, i.cellsRejected, JSON.stringify(i.rejectedSamples), i.error, i.expiresAt, i.createdAt, i.updatedAt, i.completedAt],
    );
  }

  async get(id: string): Promise<TableImportRecord | undefined> {
    const r = await this.db.get<ImportRow>('SELECT * FROM table_imports WHERE id = ?', [id]);
    return r && toImport(r);
  }

  async update(id: string, fields: Partial<Pick<TableImportRecord, 'status' | 'tableId' | 'stagingId' | 'rowsProcessed' | 'rowsRejected' | 'cellsRejected' | 'rejectedSamples' | 'error' | 'updatedAt' | 'completedAt'>>, expected?: ImportStatus): Promise<boolean> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    const params: SqlValue[] = entries.map(([k, v]) => (k === 'rejectedSamples' ? JSON.stringify(v) : (v as SqlValue)));
    const guard = expected ? ' AND status = ?' : '';
    if (expected) params.push(id, expected);
    else params.push(id);
    const r = await this.db.run(`UPDATE table_imports SET ${entries.map(([k]) => `${IMPORT_FIELDS[k]} = ?`).join(', ')} WHERE id = ?${guard}`, params);
    return r.changes > 0;
  }

  /** Takes a processing import nobody holds yet (just started by its request); false when someone has it. */
  async claim(id: string, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.run("UPDATE table_imports SET lease_owner = ?, lease_until = ? WHERE id = ? AND status = 'processing' AND lease_owner IS NULL", [owner, leaseUntil, id]);
    return r.changes === 1;
  }

  /** Extends a lease `owner` still holds; false when it was lost (reclaimed, or the import ended). */
  async renew(id: string, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.run("UPDATE table_imports SET lease_until = ? WHERE id = ? AND status = 'processing' AND lease_owner = ?", [leaseUntil, id, owner]);
    return r.changes === 1;
  }

  /** Whether `owner` still holds the running import (checked in the transaction that ends it). */
  async holds(id: string, owner: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 AS x FROM table_imports WHERE id = ? AND status = 'processing' AND lease_owner = ?", [id, owner])) !== undefined;
  }

  /** Running imports whose lease ran out at `now`, or that nobody claimed since `unclaimedBefore`. */
  async expired(now: string, unclaimedBefore: string): Promise<TableImportRecord[]> {
    return (await this.db.all<ImportRow>(`SELECT * FROM table_imports WHERE ${IMPORT_EXPIRED}`, [now, unclaimedBefore])).map(toImport);
  }

  /** Fails an import whose lease is (still) expired; false when its holder renewed or ended it meanwhile. */
  async failExpired(id: string, error: string, now: string, unclaimedBefore: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE table_imports SET status = 'failed', error = ?, updated_at = ?, completed_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND ${IMPORT_EXPIRED}`,
      [error, now, now, id, now, unclaimedBefore],
    );
    return r.changes === 1;
  }
}

export type ExportStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'canceled';

export interface TableExportRecord {
  id: string;
  tableId: string;
  workspaceId: string;
  userId: string;
  format: 'csv' | 'json';
  status: ExportStatus;
  rowsProcessed: number;
  error: string | null;
  fileName: string;
  size: number | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

interface ExportRow {
  id: string;
  table_id: string;
  workspace_id: string;
  user_id: string;
  format: 'csv' | 'json';
  status: ExportStatus;
  rows_processed: number;
  error: string | null;
  file_name: string;
  size: number | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

const toExport = (r: ExportRow): TableExportRecord => ({
  id: r.id,
  tableId: r.table_id,
  workspaceId: r.workspace_id,
  userId: r.user_id,
  format: r.format,
  status: r.status,
  rowsProcessed: Number(r.rows_processed),
  error: r.error,
  fileName: r.file_name,
  size: r.size === null ? null : Number(r.size),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  completedAt: r.completed_at,
});

export class TableExportRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** Jobs by status (metrics); read from the status index alone. */
  async countsByStatus(): Promise<Record<string, number>> {
    const rows = await this.db.all<{ status: string; n: number }>('SELECT status, COUNT(*) AS n FROM table_exports GROUP BY status');
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  async insert(e: TableExportRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO table_exports (id, table_id, workspace_id, user_id, format, status, rows_processed, error, file_name, size, created_at, updated_at, completed_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [e.id, e.tableId, e.workspaceId, e.userId, e.format, e.status, e.rowsProcessed, e.error, e.fileName, e.size, e.createdAt, e.updatedAt, e.completedAt],
    );
  }

  async get(id: string): Promise<TableExportRecord | undefined> {
    const r = await this.db.get<ExportRow>('SELECT * FROM table_exports WHERE id = ?', [id]);
    return r && toExport(r);
  }

  /**
   * Moves an export between states only from the expected one (a finished or canceled export never changes);
   * with `owner`, only while that owner holds its lease (an export whose lease was lost is not ended by it).
   */
  async transition(
    id: string,
    from: ExportStatus[],
    to: ExportStatus,
    fields: { rowsProcessed?: number; error?: string | null; size?: number | null; completedAt?: string | null },
    now: string,
    owner?: string,
  ): Promise<boolean> {
    const held = owner === undefined ? '' : ' AND lease_owner = ?';
    const ended = to === 'queued' || to === 'processing' ? '' : ', lease_owner = NULL, lease_until = NULL';
    const r = await this.db.run(
      `UPDATE table_exports SET status = ?, updated_at = ?, rows_processed = COALESCE(?, rows_processed), error = COALESCE(?, error),
         size = COALESCE(?, size), completed_at = COALESCE(?, completed_at)${ended} WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})${held}`,
      [to, now, fields.rowsProcessed ?? null, fields.error ?? null, fields.size ?? null, fields.completedAt ?? null, id, ...from, ...(owner === undefined ? [] : [owner])],
    );
    return r.changes > 0;
  }

  /** Starts a queued export for `owner` until `leaseUntil`; false when it is not queued (taken, canceled). */
  async claim(id: string, owner: string, leaseUntil: string, now: string): Promise<boolean> {
    const r = await this.db.run(
      "UPDATE table_exports SET status = 'processing', updated_at = ?, lease_owner = ?, lease_until = ? WHERE id = ? AND status = 'queued'",
      [now, owner, leaseUntil, id],
    );
    return r.changes === 1;
  }

  async renew(id: string, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.run("UPDATE table_exports SET lease_until = ? WHERE id = ? AND status = 'processing' AND lease_owner = ?", [leaseUntil, id, owner]);
    return r.changes === 1;
  }

  /** Running exports whose lease ran out at `now`, or queued ones nobody started since `unclaimedBefore`. */
  async expired(now: string, unclaimedBefore: string): Promise<TableExportRecord[]> {
    return (await this.db.all<ExportRow>(`SELECT * FROM table_exports WHERE ${EXPORT_EXPIRED}`, [now, unclaimedBefore])).map(toExport);
  }

  /** Fails an export whose lease is (still) expired; false when its holder renewed or ended it meanwhile. */
  async failExpired(id: string, error: string, now: string, unclaimedBefore: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE table_exports SET status = 'failed', error = ?, updated_at = ?, completed_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND ${EXPORT_EXPIRED}`,
      [error, now, now, id, now, unclaimedBefore],
    );
    return r.changes === 1;
  }

  async progress(id: string, rowsProcessed: number, now: string): Promise<void> {
    await this.db.run("UPDATE table_exports SET rows_processed = ?, updated_at = ? WHERE id = ? AND status = 'processing'", [rowsProcessed, now, id]);
  }

  /** Exports that ended (completed, failed or canceled) before `cutoff`, oldest first. */
  async endedBefore(cutoff: string, limit: number): Promise<TableExportRecord[]> {
    const rows = await this.db.all<ExportRow>(
      `SELECT * FROM table_exports WHERE status IN ('completed', 'failed', 'canceled') AND completed_at < ? ORDER BY completed_at ${limitClause(limit)}`,
      [cutoff],
    );
    return rows.map(toExport);
  }

  async delete(id: string): Promise<void> {
    await this.db.run('DELETE FROM table_exports WHERE id = ?', [id]);
  }
}

// Knowledge connectors (sources a base is kept in step with) and the log of their syncs.
// A running sync is leased by its process (`lease_owner`, `lease_until`, and `sync_id`, the sync holding it; see
// src/workers/lease.ts): the process renews the lease while the sync runs and writes the sync's outcome only while
// it holds it; a sync whose lease expired is released by the next poll of any process, never at start-up.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type ConnectorStatus = 'active' | 'paused' | 'pending' | 'syncing' | 'error' | 'disabled';

export interface ConnectorRecord {
  id: string;
  knowledgeBaseId: string;
  workspaceId: string;
  connectorType: string;
  credentialId: string | null;
  apiKeySealed: string | null;
  /** JSON. */
  sourceConfig: string;
  syncIntervalMinutes: number;
  status: ConnectorStatus;
  lastSyncAt: string | null;
  lastSyncError: string | null;
  lastSyncDocCount: number | null;
  nextSyncAt: string | null;
  consecutiveFailures: number;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface SyncLogRecord {
  id: string;
  connectorId: string;
  status: string;
  startedAt: string;
  completedAt: string | null;
  docsAdded: number;
  docsUpdated: number;
  docsDeleted: number;
  docsUnchanged: number;
  docsSkipped: number;
  docsFailed: number;
  errorMessage: string | null;
}

type Row = Record<string, SqlValue>;

const toRecord = (r: Row): ConnectorRecord => ({
  id: r.id as string,
  knowledgeBaseId: r.knowledge_base_id as string,
  workspaceId: r.workspace_id as string,
  connectorType: r.connector_type as string,
  credentialId: r.credential_id as string | null,
  apiKeySealed: r.api_key_sealed as string | null,
  sourceConfig: r.source_config as string,
  syncIntervalMinutes: Number(r.sync_interval_minutes),
  status: r.status as ConnectorStatus,
  lastSyncAt: r.last_sync_at as string | null,
  lastSyncError: r.last_sync_error as string | null,
  lastSyncDocCount: r.last_sync_doc_count === null ? null : Number(r.last_sync_doc_count),
  nextSyncAt: r.next_sync_at as string | null,
  consecutiveFailures: Number(r.consecutive_failures),
  createdBy: r.created_by as string | null,
  createdAt: r.created_at as string,
  updatedAt: r.updated_at as string,
});

const toLog = (r: Row): SyncLogRecord => ({
  id: r.id as string,
  connectorId: r.connector_id as string,
  status: r.status as string,
  startedAt: r.started_at as string,
  completedAt: r.completed_at as string | null,
  docsAdded: Number(r.docs_added),
  docsUpdated: Number(r.docs_updated),
  docsDeleted: Number(r.docs_deleted),
  docsUnchanged: Number(r.docs_unchanged),
  docsSkipped: Number(r.docs_skipped),
  docsFailed: Number(r.docs_failed),
  errorMessage: r.error_message as string | null,
});

/** Sync `sync_id` of the connector, still held by its owner (params: id, syncId, owner). */
const SYNC_HELD = 'id = ? AND sync_id = ? AND lease_owner = ?';
/** A sync whose lease ran out (param: now); a lease-less `syncing` one is from before syncs were leased. */
const SYNC_EXPIRED = "(lease_owner IS NOT NULL OR status = 'syncing') AND (lease_until IS NULL OR lease_until < ?)";

export const CONNECTOR_SORT_COLUMNS = { connectorType: 'connector_type', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export class KnowledgeConnectorRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(c: ConnectorRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO knowledge_connectors (id, knowledge_base_id, workspace_id, connector_type, credential_id, api_key_sealed, source_config, sync_interval_minutes,
         status, last_sync_at, last_sync_error, last_sync_doc_count, next_sync_at, consecutive_failures, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [c.id, c.knowledgeBaseId, c.workspaceId, c.connectorType, c.credentialId, c.apiKeySealed, c.sourceConfig, c.syncIntervalMinutes, c.status, c.lastSyncAt,
        c.lastSyncError, c.lastSyncDocCount, c.nextSyncAt, c.consecutiveFailures, c.createdBy, c.createdAt, c.updatedAt],
    );
  }

  async get(id: string): Promise<ConnectorRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM knowledge_connectors WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async list(q: { knowledgeBaseId: string; sortBy: keyof typeof CONNECTOR_SORT_COLUMNS; order: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number }): Promise<ConnectorRecord[]> {
    const ks = keyset({ column: CONNECTOR_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
    const rows = await this.db.all<Row>(
      `SELECT * FROM knowledge_connectors WHERE knowledge_base_id = ? AND ${ks.where} ORDER BY ${ks.orderBy} ${limitClause(q.limit)}`,
      [q.knowledgeBaseId, ...ks.whereParams],
    );
    return rows.map(toRecord);
  }

  async typesOf(knowledgeBaseIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (knowledgeBaseIds.length === 0) return out;
    const rows = await this.db.all<{ kb: string; t: string }>(
      `SELECT DISTINCT knowledge_base_id AS kb, connector_type AS t FROM knowledge_connectors WHERE knowledge_base_id IN (${knowledgeBaseIds.map(() => '?').join(', ')}) ORDER BY t`,
      knowledgeBaseIds,
    );
    for (const r of rows) out.set(r.kb, [...(out.get(r.kb) ?? []), r.t]);
    return out;
  }

  async update(id: string, fields: Partial<Omit<ConnectorRecord, 'id' | 'knowledgeBaseId' | 'workspaceId' | 'connectorType' | 'createdAt' | 'createdBy'>>): Promise<void> {
    const columns: Record<string, string> = {
      credentialId: 'credential_id', apiKeySealed: 'api_key_sealed', sourceConfig: 'source_config', syncIntervalMinutes: 'sync_interval_minutes', status: 'status',
      lastSyncAt: 'last_sync_at', lastSyncError: 'last_sync_error', lastSyncDocCount: 'last_sync_doc_count', nextSyncAt: 'next_sync_at',
      consecutiveFailures: 'consecutive_failures', updatedAt: 'updated_at',
    };
    const sets: string[] = [];
    const params: SqlValue[] = [];
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined) continue;
      sets.push(`${columns[k]} = ?`);
      params.push(v as SqlValue);
    }
    if (sets.length) await this.db.run(`UPDATE knowledge_connectors SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  /**
   * Starts sync `syncId` of a connector for `owner` until `leaseUntil`: marks it syncing (remembering the status
   * to go back to) unless it is paused or a live lease holds it (one sync of a connector at a time). An expired
   * lease is taken over. False when the connector could not be claimed.
   */
  async claimSync(id: string, syncId: string, owner: string, leaseUntil: string, now: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE knowledge_connectors SET status = 'syncing', resume_status = CASE WHEN status = 'syncing' THEN resume_status ELSE status END,
         lease_owner = ?, lease_until = ?, sync_id = ?, updated_at = ?
       WHERE id = ? AND status NOT IN ('paused', 'disabled') AND (lease_until IS NULL OR lease_until < ?)`,
      [owner, leaseUntil, syncId, now, id, now],
    );
    return r.changes === 1;
  }

  /** Extends the lease of sync `syncId` still held by `owner`; false when the lease was lost (expired and released, or the connector deleted). */
  async renewSync(id: string, syncId: string, owner: string, leaseUntil: string): Promise<boolean> {
    return (await this.db.run(`UPDATE knowledge_connectors SET lease_until = ? WHERE ${SYNC_HELD}`, [leaseUntil, id, syncId, owner])).changes === 1;
  }

  /**
   * Writes the outcome of sync `syncId` and ends its lease, only while `owner` still holds it; false when the
   * lease was lost and the outcome must be dropped. A pause requested while the sync ran is kept.
   */
  async finishSync(
    id: string,
    syncId: string,
    owner: string,
    outcome: { failed: boolean; error: string | null; docCount: number; nextSyncAt: string | null },
    now: string,
  ): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE knowledge_connectors SET status = CASE WHEN status IN ('paused', 'disabled') THEN status ELSE ? END, last_sync_at = ?, last_sync_error = ?,
         last_sync_doc_count = ?, next_sync_at = ?, consecutive_failures = ${outcome.failed ? 'consecutive_failures + 1' : '0'}, updated_at = ?,
         lease_owner = NULL, lease_until = NULL, sync_id = NULL
       WHERE ${SYNC_HELD}`,
      [outcome.failed ? 'error' : 'active', now, outcome.error, outcome.docCount, outcome.nextSyncAt, now, id, syncId, owner],
    );
    return r.changes === 1;
  }

  /** Connectors whose scheduled sync is due. */
  async due(now: string, limit: number): Promise<ConnectorRecord[]> {
    const rows = await this.db.all<Row>(
      `SELECT * FROM knowledge_connectors WHERE next_sync_at IS NOT NULL AND next_sync_at <= ? AND status IN ('active', 'error', 'pending') ORDER BY next_sync_at ${limitClause(limit)}`,
      [now],
    );
    return rows.map(toRecord);
  }

  /** Whether any sync's lease has run out (a read, so an idle poll writes nothing). */
  async anyExpiredSync(now: string): Promise<boolean> {
    return (await this.db.get(`SELECT 1 AS x FROM knowledge_connectors WHERE ${SYNC_EXPIRED} LIMIT 1`, [now])) !== undefined;
  }

  /**
   * Syncs whose lease expired (their process died or stalled past the lease) are released: the connector goes
   * back to the status it had (a pause requested meanwhile stays) and is due again. Live leases, whoever holds
   * them, are left alone. Returns how many were released.
   */
  async releaseExpiredSyncs(now: string): Promise<number> {
    const r = await this.db.run(
      `UPDATE knowledge_connectors SET status = CASE WHEN status = 'syncing' THEN COALESCE(resume_status, 'active') ELSE status END, next_sync_at = ?,
         updated_at = ?, lease_owner = NULL, lease_until = NULL, sync_id = NULL
       WHERE ${SYNC_EXPIRED}`,
      [now, now, now],
    );
    return r.changes;
  }

  async clearSchedule(id: string): Promise<void> {
    await this.db.run('UPDATE knowledge_connectors SET next_sync_at = NULL WHERE id = ?', [id]);
  }

  async delete(id: string): Promise<void> {
    await this.db.run('DELETE FROM knowledge_connectors WHERE id = ?', [id]);
  }

  async insertLog(l: SyncLogRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO knowledge_connector_sync_logs (id, connector_id, status, started_at, completed_at, docs_added, docs_updated, docs_deleted, docs_unchanged,
         docs_skipped, docs_failed, error_message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [l.id, l.connectorId, l.status, l.startedAt, l.completedAt, l.docsAdded, l.docsUpdated, l.docsDeleted, l.docsUnchanged, l.docsSkipped, l.docsFailed, l.errorMessage],
    );
  }

  async logs(connectorId: string, limit: number): Promise<SyncLogRecord[]> {
    const rows = await this.db.all<Row>(`SELECT * FROM knowledge_connector_sync_logs WHERE connector_id = ? ORDER BY started_at DESC, id DESC ${limitClause(limit)}`, [connectorId]);
    return rows.map(toLog);
  }
}

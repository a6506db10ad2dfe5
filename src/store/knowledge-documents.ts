// Knowledge documents: what was ingested, its processing state (the durable queue) and its tag values.
// A document being processed is leased by its worker (`lease_owner`, `lease_until`, src/workers/lease.ts): the
// worker renews the lease while it works and ends the attempt only while it holds it; a lease that expired
// (its process died) is reclaimed by the next poll of any process.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';
import { CHUNK_TEXT_INDEX, TOMBSTONES_OF } from './knowledge-chunks.ts';
import { conditionsSql, type TagCondition } from './knowledge-tag-conditions.ts';

export type ProcessingStatus = 'pending' | 'processing' | 'completed' | 'failed';
export type TagValue = string | number | boolean | null;

const TAG_COLUMNS = [
  'tag1', 'tag2', 'tag3', 'tag4', 'tag5', 'tag6', 'tag7', 'number1', 'number2', 'number3', 'number4', 'number5', 'date1', 'date2', 'boolean1', 'boolean2', 'boolean3',
] as const;

export interface KnowledgeDocumentRecord {
  id: string;
  knowledgeBaseId: string;
  workspaceId: string;
  filename: string;
  fileSize: number;
  mimeType: string;
  blobKey: string | null;
  sourceFileId: string | null;
  processingStatus: ProcessingStatus;
  processingError: string | null;
  processingStartedAt: string | null;
  processingCompletedAt: string | null;
  /** Bumped each time processing is claimed; a worker's result is kept only while it still matches. */
  processingAttempt: number;
  /** JSON: upload processing options (recipe, lang). */
  processingOptions: string | null;
  chunkCount: number;
  tokenCount: number;
  characterCount: number;
  enabled: boolean;
  connectorId: string | null;
  connectorType: string | null;
  sourceUrl: string | null;
  externalId: string | null;
  contentHash: string | null;
  userExcluded: boolean;
  /** Slot → value, every one of the 17 slots. */
  tags: Record<string, TagValue>;
  uploadedAt: string;
  updatedAt: string;
}

type Row = Record<string, SqlValue>;

/** Times one processing request may be cut off (overrun, crash, restart) before the document is failed. */
export const MAX_INTERRUPTIONS = 2;
const INTERRUPTED_AGAIN = 'Processing was cut off twice (the server stopped while processing it); it is not retried again. Retry the document to try once more.';
/** An attempt still held: its number and owner match (params: id, attempt, owner). */
const HELD = "WHERE id = ? AND processing_status = 'processing' AND processing_attempt = ? AND lease_owner = ?";
/** An attempt whose lease ran out (param: now); a lease-less one is from before leases existed. */
const EXPIRED = "processing_status = 'processing' AND (lease_until IS NULL OR lease_until < ?)";

const toRecord = (r: Row): KnowledgeDocumentRecord => ({
  id: r.id as string,
  knowledgeBaseId: r.knowledge_base_id as string,
  workspaceId: r.workspace_id as string,
  filename: r.filename as string,
  fileSize: Number(r.file_size),
  mimeType: r.mime_type as string,
  blobKey: r.blob_key as string | null,
  sourceFileId: r.source_file_id as string | null,
  processingStatus: r.processing_status as ProcessingStatus,
  processingError: r.processing_error as string | null,
  processingStartedAt: r.processing_started_at as string | null,
  processingCompletedAt: r.processing_completed_at as string | null,
  processingAttempt: Number(r.processing_attempt),
  processingOptions: r.processing_options as string | null,
  chunkCount: Number(r.chunk_count),
  tokenCount: Number(r.token_count),
  characterCount: Number(r.character_count),
  enabled: Number(r.enabled) === 1,
  connectorId: r.connector_id as string | null,
  connectorType: r.connector_type as string | null,
  sourceUrl: r.source_url as string | null,
  externalId: r.external_id as string | null,
  contentHash: r.content_hash as string | null,
  userExcluded: Number(r.user_excluded) === 1,
  tags: Object.fromEntries(
    TAG_COLUMNS.map((c) => {
      const v = r[c];
      if (v === null || v === undefined) return [c, null];
      if (c.startsWith('boolean')) return [c, Number(v) === 1];
      if (c.startsWith('number')) return [c, Number(v)];
      return [c, v as string];
    }),
  ),
  uploadedAt: r.uploaded_at as string,
  updatedAt: r.updated_at as string,
});

const tagSqlValue = (v: TagValue): SqlValue => (typeof v === 'boolean' ? (v ? 1 : 0) : v);

export const DOCUMENT_SORT_COLUMNS = {
  filename: 'filename',
  fileSize: 'file_size',
  tokenCount: 'token_count',
  chunkCount: 'chunk_count',
  uploadedAt: 'uploaded_at',
  processingStatus: 'processing_status',
  enabled: 'enabled',
} as const;

export class KnowledgeDocumentRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** Documents by processing state (metrics); an index-only count on knowledge_documents_by_status. */
  async countsByState(): Promise<Record<KnowledgeDocumentRecord['processingStatus'], number>> {
    const rows = await this.db.all<{ state: string; n: number }>('SELECT processing_status AS state, COUNT(*) AS n FROM knowledge_documents GROUP BY processing_status');
    const out = { pending: 0, processing: 0, completed: 0, failed: 0 };
    for (const r of rows) out[r.state as keyof typeof out] = Number(r.n);
    return out;
  }

  async insert(d: KnowledgeDocumentRecord): Promise<void> {
    const cols = [
      'id', 'knowledge_base_id', 'workspace_id', 'filename', 'file_size', 'mime_type', 'blob_key', 'source_file_id', 'processing_status', 'processing_error',
      'processing_started_at', 'processing_completed_at', 'processing_attempt', 'processing_options', 'chunk_count', 'token_count', 'character_count', 'enabled',
      'connector_id', 'connector_type', 'source_url', 'external_id', 'content_hash', 'user_excluded', ...TAG_COLUMNS, 'uploaded_at', 'updated_at',
    ];
    const values: SqlValue[] = [
      d.id, d.knowledgeBaseId, d.workspaceId, d.filename, d.fileSize, d.mimeType, d.blobKey, d.sourceFileId, d.processingStatus, d.processingError,
      d.processingStartedAt, d.processingCompletedAt, d.processingAttempt, d.processingOptions, d.chunkCount, d.tokenCount, d.characterCount, d.enabled ? 1 : 0,
      d.connectorId, d.connectorType, d.sourceUrl, d.externalId, d.contentHash, d.userExcluded ? 1 : 0, ...TAG_COLUMNS.map((c) => tagSqlValue(d.tags[c] ?? null)),
      d.uploadedAt, d.updatedAt,
    ];
    await this.db.run(`INSERT INTO knowledge_documents (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, values);
  }

  async get(id: string): Promise<KnowledgeDocumentRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM knowledge_documents WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async getMany(ids: readonly string[]): Promise<KnowledgeDocumentRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.all<Row>(`SELECT * FROM knowledge_documents WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
    return rows.map(toRecord);
  }

  async list(q: {
    knowledgeBaseId: string;
    search: string | null;
    enabled: boolean | null;
    /** Tag conditions every listed document meets. */
    tagConditions: readonly TagCondition[];
    sortBy: keyof typeof DOCUMENT_SORT_COLUMNS;
    order: 'asc' | 'desc';
    after: readonly [SqlValue, string] | null;
    limit: number;
  }): Promise<KnowledgeDocumentRecord[]> {
    const ks = keyset({ column: `d.${DOCUMENT_SORT_COLUMNS[q.sortBy]}`, idColumn: 'd.id', order: q.order, after: q.after, limit: q.limit });
    const where = ['d.knowledge_base_id = ?'];
    const params: SqlValue[] = [q.knowledgeBaseId];
    if (q.search !== null) {
      where.push(this.db.dialect.contains('lower(d.filename)', 'lower(?)'));
      params.push(q.search);
    }
    if (q.enabled !== null) {
      where.push('d.enabled = ?');
      params.push(q.enabled ? 1 : 0);
    }
    if (q.tagConditions.length) {
      const c = conditionsSql(this.db.dialect, q.tagConditions, 'd');
      where.push(c.sql);
      params.push(...c.params);
    }
    const rows = await this.db.all<Row>(
      `SELECT d.* FROM knowledge_documents d WHERE ${where.join(' AND ')} AND ${ks.where} ORDER BY ${ks.orderBy} ${limitClause(q.limit)}`,
      [...params, ...ks.whereParams],
    );
    return rows.map(toRecord);
  }

  async update(id: string, fields: { filename?: string; enabled?: boolean; tags?: Record<string, TagValue>; updatedAt: string }): Promise<void> {
    const sets = ['updated_at = ?'];
    const params: SqlValue[] = [fields.updatedAt];
    if (fields.filename !== undefined) {
      sets.push('filename = ?');
      params.push(fields.filename);
    }
    if (fields.enabled !== undefined) {
      sets.push('enabled = ?');
      params.push(fields.enabled ? 1 : 0);
    }
    for (const [slot, v] of Object.entries(fields.tags ?? {})) {
      if (!(TAG_COLUMNS as readonly string[]).includes(slot)) throw new Error(`unknown tag slot ${slot}`);
      sets.push(`${slot} = ?`);
      params.push(tagSqlValue(v));
    }
    await this.db.run(`UPDATE knowledge_documents SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  /** Enables or disables documents of a base; `ids` null means all of them (narrowed by `onlyEnabled`). */
  async setEnabled(knowledgeBaseId: string, ids: string[] | null, enabled: boolean, onlyEnabled: boolean | null, now: string): Promise<string[]> {
    const where = ['knowledge_base_id = ?', 'enabled <> ?'];
    const params: SqlValue[] = [knowledgeBaseId, enabled ? 1 : 0];
    if (ids) {
      where.push(`id IN (${ids.map(() => '?').join(', ')})`);
      params.push(...ids);
    }
    if (onlyEnabled !== null) {
      where.push('enabled = ?');
      params.push(onlyEnabled ? 1 : 0);
    }
    const rows = await this.db.all<{ id: string }>(`SELECT id FROM knowledge_documents WHERE ${where.join(' AND ')}`, params);
    if (rows.length === 0) return [];
    const changed = rows.map((r) => r.id);
    for (let i = 0; i < changed.length; i += 500) {
      const part = changed.slice(i, i + 500);
      await this.db.run(`UPDATE knowledge_documents SET enabled = ?, updated_at = ? WHERE id IN (${part.map(() => '?').join(', ')})`, [enabled ? 1 : 0, now, ...part]);
    }
    return changed;
  }

  async delete(id: string): Promise<void> {
    await this.db.run('UPDATE knowledge_bases SET vector_version = vector_version + 1 WHERE id = (SELECT knowledge_base_id FROM knowledge_documents WHERE id = ?)', [id]);
    await this.db.run(TOMBSTONES_OF('document_id = ?'), [id]);
    await this.db.dialect.fullTextIndex(CHUNK_TEXT_INDEX).removeSelected(this.db, 'SELECT seq FROM knowledge_chunks WHERE document_id = ?', [id]);
    await this.db.run('DELETE FROM knowledge_documents WHERE id = ?', [id]);
  }

  async allOf(knowledgeBaseId: string): Promise<KnowledgeDocumentRecord[]> {
    const rows = await this.db.all<Row>('SELECT * FROM knowledge_documents WHERE knowledge_base_id = ? ORDER BY uploaded_at, id', [knowledgeBaseId]);
    return rows.map(toRecord);
  }

  async ofConnector(connectorId: string): Promise<KnowledgeDocumentRecord[]> {
    const rows = await this.db.all<Row>('SELECT * FROM knowledge_documents WHERE connector_id = ? ORDER BY uploaded_at, id', [connectorId]);
    return rows.map(toRecord);
  }

  /** New content from a connector's source: recorded and queued for processing again. */
  async replaceSource(id: string, f: { filename: string; fileSize: number; mimeType: string; blobKey: string; contentHash: string; sourceUrl: string | null }, now: string): Promise<void> {
    await this.db.run(
      `UPDATE knowledge_documents SET filename = ?, file_size = ?, mime_type = ?, blob_key = ?, content_hash = ?, source_url = ?, processing_status = 'pending',
         processing_interruptions = 0, processing_error = NULL, processing_started_at = NULL, processing_completed_at = NULL, updated_at = ? WHERE id = ?`,
      [f.filename, f.fileSize, f.mimeType, f.blobKey, f.contentHash, f.sourceUrl, now, id],
    );
  }

  /** Documents a deleted connector leaves behind become ordinary documents (their provenance stays). */
  async detachConnector(connectorId: string, now: string): Promise<void> {
    await this.db.run('UPDATE knowledge_documents SET connector_id = NULL, user_excluded = 0, updated_at = ? WHERE connector_id = ?', [now, connectorId]);
  }

  async setExcluded(connectorId: string, ids: readonly string[], excluded: boolean, now: string): Promise<string[]> {
    const changed: string[] = [];
    for (const id of ids) {
      const r = await this.db.run('UPDATE knowledge_documents SET user_excluded = ?, updated_at = ? WHERE id = ? AND connector_id = ? AND user_excluded <> ?', [
        excluded ? 1 : 0, now, id, connectorId, excluded ? 1 : 0,
      ]);
      if (r.changes === 1) changed.push(id);
    }
    return changed;
  }

  async blobKeys(): Promise<string[]> {
    return (await this.db.all<{ k: string }>('SELECT DISTINCT blob_key AS k FROM knowledge_documents WHERE blob_key IS NOT NULL')).map((r) => r.k);
  }

  // ── the processing queue

  /** Marks a document pending again (new attempt); returns false when it was already pending or processing. */
  async requeue(id: string, now: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE knowledge_documents SET processing_status = 'pending', processing_interruptions = 0, processing_error = NULL, processing_started_at = NULL,
         processing_completed_at = NULL, updated_at = ? WHERE id = ? AND processing_status IN ('failed', 'completed')`,
      [now, id],
    );
    return r.changes === 1;
  }

  /** Documents waiting to be processed, oldest first. */
  async pending(limit: number): Promise<{ id: string }[]> {
    return this.db.all<{ id: string }>(`SELECT id FROM knowledge_documents WHERE processing_status = 'pending' ORDER BY uploaded_at, id ${limitClause(limit)}`);
  }

  /** Claims a pending document for `owner` until `leaseUntil`; returns the attempt number, or null when another worker took it. */
  async claim(id: string, now: string, owner: string, leaseUntil: string): Promise<number | null> {
    const r = await this.db.run(
      `UPDATE knowledge_documents SET processing_status = 'processing', processing_started_at = ?, processing_attempt = processing_attempt + 1, updated_at = ?,
         lease_owner = ?, lease_until = ? WHERE id = ? AND processing_status = 'pending'`,
      [now, now, owner, leaseUntil, id],
    );
    if (r.changes !== 1) return null;
    const row = await this.db.get<{ a: number }>('SELECT processing_attempt AS a FROM knowledge_documents WHERE id = ?', [id]);
    return Number(row!.a);
  }

  /** Extends the lease of an attempt still held by `owner`; false when the lease was lost. */
  async renew(id: string, attempt: number, owner: string, leaseUntil: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE knowledge_documents SET lease_until = ? WHERE id = ? AND processing_status = 'processing' AND processing_attempt = ? AND lease_owner = ?`,
      [leaseUntil, id, attempt, owner],
    );
    return r.changes === 1;
  }

  /** Ends an attempt; false when the document moved on (deleted, retried, its lease lost) and the result must be dropped. */
  async finish(
    id: string,
    attempt: number,
    owner: string,
    outcome: { status: 'completed'; chunkCount: number; tokenCount: number; characterCount: number } | { status: 'failed'; error: string },
    now: string,
  ): Promise<boolean> {
    const r =
      outcome.status === 'completed'
        ? await this.db.run(
            `UPDATE knowledge_documents SET processing_status = 'completed', processing_error = NULL, processing_completed_at = ?, chunk_count = ?, token_count = ?,
               character_count = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL ${HELD}`,
            [now, outcome.chunkCount, outcome.tokenCount, outcome.characterCount, now, id, attempt, owner],
          )
        : await this.db.run(
            `UPDATE knowledge_documents SET processing_status = 'failed', processing_error = ?, processing_completed_at = ?, chunk_count = 0, token_count = 0,
               updated_at = ?, lease_owner = NULL, lease_until = NULL ${HELD}`,
            [outcome.error, now, now, id, attempt, owner],
          );
    return r.changes === 1;
  }

  /**
   * An attempt that was cut off (its worker overran its time or memory, or its process died) goes back to the queue
   * once; cut off a second time, the document is failed with `reason`, so hostile content cannot come back for ever.
   * False when the attempt is no longer current.
   */
  async interrupt(id: string, attempt: number, owner: string, reason: string, now: string): Promise<'requeued' | 'failed' | false> {
    const failed = await this.db.run(
      `UPDATE knowledge_documents SET processing_status = 'failed', processing_error = ?, processing_completed_at = ?, chunk_count = 0, token_count = 0,
         processing_interruptions = processing_interruptions + 1, updated_at = ?, lease_owner = NULL, lease_until = NULL
       ${HELD} AND processing_interruptions >= ${MAX_INTERRUPTIONS - 1}`,
      [reason, now, now, id, attempt, owner],
    );
    if (failed.changes === 1) return 'failed';
    const requeued = await this.db.run(
      `UPDATE knowledge_documents SET processing_status = 'pending', processing_interruptions = processing_interruptions + 1, updated_at = ?,
         lease_owner = NULL, lease_until = NULL ${HELD}`,
      [now, id, attempt, owner],
    );
    return requeued.changes === 1 ? 'requeued' : false;
  }

  /** An attempt the server stopped on purpose (shutdown) goes back to the queue without counting against it. */
  async release(id: string, attempt: number, owner: string, now: string): Promise<boolean> {
    const r = await this.db.run(`UPDATE knowledge_documents SET processing_status = 'pending', updated_at = ?, lease_owner = NULL, lease_until = NULL ${HELD}`, [
      now, id, attempt, owner,
    ]);
    return r.changes === 1;
  }

  /** Whether any attempt's lease has run out (a read, so an idle poll writes nothing). */
  async anyExpired(now: string): Promise<boolean> {
    return (await this.db.get(`SELECT 1 AS x FROM knowledge_documents WHERE ${EXPIRED} LIMIT 1`, [now])) !== undefined;
  }

  /**
   * Attempts whose lease expired (their process died or stalled past the lease) are interrupted: queued again
   * once, then failed. Live leases are left alone, whoever holds them. Returns the documents failed, whose
   * chunks the caller removes.
   */
  async reclaimExpired(now: string): Promise<{ requeued: number; failed: string[] }> {
    const failed = (
      await this.db.all<{ id: string }>(`SELECT id FROM knowledge_documents WHERE ${EXPIRED} AND processing_interruptions >= ${MAX_INTERRUPTIONS - 1}`, [now])
    ).map((r) => r.id);
    for (const id of failed) {
      await this.db.run(
        `UPDATE knowledge_documents SET processing_status = 'failed', processing_error = ?, processing_completed_at = ?, chunk_count = 0, token_count = 0,
           processing_interruptions = processing_interruptions + 1, updated_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND ${EXPIRED}`,
        [INTERRUPTED_AGAIN, now, now, id, now],
      );
    }
    const requeued = await this.db.run(
      `UPDATE knowledge_documents SET processing_status = 'pending', processing_interruptions = processing_interruptions + 1, updated_at = ?,
         lease_owner = NULL, lease_until = NULL WHERE ${EXPIRED}`,
      [now, now],
    );
    return { requeued: requeued.changes, failed };
  }

  async recount(id: string, now: string): Promise<void> {
    await this.db.run(
      `UPDATE knowledge_documents SET chunk_count = (SELECT COUNT(*) FROM knowledge_chunks WHERE document_id = ?),
         token_count = (SELECT COALESCE(SUM(token_count), 0) FROM knowledge_chunks WHERE document_id = ?), updated_at = ? WHERE id = ?`,
      [id, id, now, id],
    );
  }

  /** Ids (and bases) of the documents search may return: enabled, completed, not excluded, matching the filter SQL. */
  async searchableIds(kbIds: readonly string[], conditions: readonly TagCondition[]): Promise<{ id: string; knowledgeBaseId: string }[]> {
    const filter = conditionsSql(this.db.dialect, conditions, 'd');
    const rows = await this.db.all<{ id: string; kb: string }>(
      `SELECT d.id AS id, d.knowledge_base_id AS kb FROM knowledge_documents d WHERE d.knowledge_base_id IN (${kbIds.map(() => '?').join(', ')}) AND d.enabled = 1
         AND d.processing_status = 'completed' AND d.user_excluded = 0 AND ${filter.sql}`,
      [...kbIds, ...filter.params],
    );
    return rows.map((r) => ({ id: r.id, knowledgeBaseId: r.kb }));
  }

  /** How many documents of a base carry a value in a slot. */
  async slotUsage(knowledgeBaseId: string, slot: string): Promise<number> {
    if (!(TAG_COLUMNS as readonly string[]).includes(slot)) throw new Error(`unknown tag slot ${slot}`);
    const r = await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM knowledge_documents WHERE knowledge_base_id = ? AND ${slot} IS NOT NULL`, [knowledgeBaseId]);
    return Number(r?.n ?? 0);
  }

  async slotUsageWithChunks(knowledgeBaseId: string, slot: string): Promise<{ documents: number; chunks: number }> {
    if (!(TAG_COLUMNS as readonly string[]).includes(slot)) throw new Error(`unknown tag slot ${slot}`);
    const r = await this.db.get<{ d: number; c: number | null }>(
      `SELECT COUNT(*) AS d, SUM(chunk_count) AS c FROM knowledge_documents WHERE knowledge_base_id = ? AND ${slot} IS NOT NULL`,
      [knowledgeBaseId],
    );
    return { documents: Number(r?.d ?? 0), chunks: Number(r?.c ?? 0) };
  }

  async clearSlot(knowledgeBaseId: string, slot: string, now: string): Promise<void> {
    if (!(TAG_COLUMNS as readonly string[]).includes(slot)) throw new Error(`unknown tag slot ${slot}`);
    await this.db.run(`UPDATE knowledge_documents SET ${slot} = NULL, updated_at = ? WHERE knowledge_base_id = ? AND ${slot} IS NOT NULL`, [now, knowledgeBaseId]);
  }
}

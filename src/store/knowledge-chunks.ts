// Chunks of knowledge documents with their vectors, and the full-text index over their content (the dialect's
// full-text index `knowledge_chunks_fts`; on SQLite a contentless FTS5 table: the text lives once, in
// knowledge_chunks; the index is keyed by the chunk's `seq`).
import type { SqlExecutor, SqlValue } from './database.ts';
import type { FullTextIndex, TextQuery } from './dialect.ts';
import { keyset, limitClause } from './keyset.ts';
import { conditionsSql, type TagCondition } from './knowledge-tag-conditions.ts';

export interface KnowledgeChunkRecord {
  seq: number;
  id: string;
  documentId: string;
  knowledgeBaseId: string;
  chunkIndex: number;
  content: string;
  contentLength: number;
  tokenCount: number;
  enabled: boolean;
  startOffset: number;
  endOffset: number;
  createdAt: string;
  updatedAt: string;
}

export interface NewChunk {
  id: string;
  documentId: string;
  knowledgeBaseId: string;
  chunkIndex: number;
  content: string;
  tokenCount: number;
  enabled: boolean;
  startOffset: number;
  endOffset: number;
  embedding: Uint8Array;
  at: string;
}

interface Row {
  seq: number;
  id: string;
  document_id: string;
  knowledge_base_id: string;
  chunk_index: number;
  content: string;
  content_length: number;
  token_count: number;
  enabled: number;
  start_offset: number;
  end_offset: number;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'seq, id, document_id, knowledge_base_id, chunk_index, content, content_length, token_count, enabled, start_offset, end_offset, created_at, updated_at';

const toRecord = (r: Row): KnowledgeChunkRecord => ({
  seq: Number(r.seq),
  id: r.id,
  documentId: r.document_id,
  knowledgeBaseId: r.knowledge_base_id,
  chunkIndex: Number(r.chunk_index),
  content: r.content,
  contentLength: Number(r.content_length),
  tokenCount: Number(r.token_count),
  enabled: Number(r.enabled) === 1,
  startOffset: Number(r.start_offset),
  endOffset: Number(r.end_offset),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A chunk's vector as the vector index reads it. */
export interface VectorRow {
  seq: number;
  document_id: string;
  enabled: number;
  embedding: Uint8Array | null;
}

export const CHUNK_SORT_COLUMNS = { chunkIndex: 'chunk_index', tokenCount: 'token_count', enabled: 'enabled' } as const;

/**
 * Every change to a base's chunks bumps the base's `vector_version` in the same transaction, so a process
 * holding the base's vector index (src/knowledge/vector-index/) sees with one cheap read that it is stale,
 * whichever process made the change. The bump comes first: it locks the base's row until the transaction ends,
 * so changes to one base commit in version order, and the changed chunk records the new version in its
 * `vector_rev` (a removed one leaves a tombstone with it). An index at version W then catches up by reading the
 * chunks and tombstones with a revision above W.
 */
const BUMP_BASE = 'UPDATE knowledge_bases SET vector_version = vector_version + 1 WHERE id = ?';
const BUMP_BASE_OF_DOCUMENT = 'UPDATE knowledge_bases SET vector_version = vector_version + 1 WHERE id = (SELECT knowledge_base_id FROM knowledge_documents WHERE id = ?)';
const BUMP_BASE_OF_CHUNK = 'UPDATE knowledge_bases SET vector_version = vector_version + 1 WHERE id = (SELECT knowledge_base_id FROM knowledge_chunks WHERE seq = ?)';
/** The base's version as an SQL expression of the chunk's `knowledge_base_id` column (after the bump). */
const CURRENT_REV = '(SELECT vector_version FROM knowledge_bases WHERE knowledge_bases.id = knowledge_chunks.knowledge_base_id)';
/** Tombstones for the chunks a WHERE clause on knowledge_chunks selects (written before they are deleted). */
export const TOMBSTONES_OF = (where: string) =>
  `INSERT INTO knowledge_vector_tombstones (knowledge_base_id, seq, vector_rev) SELECT knowledge_base_id, seq, ${CURRENT_REV} FROM knowledge_chunks WHERE ${where}`;

/** The name of the chunks' full-text index (see the dialect's fullTextIndex). */
export const CHUNK_TEXT_INDEX = 'knowledge_chunks_fts';

export class KnowledgeChunkRepository {
  private readonly db: SqlExecutor;
  private readonly textIndex: FullTextIndex;
  constructor(db: SqlExecutor) {
    this.db = db;
    this.textIndex = db.dialect.fullTextIndex(CHUNK_TEXT_INDEX);
  }

  /** The base's vector version: changes whenever any of its chunks change. */
  async vectorVersion(knowledgeBaseId: string): Promise<number> {
    const r = await this.db.get<{ v: number }>('SELECT vector_version AS v FROM knowledge_bases WHERE id = ?', [knowledgeBaseId]);
    return Number(r?.v ?? 0);
  }

  async insert(c: NewChunk): Promise<KnowledgeChunkRecord> {
    await this.db.run(BUMP_BASE, [c.knowledgeBaseId]);
    await this.db.run(
      `INSERT INTO knowledge_chunks (id, document_id, knowledge_base_id, chunk_index, content, content_length, token_count, enabled, start_offset, end_offset,
         embedding, created_at, updated_at, vector_rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT vector_version FROM knowledge_bases WHERE id = ?))`,
      [c.id, c.documentId, c.knowledgeBaseId, c.chunkIndex, c.content, c.content.length, c.tokenCount, c.enabled ? 1 : 0, c.startOffset, c.endOffset, c.embedding, c.at, c.at, c.knowledgeBaseId],
    );
    const row = (await this.db.get<Row>(`SELECT ${COLUMNS} FROM knowledge_chunks WHERE id = ?`, [c.id]))!;
    await this.textIndex.add(this.db, Number(row.seq), c.content);
    return toRecord(row);
  }

  /** Removes every chunk of a document (and its index entries). */
  async deleteForDocument(documentId: string): Promise<void> {
    if (!(await this.db.get('SELECT 1 AS one FROM knowledge_chunks WHERE document_id = ? LIMIT 1', [documentId]))) return;
    await this.db.run(BUMP_BASE_OF_DOCUMENT, [documentId]);
    await this.db.run(TOMBSTONES_OF('document_id = ?'), [documentId]);
    await this.textIndex.removeSelected(this.db, 'SELECT seq FROM knowledge_chunks WHERE document_id = ?', [documentId]);
    await this.db.run('DELETE FROM knowledge_chunks WHERE document_id = ?', [documentId]);
  }

  async get(id: string): Promise<KnowledgeChunkRecord | undefined> {
    const r = await this.db.get<Row>(`SELECT ${COLUMNS} FROM knowledge_chunks WHERE id = ?`, [id]);
    return r && toRecord(r);
  }

  async getBySeq(seqs: readonly number[]): Promise<KnowledgeChunkRecord[]> {
    if (seqs.length === 0) return [];
    const rows = await this.db.all<Row>(`SELECT ${COLUMNS} FROM knowledge_chunks WHERE seq IN (${seqs.map(() => '?').join(', ')})`, seqs);
    return rows.map(toRecord);
  }

  async list(q: {
    documentId: string;
    search: string | null;
    enabled: boolean | null;
    sortBy: keyof typeof CHUNK_SORT_COLUMNS;
    order: 'asc' | 'desc';
    after: readonly [SqlValue, string] | null;
    limit: number;
  }): Promise<KnowledgeChunkRecord[]> {
    const ks = keyset({ column: CHUNK_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
    const where = ['document_id = ?'];
    const params: SqlValue[] = [q.documentId];
    if (q.search !== null) {
      where.push(this.db.dialect.contains('lower(content)', 'lower(?)'));
      params.push(q.search);
    }
    if (q.enabled !== null) {
      where.push('enabled = ?');
      params.push(q.enabled ? 1 : 0);
    }
    const rows = await this.db.all<Row>(
      `SELECT ${COLUMNS} FROM knowledge_chunks WHERE ${where.join(' AND ')} AND ${ks.where} ORDER BY ${ks.orderBy} ${limitClause(q.limit)}`,
      [...params, ...ks.whereParams],
    );
    return rows.map(toRecord);
  }

  async nextIndex(documentId: string): Promise<number> {
    const r = await this.db.get<{ n: number | null }>('SELECT MAX(chunk_index) AS n FROM knowledge_chunks WHERE document_id = ?', [documentId]);
    return r?.n === null || r?.n === undefined ? 0 : Number(r.n) + 1;
  }

  async updateContent(c: KnowledgeChunkRecord, content: string, tokenCount: number, embedding: Uint8Array, now: string): Promise<void> {
    await this.db.run(BUMP_BASE_OF_CHUNK, [c.seq]);
    await this.textIndex.remove(this.db, c.seq);
    await this.db.run(`UPDATE knowledge_chunks SET content = ?, content_length = ?, token_count = ?, embedding = ?, updated_at = ?, vector_rev = ${CURRENT_REV} WHERE seq = ?`, [
      content, content.length, tokenCount, embedding, now, c.seq,
    ]);
    await this.textIndex.add(this.db, c.seq, content);
  }

  async setEnabled(seq: number, enabled: boolean, now: string): Promise<void> {
    await this.db.run(BUMP_BASE_OF_CHUNK, [seq]);
    await this.db.run(`UPDATE knowledge_chunks SET enabled = ?, updated_at = ?, vector_rev = ${CURRENT_REV} WHERE seq = ?`, [enabled ? 1 : 0, now, seq]);
  }

  async delete(seq: number): Promise<void> {
    await this.db.run(BUMP_BASE_OF_CHUNK, [seq]);
    await this.db.run(TOMBSTONES_OF('seq = ?'), [seq]);
    await this.textIndex.remove(this.db, seq);
    await this.db.run('DELETE FROM knowledge_chunks WHERE seq = ?', [seq]);
  }

  /** Enabled chunks of these documents in document and chunk order (tag-only search). */
  async ofDocuments(documentIds: readonly string[], limit: number): Promise<KnowledgeChunkRecord[]> {
    if (documentIds.length === 0) return [];
    const out: KnowledgeChunkRecord[] = [];
    for (let i = 0; i < documentIds.length && out.length < limit; i += 500) {
      const part = documentIds.slice(i, i + 500);
      const rows = await this.db.all<Row>(
        `SELECT ${COLUMNS} FROM knowledge_chunks WHERE document_id IN (${part.map(() => '?').join(', ')}) AND enabled = 1 ORDER BY document_id, chunk_index ${limitClause(limit - out.length)}`,
        part,
      );
      out.push(...rows.map(toRecord));
    }
    return out;
  }

  /** Every chunk of a document with its vector, in chunk order (export). */
  async forExport(documentId: string): Promise<(KnowledgeChunkRecord & { embedding: Uint8Array | null })[]> {
    const rows = await this.db.all<Row & { embedding: Uint8Array | null }>(`SELECT ${COLUMNS}, embedding FROM knowledge_chunks WHERE document_id = ? ORDER BY chunk_index, seq`, [documentId]);
    return rows.map((r) => ({ ...toRecord(r), embedding: r.embedding }));
  }

  /** How many chunks of a base have a vector, and the width of the first one. */
  async vectorShape(knowledgeBaseId: string): Promise<{ rows: number; dimension: number }> {
    const r = await this.db.get<{ n: number; w: number | null }>(
      'SELECT COUNT(*) AS n, (SELECT length(embedding) FROM knowledge_chunks WHERE knowledge_base_id = ? AND embedding IS NOT NULL LIMIT 1) AS w FROM knowledge_chunks WHERE knowledge_base_id = ? AND embedding IS NOT NULL',
      [knowledgeBaseId, knowledgeBaseId],
    );
    return { rows: Number(r?.n ?? 0), dimension: Number(r?.w ?? 0) / 4 };
  }

  /** One page of a base's vectors after `afterSeq`, in `seq` order, for the in-memory index. */
  async vectors(knowledgeBaseId: string, afterSeq: number, limit: number): Promise<VectorRow[]> {
    return this.db.all(
      `SELECT seq, document_id, enabled, embedding FROM knowledge_chunks WHERE knowledge_base_id = ? AND seq > ? ORDER BY seq ${limitClause(limit)}`,
      [knowledgeBaseId, afterSeq],
    );
  }

  /** One page of a base's chunk texts after `afterSeq`, in `seq` order (the typo-tolerance vocabulary). */
  async contentsAfter(knowledgeBaseId: string, afterSeq: number, limit: number): Promise<{ seq: number; content: string }[]> {
    const rows = await this.db.all<{ seq: number; content: string }>(
      `SELECT seq, content FROM knowledge_chunks WHERE knowledge_base_id = ? AND seq > ? ORDER BY seq ${limitClause(limit)}`,
      [knowledgeBaseId, afterSeq],
    );
    return rows.map((r) => ({ seq: Number(r.seq), content: r.content }));
  }

  /** One page of the base's chunks changed (inserted, re-embedded, enabled or disabled) after version `afterRev`, in `seq` order. */
  async vectorsChangedAfter(knowledgeBaseId: string, afterRev: number, afterSeq: number, limit: number): Promise<VectorRow[]> {
    return this.db.all(
      `SELECT seq, document_id, enabled, embedding FROM knowledge_chunks WHERE knowledge_base_id = ? AND vector_rev > ? AND seq > ? ORDER BY seq ${limitClause(limit)}`,
      [knowledgeBaseId, afterRev, afterSeq],
    );
  }

  /** Chunks of the base removed after version `afterRev`. */
  async removedAfter(knowledgeBaseId: string, afterRev: number): Promise<number[]> {
    const rows = await this.db.all<{ seq: number }>('SELECT seq FROM knowledge_vector_tombstones WHERE knowledge_base_id = ? AND vector_rev > ?', [knowledgeBaseId, afterRev]);
    return rows.map((r) => Number(r.seq));
  }

  /** How many chunks the base has (with or without a vector): an index-only count. */
  async chunkCount(knowledgeBaseId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM knowledge_chunks WHERE knowledge_base_id = ?', [knowledgeBaseId]);
    return Number(r?.n ?? 0);
  }

  /** One page of the `seq`s of a base's chunks after `afterSeq` (reconciling an index against the table). */
  async vectorSeqs(knowledgeBaseId: string, afterSeq: number, limit: number): Promise<number[]> {
    const rows = await this.db.all<{ seq: number }>(
      `SELECT seq FROM knowledge_chunks WHERE knowledge_base_id = ? AND seq > ? ORDER BY seq ${limitClause(limit)}`,
      [knowledgeBaseId, afterSeq],
    );
    return rows.map((r) => Number(r.seq));
  }

  /** The stored vectors of these chunks (re-scoring an index's candidates at full precision); absent chunks are left out. */
  async embeddingsOf(seqs: readonly number[]): Promise<{ seq: number; embedding: Uint8Array | null }[]> {
    const out: { seq: number; embedding: Uint8Array | null }[] = [];
    for (let i = 0; i < seqs.length; i += 500) {
      const part = seqs.slice(i, i + 500);
      const rows = await this.db.all<{ seq: number; embedding: Uint8Array | null }>(`SELECT seq, embedding FROM knowledge_chunks WHERE seq IN (${part.map(() => '?').join(', ')})`, part);
      for (const r of rows) out.push({ seq: Number(r.seq), embedding: r.embedding });
    }
    return out;
  }

  /**
   * Full-text matches of a query in the index's syntax, best first (`score`: lower is better; BM25 on SQLite),
   * among enabled chunks of searchable documents (enabled, completed, not excluded, meeting every tag condition)
   * of the given bases. The index is searched alone first (it orders by rank cheaply), then the best rows are
   * checked against the chunks and documents in one statement; when too few survive, it looks deeper.
   */
  async fullText(
    kbIds: readonly string[],
    query: TextQuery,
    limit: number,
    conditions: readonly TagCondition[] = [],
  ): Promise<{ seq: number; document_id: string; knowledge_base_id: string; score: number }[]> {
    const filter = conditionsSql(this.db.dialect, conditions, 'd');
    const bases = kbIds.map(() => '?').join(', ');
    for (let depth = Math.max(limit * 2, 200); ; depth *= 8) {
      const hits = await this.textIndex.search(this.db, query, depth);
      const out: { seq: number; document_id: string; knowledge_base_id: string; score: number }[] = [];
      // Checked best first, a little more than the page at first (most hits usually pass), then 500 at a time.
      for (let i = 0, size = Math.max(limit * 2, 32); i < hits.length && out.length < limit; i += size, size = 500) {
        const part = hits.slice(i, i + size);
        const rows = await this.db.all<{ seq: number; document_id: string; knowledge_base_id: string }>(
          `SELECT c.seq, c.document_id, c.knowledge_base_id FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
            WHERE c.seq IN (${part.map(() => '?').join(', ')}) AND c.enabled = 1 AND c.knowledge_base_id IN (${bases})
              AND d.enabled = 1 AND d.processing_status = 'completed' AND d.user_excluded = 0 AND ${filter.sql}`,
          [...part.map((h) => h.key), ...kbIds, ...filter.params],
        );
        const bySeq = new Map(rows.map((r) => [Number(r.seq), r]));
        for (const h of part) {
          const r = bySeq.get(h.key);
          if (r) out.push({ seq: h.key, document_id: r.document_id, knowledge_base_id: r.knowledge_base_id, score: h.score });
        }
      }
      if (out.length >= limit || hits.length < depth || depth >= 1_000_000) return out.slice(0, limit);
    }
  }
}

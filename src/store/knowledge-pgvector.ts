// Knowledge chunk vectors in pgvector, for a Postgres server that has the `vector` extension (Postgres only;
// detected at start by PgvectorStore.open). The float32 bytes in knowledge_chunks.embedding stay the record of
// truth on every engine (export, migrate-to-postgres and the in-memory index read them); this table mirrors them
// as `vector` values under an HNSW index (cosine), one partial index per dimension, since an HNSW index needs a
// fixed width and bases may use different embedding models. A base's mirror is brought up to date before it is
// searched, whenever the base's vector_version (bumped by every chunk change) differs from the one it was synced
// at: changed chunks are found by their updated_at, deleted ones leave by ON DELETE CASCADE.
// The schema is created here rather than in the migrations, because it exists only where the extension does.
import type { Database, SqlExecutor } from './database.ts';
import { limitClause } from './keyset.ts';

const VECTOR_TABLE = 'knowledge_chunk_vectors';
const SYNC_TABLE = 'knowledge_chunk_vector_sync';
/** Chunks read and written per statement while syncing. */
const SYNC_PAGE = 1000;

/** A vector as pgvector's text input: `[x,y,…]` (a float32 prints exactly as JS's shortest form of it). */
export function vectorLiteral(v: Float32Array): string {
  return `[${v.join(',')}]`;
}

function vectorFromBytes(b: Uint8Array): Float32Array {
  // Copied: the bytes of a database read need not be 4-byte aligned.
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

export interface PgvectorMatch {
  seq: number;
  documentId: string;
  similarity: number;
}

export class PgvectorStore {
  private readonly db: Database;
  /** pgvector 0.8 can keep scanning an HNSW index until enough rows pass the filters (iterative scans). */
  private readonly iterativeScan: boolean;
  private readonly indexedDimensions = new Set<number>();

  private constructor(db: Database, iterativeScan: boolean) {
    this.db = db;
    this.iterativeScan = iterativeScan;
  }

  /**
   * The pgvector store of `db` when the server has the `vector` extension (created here if it is available but not
   * yet installed, which needs the right to create it), else null: the caller keeps its in-memory index.
   */
  static async open(db: Database): Promise<PgvectorStore | null> {
    if (db.dialect.name !== 'postgres') return null;
    const available = await db.read.get<{ installed: string | null }>("SELECT installed_version AS installed FROM pg_available_extensions WHERE name = 'vector'");
    if (!available) return null;
    let version = available.installed;
    if (!version) {
      try {
        await db.transaction((tx) => tx.run('CREATE EXTENSION IF NOT EXISTS vector'));
      } catch {
        return null; // available, but this role may not create it: the in-memory index serves
      }
      version = (await db.read.get<{ v: string }>("SELECT extversion AS v FROM pg_extension WHERE extname = 'vector'"))?.v ?? null;
      if (!version) return null;
    }
    await db.transaction(async (tx) => {
      await tx.run(`CREATE TABLE IF NOT EXISTS ${VECTOR_TABLE} (
        seq BIGINT PRIMARY KEY REFERENCES knowledge_chunks(seq) ON DELETE CASCADE,
        knowledge_base_id TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        chunk_updated_at TEXT NOT NULL,
        embedding vector NOT NULL)`);
      await tx.run(`CREATE INDEX IF NOT EXISTS ${VECTOR_TABLE}_by_base ON ${VECTOR_TABLE} (knowledge_base_id, seq)`);
      await tx.run(`CREATE TABLE IF NOT EXISTS ${SYNC_TABLE} (knowledge_base_id TEXT PRIMARY KEY, vector_version BIGINT NOT NULL)`);
    });
    const [major, minor] = version.split('.').map(Number);
    return new PgvectorStore(db, major! > 0 || minor! >= 8);
  }

  /** The HNSW index for vectors of `dimension` (created once per server and dimension; IF NOT EXISTS across servers). */
  private async indexDimension(tx: SqlExecutor, dimension: number): Promise<void> {
    if (this.indexedDimensions.has(dimension)) return;
    const d = Math.trunc(dimension);
    await tx.run(
      `CREATE INDEX IF NOT EXISTS ${VECTOR_TABLE}_hnsw_${d} ON ${VECTOR_TABLE} USING hnsw ((CAST(embedding AS vector(${d}))) vector_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE dimension = ${d}`,
    );
    this.indexedDimensions.add(dimension);
  }

  /** Brings the mirror of these bases up to date with their chunks (a no-op for a base unchanged since its last sync). */
  async sync(kbIds: readonly string[]): Promise<void> {
    for (const kbId of kbIds) {
      const state = await this.db.read.get<{ current: number; synced: number | null }>(
        `SELECT b.vector_version AS current, s.vector_version AS synced FROM knowledge_bases b LEFT JOIN ${SYNC_TABLE} s ON s.knowledge_base_id = b.id WHERE b.id = ?`,
        [kbId],
      );
      if (!state || Number(state.current) === (state.synced === null ? null : Number(state.synced))) continue;
      await this.db.transaction(async (tx) => {
        // Read again under the write lock: another server may have synced meanwhile.
        const version = Number((await tx.get<{ v: number }>('SELECT vector_version AS v FROM knowledge_bases WHERE id = ?', [kbId]))?.v ?? 0);
        const synced = await tx.get<{ v: number }>(`SELECT vector_version AS v FROM ${SYNC_TABLE} WHERE knowledge_base_id = ?`, [kbId]);
        if (synced && Number(synced.v) === version) return;
        for (;;) {
          const page = await tx.all<{ seq: number; updated_at: string; embedding: Uint8Array }>(
            `SELECT c.seq, c.updated_at, c.embedding FROM knowledge_chunks c LEFT JOIN ${VECTOR_TABLE} v ON v.seq = c.seq
             WHERE c.knowledge_base_id = ? AND c.embedding IS NOT NULL AND (v.seq IS NULL OR v.chunk_updated_at <> c.updated_at)
             ORDER BY c.seq ${limitClause(SYNC_PAGE)}`,
            [kbId],
          );
          if (page.length === 0) break;
          for (const r of page) {
            const dimension = r.embedding.byteLength / 4;
            await this.indexDimension(tx, dimension);
            await tx.run(
              `INSERT INTO ${VECTOR_TABLE} (seq, knowledge_base_id, dimension, chunk_updated_at, embedding) VALUES (?, ?, ?, ?, CAST(? AS vector))
               ON CONFLICT (seq) DO UPDATE SET dimension = excluded.dimension, chunk_updated_at = excluded.chunk_updated_at, embedding = excluded.embedding`,
              [r.seq, kbId, dimension, r.updated_at, vectorLiteral(vectorFromBytes(r.embedding))],
            );
          }
        }
        await tx.run(`INSERT INTO ${SYNC_TABLE} (knowledge_base_id, vector_version) VALUES (?, ?) ON CONFLICT (knowledge_base_id) DO UPDATE SET vector_version = excluded.vector_version`, [kbId, version]);
      });
    }
  }

  /**
   * The enabled chunks of these bases nearest to `query` (cosine similarity above `threshold`) whose document
   * `accept`s, best first, at most `limit`. The HNSW index answers; the filters apply to what it yields, so it is
   * asked for more rows until enough pass or none remain.
   */
  async nearest(kbIds: readonly string[], query: Float32Array, limit: number, threshold: number, accept: (documentId: string) => boolean): Promise<PgvectorMatch[]> {
    if (kbIds.length === 0 || limit <= 0) return [];
    await this.sync(kbIds);
    const d = Math.trunc(query.length);
    const q = vectorLiteral(query);
    const distance = `CAST(v.embedding AS vector(${d})) <=> CAST(? AS vector(${d}))`;
    for (let ask = Math.max(limit * 2, 40); ; ask *= 4) {
      const rows = await this.db.transaction(
        async (tx) => {
          // Without it an HNSW scan stops after ef_search candidates, however many the filters drop.
          if (this.iterativeScan) await tx.run("SET LOCAL hnsw.iterative_scan = 'strict_order'");
          return tx.all<{ seq: number; document_id: string; similarity: number }>(
            `SELECT v.seq, c.document_id, 1 - (${distance}) AS similarity
             FROM ${VECTOR_TABLE} v JOIN knowledge_chunks c ON c.seq = v.seq
             WHERE v.dimension = ${d} AND v.knowledge_base_id IN (${kbIds.map(() => '?').join(', ')}) AND c.enabled = 1
             ORDER BY ${distance} ${limitClause(ask)}`,
            [q, ...kbIds, q],
          );
        },
        { readOnly: true },
      );
      const out: PgvectorMatch[] = [];
      for (const r of rows) {
        const similarity = Number(r.similarity);
        if (similarity <= threshold) break;
        if (!accept(r.document_id)) continue;
        out.push({ seq: Number(r.seq), documentId: r.document_id, similarity });
        if (out.length === limit) return out;
      }
      // Fewer rows than asked: every candidate was seen. Or the last one fell below the threshold.
      if (rows.length < ask || (rows.length > 0 && Number(rows.at(-1)!.similarity) <= threshold)) return out;
    }
  }

  /** The cosine similarity of `query` to each of these chunks (those with a vector of its width). */
  async similarities(seqs: readonly number[], query: Float32Array): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    const d = Math.trunc(query.length);
    for (let i = 0; i < seqs.length; i += 500) {
      const part = seqs.slice(i, i + 500);
      const rows = await this.db.read.all<{ seq: number; similarity: number }>(
        `SELECT seq, 1 - (CAST(embedding AS vector(${d})) <=> CAST(? AS vector(${d}))) AS similarity FROM ${VECTOR_TABLE} WHERE dimension = ${d} AND seq IN (${part.map(() => '?').join(', ')})`,
        [vectorLiteral(query), ...part],
      );
      for (const r of rows) out.set(Number(r.seq), Number(r.similarity));
    }
    return out;
  }
}

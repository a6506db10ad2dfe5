// The seam between search and whatever holds a base's vectors: a query vector in, the best chunks with their
// cosine similarity out. The exact scan (exact.ts), the quantized index (quantized.ts) and a database's own
// vector search answer the same questions.
import type { KnowledgeChunkRepository, VectorRow } from '../../store/knowledge-chunks.ts';

/** A chunk the vector leg ranked: its `seq`, its document and its cosine similarity to the query. */
export interface VectorHit {
  seq: number;
  documentId: string;
  similarity: number;
}

export interface VectorQuery {
  /** Only chunks whose similarity is above this count. */
  threshold: number;
  /** Only chunks of documents this accepts count (disabled chunks never do). */
  accept: (documentId: string) => boolean;
}

export interface VectorIndex {
  readonly dimension: number;
  /** Chunks the index holds. */
  readonly size: number;
  /** The best `limit` chunks for a unit query vector, best first. */
  search(query: Float32Array, limit: number, q: VectorQuery): Promise<VectorHit[]>;
  /** The exact similarity of these chunks to the query (chunks the index does not hold are left out). */
  similarities(query: Float32Array, seqs: readonly number[]): Promise<Map<number, number>>;
}

/** What an index reads from the store. */
export type VectorSource = Pick<
  KnowledgeChunkRepository,
  'vectorVersion' | 'vectorShape' | 'chunkCount' | 'vectors' | 'vectorsChangedAfter' | 'removedAfter' | 'vectorSeqs' | 'embeddingsOf'
>;

/** A stored vector blob as floats (a view when aligned, else a copy); null when it is not `dimension` wide. */
export function floatsOf(blob: Uint8Array | null, dimension: number): Float32Array | null {
  if (!blob || blob.byteLength !== dimension * 4) return null;
  if (blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, dimension);
  return new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + dimension * 4));
}

/** A stored chunk's vector as an index files it: floats, or null when the blob is not `dimension` wide. */
export interface StoredVector {
  seq: number;
  documentId: string;
  enabled: boolean;
  vector: Float32Array | null;
}

/** Every row a `seq`-paged read returns (`readPage(afterSeq)`, an empty page ends it), in `seq` order. */
export async function* pagedVectors(readPage: (afterSeq: number) => Promise<VectorRow[]>, dimension: number): AsyncGenerator<StoredVector> {
  let after = 0;
  for (;;) {
    const page = await readPage(after);
    if (page.length === 0) return;
    for (const r of page) {
      after = Number(r.seq);
      yield { seq: after, documentId: r.document_id, enabled: Number(r.enabled) === 1, vector: floatsOf(r.embedding, dimension) };
    }
  }
}

// The exact vector index: every vector of the base at full precision in memory, every query a scan of all of
// them. Right for small bases (the scan of 20,000 vectors takes a few ms) and the reference the quantized index
// is measured against; a change reloads it whole.
import { dot } from '../embeddings.ts';
import { pagedVectors, type VectorHit, type VectorIndex, type VectorQuery, type VectorSource } from './types.ts';

export class ExactIndex implements VectorIndex {
  readonly dimension: number;
  readonly rows: number;
  private readonly seqs: Float64Array;
  private readonly docOf: Int32Array;
  private readonly docIds: string[];
  private readonly enabled: Uint8Array;
  private readonly vectors: Float32Array;
  private positions?: Map<number, number>;

  get size(): number {
    return this.rows;
  }

  private constructor(p: { dimension: number; rows: number; seqs: Float64Array; docOf: Int32Array; docIds: string[]; enabled: Uint8Array; vectors: Float32Array }) {
    this.dimension = p.dimension;
    this.rows = p.rows;
    this.seqs = p.seqs;
    this.docOf = p.docOf;
    this.docIds = p.docIds;
    this.enabled = p.enabled;
    this.vectors = p.vectors;
  }

  /** Reads the base's vectors page by page (by `seq`) straight into typed arrays. */
  static async load(source: VectorSource, knowledgeBaseId: string): Promise<ExactIndex> {
    const { rows: total, dimension } = await source.vectorShape(knowledgeBaseId);
    const seqs = new Float64Array(total);
    const docOf = new Int32Array(total);
    const enabled = new Uint8Array(total);
    const vectors = new Float32Array(total * dimension);
    const docIds: string[] = [];
    const docIndex = new Map<string, number>();
    let n = 0;
    for await (const r of pagedVectors((after) => source.vectors(knowledgeBaseId, after, 5000), dimension)) {
      if (n >= total || !r.vector) continue;
      let d = docIndex.get(r.documentId);
      if (d === undefined) {
        d = docIds.length;
        docIds.push(r.documentId);
        docIndex.set(r.documentId, d);
      }
      seqs[n] = r.seq;
      docOf[n] = d;
      enabled[n] = r.enabled ? 1 : 0;
      vectors.set(r.vector, n * dimension);
      n++;
    }
    return new ExactIndex({ dimension, rows: n, seqs, docOf, docIds, enabled, vectors });
  }

  async search(query: Float32Array, limit: number, q: VectorQuery): Promise<VectorHit[]> {
    if (query.length !== this.dimension || limit <= 0) return [];
    const { vectors, enabled, docOf, dimension, rows } = this;
    const allowed = new Uint8Array(this.docIds.length);
    this.docIds.forEach((id, d) => (allowed[d] = q.accept(id) ? 1 : 0));
    // Best `limit` rows so far, worst last; a row must beat the worst to get in.
    const scores: number[] = [];
    const found: number[] = [];
    let floor = q.threshold;
    for (let i = 0; i < rows; i++) {
      if (!enabled[i] || !allowed[docOf[i]!]) continue;
      let sim = 0;
      const base = i * dimension;
      for (let k = 0; k < dimension; k++) sim += query[k]! * vectors[base + k]!;
      if (sim <= floor) continue;
      let at = scores.length;
      while (at > 0 && scores[at - 1]! < sim) at--;
      scores.splice(at, 0, sim);
      found.splice(at, 0, i);
      if (scores.length > limit) {
        scores.pop();
        found.pop();
      }
      if (scores.length === limit) floor = Math.max(q.threshold, scores[limit - 1]!);
    }
    return found.map((row, rank) => ({ seq: this.seqs[row]!, documentId: this.docIds[this.docOf[row]!]!, similarity: scores[rank]! }));
  }

  async similarities(query: Float32Array, seqs: readonly number[]): Promise<Map<number, number>> {
    this.positions ??= new Map(Array.from(this.seqs.subarray(0, this.rows), (s, i) => [s, i]));
    const out = new Map<number, number>();
    if (query.length !== this.dimension) return out;
    for (const seq of seqs) {
      const pos = this.positions.get(seq);
      if (pos !== undefined) out.set(seq, dot(query, this.vectors, pos * this.dimension));
    }
    return out;
  }
}

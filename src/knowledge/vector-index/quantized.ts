// The quantized vector index of a large base: an inverted file over int8 codes.
//
// Each vector is kept as one signed byte per dimension (scaled by its largest component; a quarter of its float32
// size) in the list of its nearest centroid. The centroids come from a two-level spherical k-means on a sample
// (coarse centroids, then fine ones inside each coarse cluster), so training and assigning a vector cost about
// 2·√lists dot products instead of one per list. A query ranks the lists by their centroid, scans the codes of
// the best few lists with integer dot products, and re-scores the best candidates with their full-precision
// vectors read from the database, which is also what keeps answers consistent with the chunks table: a candidate
// whose chunk is gone is dropped.
//
// Rows are only appended; a removed chunk's row is marked dead and dropped when the index is next written.
// The index knows the base's vector version it reflects (`watermark`); see ./index.ts for how it catches up and
// persists.
import fs from 'node:fs';
import type { VectorHit, VectorIndex, VectorQuery, VectorSource } from './types.ts';
import { floatsOf, pagedVectors } from './types.ts';
import { seededRandom } from './seeded-random.ts';

const BLOCK_BITS = 12;
/** Codes live in blocks of this many rows, so growing never copies gigabytes. */
const BLOCK_ROWS = 1 << BLOCK_BITS;
const BLOCK_MASK = BLOCK_ROWS - 1;

/** Row flags: searchable only when all three are set. */
const LIVE = 1;
const ENABLED = 2;
const HAS_VECTOR = 4;
const SEARCHABLE = LIVE | ENABLED | HAS_VECTOR;

/** Query components are scaled to this integer range, so a code dot product stays inside 32-bit integers. */
const QUERY_RANGE = 1023;

export interface QuantizedOptions {
  /** Share of the lists a query scans (at least `minProbes` lists and `minScan` vectors). */
  probeFraction: number;
  minProbes: number;
  minScan: number;
  /** Candidates re-scored at full precision (at least twice the requested count). */
  rescore: number;
}

export const DEFAULT_QUANTIZED_OPTIONS: QuantizedOptions = { probeFraction: 0.03, minProbes: 8, minScan: 4096, rescore: 100 };

/** Lists for a base of `rows` vectors: about 2·√rows, so a list holds about √rows / 2 vectors. */
export const listsFor = (rows: number) => Math.max(1, Math.min(8192, Math.round(2 * Math.sqrt(rows))));

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class QuantizedIndex implements VectorIndex {
  readonly dimension: number;
  /** Codes per row, the dimension rounded up to a multiple of 4 (zeros), for the unrolled dot product. */
  readonly stride: number;
  options: QuantizedOptions;
  /** The base's vector version this index reflects. */
  watermark = 0;
  /** Live rows when the centroids were trained; far more rows than that calls for a rebuild. */
  trainedOn = 0;
  /** Rows changed since the index was last written. */
  unsaved = 0;

  private rows = 0;
  private live = 0;
  private seqs = new Float64Array(0);
  private scales = new Float32Array(0);
  private docOf = new Int32Array(0);
  private listOf = new Int32Array(0);
  private flags = new Uint8Array(0);
  private blocks: Int8Array[] = [];
  private docIds: string[] = [];
  private docIndex = new Map<string, number>();
  /** Rows are in `seq` order (so a `seq` is found by binary search) until one arrives out of order. */
  private ordered = true;
  private rowOfSeq: Map<number, number> | null = null;

  private nlist = 0;
  private k1 = 0;
  private coarse: Float32Array = new Float32Array(0);
  private centroids: Float32Array = new Float32Array(0);
  private parent: Int32Array = new Int32Array(0);
  private finesOf: Int32Array[] = [];
  private lists: Int32Array[] = [];
  private listLength = new Int32Array(0);

  constructor(dimension: number, options: QuantizedOptions = DEFAULT_QUANTIZED_OPTIONS) {
    this.dimension = dimension;
    this.stride = Math.ceil(dimension / 4) * 4;
    this.options = options;
  }

  get size(): number {
    return this.live;
  }

  get trained(): boolean {
    return this.nlist > 0;
  }

  // ── building

  /** Reads every vector of the base, trains the centroids on a sample and files every row in its list. */
  static async build(source: VectorSource, knowledgeBaseId: string, options: QuantizedOptions = DEFAULT_QUANTIZED_OPTIONS): Promise<QuantizedIndex> {
    const version = await source.vectorVersion(knowledgeBaseId);
    const { dimension } = await source.vectorShape(knowledgeBaseId);
    const total = await source.chunkCount(knowledgeBaseId);
    const index = new QuantizedIndex(dimension, options);
    index.source = source;
    index.watermark = version;
    index.grow(total);
    const nlist = listsFor(total);
    const sampleSize = Math.min(total, Math.max(nlist * 16, 2000));
    const every = Math.max(1, Math.floor(total / Math.max(1, sampleSize)));
    const sample = new Float32Array(sampleSize * dimension);
    let sampled = 0;
    let i = 0;
    for await (const r of pagedVectors((after) => source.vectors(knowledgeBaseId, after, 2000), dimension)) {
      index.append(r.seq, r.documentId, r.enabled, r.vector);
      if (r.vector && i++ % every === 0 && sampled < sampleSize) sample.set(r.vector, sampled++ * dimension);
    }
    await index.train(sample.subarray(0, sampled * dimension), sampled, listsFor(index.live));
    for (let row = 0; row < index.rows; row++) {
      index.file(row);
      if (row % 4096 === 4095) await yieldToEventLoop();
    }
    index.unsaved = index.live;
    return index;
  }

  /** Two-level spherical k-means: `√lists` coarse centroids, then up to as many fine ones inside each. */
  private async train(sample: Float32Array, n: number, lists: number): Promise<void> {
    const dim = this.dimension;
    if (n === 0) return;
    const random = seededRandom(0x5eed);
    const k1 = Math.max(1, Math.min(n, Math.ceil(Math.sqrt(lists))));
    const k2 = Math.max(1, Math.ceil(lists / k1));
    const coarse = await kmeans(sample, n, dim, k1, 6, random);
    const members: number[][] = Array.from({ length: k1 }, () => []);
    for (let i = 0; i < n; i++) members[nearest(coarse, k1, dim, sample, i * dim)]!.push(i);
    const fine: Float32Array[] = [];
    const parent: number[] = [];
    for (let c = 0; c < k1; c++) {
      const m = members[c]!;
      if (m.length === 0) continue;
      const sub = new Float32Array(m.length * dim);
      m.forEach((row, j) => sub.set(sample.subarray(row * dim, row * dim + dim), j * dim));
      const cents = await kmeans(sub, m.length, dim, Math.min(k2, m.length), 6, random);
      for (let j = 0; j < cents.length / dim; j++) {
        fine.push(cents.subarray(j * dim, j * dim + dim));
        parent.push(c);
      }
    }
    this.setCentroids(coarse, k1, fine.length, (j) => fine[j]!, Int32Array.from(parent));
    this.trainedOn = this.live;
  }

  private setCentroids(coarse: Float32Array, k1: number, nlist: number, fine: (j: number) => Float32Array, parent: Int32Array): void {
    const dim = this.dimension;
    this.k1 = k1;
    this.coarse = coarse;
    this.nlist = nlist;
    this.centroids = new Float32Array(nlist * dim);
    for (let j = 0; j < nlist; j++) this.centroids.set(fine(j), j * dim);
    this.parent = parent;
    const counts = new Int32Array(k1);
    for (const p of parent) counts[p]!++;
    this.finesOf = Array.from(counts, (n) => new Int32Array(n));
    counts.fill(0);
    parent.forEach((p, j) => (this.finesOf[p]![counts[p]!++] = j));
    this.lists = Array.from({ length: nlist }, () => new Int32Array(16));
    this.listLength = new Int32Array(nlist);
  }

  // ── rows

  private grow(rows: number): void {
    if (rows <= this.seqs.length) return;
    const cap = Math.max(rows, Math.ceil(this.seqs.length * 1.5), 1024);
    const widen = <T extends Float64Array | Float32Array | Int32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a as never);
      return b;
    };
    this.seqs = widen(this.seqs, (n) => new Float64Array(n));
    this.scales = widen(this.scales, (n) => new Float32Array(n));
    this.docOf = widen(this.docOf, (n) => new Int32Array(n));
    this.listOf = widen(this.listOf, (n) => new Int32Array(n).fill(-1));
    this.listOf.fill(-1, this.rows);
    this.flags = widen(this.flags, (n) => new Uint8Array(n));
  }

  /** Allocates code blocks for `rows` rows (only what is used: the codes are the bulk of the memory). */
  private reserveCodes(rows: number): void {
    while (this.blocks.length * BLOCK_ROWS < rows) this.blocks.push(new Int8Array(BLOCK_ROWS * this.stride));
  }

  private docNumber(documentId: string): number {
    let d = this.docIndex.get(documentId);
    if (d === undefined) {
      d = this.docIds.length;
      this.docIds.push(documentId);
      this.docIndex.set(documentId, d);
    }
    return d;
  }

  /** Writes a vector's codes into a row (zeros without a vector). */
  private encode(row: number, v: Float32Array | null): void {
    const block = this.blocks[row >> BLOCK_BITS]!;
    const at = (row & BLOCK_MASK) * this.stride;
    block.fill(0, at, at + this.stride);
    if (!v) {
      this.scales[row] = 0;
      return;
    }
    let max = 0;
    for (let k = 0; k < v.length; k++) max = Math.max(max, Math.abs(v[k]!));
    const scale = max / 127;
    this.scales[row] = scale;
    if (scale === 0) return;
    for (let k = 0; k < v.length; k++) block[at + k] = Math.round(v[k]! / scale);
  }

  private append(seq: number, documentId: string, enabled: boolean, v: Float32Array | null): number {
    const row = this.rows;
    this.grow(row + 1);
    this.reserveCodes(row + 1);
    if (row > 0 && seq < this.seqs[row - 1]!) this.ordered = false;
    this.rows++;
    this.live++;
    this.seqs[row] = seq;
    this.docOf[row] = this.docNumber(documentId);
    this.flags[row] = LIVE | (enabled ? ENABLED : 0) | (v ? HAS_VECTOR : 0);
    this.listOf[row] = -1;
    this.encode(row, v);
    this.rowOfSeq?.set(seq, row);
    return row;
  }

  /** The row of a live chunk, or -1. */
  private rowOf(seq: number): number {
    let row = -1;
    if (this.ordered) {
      let lo = 0;
      let hi = this.rows - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const s = this.seqs[mid]!;
        if (s === seq) {
          row = mid;
          break;
        }
        if (s < seq) lo = mid + 1;
        else hi = mid - 1;
      }
    } else {
      if (!this.rowOfSeq) {
        this.rowOfSeq = new Map();
        for (let r = 0; r < this.rows; r++) if (this.flags[r]! & LIVE) this.rowOfSeq.set(this.seqs[r]!, r);
      }
      row = this.rowOfSeq.get(seq) ?? -1;
    }
    return row >= 0 && this.flags[row]! & LIVE ? row : -1;
  }

  /** Puts a row in the list of its nearest centroid. */
  private file(row: number): void {
    if (this.nlist === 0 || !(this.flags[row]! & HAS_VECTOR)) return;
    const block = this.blocks[row >> BLOCK_BITS]!;
    const at = (row & BLOCK_MASK) * this.stride;
    const c = nearest(this.coarse, this.k1, this.dimension, block, at);
    let best = -1;
    let bestScore = -Infinity;
    for (const j of this.finesOf[c]!) {
      const s = dotAt(this.centroids, j * this.dimension, block, at, this.dimension);
      if (s > bestScore) {
        bestScore = s;
        best = j;
      }
    }
    if (best < 0) best = 0;
    if (this.listOf[row] === best) return;
    this.listOf[row] = best;
    let list = this.lists[best]!;
    const n = this.listLength[best]!;
    if (n === list.length) {
      const bigger = new Int32Array(Math.max(16, n * 2));
      bigger.set(list);
      this.lists[best] = list = bigger;
    }
    list[n] = row;
    this.listLength[best] = n + 1;
  }

  /** Adds a chunk, or replaces the vector and state of one the index holds. */
  upsert(seq: number, documentId: string, enabled: boolean, v: Float32Array | null): void {
    const row = this.rowOf(seq);
    this.unsaved++;
    if (row < 0) {
      this.file(this.append(seq, documentId, enabled, v));
      return;
    }
    this.docOf[row] = this.docNumber(documentId);
    this.flags[row] = LIVE | (enabled ? ENABLED : 0) | (v ? HAS_VECTOR : 0);
    this.encode(row, v);
    // A row filed in another list before stays listed there too; scans skip entries whose row moved on.
    this.file(row);
  }

  remove(seq: number): boolean {
    const row = this.rowOf(seq);
    if (row < 0) return false;
    this.flags[row] = 0;
    this.live--;
    this.unsaved++;
    this.rowOfSeq?.delete(seq);
    return true;
  }

  /** The `seq` of every live row (reconciling against the chunks table). */
  liveSeqs(): number[] {
    const out: number[] = [];
    for (let r = 0; r < this.rows; r++) if (this.flags[r]! & LIVE) out.push(this.seqs[r]!);
    return out;
  }

  // ── searching

  async search(query: Float32Array, limit: number, q: VectorQuery): Promise<VectorHit[]> {
    const candidates = this.candidates(query, Math.max(limit * 2, this.options.rescore), q.accept);
    if (!this.source || candidates.length === 0) return [];
    const exact = await exactSimilarities(this.source, query, candidates.map((r) => this.seqs[r]!));
    const hits: VectorHit[] = [];
    for (const row of candidates) {
      const sim = exact.get(this.seqs[row]!);
      if (sim !== undefined && sim > q.threshold && this.flags[row] === SEARCHABLE) hits.push({ seq: this.seqs[row]!, documentId: this.docIds[this.docOf[row]!]!, similarity: sim });
    }
    return hits.sort((a, b) => b.similarity - a.similarity || a.seq - b.seq).slice(0, limit);
  }

  /** Rows of the best approximate matches among the probed lists, at most `count`. */
  candidates(query: Float32Array, count: number, accept: (documentId: string) => boolean): number[] {
    const dim = this.dimension;
    if (query.length !== dim || this.nlist === 0 || count <= 0) return [];
    const allowed = new Uint8Array(this.docIds.length);
    this.docIds.forEach((id, d) => (allowed[d] = accept(id) ? 1 : 0));
    // Lists by their centroid's similarity to the query.
    const order = new Int32Array(this.nlist);
    const listScore = new Float64Array(this.nlist);
    for (let j = 0; j < this.nlist; j++) {
      order[j] = j;
      listScore[j] = dotAt(this.centroids, j * dim, query, 0, dim);
    }
    order.sort((a, b) => listScore[b]! - listScore[a]!);
    const probes = Math.min(this.nlist, Math.max(this.options.minProbes, Math.ceil(this.nlist * this.options.probeFraction)));
    const { minScan } = this.options;
    // The query in integers (its scale does not change the ranking).
    let max = 0;
    for (let k = 0; k < dim; k++) max = Math.max(max, Math.abs(query[k]!));
    const qi = new Int32Array(this.stride);
    if (max > 0) for (let k = 0; k < dim; k++) qi[k] = Math.round((query[k]! / max) * QUERY_RANGE);
    const heap = new TopK(count);
    const { stride, flags, docOf, scales, blocks, listOf } = this;
    let scanned = 0;
    for (let p = 0; p < this.nlist && (p < probes || scanned < minScan); p++) {
      const j = order[p]!;
      const list = this.lists[j]!;
      const n = this.listLength[j]!;
      scanned += n;
      for (let e = 0; e < n; e++) {
        const row = list[e]!;
        if (flags[row] !== SEARCHABLE || listOf[row] !== j || !allowed[docOf[row]!]) continue;
        const block = blocks[row >> BLOCK_BITS]!;
        const at = (row & BLOCK_MASK) * stride;
        let s = 0;
        for (let k = 0; k < stride; k += 4) {
          s = (s + qi[k]! * block[at + k]! + qi[k + 1]! * block[at + k + 1]! + qi[k + 2]! * block[at + k + 2]! + qi[k + 3]! * block[at + k + 3]!) | 0;
        }
        heap.offer(s * scales[row]!, row);
      }
    }
    return heap.rows();
  }

  /** Set by the holder (./index.ts): where `similarities` and `search` read full-precision vectors. */
  source: VectorSource | null = null;

  async similarities(query: Float32Array, seqs: readonly number[]): Promise<Map<number, number>> {
    if (!this.source || query.length !== this.dimension) return new Map();
    const held = seqs.filter((s) => this.rowOf(s) >= 0);
    return exactSimilarities(this.source, query, held);
  }

  // ── persistence

  /**
   * Writes the live rows (compacted), the centroids and the watermark to `file`, through a temporary file and a
   * rename, so a crash leaves either the old file or the new one.
   */
  async save(file: string): Promise<void> {
    const dim = this.dimension;
    const liveRows: number[] = [];
    for (let r = 0; r < this.rows; r++) if (this.flags[r]! & LIVE) liveRows.push(r);
    const n = liveRows.length;
    const header = Buffer.from(
      JSON.stringify({ format: 1, dimension: dim, stride: this.stride, watermark: this.watermark, trainedOn: this.trainedOn, rows: n, nlist: this.nlist, k1: this.k1, docIds: this.docIds }),
    );
    const tmp = `${file}.${process.pid}.tmp`;
    const fh = await fs.promises.open(tmp, 'w');
    try {
      const pre = Buffer.alloc(16);
      pre.write(MAGIC, 0, 'latin1');
      pre.writeUInt32LE(header.length, 8);
      await fh.write(pre);
      await fh.write(header);
      await fh.write(Buffer.alloc(pad8(header.length) - header.length));
      const pick = <T extends Float64Array | Float32Array | Int32Array | Uint8Array>(src: T, make: (n: number) => T): T => {
        const out = make(n);
        liveRows.forEach((r, i) => (out[i] = src[r]!));
        return out;
      };
      const sections: ArrayBufferView[] = [
        pick(this.seqs, (k) => new Float64Array(k)),
        pick(this.scales, (k) => new Float32Array(k)),
        pick(this.docOf, (k) => new Int32Array(k)),
        pick(this.listOf, (k) => new Int32Array(k)),
        pick(this.flags, (k) => new Uint8Array(k)),
        this.coarse,
        this.centroids,
        this.parent,
      ];
      for (const s of sections) {
        await fh.write(new Uint8Array(s.buffer, s.byteOffset, s.byteLength));
        await fh.write(Buffer.alloc(pad8(s.byteLength) - s.byteLength));
      }
      const out = Buffer.alloc(Math.min(n, 4096) * this.stride);
      for (let i = 0; i < n; i += 4096) {
        const m = Math.min(4096, n - i);
        for (let j = 0; j < m; j++) {
          const r = liveRows[i + j]!;
          const block = this.blocks[r >> BLOCK_BITS]!;
          const at = (r & BLOCK_MASK) * this.stride;
          out.set(new Uint8Array(block.buffer, block.byteOffset + at, this.stride), j * this.stride);
        }
        await fh.write(out, 0, m * this.stride);
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.promises.rename(tmp, file);
    this.unsaved = 0;
  }

  /** Reads an index written by `save`; null when the file is missing, of another shape or damaged. */
  static async load(file: string, source: VectorSource, dimension: number, options: QuantizedOptions = DEFAULT_QUANTIZED_OPTIONS): Promise<QuantizedIndex | null> {
    let fh: fs.promises.FileHandle;
    try {
      fh = await fs.promises.open(file, 'r');
    } catch {
      return null;
    }
    try {
      const size = (await fh.stat()).size;
      let pos = 0;
      const read = async (target: ArrayBufferView) => {
        const bytes = new Uint8Array(target.buffer, target.byteOffset, target.byteLength);
        let done = 0;
        while (done < bytes.length) {
          const { bytesRead } = await fh.read(bytes, done, Math.min(bytes.length - done, 1 << 26), pos + done);
          if (bytesRead === 0) throw new Error('truncated');
          done += bytesRead;
        }
        pos += pad8(bytes.length);
      };
      const pre = Buffer.alloc(16);
      await read(pre);
      if (pre.toString('latin1', 0, 8) !== MAGIC) return null;
      const header = Buffer.alloc(pre.readUInt32LE(8));
      await read(header);
      const h = JSON.parse(header.toString('utf8')) as { format: number; dimension: number; stride: number; watermark: number; trainedOn: number; rows: number; nlist: number; k1: number; docIds: string[] };
      const index = new QuantizedIndex(dimension, options);
      index.source = source;
      if (h.format !== 1 || h.dimension !== dimension || h.stride !== index.stride) return null;
      const n = h.rows;
      const expected = pos + pad8(n * 8) + pad8(n * 4) * 3 + pad8(n) + pad8(h.k1 * dimension * 4) + pad8(h.nlist * dimension * 4) + pad8(h.nlist * 4) + n * index.stride;
      if (expected !== size) return null;
      index.grow(n);
      index.reserveCodes(n);
      await read(index.seqs.subarray(0, n));
      await read(index.scales.subarray(0, n));
      await read(index.docOf.subarray(0, n));
      const listOf = new Int32Array(n);
      await read(listOf);
      await read(index.flags.subarray(0, n));
      const coarse = new Float32Array(h.k1 * dimension);
      await read(coarse);
      const centroids = new Float32Array(h.nlist * dimension);
      await read(centroids);
      const parent = new Int32Array(h.nlist);
      await read(parent);
      for (let i = 0; i < n; i += BLOCK_ROWS) {
        const block = index.blocks[i >> BLOCK_BITS]!;
        await read(block.subarray(0, Math.min(BLOCK_ROWS, n - i) * index.stride));
      }
      index.rows = n;
      index.live = n;
      index.docIds = h.docIds;
      index.docIndex = new Map(h.docIds.map((id, d) => [id, d]));
      for (let r = 1; r < n; r++) if (index.seqs[r]! < index.seqs[r - 1]!) index.ordered = false;
      index.watermark = h.watermark;
      index.trainedOn = h.trainedOn;
      if (h.nlist > 0) {
        index.setCentroids(coarse, h.k1, h.nlist, (j) => centroids.subarray(j * dimension, j * dimension + dimension), parent);
        // Lists rebuilt from each row's list number: count, then place.
        const counts = new Int32Array(h.nlist);
        for (let r = 0; r < n; r++) if (listOf[r]! >= 0) counts[listOf[r]!]!++;
        index.lists = Array.from(counts, (c) => new Int32Array(Math.max(16, c)));
        for (let r = 0; r < n; r++) {
          const j = listOf[r]!;
          if (j < 0) continue;
          index.lists[j]![index.listLength[j]!++] = r;
          index.listOf[r] = j;
        }
      }
      return index;
    } catch {
      return null;
    } finally {
      await fh.close();
    }
  }
}

const MAGIC = 'OWAVIX01';
const pad8 = (n: number) => Math.ceil(n / 8) * 8;

/** Exact similarities from the stored full-precision vectors; chunks no longer stored are left out. */
export async function exactSimilarities(source: VectorSource, query: Float32Array, seqs: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (seqs.length === 0) return out;
  for (const r of await source.embeddingsOf(seqs)) {
    const v = floatsOf(r.embedding, query.length);
    if (v) out.set(r.seq, dotAt(v, 0, query, 0, query.length));
  }
  return out;
}

/** Dot product of `a` (floats) at `ao` with `b` (floats or codes) at `bo`, over `n` components. */
function dotAt(a: Float32Array, ao: number, b: Float32Array | Int8Array, bo: number, n: number): number {
  let s = 0;
  for (let k = 0; k < n; k++) s += a[ao + k]! * b[bo + k]!;
  return s;
}

/** The centroid (of `k`) most similar to the vector at `b[bo]`. */
function nearest(centroids: Float32Array, k: number, dim: number, b: Float32Array | Int8Array, bo: number): number {
  let best = 0;
  let bestScore = -Infinity;
  for (let c = 0; c < k; c++) {
    const s = dotAt(centroids, c * dim, b, bo, dim);
    if (s > bestScore) {
      bestScore = s;
      best = c;
    }
  }
  return best;
}

/** Spherical k-means of `n` vectors: `k` unit centroids after `iterations` rounds (an empty cluster takes a random vector). */
async function kmeans(data: Float32Array, n: number, dim: number, k: number, iterations: number, random: () => number): Promise<Float32Array> {
  const cents = new Float32Array(k * dim);
  const picks = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(random() * (n - i));
    [picks[i], picks[j]] = [picks[j]!, picks[i]!];
    cents.set(data.subarray(picks[i]! * dim, picks[i]! * dim + dim), i * dim);
  }
  const assign = new Int32Array(n);
  const sums = new Float64Array(k * dim);
  const counts = new Int32Array(k);
  for (let it = 0; it < iterations; it++) {
    for (let i = 0; i < n; i++) assign[i] = nearest(cents, k, dim, data, i * dim);
    sums.fill(0);
    counts.fill(0);
    for (let i = 0; i < n; i++) {
      const c = assign[i]!;
      counts[c]!++;
      for (let d = 0; d < dim; d++) sums[c * dim + d]! += data[i * dim + d]!;
    }
    for (let c = 0; c < k; c++) {
      if (counts[c] === 0) {
        const r = Math.floor(random() * n);
        cents.set(data.subarray(r * dim, r * dim + dim), c * dim);
        continue;
      }
      let norm = 0;
      for (let d = 0; d < dim; d++) norm += sums[c * dim + d]! ** 2;
      norm = Math.sqrt(norm) || 1;
      for (let d = 0; d < dim; d++) cents[c * dim + d] = sums[c * dim + d]! / norm;
    }
    await yieldToEventLoop();
  }
  return cents;
}

/** The `k` highest scores offered (a min-heap: the weakest kept is at the top). */
class TopK {
  private readonly scores: Float64Array;
  private readonly ids: Int32Array;
  private n = 0;
  private readonly k: number;
  constructor(k: number) {
    this.k = k;
    this.scores = new Float64Array(k);
    this.ids = new Int32Array(k);
  }

  offer(score: number, id: number): void {
    const { scores, ids } = this;
    if (this.n < this.k) {
      let i = this.n++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (scores[p]! <= score) break;
        scores[i] = scores[p]!;
        ids[i] = ids[p]!;
        i = p;
      }
      scores[i] = score;
      ids[i] = id;
      return;
    }
    if (score <= scores[0]!) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.n) break;
      const c = l + 1 < this.n && scores[l + 1]! < scores[l]! ? l + 1 : l;
      if (scores[c]! >= score) break;
      scores[i] = scores[c]!;
      ids[i] = ids[c]!;
      i = c;
    }
    scores[i] = score;
    ids[i] = id;
  }

  rows(): number[] {
    return Array.from(this.ids.subarray(0, this.n));
  }
}

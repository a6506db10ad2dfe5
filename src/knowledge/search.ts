// Search over knowledge bases. The vector leg scans the bases' in-memory vectors (cosine of unit vectors), or
// asks pgvector's HNSW index where the Postgres server has it;
// the lexical leg is SQLite FTS5 ranked by BM25, queried with web-search syntax (quoted phrases are required,
// `-word` excludes, other words are alternatives); hybrid fuses both rankings by reciprocal rank fusion
// (k = 60). Only enabled chunks of enabled, completed documents that pass the tag filters take part.
import type { TextQuery } from '../store/dialect.ts';
import type { Store } from '../store/index.ts';
import type { KnowledgeBaseRecord, TagDefinitionRecord } from '../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord } from '../store/knowledge-documents.ts';
import type { KnowledgeService, VectorIndex } from './service.ts';
import { dot } from './embeddings.ts';
import { tagValuesByName, type ResolvedFilter } from './tags.ts';

export const RRF_K = 60;

export interface SearchRequest {
  bases: KnowledgeBaseRecord[];
  query: string | null;
  topK: number;
  filters: ResolvedFilter[];
  mode: 'vector' | 'hybrid' | 'fulltext';
  defs: Map<string, TagDefinitionRecord[]>;
}

export interface SearchHit {
  knowledgeBaseId: string;
  documentId: string;
  documentName: string | null;
  sourceUrl: string | null;
  content: string;
  chunkIndex: number;
  metadata: Record<string, unknown>;
  similarity: number;
  rankScore: number;
  rank: number;
  rerankerScore?: number;
}

interface Candidate {
  seq: number;
  kbId: string;
  docId: string;
  similarity: number | null;
  vectorRank: number | null;
  lexicalRank: number | null;
  score: number;
}

const STOP_WORDS = new Set(
  'a an and are as at be but by for from has have how i if in into is it its of on or that the their then there these they this to was were what when where which who why will with you your do does did can could should would'.split(' '),
);

/**
 * Web-search syntax (words, "quoted phrases", -negation) to a text query: quoted phrases are required, other
 * words optional (stop words dropped unless nothing else remains); null when nothing searchable remains.
 */
export function parseTextQuery(query: string): TextQuery | null {
  const words = (s: string) => [...s.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0]);
  const required: string[][] = [];
  const excluded: string[][] = [];
  const optional: string[][] = [];
  for (const m of query.matchAll(/(-?)"([^"]*)"|(-?)(\S+)/g)) {
    const quoted = m[2] !== undefined;
    const w = words(quoted ? m[2]! : m[4]!);
    if (w.length === 0) continue;
    if (quoted ? m[1] : m[3]) excluded.push(w);
    else (quoted ? required : optional).push(w);
  }
  const useful = optional.filter((w) => w.length > 1 || !STOP_WORDS.has(w[0]!));
  const seen = new Set<string>();
  const terms = (useful.length ? useful : optional).filter((w) => !seen.has(w.join(' ')) && seen.add(w.join(' ')));
  if (required.length === 0 && terms.length === 0) return null;
  return { required, optional: terms, excluded };
}

function positionOf(index: VectorIndex, seq: number): number {
  index.positions ??= new Map(Array.from(index.seqs.subarray(0, index.rows), (s, i) => [s, i]));
  return index.positions.get(seq) ?? -1;
}

export async function runSearch(store: Store, knowledge: KnowledgeService, req: SearchRequest): Promise<{ hits: SearchHit[]; lexicalFailed: boolean }> {
  const kbIds = req.bases.map((b) => b.id);
  // Which documents may answer (ids and bases only); full records are read for the results alone.
  const docs = new Map((await store.knowledgeDocuments.searchableIds(kbIds, req.filters)).map((d) => [d.id, d.knowledgeBaseId]));
  const candidates = new Map<number, Candidate>();
  const legLimit = Math.min(200, Math.max(req.topK * 3, 50));
  let lexicalFailed = false;
  // On a Postgres with pgvector the vector leg runs in SQL (src/store/knowledge-pgvector.ts); else in memory.
  const sqlVectors = store.pgvector;
  const indexes = new Map<string, VectorIndex>();
  if (!sqlVectors) for (const id of kbIds) indexes.set(id, await knowledge.index(id));

  if (req.query === null) {
    // Tag-only: every matching chunk counts as a perfect match, in document and chunk order.
    const rows = await store.knowledgeChunks.ofDocuments([...docs.keys()], req.topK);
    rows.forEach((c, i) => candidates.set(c.seq, { seq: c.seq, kbId: c.knowledgeBaseId, docId: c.documentId, similarity: 1, vectorRank: i + 1, lexicalRank: null, score: 1 }));
  } else {
    let qv: Float32Array | null = null;
    if (req.mode !== 'fulltext') {
      qv = await knowledge.embedOne(req.query);
      // Cosine distance below 1 (0.8 when more than three bases are searched), as the platform does.
      const threshold = req.bases.length > 3 ? 0.2 : 0;
      const limit = req.mode === 'vector' ? req.topK : legLimit;
      // Best `limit` rows so far, worst last; a row must beat the worst to get in.
      const scores: number[] = [];
      const refs: { kbId: string; index: VectorIndex; row: number }[] = [];
      if (sqlVectors) {
        const matches = await sqlVectors.nearest(kbIds, qv, limit, threshold, (id) => docs.has(id));
        matches.forEach((m, rank) => candidates.set(m.seq, { seq: m.seq, kbId: docs.get(m.documentId)!, docId: m.documentId, similarity: m.similarity, vectorRank: rank + 1, lexicalRank: null, score: 0 }));
      }
      for (const [kbId, index] of indexes) {
        if (index.dimension !== qv.length) continue;
        const { vectors, enabled, docOf, dimension, rows } = index;
        const allowed = new Uint8Array(index.docIds.length);
        index.docIds.forEach((id, d) => (allowed[d] = docs.has(id) ? 1 : 0));
        let floor = scores.length === limit ? scores[limit - 1]! : threshold;
        for (let i = 0; i < rows; i++) {
          if (!enabled[i] || !allowed[docOf[i]!]) continue;
          let sim = 0;
          const base = i * dimension;
          for (let k = 0; k < dimension; k++) sim += qv[k]! * vectors[base + k]!;
          if (sim <= floor) continue;
          let at = scores.length;
          while (at > 0 && scores[at - 1]! < sim) at--;
          scores.splice(at, 0, sim);
          refs.splice(at, 0, { kbId, index, row: i });
          if (scores.length > limit) {
            scores.pop();
            refs.pop();
          }
          if (scores.length === limit) floor = Math.max(threshold, scores[limit - 1]!);
        }
      }
      refs.forEach((ref, rank) => {
        const seq = ref.index.seqs[ref.row]!;
        candidates.set(seq, { seq, kbId: ref.kbId, docId: ref.index.docIds[ref.index.docOf[ref.row]!]!, similarity: scores[rank]!, vectorRank: rank + 1, lexicalRank: null, score: 0 });
      });
    }
    if (req.mode !== 'vector') {
      const text = parseTextQuery(req.query);
      if (text) {
        try {
          const rows = await store.knowledgeChunks.fullText(kbIds, text, legLimit, (id) => docs.has(id));
          rows.forEach((r, rank) => {
            const seq = Number(r.seq);
            const c = candidates.get(seq) ?? { seq, kbId: '', docId: r.document_id, similarity: null, vectorRank: null, lexicalRank: null, score: 0 };
            c.lexicalRank = rank + 1;
            candidates.set(seq, c);
          });
        } catch {
          lexicalFailed = true;
        }
      }
    }
    for (const c of candidates.values()) {
      c.score = req.mode === 'vector' ? c.similarity! : (c.vectorRank ? 1 / (RRF_K + c.vectorRank) : 0) + (c.lexicalRank ? 1 / (RRF_K + c.lexicalRank) : 0);
    }
    // Lexical matches the vector leg did not rank still get their true cosine similarity.
    if (qv) {
      const unranked = sqlVectors ? [...candidates.values()].filter((c) => c.similarity === null).map((c) => c.seq) : [];
      const sqlSimilarity = sqlVectors && unranked.length ? await sqlVectors.similarities(unranked, qv) : null;
      for (const c of candidates.values()) {
        if (c.similarity !== null) continue;
        const kbId = docs.get(c.docId)!;
        c.kbId = kbId;
        if (sqlVectors) {
          c.similarity = sqlSimilarity?.get(c.seq) ?? 0;
          continue;
        }
        const index = indexes.get(kbId)!;
        const pos = positionOf(index, c.seq);
        c.similarity = pos >= 0 && index.dimension === qv.length ? dot(qv, index.vectors, pos * index.dimension) : 0;
      }
    }
  }
  const ordered = [...candidates.values()]
    .sort((a, b) => b.score - a.score || (a.lexicalRank ?? Infinity) - (b.lexicalRank ?? Infinity) || (a.vectorRank ?? Infinity) - (b.vectorRank ?? Infinity))
    .slice(0, req.topK);
  const chunks = new Map((await store.knowledgeChunks.getBySeq(ordered.map((c) => c.seq))).map((c) => [c.seq, c]));
  const records = new Map<string, KnowledgeDocumentRecord>((await store.knowledgeDocuments.getMany([...new Set(ordered.map((c) => c.docId))])).map((d) => [d.id, d]));
  const hits: SearchHit[] = [];
  for (const c of ordered) {
    const chunk = chunks.get(c.seq);
    const doc = records.get(c.docId);
    if (!chunk || !doc) continue;
    hits.push({
      knowledgeBaseId: doc.knowledgeBaseId,
      documentId: doc.id,
      documentName: doc.filename,
      sourceUrl: doc.sourceUrl,
      content: chunk.content,
      chunkIndex: chunk.chunkIndex,
      metadata: tagValuesByName(doc, req.defs.get(doc.knowledgeBaseId) ?? []),
      similarity: c.similarity ?? 0,
      rankScore: c.score,
      rank: hits.length + 1,
    });
  }
  return { hits, lexicalFailed };
}

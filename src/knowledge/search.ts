// Search over knowledge bases. The vector leg asks each base's vector index (./vector-index/; cosine of unit
// vectors), or pgvector's HNSW index where the Postgres server has it;
// the lexical leg is SQLite FTS5 ranked by BM25, queried with web-search syntax (quoted phrases are required,
// `-word` excludes, other words are alternatives), optionally typo-tolerant (./typos.ts); hybrid fuses both
// rankings by weighted reciprocal rank fusion (k = 60; equal weights by default). Only enabled chunks of
// enabled, completed documents that pass the tag filters take part.
//
// Pages: a page is a slice (offset, topK) of one ranking. Each leg's depth depends on topK alone, never on the
// offset, so the pages of one query with one topK are slices of the same list and never repeat or skip a hit.
import type { TextQuery } from '../store/dialect.ts';
import type { Store } from '../store/index.ts';
import type { KnowledgeBaseRecord, TagDefinitionRecord } from '../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord } from '../store/knowledge-documents.ts';
import type { KnowledgeService } from './service.ts';
import type { VectorHit, VectorIndex } from './vector-index/index.ts';
import { tagValuesByName, type ResolvedFilter } from './tags.ts';
import { typoAlternatives } from './typos.ts';
import { highlightRanges, highlightStems, snippet, type Highlight } from './highlights.ts';

export const RRF_K = 60;

export interface SearchRequest {
  bases: KnowledgeBaseRecord[];
  query: string | null;
  topK: number;
  filters: ResolvedFilter[];
  mode: 'vector' | 'hybrid' | 'fulltext';
  defs: Map<string, TagDefinitionRecord[]>;
  /** Hits ranked before this page (default 0). */
  offset?: number;
  /** Hybrid: the vector leg's share of the fused score, 0 to 1 (default 0.5: both legs count the same). */
  vectorWeight?: number;
  /** Full-text words no base holds also match indexed words a typo or two away. */
  typoTolerance?: boolean;
  /** Adds `highlights` and `snippet` to each hit. */
  highlight?: boolean;
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
  highlights?: Highlight[];
  snippet?: string;
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

export async function runSearch(
  store: Store,
  knowledge: KnowledgeService,
  req: SearchRequest,
): Promise<{ hits: SearchHit[]; lexicalFailed: boolean; hasMore: boolean }> {
  const kbIds = req.bases.map((b) => b.id);
  const offset = req.offset ?? 0;
  // The full-text leg alone checks documents in SQL on its own hits; the other searches need every searchable
  // document's id up front (ids and bases only; full records are read for the results alone).
  const textOnly = req.mode === 'fulltext' && req.query !== null;
  const docs = textOnly ? new Map<string, string>() : new Map((await store.knowledgeDocuments.searchableIds(kbIds, req.filters)).map((d) => [d.id, d.knowledgeBaseId]));
  const candidates = new Map<number, Candidate>();
  const legLimit = Math.min(200, Math.max(req.topK * 3, 50));
  let lexicalFailed = false;
  // On a Postgres with pgvector the vector leg runs in SQL (src/store/knowledge-pgvector.ts); else in memory.
  const sqlVectors = store.pgvector;
  const indexes = new Map<string, VectorIndex>();
  if (!textOnly && !sqlVectors) for (const id of kbIds) indexes.set(id, await knowledge.index(id));
  // One more than the page, to tell whether another page follows.
  const wanted = offset + req.topK + 1;
  let words: string[] = [];

  if (req.query === null) {
    // Tag-only: every matching chunk counts as a perfect match, in document and chunk order.
    const rows = await store.knowledgeChunks.ofDocuments([...docs.keys()], wanted);
    rows.forEach((c, i) => candidates.set(c.seq, { seq: c.seq, kbId: c.knowledgeBaseId, docId: c.documentId, similarity: 1, vectorRank: i + 1, lexicalRank: null, score: 1 }));
  } else {
    let qv: Float32Array | null = null;
    if (req.mode !== 'fulltext') {
      qv = await knowledge.embedOne(req.query);
      // Cosine distance below 1 (0.8 when more than three bases are searched), as the platform does.
      const threshold = req.bases.length > 3 ? 0.2 : 0;
      const limit = req.mode === 'vector' ? wanted : legLimit;
      // Best `limit` chunks of all the bases together.
      const found: (VectorHit & { kbId: string })[] = [];
      if (sqlVectors) {
        const matches = await sqlVectors.nearest(kbIds, qv, limit, threshold, (id) => docs.has(id));
        matches.forEach((m) => found.push({ seq: m.seq, documentId: m.documentId, similarity: m.similarity, kbId: docs.get(m.documentId)! }));
      }
      for (const [kbId, index] of indexes) {
        if (index.dimension !== qv.length) continue;
        for (const hit of await index.search(qv, limit, { threshold, accept: (id) => docs.has(id) })) found.push({ ...hit, kbId });
      }
      found.sort((a, b) => b.similarity - a.similarity);
      found.slice(0, limit).forEach((hit, rank) => {
        candidates.set(hit.seq, { seq: hit.seq, kbId: hit.kbId, docId: hit.documentId, similarity: hit.similarity, vectorRank: rank + 1, lexicalRank: null, score: 0 });
      });
    }
    const text = parseTextQuery(req.query);
    if (text) {
      words = [...text.required, ...text.optional].flat();
      if (req.typoTolerance && req.mode !== 'vector') text.alternatives = await typoAlternatives(store, kbIds, words);
      words.push(...[...(text.alternatives?.values() ?? [])].flat());
    }
    if (req.mode !== 'vector' && text) {
      try {
        const rows = await store.knowledgeChunks.fullText(kbIds, text, req.mode === 'fulltext' ? wanted : legLimit, req.filters);
        rows.forEach((r, rank) => {
          const seq = Number(r.seq);
          const c = candidates.get(seq) ?? { seq, kbId: r.knowledge_base_id, docId: r.document_id, similarity: null, vectorRank: null, lexicalRank: null, score: 0 };
          c.lexicalRank = rank + 1;
          candidates.set(seq, c);
        });
      } catch {
        lexicalFailed = true;
      }
    }
    // Weighted RRF; with equal weights (0.5 each, doubled) exactly the plain sum 1/(k+rank) of each leg.
    const vw = 2 * (req.vectorWeight ?? 0.5);
    const tw = 2 - vw;
    for (const c of candidates.values()) {
      c.score = req.mode === 'vector' ? c.similarity! : (c.vectorRank ? vw / (RRF_K + c.vectorRank) : 0) + (c.lexicalRank ? tw / (RRF_K + c.lexicalRank) : 0);
    }
    // Lexical matches the vector leg did not rank still get their true cosine similarity.
    if (qv) {
      const unranked = new Map<string, number[]>();
      for (const c of candidates.values()) {
        if (c.similarity !== null) continue;
        unranked.set(c.kbId, [...(unranked.get(c.kbId) ?? []), c.seq]);
      }
      if (sqlVectors && unranked.size) {
        const sims = await sqlVectors.similarities([...unranked.values()].flat(), qv);
        for (const seqs of unranked.values()) for (const seq of seqs) candidates.get(seq)!.similarity = sims.get(seq) ?? 0;
        unranked.clear();
      }
      for (const [kbId, seqs] of unranked) {
        const index = indexes.get(kbId)!;
        const sims = index.dimension === qv.length ? await index.similarities(qv, seqs) : new Map<number, number>();
        for (const seq of seqs) candidates.get(seq)!.similarity = sims.get(seq) ?? 0;
      }
    }
  }
  const ranked = [...candidates.values()]
    .filter((c) => c.score > 0 || req.mode === 'vector' || req.query === null)
    .sort((a, b) => b.score - a.score || (a.lexicalRank ?? Infinity) - (b.lexicalRank ?? Infinity) || (a.vectorRank ?? Infinity) - (b.vectorRank ?? Infinity) || a.seq - b.seq);
  const ordered = ranked.slice(offset, offset + req.topK);
  const stems = req.highlight ? highlightStems(words) : null;
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
      rank: offset + hits.length + 1,
    });
    if (stems) {
      const ranges = highlightRanges(chunk.content, stems);
      Object.assign(hits.at(-1)!, { highlights: ranges, snippet: snippet(chunk.content, ranges) });
    }
  }
  return { hits, lexicalFailed, hasMore: ranked.length > offset + req.topK };
}

// Retrieval quality with the embedded default model on a small labeled set (test/fixtures): recall@10 (share
// of the relevant documents among the first ten results, averaged over queries) and MRR for vector, full-text
// and hybrid search. The numbers are printed; the assertions only guard against regressions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { DOCUMENTS, QUERIES, distractors } from './fixtures/knowledge-retrieval.ts';
import { runSearch } from '../src/knowledge/search.ts';
import { ExactIndex } from '../src/knowledge/vector-index/exact.ts';
import { VectorIndexes, type VectorIndex } from '../src/knowledge/vector-index/index.ts';

let s: TestServer;
let kb: any;
const nameOf = new Map<string, string>();

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '100000' });
  kb = await createBase(s, { name: 'Retrieval' });
  const all = { ...DOCUMENTS, ...distractors(120) };
  const ids: string[] = [];
  for (const [name, text] of Object.entries(all)) {
    const session = await uploadDocument(s, kb.id, `${name}.txt`, text);
    nameOf.set(session.document.id, name);
    ids.push(session.document.id);
  }
  for (const id of ids) expect((await waitForDocument(s, kb.id, id)).processingStatus).toBe('completed');
});
afterAll(async () => s.stop());

async function evaluate(mode: 'vector' | 'hybrid' | 'fulltext') {
  let recall = 0;
  let mrr = 0;
  for (const [query, relevant] of QUERIES) {
    let docs: string[];
    if (mode === 'fulltext') {
      const bases = [(await s.services.store.knowledgeBases.get(kb.id))!];
      const { hits } = await runSearch(s.services.store, s.services.knowledge, { bases, query, topK: 10, filters: [], mode, defs: new Map() });
      docs = hits.map((h) => h.documentId);
    } else {
      const r = await s.call('POST', '/api/v2/knowledge/search', { workspaceId: s.workspaceId, knowledgeBaseIds: [kb.id], query, topK: 10, searchMode: mode });
      expect(r.status).toBe(200);
      docs = r.body.data.results.map((h: any) => h.documentId);
    }
    const names = [...new Set(docs.map((d) => nameOf.get(d)!))];
    recall += relevant.filter((r) => names.includes(r)).length / relevant.length;
    const first = names.findIndex((n) => relevant.includes(n));
    mrr += first === -1 ? 0 : 1 / (first + 1);
  }
  return { recallAt10: recall / QUERIES.length, mrr: mrr / QUERIES.length };
}

describe('retrieval quality (embedded word-vector model)', () => {
  it('reports recall@10 and MRR per mode', async () => {
    const vector = await evaluate('vector');
    const fulltext = await evaluate('fulltext');
    const hybrid = await evaluate('hybrid');
    const fmt = (m: { recallAt10: number; mrr: number }) => `recall@10 ${m.recallAt10.toFixed(3)}  MRR ${m.mrr.toFixed(3)}`;
    console.log(`retrieval (${QUERIES.length} queries, ${Object.keys(DOCUMENTS).length} documents + 120 distractors):\n  vector    ${fmt(vector)}\n  fulltext  ${fmt(fulltext)}\n  hybrid    ${fmt(hybrid)}`);
    expect(vector.recallAt10).toBeGreaterThan(0.5);
    expect(hybrid.recallAt10).toBeGreaterThanOrEqual(vector.recallAt10 - 0.05);
    expect(hybrid.recallAt10).toBeGreaterThanOrEqual(fulltext.recallAt10);
  });

  it('keeps the vector leg\'s recall@10 with the quantized index (at least 0.95 of the exact scan\'s)', async () => {
    const source = s.services.store.knowledgeChunks;
    const exact = await ExactIndex.load(source, kb.id);
    const quantized = await new VectorIndexes(source, { kind: 'quantized', minRows: 1, dir: null }).get(kb.id);
    const recallOf = async (index: VectorIndex) => {
      let recall = 0;
      for (const [query, relevant] of QUERIES) {
        const hits = await index.search(await s.services.knowledge.embedOne(query), 10, { threshold: 0, accept: () => true });
        const names = [...new Set(hits.map((h) => nameOf.get(h.documentId)!))];
        recall += relevant.filter((r) => names.includes(r)).length / relevant.length;
      }
      return recall / QUERIES.length;
    };
    const [e, q] = [await recallOf(exact), await recallOf(quantized)];
    console.log(`vector leg recall@10: exact scan ${e.toFixed(3)}, quantized index ${q.toFixed(3)}`);
    expect(q).toBeGreaterThanOrEqual(0.95 * e);
  });
});

// The labelled retrieval set (test/fixtures/knowledge-retrieval.ts) loaded into a server's knowledge base, and
// recall@10 of a search mode over its queries through the HTTP API: for comparing engines and vector stores.
import { expect } from 'vitest';
import type { TestServer } from './server.ts';
import { createBase, uploadDocument, waitForDocument } from './knowledge.ts';
import { DOCUMENTS, QUERIES, distractors } from '../fixtures/knowledge-retrieval.ts';

export interface LoadedSet {
  kbId: string;
  /** Each document's fixture name, by document id. */
  nameOf: Map<string, string>;
}

/** A base holding the labelled documents and `fillers` distractors, every one processed. */
export async function loadRetrievalSet(s: TestServer, fillers = 120): Promise<LoadedSet> {
  const kb = await createBase(s, { name: 'Retrieval' });
  const nameOf = new Map<string, string>();
  for (const [name, text] of Object.entries({ ...DOCUMENTS, ...distractors(fillers) })) {
    const session = await uploadDocument(s, kb.id, `${name}.txt`, text);
    nameOf.set(session.document.id, name);
  }
  for (const id of nameOf.keys()) expect((await waitForDocument(s, kb.id, id, ['completed', 'failed'], s.workspaceId, 180_000)).processingStatus).toBe('completed');
  return { kbId: kb.id, nameOf };
}

/** The ranked document names each query answers with (top 10, through POST /knowledge/search). */
export async function rankings(s: TestServer, set: LoadedSet, mode: 'vector' | 'hybrid'): Promise<string[][]> {
  const out: string[][] = [];
  for (const [query] of QUERIES) {
    const r = await s.call('POST', '/api/v2/knowledge/search', { workspaceId: s.workspaceId, knowledgeBaseIds: [set.kbId], query, topK: 10, searchMode: mode });
    expect(r.status, r.text).toBe(200);
    out.push([...new Set(r.body.data.results.map((h: any) => set.nameOf.get(h.documentId)!))] as string[]);
  }
  return out;
}

/** recall@10 of these rankings: the share of each query's relevant documents among its results, averaged. */
export function recallAt10(ranked: string[][]): number {
  let recall = 0;
  QUERIES.forEach(([, relevant], i) => (recall += relevant.filter((r) => ranked[i]!.includes(r)).length / relevant.length));
  return recall / QUERIES.length;
}

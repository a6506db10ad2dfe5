// The quantized vector index (src/knowledge/vector-index/): recall against the exact scan on a clustered set,
// catching up with inserts and deletes made through the store (by any process), a restart that reads the
// index file instead of rebuilding, and consistency with the chunks table after a crash.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, openSqliteStore, type Store } from '../src/store/index.ts';
import { createTestDatabase, testDatabaseIsPostgres } from './support/postgres.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { ALL_SLOTS } from '../src/knowledge/tags.ts';
import { vectorToBlob } from '../src/knowledge/embeddings.ts';
import { ExactIndex } from '../src/knowledge/vector-index/exact.ts';
import { VectorIndexes, type VectorIndex } from '../src/knowledge/vector-index/index.ts';
import { startTestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { DOCUMENTS } from './fixtures/knowledge-retrieval.ts';
import { seededRandom } from '../src/knowledge/vector-index/seeded-random.ts';

const DIM = 48;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-vindex-'));
let store: Store;
let ws: string;
let user: string;

/** Deterministic clustered unit vectors: 40 topic centres, each chunk its topic plus its document's offset plus noise. */
function random(seed: number): () => number {
  const next = seededRandom(seed);
  return () => next() - 0.5;
}
const rnd = random(42);
const topics = Array.from({ length: 40 }, () => Float32Array.from({ length: DIM }, () => rnd()));
function unit(v: Float32Array): Float32Array {
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
}
const vectorOf = (doc: number, chunk: number) => {
  const r = random(doc * 1000 + chunk + 1);
  const d = random(doc + 7);
  const t = topics[doc % topics.length]!;
  return unit(Float32Array.from({ length: DIM }, (_, k) => t[k]! + 0.4 * d() + 0.25 * r()));
};

async function newBase(): Promise<string> {
  const kbId = `kb_${randomUUID().replace(/-/g, '')}`;
  const at = new Date().toISOString();
  await store.transaction((tx) =>
    tx.knowledgeBases.insert({
      id: kbId, workspaceId: ws, name: 'Index', description: null, folderPath: '/', chunkingConfig: '{}', embeddingModel: 'test', embeddingDimension: DIM,
      createdBy: user, createdAt: at, updatedAt: at, deletedAt: null,
    }),
  );
  return kbId;
}

async function addDocument(kbId: string, doc: number, chunks: number): Promise<string> {
  const at = new Date().toISOString();
  const docId = `kd_${randomUUID().replace(/-/g, '')}`;
  await store.transaction(async (tx) => {
    await tx.knowledgeDocuments.insert({
      id: docId, knowledgeBaseId: kbId, workspaceId: ws, filename: `d${doc}.txt`, fileSize: 0, mimeType: 'text/plain', blobKey: null, sourceFileId: null,
      processingStatus: 'completed', processingError: null, processingStartedAt: at, processingCompletedAt: at, processingAttempt: 1, processingOptions: null,
      chunkCount: chunks, tokenCount: 0, characterCount: 0, enabled: true, connectorId: null, connectorType: null, sourceUrl: null, externalId: null,
      contentHash: null, userExcluded: false, tags: Object.fromEntries(ALL_SLOTS.map((s) => [s, null])), uploadedAt: at, updatedAt: at,
    });
    for (let i = 0; i < chunks; i++) {
      await tx.knowledgeChunks.insert({
        id: `kc_${randomUUID().replace(/-/g, '')}`, documentId: docId, knowledgeBaseId: kbId, chunkIndex: i, content: `chunk ${doc}/${i}`, tokenCount: 2, enabled: true,
        startOffset: 0, endOffset: 1, embedding: vectorToBlob(vectorOf(doc, i)), at,
      });
    }
  });
  return docId;
}

const everything = { threshold: -1, accept: () => true };
const seqsOf = async (index: VectorIndex, q: Float32Array, k = 10) => (await index.search(q, k, everything)).map((h) => h.seq);

function recorder() {
  const events: string[] = [];
  const log = (msg: unknown, text?: string) => void events.push(typeof msg === 'string' ? msg : (text ?? ''));
  return { events, logger: { info: log, warn: log, error: log } as never };
}

const open = (events?: ReturnType<typeof recorder>) =>
  new VectorIndexes(store.knowledgeChunks, { kind: 'quantized', minRows: 1, dir: path.join(dir, 'index'), options: { probeFraction: 0.25, minProbes: 4, minScan: 0, rescore: 60 } }, events?.logger ?? null);

/** The store under test: SQLite, or a throwaway Postgres database with TEST_DATABASE=postgres. */
let postgres: { url: string; drop(): Promise<void> } | null = null;
/** Deletes a chunk behind the store's back (as a cascade would: no tombstone). */
async function deleteRaw(seq: number): Promise<void> {
  if (postgres) {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      await client.query('DELETE FROM knowledge_chunks WHERE seq = $1', [seq]);
    } finally {
      await client.end();
    }
    return;
  }
  const raw = new DatabaseSync(path.join(dir, 'workspace.sqlite'));
  try {
    raw.prepare('DELETE FROM knowledge_chunks WHERE seq = ?').run(seq);
  } finally {
    raw.close();
  }
}

beforeAll(async () => {
  if (testDatabaseIsPostgres()) postgres = await createTestDatabase();
  store = postgres ? await openPostgresStore(postgres.url) : await openSqliteStore(path.join(dir, 'workspace.sqlite'));
  const boot = (await bootstrapIfEmpty(store, { apiKey: 'sk-owa-vindex-test-0000000000000000' }))!;
  ws = boot.workspace.id;
  user = boot.user.id;
});

afterAll(async () => {
  await store.close();
  await postgres?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the quantized vector index', () => {
  it('finds at least 95% of the exact top 10 on a clustered set, with exact similarities', async () => {
    const kbId = await newBase();
    for (let d = 0; d < 120; d++) await addDocument(kbId, d, 25);
    const index = await open().get(kbId);
    const exact = await ExactIndex.load(store.knowledgeChunks, kbId);
    expect(index.size).toBe(3000);
    let found = 0;
    const queries = 40;
    for (let i = 0; i < queries; i++) {
      const q = vectorOf((i * 37) % 120, 100 + i);
      const truth = await exact.search(q, 10, everything);
      const got = await index.search(q, 10, everything);
      const wanted = new Set(truth.map((h) => h.seq));
      found += got.filter((h) => wanted.has(h.seq)).length;
      // Re-scored at full precision: the similarity of a found chunk is the exact one.
      for (const h of got) expect(h.similarity).toBeCloseTo((await exact.similarities(q, [h.seq])).get(h.seq)!, 5);
    }
    expect(found / (queries * 10)).toBeGreaterThanOrEqual(0.95);
  });

  it('takes documents processed and removed afterwards, by this process or another, without a rebuild', async () => {
    const kbId = await newBase();
    for (let d = 0; d < 30; d++) await addDocument(kbId, d, 20);
    const rec = recorder();
    const indexes = open(rec);
    const index = await indexes.get(kbId);
    expect(rec.events.filter((e) => e === 'vector index built')).toHaveLength(1);
    const added = await addDocument(kbId, 500, 20);
    const q = vectorOf(500, 3);
    const again = await indexes.get(kbId);
    expect(again).toBe(index); // caught up in place
    const top = await again.search(q, 5, everything);
    expect(top.every((h) => h.documentId === added)).toBe(true);
    // Removed: a document (its chunks tombstoned), a single chunk, a chunk disabled.
    await store.transaction((tx) => tx.knowledgeDocuments.delete(added));
    expect((await (await indexes.get(kbId)).search(q, 5, everything)).some((h) => h.documentId === added)).toBe(false);
    const [first] = await seqsOf(index, vectorOf(3, 0), 1);
    await store.transaction((tx) => tx.knowledgeChunks.delete(first!));
    expect(await seqsOf(await indexes.get(kbId), vectorOf(3, 0), 20)).not.toContain(first);
    const [second] = await seqsOf(index, vectorOf(4, 0), 1);
    await store.transaction((tx) => tx.knowledgeChunks.setEnabled(second!, false, new Date().toISOString()));
    expect(await seqsOf(await indexes.get(kbId), vectorOf(4, 0), 20)).not.toContain(second);
    expect((await indexes.get(kbId)).size).toBe(599);
    expect(rec.events.filter((e) => e === 'vector index built')).toHaveLength(1);
  });

  it('serves a restart from its file, caught up with what changed while it was down', async () => {
    const kbId = await newBase();
    const docs: string[] = [];
    for (let d = 0; d < 30; d++) docs.push(await addDocument(kbId, d, 20));
    const first = open();
    await first.get(kbId);
    await first.close();
    // While no server runs: a document added, one removed.
    const added = await addDocument(kbId, 700, 10);
    await store.transaction((tx) => tx.knowledgeDocuments.delete(docs[0]!));
    const rec = recorder();
    const restarted = open(rec);
    const index = await restarted.get(kbId);
    expect(rec.events).toContain('vector index loaded from its file');
    expect(rec.events).not.toContain('vector index built');
    expect(index.size).toBe(29 * 20 + 10);
    const exact = await ExactIndex.load(store.knowledgeChunks, kbId);
    for (const q of [vectorOf(700, 1), vectorOf(0, 1), vectorOf(12, 3)]) expect(await seqsOf(index, q, 5)).toEqual(await seqsOf(exact, q, 5));
    expect((await index.search(vectorOf(700, 1), 3, everything))[0]!.documentId).toBe(added);
  });

  it('is consistent with the chunks table after a crash: changes after its last write, chunks gone without a tombstone, a damaged file', async () => {
    const kbId = await newBase();
    const docs: string[] = [];
    for (let d = 0; d < 30; d++) docs.push(await addDocument(kbId, d, 20));
    await open().get(kbId); // built and written; then the process "dies" without closing
    await addDocument(kbId, 800, 10);
    // A chunk removed behind the index's back (no tombstone, as a cascade would).
    const gone = Number((await store.knowledgeChunks.vectorSeqs(kbId, 0, 1))[0]);
    await deleteRaw(gone);
    const rec = recorder();
    const index = await open(rec).get(kbId);
    expect(rec.events).toContain('vector index loaded from its file');
    expect(rec.events).toContain('vector index reconciled with the chunks table');
    expect(index.size).toBe(30 * 20 - 1 + 10);
    expect(await seqsOf(index, vectorOf(0, 0), 30)).not.toContain(gone);
    // A torn or damaged file is rebuilt from the table rather than trusted.
    const file = path.join(dir, 'index', `${kbId}.vix`);
    fs.truncateSync(file, fs.statSync(file).size - 100);
    const rec2 = recorder();
    const rebuilt = await open(rec2).get(kbId);
    expect(rec2.events).toContain('vector index built');
    expect(rebuilt.size).toBe(index.size);
    const exact = await ExactIndex.load(store.knowledgeChunks, kbId);
    expect(await seqsOf(rebuilt, vectorOf(800, 2), 5)).toEqual(await seqsOf(exact, vectorOf(800, 2), 5));
  });
});

describe('search through HTTP on the quantized index', () => {
  it('answers from documents as they are processed and stops answering from removed ones', async () => {
    const s = await startTestServer({ KB_VECTOR_INDEX: 'quantized' });
    try {
      const kb = await createBase(s, { name: 'Quantized' });
      const ids: Record<string, string> = {};
      for (const name of ['refunds', 'vacation', 'vpn', 'fire', 'printer']) ids[name] = (await uploadDocument(s, kb.id, `${name}.txt`, DOCUMENTS[name]!)).document.id;
      for (const id of Object.values(ids)) expect((await waitForDocument(s, kb.id, id)).processingStatus).toBe('completed');
      const search = async (query: string) => {
        const r = await s.call('POST', '/api/v2/knowledge/search', { workspaceId: s.workspaceId, knowledgeBaseIds: [kb.id], query, searchMode: 'vector', topK: 3 });
        expect(r.status, r.text).toBe(200);
        return r.body.data.results.map((h: { documentId: string }) => h.documentId) as string[];
      };
      expect((await search('how do I get my money back'))[0]).toBe(ids.refunds);
      // Added after the index was built: found without a rebuild.
      const parental = (await uploadDocument(s, kb.id, 'parental.txt', DOCUMENTS.parental!)).document.id;
      await waitForDocument(s, kb.id, parental);
      expect((await search('time off after having a baby'))[0]).toBe(parental);
      expect((await s.call('DELETE', `/api/v2/knowledge/${kb.id}/documents/${ids.refunds}?workspaceId=${s.workspaceId}`)).status).toBe(200);
      expect(await search('how do I get my money back')).not.toContain(ids.refunds);
      expect(fs.readdirSync(path.join(s.dataDir, 'knowledge-index'))).toEqual([`${kb.id}.vix`]);
    } finally {
      await s.stop();
    }
  });
});

// What users of search libraries expect from the knowledge search (issue 25): typo tolerance for the full-text
// leg, highlighted matches, pages by offset, a per-query weight between the legs, and ranges on number and date
// tags; every bad input answered 400 in the documented error shape. Also: the full-text leg's SQL returns what
// FTS5's own `ORDER BY rank` returned, on a fixed corpus (SQLite).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { parseTextQuery } from '../src/knowledge/search.ts';
import { CHUNK_TEXT_INDEX } from '../src/store/knowledge-chunks.ts';

let s: TestServer;
let ws: string;
let kb: any;
const docs: Record<string, any> = {};

const TEXTS: Record<string, string> = {
  'refunds.txt': 'Refund policy. Customers can request a refund within thirty days of purchase. Refunds are paid back to the original card.',
  'vacation.txt': 'Vacation and holidays. Employees receive twenty-five days of paid leave per year and may carry five days over.',
  'security.txt': 'Password security. Passwords must be rotated every ninety days and two-factor authentication is mandatory for admins.',
  'kitchen.txt': 'The office kitchen has a coffee machine, a fridge and a microwave. Please clean your dishes after lunch.',
  'markup.txt': 'Never paste <script>alert("refund")</script> & other markup into the refund form; the form escapes it.',
};
// priority (number1) and published (date1) of each document.
const TAGS: Record<string, [number, string]> = {
  'refunds.txt': [1, '2024-01-15'],
  'vacation.txt': [2, '2024-03-01'],
  'security.txt': [3, '2024-06-30'],
  'kitchen.txt': [4, '2025-01-01'],
  'markup.txt': [5, '2025-02-28'],
};

beforeAll(async () => {
  s = await startTestServer();
  ws = s.workspaceId;
  kb = await createBase(s, { name: 'Search features' });
  const at = new Date().toISOString();
  await s.services.store.transaction(async (tx) => {
    await tx.knowledgeBases.insertTag({ id: 'tg_f_prio', knowledgeBaseId: kb.id, tagSlot: 'number1', displayName: 'priority', fieldType: 'number', createdAt: at, updatedAt: at });
    await tx.knowledgeBases.insertTag({ id: 'tg_f_pub', knowledgeBaseId: kb.id, tagSlot: 'date1', displayName: 'published', fieldType: 'date', createdAt: at, updatedAt: at });
    await tx.knowledgeBases.insertTag({ id: 'tg_f_dept', knowledgeBaseId: kb.id, tagSlot: 'tag1', displayName: 'dept', fieldType: 'text', createdAt: at, updatedAt: at });
  });
  // Uploaded together, so the workers process them side by side.
  const sessions = await Promise.all(Object.entries(TEXTS).map(([name, text]) => uploadDocument(s, kb.id, name, text, 'text/plain')));
  for (const [i, name] of Object.keys(TEXTS).entries()) {
    docs[name] = await waitForDocument(s, kb.id, sessions[i].document.id);
    expect(docs[name].processingStatus).toBe('completed');
    const [priority, published] = TAGS[name]!;
    const r = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${docs[name].id}`, { workspaceId: ws, number1: priority, date1: published });
    expect(r.status, r.text).toBe(200);
  }
});
afterAll(async () => s?.stop());

const search = (body: Record<string, unknown>) => s.call('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: [kb.id], ...body });
const names = (r: any) => r.body.data.results.map((x: any) => Object.keys(docs).find((n) => docs[n].id === x.documentId));
// vectorWeight 0: the full-text leg alone decides, so a word that matches nothing leaves the results empty.
const textOnly = (query: string, extra: Record<string, unknown> = {}) => search({ query, searchMode: 'hybrid', vectorWeight: 0, ...extra });

describe('typo tolerance', () => {
  it('matches indexed words one edit away (5-8 letters) or two (9+), and leaves exact words as they were', async () => {
    expect((await textOnly('pasword')).body.data.results).toEqual([]);
    const fixed = await textOnly('pasword', { typoTolerance: true });
    expect(fixed.status, fixed.text).toBe(200);
    expect(names(fixed)).toEqual(['security.txt']);
    // Two edits in a long word; a swap of neighbouring letters is one edit.
    expect(names(await textOnly('authentcaton', { typoTolerance: true }))).toEqual(['security.txt']);
    expect(names(await textOnly('micorwave', { typoTolerance: true }))).toEqual(['kitchen.txt']);
    // Short words and words two edits off below nine letters match as written.
    expect((await textOnly('cofe', { typoTolerance: true })).body.data.results).toEqual([]);
    expect((await textOnly('vactoin', { typoTolerance: true })).body.data.results).toEqual([]);
    // A word the base holds is not expanded: the same results with and without.
    const exact = await textOnly('coffee refund');
    const tolerant = await textOnly('coffee refund', { typoTolerance: true });
    expect(tolerant.body.data.results).toEqual(exact.body.data.results);
    // A chunk added later joins the vocabulary.
    const extra = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/${docs['kitchen.txt'].id}/chunks`, { workspaceId: ws, content: 'The espresso grinder is descaled monthly.' });
    expect(extra.status, extra.text).toBe(200);
    expect((await textOnly('grindr', { typoTolerance: true })).body.data.results[0].content).toContain('espresso grinder');
    await s.call('DELETE', `/api/v2/knowledge/${kb.id}/documents/${docs['kitchen.txt'].id}/chunks/${extra.body.data.id}?workspaceId=${ws}`);
  });
});

describe('highlights', () => {
  it('marks every stem-equal occurrence as UTF-16 ranges and in an HTML-escaped snippet', async () => {
    const r = await search({ query: 'refund card', searchMode: 'hybrid', vectorWeight: 0, highlight: true });
    expect(r.status, r.text).toBe(200);
    const top = r.body.data.results.find((x: any) => x.documentId === docs['refunds.txt'].id);
    expect(top.highlights.map((h: any) => top.content.slice(h.start, h.end))).toEqual(['Refund', 'refund', 'Refunds', 'card']);
    expect(top.snippet).toBe(
      '<mark>Refund</mark> policy. Customers can request a <mark>refund</mark> within thirty days of purchase. <mark>Refunds</mark> are paid back to the original <mark>card</mark>.',
    );
    const markup = r.body.data.results.find((x: any) => x.documentId === docs['markup.txt'].id);
    expect(markup.snippet).toBe(
      'Never paste &lt;script&gt;alert(&quot;<mark>refund</mark>&quot;)&lt;/script&gt; &amp; other markup into the <mark>refund</mark> form; the form escapes it.',
    );
    // Typo alternatives are marked too; without `highlight` nothing is added.
    const typo = await textOnly('pasword', { typoTolerance: true, highlight: true });
    const sec = typo.body.data.results[0];
    expect(sec.highlights.map((h: any) => sec.content.slice(h.start, h.end))).toEqual(['Password', 'Passwords']);
    const plain = await search({ query: 'refund' });
    expect(plain.body.data.results[0]).not.toHaveProperty('highlights');
    expect(plain.body.data.results[0]).not.toHaveProperty('snippet');
  });

  it('cuts a long chunk to about 200 characters around the densest matches', async () => {
    const filler = 'lorem ipsum dolor sit amet '.repeat(30);
    const chunk = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/${docs['vacation.txt'].id}/chunks`, { workspaceId: ws, content: `${filler}the sabbatical rule: a sabbatical follows seven years. ${filler}` });
    expect(chunk.status, chunk.text).toBe(200);
    const r = await textOnly('sabbatical', { highlight: true });
    const hit = r.body.data.results[0];
    expect(hit.snippet.startsWith('…') && hit.snippet.endsWith('…')).toBe(true);
    expect(hit.snippet.match(/<mark>sabbatical<\/mark>/g)).toHaveLength(2);
    expect(hit.snippet.length).toBeLessThan(260);
    await s.call('DELETE', `/api/v2/knowledge/${kb.id}/documents/${docs['vacation.txt'].id}/chunks/${chunk.body.data.id}?workspaceId=${ws}`);
  });
});

describe('pages', () => {
  it('offset pages are slices of one ranking in every mode, with nextOffset until the last page', async () => {
    for (const body of [{ query: 'days policy card kitchen', searchMode: 'hybrid' }, { query: 'days policy', searchMode: 'vector' }, { tagFilters: [{ tagName: 'priority', operator: 'gte', value: 1 }] }]) {
      const all = await search({ ...body, topK: 10 });
      expect(all.status, all.text).toBe(200);
      expect(all.body.data.nextOffset).toBeNull();
      const paged: any[] = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const page = await search({ ...body, topK: 2, offset });
        expect(page.status, page.text).toBe(200);
        expect(page.body.data.results.length).toBeLessThanOrEqual(2);
        paged.push(...page.body.data.results);
        offset = page.body.data.nextOffset;
        expect(paged.length).toBeLessThan(20);
      }
      expect(paged.map((x) => [x.documentId, x.chunkIndex, x.rank, x.rankScore])).toEqual(all.body.data.results.map((x: any) => [x.documentId, x.chunkIndex, x.rank, x.rankScore]));
    }
    const beyond = await search({ query: 'refund', topK: 2, offset: 1000 });
    expect(beyond.status).toBe(200);
    expect(beyond.body.data).toMatchObject({ results: [], nextOffset: null, totalResults: 0 });
  });
});

describe('vector weight', () => {
  it('0.5 is the plain fusion; 0 ranks by the full-text leg alone, 1 by the vector leg alone', async () => {
    const query = 'refund days coffee';
    const plain = await search({ query, searchMode: 'hybrid' });
    const half = await search({ query, searchMode: 'hybrid', vectorWeight: 0.5 });
    expect(half.body.data.results).toEqual(plain.body.data.results);
    const vectorOrder = (await search({ query, searchMode: 'vector', topK: 10 })).body.data.results.map((x: any) => x.documentId);
    const allVector = await search({ query, searchMode: 'hybrid', vectorWeight: 1, topK: 10 });
    expect(allVector.body.data.results.map((x: any) => x.documentId)).toEqual(vectorOrder);
    const allText = await search({ query, searchMode: 'hybrid', vectorWeight: 0, topK: 10 });
    // Every full-text hit holds a query word, ranked by BM25 (RRF of its rank).
    expect(allText.body.data.results.length).toBeGreaterThan(0);
    for (const r of allText.body.data.results) expect(r.content).toMatch(/refund|days|coffee/i);
    expect(allText.body.data.results.map((x: any) => x.rankScore)).toEqual(allText.body.data.results.map((_: any, i: number) => 2 / (60 + i + 1)));
  });
});

describe('tag ranges', () => {
  it('number and date tags filter by gt, gte, lt, lte and between (inclusive)', async () => {
    const ids = async (tagFilters: unknown[]) => new Set(names(await search({ tagFilters, topK: 20 })));
    expect(await ids([{ tagName: 'priority', operator: 'gt', value: 3 }])).toEqual(new Set(['kitchen.txt', 'markup.txt']));
    expect(await ids([{ tagName: 'priority', operator: 'gte', value: 3 }])).toEqual(new Set(['security.txt', 'kitchen.txt', 'markup.txt']));
    expect(await ids([{ tagName: 'priority', operator: 'lt', value: 2 }])).toEqual(new Set(['refunds.txt']));
    expect(await ids([{ tagName: 'priority', operator: 'lte', value: 2.5 }])).toEqual(new Set(['refunds.txt', 'vacation.txt']));
    expect(await ids([{ tagName: 'priority', operator: 'between', value: 2, valueTo: 4 }])).toEqual(new Set(['vacation.txt', 'security.txt', 'kitchen.txt']));
    expect(await ids([{ tagName: 'published', operator: 'gte', value: '2025-01-01' }])).toEqual(new Set(['kitchen.txt', 'markup.txt']));
    expect(await ids([{ tagName: 'published', operator: 'lt', value: '2024-03-01' }])).toEqual(new Set(['refunds.txt']));
    expect(await ids([{ tagName: 'published', operator: 'between', value: '2024-03-01', valueTo: '2024-12-31' }])).toEqual(new Set(['vacation.txt', 'security.txt']));
    // Ranges combine (AND) and apply inside the query's legs too.
    expect(await ids([{ tagName: 'priority', operator: 'gt', value: 1 }, { tagName: 'published', operator: 'lte', value: '2024-06-30' }])).toEqual(new Set(['vacation.txt', 'security.txt']));
    const ranged = await search({ query: 'refund', searchMode: 'hybrid', vectorWeight: 0, tagFilters: [{ tagName: 'published', operator: 'gt', value: '2024-12-31' }] });
    expect(names(ranged)).toEqual(['markup.txt']);
  });
});

describe('bad inputs', () => {
  it('answers each with 400 in the documented error shape, naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ query: 'x', offset: -1 }, 'offset'],
      [{ query: 'x', offset: 1001 }, 'offset'],
      [{ query: 'x', offset: 1.5 }, 'offset'],
      [{ query: 'x', offset: 'two' }, 'offset'],
      [{ query: 'x', offset: 2, rerankerEnabled: true }, 'offset'],
      [{ query: 'x', searchMode: 'hybrid', vectorWeight: -0.1 }, 'vectorWeight'],
      [{ query: 'x', searchMode: 'hybrid', vectorWeight: 1.5 }, 'vectorWeight'],
      [{ query: 'x', searchMode: 'hybrid', vectorWeight: 'high' }, 'vectorWeight'],
      [{ query: 'x', searchMode: 'vector', vectorWeight: 0.3 }, 'vectorWeight'],
      [{ tagFilters: [{ tagName: 'priority', value: 1 }], vectorWeight: 0.3 }, 'vectorWeight'],
      [{ query: 'x', searchMode: 'hybrid', typoTolerance: 'yes' }, 'typoTolerance'],
      [{ query: 'x', searchMode: 'vector', typoTolerance: true }, 'typoTolerance'],
      [{ query: 'x', highlight: 1 }, 'highlight'],
      [{ tagFilters: [{ tagName: 'priority', value: 1 }], highlight: true }, 'highlight'],
      [{ query: 'x', tagFilters: [{ tagName: 'priority', operator: 'gt', value: 'many' }] }, 'value'],
      [{ query: 'x', tagFilters: [{ tagName: 'priority', operator: 'gt', value: 1, valueTo: 3 }] }, 'valueTo'],
      [{ query: 'x', tagFilters: [{ tagName: 'priority', operator: 'between', value: 4, valueTo: 2 }] }, 'valueTo'],
      [{ query: 'x', tagFilters: [{ tagName: 'priority', operator: 'between', value: 1, valueTo: 'z' }] }, 'valueTo'],
      [{ query: 'x', tagFilters: [{ tagName: 'published', operator: 'lt', value: '2024-02-30' }] }, 'value'],
      [{ query: 'x', tagFilters: [{ tagName: 'published', operator: 'between', value: '2024-05-01', valueTo: '2024-04-01' }] }, 'valueTo'],
      [{ query: 'x', tagFilters: [{ tagName: 'dept', operator: 'gt', value: 'a' }] }, 'operator'],
    ];
    for (const [body, field] of cases) {
      const r = await search(body);
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'BAD_REQUEST', message: expect.any(String) });
      expect(JSON.stringify(r.body.error.details), JSON.stringify(body)).toContain(field);
    }
  });
});

describe('the full-text leg', () => {
  it('ranks exactly as FTS5 ORDER BY rank did, on a fixed corpus (SQLite)', async () => {
    const store = s.services.store;
    const reader = (store as any).knowledgeChunks.db;
    if (reader.dialect.name !== 'sqlite') return;
    const base = await createBase(s, { name: 'Fixed corpus' });
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango'.split(' ');
    let x = 7;
    const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>>= 0));
    const at = new Date().toISOString();
    await store.transaction(async (tx) => {
      const docId = 'kd_fixedcorpus';
      await tx.knowledgeDocuments.insert({
        id: docId, knowledgeBaseId: base.id, workspaceId: ws, filename: 'fixed.txt', fileSize: 0, mimeType: 'text/plain', blobKey: null, sourceFileId: null,
        processingStatus: 'completed', processingError: null, processingStartedAt: at, processingCompletedAt: at, processingAttempt: 1, processingOptions: null,
        chunkCount: 600, tokenCount: 0, characterCount: 0, enabled: true, connectorId: null, connectorType: null, sourceUrl: null, externalId: null,
        contentHash: null, userExcluded: false, tags: {}, uploadedAt: at, updatedAt: at,
      });
      for (let i = 0; i < 600; i++) {
        const content = Array.from({ length: 5 + (next() % 40) }, () => words[next() % words.length]).join(' ');
        await tx.knowledgeChunks.insert({ id: `kc_fixed${i}`, documentId: docId, knowledgeBaseId: base.id, chunkIndex: i, content, tokenCount: 10, enabled: true, startOffset: 0, endOffset: content.length, embedding: new Uint8Array(0), at });
      }
    });
    const index = reader.dialect.fullTextIndex(CHUNK_TEXT_INDEX);
    for (const q of ['alpha', 'bravo charlie', 'delta echo foxtrot golf', '"hotel india" kilo', 'lima -mike', 'november oscar papa quebec romeo sierra tango']) {
      const text = parseTextQuery(q)!;
      const now: { key: number; score: number }[] = await index.search(reader, text, 200);
      const match = `(${text.optional.map((w) => `"${w.join(' ')}"`).join(' OR ')})`;
      const fts = text.required.length ? `${text.required.map((w) => `"${w.join(' ')}"`).join(' AND ')} AND ${match}` : match;
      const full = text.excluded.length ? `${fts} NOT (${text.excluded.map((w) => `"${w.join(' ')}"`).join(' OR ')})` : fts;
      const before = await reader.all(`SELECT rowid AS key, rank AS score FROM ${CHUNK_TEXT_INDEX} WHERE ${CHUNK_TEXT_INDEX} MATCH ? ORDER BY rank LIMIT 200`, [full]);
      expect(now.length, q).toBeGreaterThan(0);
      // The same rows with the same scores; rows of equal score may come in either order.
      expect(now.map((h) => h.score), q).toEqual(before.map((r: any) => Number(r.score)));
      const byScore = (xs: { key: number; score: number }[]) => xs.map((h) => `${h.score}:${h.key}`).sort();
      expect(byScore(now), q).toEqual(byScore(before.map((r: any) => ({ key: Number(r.key), score: Number(r.score) }))));
    }
  });
});

// Chunks (list, create, read, edit with re-embedding, delete, bulk) and search (vector, hybrid, tag filters,
// the documented bad inputs), through HTTP and the official CLI.
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';

let s: TestServer;
let ws: string;
let kb: any;
let docs: Record<string, any> = {};

const TEXTS: Record<string, string> = {
  'refunds.txt': 'Refund policy. Customers can request a refund within thirty days of purchase. Refunds are paid back to the original card.',
  'vacation.txt': 'Vacation and holidays. Employees receive twenty-five days of paid leave per year and may carry five days over.',
  'security.txt': 'Password security. Passwords must be rotated every ninety days and two-factor authentication is mandatory for admins.',
  'kitchen.txt': 'The office kitchen has a coffee machine, a fridge and a microwave. Please clean your dishes after lunch.',
};

beforeAll(async () => {
  s = await startTestServer();
  ws = s.workspaceId;
  kb = await createBase(s, { name: 'Search KB' });
  const at = new Date().toISOString();
  await s.services.store.transaction(async (tx) => {
    if ((await tx.knowledgeBases.tags(kb.id)).length === 0) {
      await tx.knowledgeBases.insertTag({ id: 'tg_dept', knowledgeBaseId: kb.id, tagSlot: 'tag1', displayName: 'dept', fieldType: 'text', createdAt: at, updatedAt: at });
      await tx.knowledgeBases.insertTag({ id: 'tg_prio', knowledgeBaseId: kb.id, tagSlot: 'number1', displayName: 'priority', fieldType: 'number', createdAt: at, updatedAt: at });
    }
  });
  const depts: Record<string, string> = { 'refunds.txt': 'finance', 'vacation.txt': 'hr', 'security.txt': 'it', 'kitchen.txt': 'facilities' };
  for (const [name, text] of Object.entries(TEXTS)) {
    const session = await uploadDocument(s, kb.id, name, text, 'text/plain', { tag1: depts[name] });
    docs[name] = await waitForDocument(s, kb.id, session.document.id);
    expect(docs[name].processingStatus).toBe('completed');
  }
  await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${docs['security.txt'].id}`, { workspaceId: ws, number1: 1 });
});
afterAll(async () => s.stop());

const search = (body: Record<string, unknown>) => s.call('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: [kb.id], ...body });

describe('search', () => {
  it('vector search ranks the semantically closest chunk first, with the documented result shape', async () => {
    const r = await search({ query: 'how do I get my money back', searchMode: 'vector', topK: 3 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ query: 'how do I get my money back', knowledgeBaseIds: [kb.id], topK: 3, rerankerStatus: 'not_requested' });
    const top = r.body.data.results[0];
    expect(top).toMatchObject({ knowledgeBaseId: kb.id, documentId: docs['refunds.txt'].id, documentName: 'refunds.txt', sourceUrl: null, chunkIndex: 0, rank: 1 });
    expect(top.metadata).toEqual({ dept: 'finance', priority: null });
    expect(top.similarity).toBeGreaterThan(0);
    expect(top.rankScore).toBe(top.similarity);
    expect(r.body.data.totalResults).toBe(r.body.data.results.length);
    expect(r.body.data.results.map((x: any) => x.rank)).toEqual(r.body.data.results.map((_: any, i: number) => i + 1));
  });

  it('hybrid fuses the full-text leg (phrases, negation) by RRF and is the default mode', async () => {
    const r = await search({ query: 'two-factor authentication' });
    expect(r.status).toBe(200);
    expect(r.body.data.results[0].documentId).toBe(docs['security.txt'].id);
    // Fused scores are RRF sums: at most 2/(60+1).
    expect(r.body.data.results[0].rankScore).toBeLessThanOrEqual(2 / 61 + 1e-9);
    const phrase = await search({ query: '"coffee machine"', searchMode: 'hybrid', topK: 1 });
    expect(phrase.body.data.results[0].documentId).toBe(docs['kitchen.txt'].id);
    const negated = await search({ query: 'days -vacation -refund', searchMode: 'hybrid' });
    expect(negated.status).toBe(200);
    expect(negated.body.data.results[0].documentId).toBe(docs['security.txt'].id);
  });

  it('tag filters apply in both legs; tag-only search returns similarity 1', async () => {
    const hr = await search({ query: 'refund money', tagFilters: [{ tagName: 'dept', value: 'hr' }] });
    expect(hr.body.data.results.map((x: any) => x.documentId)).toEqual([docs['vacation.txt'].id]);
    const onlyTags = await search({ tagFilters: [{ tagName: 'priority', operator: 'gte', value: 1 }] });
    expect(onlyTags.status, onlyTags.text).toBe(200);
    expect(onlyTags.body.data.results).toHaveLength(1);
    expect(onlyTags.body.data.results[0]).toMatchObject({ documentId: docs['security.txt'].id, similarity: 1 });
    const starts = await search({ tagFilters: [{ tagName: 'dept', operator: 'starts_with', value: 'FAC' }], rerankerEnabled: true });
    expect(starts.body.data.results[0].documentId).toBe(docs['kitchen.txt'].id);
    expect(starts.body.data.rerankerStatus).toBe('skipped');
    // The text operators ignore case, and tell each document apart.
    const ids = async (operator: string, value: string) =>
      new Set((await search({ tagFilters: [{ tagName: 'dept', operator, value }], topK: 10 })).body.data.results.map((x: any) => x.documentId));
    expect(await ids('contains', 'NAN')).toEqual(new Set([docs['refunds.txt'].id]));
    expect(await ids('ends_with', 'ITIES')).toEqual(new Set([docs['kitchen.txt'].id]));
    expect(await ids('not_contains', 'i')).toEqual(new Set([docs['vacation.txt'].id]));
    expect((await search({ query: 'x', rerankerEnabled: true })).body.data.rerankerStatus).toBe('unavailable');
  });

  it('leaves out disabled documents and chunks', async () => {
    await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${docs['kitchen.txt'].id}`, { workspaceId: ws, enabled: false });
    const r = await search({ query: 'coffee machine fridge microwave', searchMode: 'hybrid' });
    expect(r.body.data.results.map((x: any) => x.documentId)).not.toContain(docs['kitchen.txt'].id);
    await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${docs['kitchen.txt'].id}`, { workspaceId: ws, enabled: true });
    expect((await search({ query: 'coffee machine fridge microwave' })).body.data.results[0].documentId).toBe(docs['kitchen.txt'].id);
  });

  it('answers the documented bad inputs with 400 or 404', async () => {
    const many = Array.from({ length: 21 }, (_, i) => `kb_${i}`);
    expect((await search({ knowledgeBaseIds: many, query: 'x' })).status).toBe(400);
    expect((await search({ query: 'x'.repeat(32769) })).status).toBe(400);
    expect((await search({ query: 'x', topK: 0 })).status).toBe(400);
    expect((await search({ query: 'x', topK: 101 })).status).toBe(400);
    expect((await search({})).status).toBe(400);
    expect((await search({ query: 'x', searchMode: 'semantic' })).status).toBe(400);
    const unknownTag = await search({ query: 'x', tagFilters: [{ tagName: 'nope', value: 'a' }] });
    expect(unknownTag.status).toBe(400);
    expect(unknownTag.body.error.message).toMatch(/nope/);
    expect((await search({ query: 'x', tagFilters: [{ tagName: 'priority', operator: 'contains', value: 1 }] })).status).toBe(400);
    expect((await search({ query: 'x', tagFilters: [{ tagName: 'priority', operator: 'between', value: 1 }] })).status).toBe(400);
    expect((await search({ query: 'x', tagFilters: [{ tagName: 'dept', fieldType: 'number', value: 1 }] })).status).toBe(400);
    expect((await search({ query: 'x', tagFilters: Array(11).fill({ tagName: 'dept', value: 'a' }) })).status).toBe(400);
    expect((await search({ knowledgeBaseIds: 'kb_missing', query: 'x' })).status).toBe(404);
    // Bases embedded with different models cannot be searched together.
    const other = await createBase(s, { name: 'Other model' });
    const raw = new DatabaseSync(s.services.config.databaseFile);
    raw.prepare("UPDATE knowledge_bases SET embedding_model = 'text-embedding-3-small', embedding_dimension = 1536 WHERE id = ?").run(other.id);
    raw.close();
    const mixed = await search({ knowledgeBaseIds: [kb.id, other.id], query: 'x' });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.message).toMatch(/different models/);
    const foreignModel = await search({ knowledgeBaseIds: [other.id], query: 'x' });
    expect(foreignModel.status).toBe(400);
  });
});

describe('chunks', () => {
  it('lists, creates (embedded and searchable at once), edits (re-embedded), disables, deletes and bulk-updates', async () => {
    const doc = docs['vacation.txt'];
    const base = `/api/v2/knowledge/${kb.id}/documents/${doc.id}/chunks`;
    const list = await s.call('GET', `${base}?workspaceId=${ws}`);
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({ chunkIndex: 0, enabled: true, tag1: 'hr', tag2: null, startOffset: 0 });
    const created = await s.call('POST', base, { workspaceId: ws, content: 'Parental leave lasts sixteen weeks at full pay.' });
    expect(created.status, created.text).toBe(200);
    expect(created.body.data).toMatchObject({ chunkIndex: 1, contentLength: 'Parental leave lasts sixteen weeks at full pay.'.length, enabled: true });
    expect(created.body.data.tokenCount).toBeGreaterThan(5);
    const found = await search({ query: 'parental leave weeks', searchMode: 'vector', topK: 1 });
    expect(found.body.data.results[0]).toMatchObject({ documentId: doc.id, chunkIndex: 1 });
    const refreshed = (await s.call('GET', `/api/v2/knowledge/${kb.id}/documents/${doc.id}?workspaceId=${ws}`)).body.data;
    expect(refreshed.chunkCount).toBe(2);

    const id = created.body.data.id;
    const edited = await s.call('PATCH', `${base}/${id}`, { workspaceId: ws, content: 'Bicycles can be parked in the basement garage.' });
    expect(edited.body.data).toMatchObject({ id, content: 'Bicycles can be parked in the basement garage.' });
    const moved = await search({ query: 'where to park my bicycle', searchMode: 'vector', topK: 1 });
    expect(moved.body.data.results[0]).toMatchObject({ documentId: doc.id, chunkIndex: 1 });
    expect((await s.call('PATCH', `${base}/${id}`, { workspaceId: ws, enabled: false })).body.data.enabled).toBe(false);
    const hidden = await search({ query: 'bicycles basement garage', searchMode: 'hybrid' });
    expect(hidden.body.data.results.some((r: any) => r.content.includes('Bicycles'))).toBe(false);
    expect((await s.call('GET', `${base}?workspaceId=${ws}&enabled=false`)).body.data.map((c: any) => c.id)).toEqual([id]);
    expect((await s.call('GET', `${base}?workspaceId=${ws}&search=BICYCLE`)).body.data.map((c: any) => c.id)).toEqual([id]);
    expect((await s.call('GET', `${base}/${id}?workspaceId=${ws}`)).body.data.id).toBe(id);

    const bulk = await s.call('PATCH', base, { workspaceId: ws, operation: 'delete', chunkIds: [id, 'kc_missing'] });
    expect(bulk.body.data).toEqual({ operation: 'delete', processed: 1, errors: [expect.stringContaining('kc_missing')] });
    expect((await s.call('GET', `${base}/${id}?workspaceId=${ws}`)).status).toBe(404);
    const again = await s.call('POST', base, { workspaceId: ws, content: 'Temporary chunk.' });
    expect((await s.call('DELETE', `${base}/${again.body.data.id}?workspaceId=${ws}`)).body.data).toEqual({ id: again.body.data.id, deleted: true });
    expect((await s.call('POST', base, { workspaceId: ws, content: '   ' })).status).toBe(400);
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/documents/kd_nope/chunks?workspaceId=${ws}`)).status).toBe(404);
  });
});

describe('sim knowledge chunks and search (CLI)', () => {
  it('chunks list/create/get/update/delete and search', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
    const doc = docs['refunds.txt'];
    const created = await cli('knowledge', 'chunks', 'create', kb.id, doc.id, '--content', 'Store credit is offered when a refund is not possible.');
    expect(created.code, created.stderr).toBe(0);
    const chunkId = created.json.id;
    const list = await cli('knowledge', 'chunks', 'list', kb.id, doc.id);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.stringify(list.json)).toContain(chunkId);
    expect((await cli('knowledge', 'chunks', 'get', kb.id, doc.id, chunkId)).json.id).toBe(chunkId);
    const up = await cli('knowledge', 'chunks', 'update', kb.id, doc.id, chunkId, '--content', 'Store credit is offered instead of a refund.');
    expect(up.code, up.stderr).toBe(0);
    const found = await cli('knowledge', 'search', '--kb', kb.id, '--query', 'store credit', '--top-k', '2', '--search-mode', 'hybrid');
    expect(found.code, found.stderr).toBe(0);
    expect(JSON.stringify(found.json)).toContain('Store credit');
    const del = await cli('knowledge', 'chunks', 'delete', kb.id, doc.id, chunkId, '--yes');
    expect(del.code, del.stderr).toBe(0);
  });
});

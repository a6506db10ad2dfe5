// Knowledge documents: upload sessions, processing through the durable queue, extraction of the supported
// formats, workspace files, listing, updating, retrying and deleting; and the CLI's documents commands.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { createBase, uploadDocument, waitForDocument, zipOf } from './support/knowledge.ts';

let s: TestServer;
let ws: string;

beforeAll(async () => {
  s = await startTestServer({ UPLOAD_PART_SIZE: '64kb' });
  ws = s.workspaceId;
});
afterAll(async () => s.stop());

const paragraph = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `The ${topic} section ${i} explains how the ${topic} works in practice and what to check first.`).join(' ');

describe('uploading and processing documents', () => {
  it('an uploaded text document goes pending → completed with chunks, counts and tags', async () => {
    const kb = await createBase(s, { chunkingConfig: { maxSize: 200, overlap: 50, minSize: 50 } });
    const text = `${paragraph('billing', 20)}\n\n${paragraph('support', 20)}\n\n${paragraph('security', 20)}`;
    const session = await uploadDocument(s, kb.id, 'guide.txt', text, 'text/plain', { tag1: 'handbook', processingOptions: { recipe: 'plain', lang: 'en' } });
    expect(session).toMatchObject({ status: 'completed', knowledgeBaseId: kb.id, name: 'guide.txt', error: null });
    expect(session.document).toMatchObject({ filename: 'guide.txt', fileSize: text.length, mimeType: 'text/plain', enabled: true });
    expect(['pending', 'processing', 'completed']).toContain(session.document.processingStatus);
    const doc = await waitForDocument(s, kb.id, session.document.id);
    expect(doc).toMatchObject({ processingStatus: 'completed', processingError: null, characterCount: text.length, connectorId: null, sourceUrl: null });
    expect(doc.chunkCount).toBeGreaterThan(3);
    expect(doc.tokenCount).toBeGreaterThan(500);
    expect(doc.processingStartedAt).not.toBeNull();
    expect(doc.processingCompletedAt).not.toBeNull();
    const base = (await s.call('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).body.data;
    expect(base).toMatchObject({ docCount: 1, tokenCount: doc.tokenCount });
    // The token count of every chunk stays within maxSize.
    const store = s.services.store;
    const chunks = await store.knowledgeChunks.list({ documentId: doc.id, search: null, enabled: null, sortBy: 'chunkIndex', order: 'asc', after: null, limit: 1000 });
    expect(chunks.length).toBe(doc.chunkCount);
    for (const c of chunks) {
      expect(c.tokenCount).toBeLessThanOrEqual(200);
      expect(text.slice(c.startOffset, c.endOffset)).toBe(c.content);
    }
    expect((await store.knowledgeDocuments.get(doc.id))!.tags.tag1).toBe('handbook');
  });

  it('reads markdown, csv, json, jsonl, yaml, html, xlsx and pptx', async () => {
    const kb = await createBase(s);
    const xlsx = await zipOf({
      'xl/workbook.xml': '<workbook><sheets><sheet name="Prices" sheetId="1"/></sheets></workbook>',
      'xl/sharedStrings.xml': '<sst><si><t>item</t></si><si><t>price</t></si><si><t>Widget &amp; Co</t></si></sst>',
      'xl/worksheets/sheet1.xml': '<worksheet><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>9.5</v></c></row></sheetData></worksheet>',
    });
    const pptx = await zipOf({
      'ppt/slides/slide1.xml': '<p:sld><a:p><a:r><a:t>Quarterly </a:t></a:r><a:r><a:t>review</a:t></a:r></a:p></p:sld>',
      'ppt/slides/slide2.xml': '<p:sld><a:p><a:r><a:t>Revenue grew 12%</a:t></a:r></a:p></p:sld>',
    });
    const cases: [string, string | Buffer, string, string][] = [
      ['notes.md', '# Title\n\nSome *markdown* text about onboarding.\n\n## Part\n\nMore text.', 'text/markdown', 'onboarding'],
      ['table.csv', 'name,team\nAda,core\nGrace,compilers\n', 'text/csv', 'Grace,compilers'],
      ['data.json', JSON.stringify({ alpha: { note: 'first entry' }, beta: [1, 2, 3] }, null, 2), 'application/json', 'first entry'],
      ['lines.jsonl', '{"q":"what is sim"}\n{"q":"how to deploy"}\n', 'application/x-ndjson', 'how to deploy'],
      ['conf.yaml', 'server:\n  port: 8080\nname: demo service\n', 'application/yaml', 'demo service'],
      ['page.html', '<html><body><h1>Hello</h1><p>Paragraph about <b>refunds</b>.</p><script>x()</script></body></html>', 'text/html', 'refunds'],
      ['book.xlsx', xlsx, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'Widget & Co,9.5'],
      ['deck.pptx', pptx, 'application/vnd.openxmlformats-officedocument.presentationml.presentation', 'Revenue grew 12%'],
    ];
    for (const [name, content, type, expected] of cases) {
      const session = await uploadDocument(s, kb.id, name, content, type);
      const doc = await waitForDocument(s, kb.id, session.document.id);
      expect(doc.processingStatus, `${name}: ${doc.processingError}`).toBe('completed');
      const chunks = await s.services.store.knowledgeChunks.list({ documentId: doc.id, search: null, enabled: null, sortBy: 'chunkIndex', order: 'asc', after: null, limit: 100 });
      expect(chunks.map((c) => c.content).join('\n'), name).toContain(expected);
    }
  });

  it('refuses unsupported types (415) and oversized documents (413) when the upload starts', async () => {
    const kb = await createBase(s);
    const bin = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'a.exe', contentType: 'application/octet-stream', size: 10 });
    expect(bin.status).toBe(415);
    const doc = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'old.doc', contentType: 'application/msword', size: 10 });
    expect(doc.status).toBe(415);
    const big = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'big.txt', contentType: 'text/plain', size: 101 * 1024 * 1024 });
    expect(big.status).toBe(413);
    const archived = await createBase(s, { name: 'gone' });
    await s.call('DELETE', `/api/v2/knowledge/${archived.id}?workspaceId=${ws}`);
    const gone = await s.call('POST', `/api/v2/knowledge/${archived.id}/documents/uploads`, { workspaceId: ws, name: 'a.txt', contentType: 'text/plain', size: 1 });
    expect(gone.status).toBe(404);
  });

  it('a corrupt document fails with processingError and no chunks; retryProcessing re-queues it', async () => {
    const kb = await createBase(s);
    const session = await uploadDocument(s, kb.id, 'broken.pptx', Buffer.from('this is not a zip file'), 'application/vnd.openxmlformats-officedocument.presentationml.presentation');
    const doc = await waitForDocument(s, kb.id, session.document.id);
    expect(doc).toMatchObject({ processingStatus: 'failed', chunkCount: 0, tokenCount: 0 });
    expect(doc.processingError).toMatch(/not a valid Office Open XML/);
    const empty = await uploadDocument(s, kb.id, 'blank.txt', '   \n\n  ');
    expect((await waitForDocument(s, kb.id, empty.document.id)).processingError).toMatch(/no text/);

    const retried = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${doc.id}`, { workspaceId: ws, retryProcessing: true });
    expect(retried.status).toBe(200);
    expect(retried.body.data).toMatchObject({ id: doc.id, queued: true, processingStatus: 'pending' });
    expect((await waitForDocument(s, kb.id, doc.id)).processingStatus).toBe('failed');
    const mixed = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${doc.id}`, { workspaceId: ws, retryProcessing: true, enabled: false });
    expect(mixed.status).toBe(400);
  });

  it('upload session errors: wrong token 403, missing bytes 409, abort, a files token cannot complete it', async () => {
    const kb = await createBase(s);
    const created = (await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'a.txt', contentType: 'text/plain', size: 5 })).body.data;
    const complete = (token: string) =>
      s.request(`/api/v2/knowledge/${kb.id}/documents/uploads/${created.session.id}/complete?workspaceId=${ws}`, { method: 'POST', headers: { 'upload-token': token } });
    expect((await complete('bogus.token')).status).toBe(403);
    expect((await complete(created.uploadToken)).status).toBe(409);
    // The files API does not accept a knowledge upload token for the same session.
    const viaFiles = await s.request(`/api/v2/files/uploads/${created.session.id}/complete?workspaceId=${ws}`, { method: 'POST', headers: { 'upload-token': created.uploadToken } });
    expect(viaFiles.status).toBe(403);
    const aborted = await s.request(`/api/v2/knowledge/${kb.id}/documents/uploads/${created.session.id}?workspaceId=${ws}`, { method: 'DELETE', headers: { 'upload-token': created.uploadToken } });
    expect(aborted.status).toBe(200);
    expect(((await aborted.json()) as any).data).toMatchObject({ status: 'aborted', document: null });
    expect((await complete(created.uploadToken)).status).toBe(409);

    // Multipart: a 150 KiB document goes in three parts signed on request.
    const big = Buffer.from(paragraph('multipart', 1500).slice(0, 150 * 1024));
    const mp = (await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'big.txt', contentType: 'text/plain', size: big.length })).body.data;
    expect(mp.transfer).toMatchObject({ method: 'multipart', partCount: 3 });
    const urls = await s.request(`/api/v2/knowledge/${kb.id}/documents/uploads/${mp.session.id}/parts?workspaceId=${ws}`, {
      method: 'POST',
      headers: { 'upload-token': mp.uploadToken, 'content-type': 'application/json' },
      body: JSON.stringify({ partNumbers: [1, 2, 3] }),
    });
    const parts = ((await urls.json()) as any).data.parts;
    for (const p of parts) {
      const slice = big.subarray((p.partNumber - 1) * mp.transfer.partSize, p.partNumber * mp.transfer.partSize);
      expect((await fetch(p.url, { method: 'PUT', headers: p.headers, body: slice })).status).toBe(200);
    }
    const done = await s.request(`/api/v2/knowledge/${kb.id}/documents/uploads/${mp.session.id}/complete?workspaceId=${ws}`, { method: 'POST', headers: { 'upload-token': mp.uploadToken } });
    const body = ((await done.json()) as any).data;
    expect(body.document.fileSize).toBe(big.length);
    expect((await waitForDocument(s, kb.id, body.document.id)).processingStatus).toBe('completed');
    // Once the document is recorded, the commit's temporary name (kept only for crash recovery) is gone, as for files.
    expect(fs.existsSync(path.join(s.dataDir, 'files', 'tmp', `commit-${mp.session.id}`))).toBe(false);
  });
});

describe('direct multipart upload', () => {
  it('takes a file part and tag fields; refuses non-multipart bodies, unsupported types and a missing file part', async () => {
    const kb = await createBase(s);
    const url = `/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}`;
    const form = new FormData();
    form.append('tag1', 'direct');
    form.append('file', new Blob(['Direct uploads work for small documents about compasses.'], { type: 'text/plain' }), 'direct.txt');
    const r = await s.request(url, { method: 'POST', body: form });
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.data).toMatchObject({ knowledgeBaseId: kb.id, filename: 'direct.txt', mimeType: 'text/plain', processingStatus: 'pending', fileSize: 'Direct uploads work for small documents about compasses.'.length });
    const doc = await waitForDocument(s, kb.id, body.data.id);
    expect(doc.processingStatus).toBe('completed');
    expect((await s.services.store.knowledgeDocuments.get(doc.id))!.tags.tag1).toBe('direct');

    const json = await s.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(json.status).toBe(415);
    const exe = new FormData();
    exe.append('file', new Blob(['MZ'], { type: 'application/x-msdownload' }), 'tool.exe');
    expect((await s.request(url, { method: 'POST', body: exe })).status).toBe(415);
    const none = new FormData();
    none.append('tag1', 'x');
    expect((await s.request(url, { method: 'POST', body: none })).status).toBe(400);
  });
});

describe('workspace files, listing, updating, deleting', () => {
  it('indexes workspace files with partial success (missing, unsupported in failed; duplicates once)', async () => {
    const kb = await createBase(s);
    const mk = async (name: string, content: string, contentType = 'text/plain') =>
      (await s.call('POST', '/api/v2/files', { workspaceId: ws, name, content, contentType })).body.data;
    const good = await mk('faq.md', '# FAQ\n\nHow do refunds work? Refunds take five days.', 'text/markdown');
    const bad = await mk('image.png', 'not really', 'image/png');
    expect(good.id).toBeTruthy();
    const r = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/from-workspace-files`, {
      workspaceId: ws,
      fileReferences: [good.id, good.key, bad.id, 'wf_missing'],
    });
    expect(r.status).toBe(200);
    expect(r.body.data.added).toEqual([{ documentId: expect.any(String), filename: 'faq.md', mimeType: 'text/markdown', fileSize: good.size }]);
    expect(r.body.data.failed).toEqual([bad.id, 'wf_missing']);
    const doc = await waitForDocument(s, kb.id, r.body.data.added[0].documentId);
    expect(doc.processingStatus).toBe('completed');
    // A workspace key is refused (403).
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws });
    const refused = await s.call('POST', `/api/v2/knowledge/${kb.id}/documents/from-workspace-files`, { workspaceId: ws, fileReferences: [good.id] }, wsKey.key);
    expect(refused.status).toBe(403);
  });

  it('lists with search, enabledFilter, sort, tag filters and cursors; bulk enable/disable; update; delete', async () => {
    const kb = await createBase(s);
    const tag = await s.services.store.transaction(async (tx) => {
      const at = new Date().toISOString();
      await tx.knowledgeBases.insertTag({ id: 'tg_team', knowledgeBaseId: kb.id, tagSlot: 'tag1', displayName: 'team', fieldType: 'text', createdAt: at, updatedAt: at });
      await tx.knowledgeBases.insertTag({ id: 'tg_year', knowledgeBaseId: kb.id, tagSlot: 'number1', displayName: 'year', fieldType: 'number', createdAt: at, updatedAt: at });
      return 'ok';
    });
    expect(tag).toBe('ok');
    const ids: string[] = [];
    for (const [name, team] of [['a.txt', 'core'], ['b.txt', 'ops'], ['c.txt', 'core']] as const) {
      const session = await uploadDocument(s, kb.id, name, paragraph(name, 3), 'text/plain', { tag1: team });
      ids.push(session.document.id);
      await waitForDocument(s, kb.id, session.document.id);
    }
    const list = (q: string) => s.call('GET', `/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}${q}`);
    expect((await list('&sortBy=filename&sortOrder=asc')).body.data.map((d: any) => d.filename)).toEqual(['a.txt', 'b.txt', 'c.txt']);
    const page = await list('&sortBy=filename&sortOrder=asc&limit=2');
    expect(page.body.nextCursor).not.toBeNull();
    expect((await list(`&sortBy=filename&sortOrder=asc&limit=2&cursor=${encodeURIComponent(page.body.nextCursor)}`)).body.data.map((d: any) => d.filename)).toEqual(['c.txt']);
    expect((await list('&search=B.T')).body.data.map((d: any) => d.filename)).toEqual(['b.txt']);
    const filters = encodeURIComponent(JSON.stringify([{ tagName: 'team', operator: 'eq', value: 'core' }]));
    const core = await list(`&tagFilters=${filters}&sortBy=filename&sortOrder=asc`);
    expect(core.body.data.map((d: any) => [d.filename, d.tags])).toEqual([['a.txt', { team: 'core', year: null }], ['c.txt', { team: 'core', year: null }]]);
    expect((await list(`&tagFilters=${encodeURIComponent('[{"tagName":"nope","value":"x"}]')}`)).status).toBe(400);
    expect((await list(`&tagFilters=${encodeURIComponent('[{"tagName":"year","operator":"contains","value":"x"}]')}`)).status).toBe(400);
    expect((await list('&tagFilters=notjson')).status).toBe(400);

    const off = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents`, { workspaceId: ws, operation: 'disable', documentIds: [ids[0], 'kd_missing'] });
    expect(off.body.data).toMatchObject({ operation: 'disable', updatedCount: 1, documentIds: [ids[0]] });
    expect((await list('&enabledFilter=disabled')).body.data.map((d: any) => d.id)).toEqual([ids[0]]);
    const all = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents`, { workspaceId: ws, operation: 'enable', selectAll: true, enabledFilter: 'disabled' });
    expect(all.body.data.updatedCount).toBe(1);
    expect((await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents`, { workspaceId: ws, operation: 'enable' })).status).toBe(400);

    const up = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: ws, filename: 'renamed.txt', enabled: false, tag1: 'infra', number1: 2024 });
    expect(up.status, up.text).toBe(200);
    expect(up.body.data).toMatchObject({ filename: 'renamed.txt', enabled: false, tags: { team: 'infra', year: 2024 } });
    // A slot without a definition, or a value of the wrong type, is a 400.
    expect((await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: ws, tag2: 'x' })).status).toBe(400);
    expect((await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: ws, number1: 'x' })).status).toBe(400);
    expect((await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${ids[1]}`, { workspaceId: ws, date1: '2024-02-30' })).status).toBe(400);

    const del = await s.call('DELETE', `/api/v2/knowledge/${kb.id}/documents/${ids[2]}?workspaceId=${ws}`);
    expect(del.body.data).toEqual({ id: ids[2], deleted: true });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/documents/${ids[2]}?workspaceId=${ws}`)).status).toBe(404);
    expect(await s.services.store.knowledgeChunks.list({ documentId: ids[2]!, search: null, enabled: null, sortBy: 'chunkIndex', order: 'asc', after: null, limit: 10 })).toEqual([]);
  });
});

describe('sim knowledge documents (CLI)', () => {
  it('upload (through the session), list, get, update, delete, from-workspace-files', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
    const kb = await createBase(s, { name: 'CLI docs' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-kb-cli-'));
    try {
      const file = path.join(dir, 'policy.md');
      fs.writeFileSync(file, `# Policy\n\n${paragraph('travel', 10)}`);
      const up = await cli('knowledge', 'documents', 'upload', kb.id, file, '--tag', 'hr', '--recipe', 'markdown');
      expect(up.stderr).toBe('');
      expect(up.code).toBe(0);
      expect(up.json).toMatchObject({ knowledgeBaseId: kb.id, filename: 'policy.md', mimeType: 'text/markdown' });
      await waitForDocument(s, kb.id, up.json.id);
      const list = await cli('knowledge', 'documents', 'list', kb.id);
      expect(list.code).toBe(0);
      expect(JSON.stringify(list.json)).toContain(up.json.id);
      const got = await cli('knowledge', 'documents', 'get', kb.id, up.json.id);
      expect(got.json).toMatchObject({ id: up.json.id, processingStatus: 'completed' });
      const updated = await cli('knowledge', 'documents', 'update', kb.id, up.json.id, '--filename', 'travel.md');
      expect(updated.code, updated.stderr).toBe(0);
      expect(updated.json).toMatchObject({ filename: 'travel.md' });
      const f = (await s.call('POST', '/api/v2/files', { workspaceId: ws, name: 'extra.txt', content: 'Some extra words about lunch.', contentType: 'text/plain' })).body.data;
      const fromFiles = await cli('knowledge', 'from-workspace-files', 'create', kb.id, '--file', f.id);
      expect(fromFiles.code, fromFiles.stderr).toBe(0);
      expect(fromFiles.json.added).toHaveLength(1);
      const del = await cli('knowledge', 'documents', 'delete', kb.id, up.json.id, '--yes');
      expect(del.code, del.stderr).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

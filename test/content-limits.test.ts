// Hostile content never stalls the server. Documents built to hold a parser for minutes (nesting half a million
// levels deep, decompression bombs in PDF, DOCX and XLSX) fail with a message naming the limit they crossed; a
// document that overruns its worker's time budget is retried once and then failed; and all the while the server
// goes on answering, because every parse runs in a content worker, not on the event loop.
import { deflateSync } from 'node:zlib';
import { DatabaseSync } from 'node:sqlite';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument, zipOf } from './support/knowledge.ts';

const MB = 1024 * 1024;

/** A one-page PDF whose content stream is Flate-compressed `inflated` bytes of spaces. */
function pdfBomb(inflated: number): Buffer {
  const data = deflateSync(Buffer.alloc(inflated, 0x20), { level: 9 });
  const head = [
    '%PDF-1.4',
    '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
    '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj',
    '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >> endobj',
    `4 0 obj << /Length ${data.length} /Filter /FlateDecode >>`,
    'stream',
    '',
  ].join('\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), data, Buffer.from('\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n', 'latin1')]);
}

const DOCX_TYPES =
  '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>';

describe('documents built to stall a parser', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ CONTENT_MAX_EXPANDED_BYTES: '16mb' });
  });
  afterAll(() => s?.stop());

  it('fail with the limit they crossed, while the server keeps answering', async () => {
    const kb = await createBase(s);
    const cases: { name: string; type: string; bytes: Buffer; error: RegExp }[] = [
      { name: 'nested.json', type: 'application/json', bytes: Buffer.from('['.repeat(500_000) + ']'.repeat(500_000)), error: /more than 512 levels deep \(the limit set by CONTENT_MAX_DEPTH\)/ },
      { name: 'nested.html', type: 'text/html', bytes: Buffer.from('<div>'.repeat(200_000) + 'deep' + '</div>'.repeat(200_000)), error: /HTML nests elements more than 512 levels deep .*CONTENT_MAX_DEPTH/ },
      { name: 'bomb.pdf', type: 'application/pdf', bytes: pdfBomb(64 * MB), error: /PDF expands to more than 16 MB \(the limit set by CONTENT_MAX_EXPANDED_BYTES\)/ },
      {
        name: 'bomb.docx',
        type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        bytes: await zipOf({ '[Content_Types].xml': DOCX_TYPES, 'word/document.xml': `<w:document>${' '.repeat(64 * MB)}</w:document>` }),
        error: /DOCX expands to more than 16 MB .*CONTENT_MAX_EXPANDED_BYTES/,
      },
      {
        name: 'bomb.xlsx',
        type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
        bytes: await zipOf({ 'xl/workbook.xml': '<workbook/>', 'xl/worksheets/sheet1.xml': `<worksheet>${' '.repeat(64 * MB)}</worksheet>` }),
        error: /workbook expands to more than 16 MB .*CONTENT_MAX_EXPANDED_BYTES/,
      },
    ];
    for (const c of cases) expect(c.bytes.length, c.name).toBeLessThan(4 * MB);
    const docs = [];
    for (const c of cases) docs.push((await uploadDocument(s, kb.id, c.name, c.bytes, c.type)).document);
    // The server answers other requests while the documents are processed.
    let answered = 0;
    const settled = docs.map((d) => waitForDocument(s, kb.id, d.id));
    let done = false;
    void Promise.all(settled).finally(() => (done = true));
    while (!done) {
      expect((await s.call('GET', '/api/v2/meta')).status).toBe(200);
      answered++;
    }
    expect(answered).toBeGreaterThan(0);
    const results = await Promise.all(settled);
    for (const [i, c] of cases.entries()) {
      expect(results[i].processingStatus, c.name).toBe('failed');
      expect(results[i].processingError, c.name).toMatch(c.error);
      expect(results[i].chunkCount, c.name).toBe(0);
    }
  });

  it('file text of a document beyond the limits comes back degraded, saying which limit', async () => {
    const created = await s.ok('POST', '/api/v2/files', { workspaceId: s.workspaceId, name: 'deep.html', content: '<div>'.repeat(5000) + 'x' + '</div>'.repeat(5000) });
    const text = await s.ok('GET', `/api/v2/files/${created.id}/text?workspaceId=${s.workspaceId}`);
    expect(text).toMatchObject({ text: '', degraded: true });
    expect(text.degradedReason).toMatch(/CONTENT_MAX_DEPTH/);
  });

  it('a workflow import nested too deep is refused with a 400, not parsed', async () => {
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    const r = await s.call('POST', '/api/v2/workflows/import', { workspaceId: s.workspaceId, workflow: `{"state":{"blocks":{},"edges":${deep}}}` });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
  });
});

describe('a document that overruns its worker', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Chunking megabytes of text takes far longer than a tenth of a second on any machine.
    s = await startTestServer({ CONTENT_TIMEOUT_MS: '100' });
  });
  afterAll(() => s?.stop());

  it('is retried once, then failed with the limit it overran', async () => {
    const kb = await createBase(s);
    const words = Array.from({ length: 400_000 }, (_, i) => `word${i % 997}`).join(' ');
    const { document } = await uploadDocument(s, kb.id, 'long.txt', words);
    const doc = await waitForDocument(s, kb.id, document.id);
    expect(doc.processingStatus).toBe('failed');
    expect(doc.processingError).toMatch(/took longer than 0\.1 s and was stopped \(the limit set by CONTENT_TIMEOUT_MS\)/);
    const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'), { readOnly: true });
    const row = db.prepare('SELECT processing_attempt AS attempts, processing_interruptions AS cut FROM knowledge_documents WHERE id = ?').get(document.id) as { attempts: number; cut: number };
    db.close();
    // Two attempts, each cut off (the second ran in the worker that replaced the first).
    expect(row).toEqual({ attempts: 2, cut: 2 });
  });
});

describe('a workflow document too costly to read', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ CONTENT_WORKER_MEMORY_MB: '32' });
  });
  afterAll(() => s?.stop());

  it('is refused with a 413 naming the limit, and the server answers on', async () => {
    const blocks: Record<string, unknown> = {};
    for (let i = 0; i < 35_000; i++) {
      blocks[`b${i}`] = { id: `b${i}`, type: 'function', name: `Step ${i}`, position: { x: i, y: i }, subBlocks: { code: { id: 'code', type: 'code', value: `return ${i};` } }, outputs: {}, enabled: true };
    }
    const workflow = JSON.stringify({ blocks, edges: [] });
    // Within the 10 MB request body limit, so the document reaches its worker.
    expect(JSON.stringify({ workflow }).length).toBeLessThan(10 * MB);
    const r = await s.call('POST', '/api/v2/workflows/import', { workspaceId: s.workspaceId, workflow });
    expect(r.status, r.text.slice(0, 300)).toBe(413);
    expect(r.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { reason: 'memory' } });
    expect(r.body.error.message).toMatch(/more than 32 MB of memory .*CONTENT_WORKER_MEMORY_MB/);
    expect((await s.call('GET', '/api/v2/meta')).status).toBe(200);
    const listed = await s.ok('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}`);
    expect(listed).toEqual([]);
  });
});

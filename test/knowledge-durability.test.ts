// The processing queue under failure: an OpenAI-compatible embedding endpoint that is down (documents fail
// with a clear error and can be retried), and a server process killed mid-processing (the document is processed
// again once its lease runs out, never stuck, never with doubled chunks). A fake endpoint on loopback stands in
// for the provider. The servers here use a short lease (LEASE_TTL_MS), so a dead worker's document is reclaimed soon.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { PATIENCE_MS, waitUntil } from './support/wait.ts';
import { endsWithFile } from './support/children.ts';

type Mode = 'ok' | 'down' | 'hang';
let rerankDown = false;
let mode: Mode = 'ok';
let requests = 0;
let inputs = 0;
let endpoint: http.Server;
let endpointUrl: string;
const hanging: http.ServerResponse[] = [];

function fakeVector(text: string): number[] {
  const v = new Array(8).fill(0);
  for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
    let h = 7;
    for (const ch of word) h = (h * 31 + ch.charCodeAt(0)) % 8;
    v[h] += 1;
  }
  return v.map((x, i) => x + (i === 0 ? 0.01 : 0));
}

beforeAll(async () => {
  endpoint = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/rerank') {
        const parsed = JSON.parse(body) as { documents: string[]; top_n: number; query: string };
        if (rerankDown) return void res.writeHead(500).end('{}');
        // Prefers documents that mention the last word of the query, then later candidates.
        const last = parsed.query.split(' ').at(-1)!;
        const results = parsed.documents.map((d, index) => ({ index, relevance_score: (d.includes(last) ? 1 : 0) + index / 1000 }));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ results: results.sort((a, b) => b.relevance_score - a.relevance_score).slice(0, parsed.top_n) }));
        return;
      }
      requests++;
      if (mode === 'down') {
        res.writeHead(503).end('{"error":"down"}');
        return;
      }
      if (mode === 'hang') {
        hanging.push(res);
        return;
      }
      const parsed = JSON.parse(body) as { input: string[]; model: string };
      inputs += parsed.input.length;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', model: parsed.model, data: parsed.input.map((t, index) => ({ object: 'embedding', index, embedding: fakeVector(t) })) }));
    });
  });
  await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', () => r()));
  endpointUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  for (const res of hanging) res.destroy();
  endpoint.closeAllConnections();
  await new Promise((r) => endpoint.close(r));
});

const text = Array.from({ length: 60 }, (_, i) => `Paragraph ${i} talks about invoices, refunds and the billing calendar of the company.`).join('\n\n');

describe('an OpenAI-compatible embedding endpoint', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ KB_EMBEDDING_BASE_URL: endpointUrl, KB_EMBEDDING_MODEL: 'fake-embed', KB_EMBEDDING_DIMENSIONS: '8', KB_EMBEDDING_BATCH_SIZE: '4', KB_EMBEDDING_MAX_RETRIES: '1' });
  });
  afterAll(async () => s.stop());

  it('records its model and width on new bases, embeds in batches, and a down endpoint fails documents clearly until retried', async () => {
    const kb = await createBase(s, { chunkingConfig: { maxSize: 100, overlap: 0 } });
    expect(kb).toMatchObject({ embeddingModel: 'fake-embed', embeddingDimension: 8 });
    mode = 'ok';
    requests = 0;
    inputs = 0;
    const ok = await uploadDocument(s, kb.id, 'billing.txt', text);
    const done = await waitForDocument(s, kb.id, ok.document.id);
    expect(done.processingStatus).toBe('completed');
    expect(inputs).toBe(done.chunkCount);
    expect(requests).toBe(Math.ceil(done.chunkCount / 4));

    mode = 'down';
    requests = 0;
    const failing = await uploadDocument(s, kb.id, 'second.txt', text);
    const failed = await waitForDocument(s, kb.id, failing.document.id);
    expect(failed.processingStatus).toBe('failed');
    expect(failed.processingError).toMatch(/after 2 attempts.*503/);
    expect(requests).toBe(2);
    expect(failed.chunkCount).toBe(0);

    mode = 'ok';
    const retry = await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${failed.id}`, { workspaceId: s.workspaceId, retryProcessing: true });
    expect(retry.status).toBe(200);
    expect((await waitForDocument(s, kb.id, failed.id)).processingStatus).toBe('completed');
  });
});

describe('reranking through a configured endpoint', () => {
  it('reorders the candidates (rerankerStatus applied) and falls back to the search order when it fails', async () => {
    const s = await startTestServer({ KB_RERANK_BASE_URL: endpointUrl });
    try {
      const kb = await createBase(s);
      const words = ['apples', 'pears', 'plums', 'cherries'];
      for (const w of words) {
        const up = await uploadDocument(s, kb.id, `${w}.txt`, `Orchard notes about fruit trees and ${w} growing in the garden.`);
        await waitForDocument(s, kb.id, up.document.id);
      }
      const search = (extra: Record<string, unknown>) =>
        s.call('POST', '/api/v2/knowledge/search', { workspaceId: s.workspaceId, knowledgeBaseIds: kb.id, query: 'fruit trees plums', topK: 2, ...extra });
      rerankDown = false;
      const applied = await search({ rerankerEnabled: true, rerankerInputCount: 4 });
      expect(applied.status, applied.text).toBe(200);
      expect(applied.body.data.rerankerStatus).toBe('applied');
      expect(applied.body.data.results).toHaveLength(2);
      expect(applied.body.data.results[0]).toMatchObject({ documentName: 'plums.txt', rank: 1 });
      expect(applied.body.data.results[0].rerankerScore).toBeGreaterThanOrEqual(1);
      expect(applied.body.data.results[1].rerankerScore).toBeLessThan(1);
      rerankDown = true;
      const fallback = await search({ rerankerEnabled: true });
      expect(fallback.body.data.rerankerStatus).toBe('unavailable');
      expect(fallback.body.data.results).toHaveLength(2);
      expect(fallback.body.data.results[0].rerankerScore).toBeUndefined();
      expect((await search({})).body.data.rerankerStatus).toBe('not_requested');
    } finally {
      rerankDown = false;
      await s.stop();
    }
  });
});

describe('a server killed mid-processing', () => {
  const root = path.resolve(import.meta.dirname, '..');
  const KEY = 'sk-owa-knowledge-durability-key-01';
  let dataDir: string;
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-kb-crash-'));
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  function start(): Promise<{ child: ChildProcess; url: string }> {
    const child = endsWithFile(spawn(process.execPath, [path.join(root, 'bin', 'start.js')], {
      env: {
        PATH: process.env.PATH, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', BOOTSTRAP_API_KEY: KEY, LEASE_TTL_MS: '1000',
        KB_EMBEDDING_BASE_URL: endpointUrl, KB_EMBEDDING_MODEL: 'fake-embed', KB_EMBEDDING_DIMENSIONS: '8', KB_EMBEDDING_TIMEOUT_MS: '60000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }));
    let out = '';
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), PATIENCE_MS);
      child.stdout!.on('data', (c) => {
        out += c;
        const m = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve({ child, url: m[1]! });
        }
      });
      child.stderr!.on('data', (c) => (out += c));
      child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
    });
  }

  it('re-processes the document after a restart, with one set of chunks', async () => {
    const first = await start();
    const call = async (url: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
      const r = await fetch(url + p, { method, headers: { 'x-api-key': KEY, ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });
      return { status: r.status, body: (await r.json()) as any };
    };
    const ws = (await call(first.url, 'GET', '/api/v2/workspaces')).body.data[0].id;
    const kb = (await call(first.url, 'POST', '/api/v2/knowledge', { workspaceId: ws, name: 'Crash', chunkingConfig: { maxSize: 100, overlap: 0 } })).body.data;
    mode = 'hang';
    requests = 0;
    const bytes = Buffer.from(text);
    const created = (await call(first.url, 'POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'crash.txt', contentType: 'text/plain', size: bytes.length })).body.data;
    await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: bytes });
    const doc = (await call(first.url, 'POST', `/api/v2/knowledge/${kb.id}/documents/uploads/${created.session.id}/complete?workspaceId=${ws}`, undefined, { 'upload-token': created.uploadToken })).body.data.document;
    // Wait until the worker is inside the embedding call, then kill the process outright.
    await waitUntil('the worker to call the embedding endpoint', () => requests > 0);
    expect((await call(first.url, 'GET', `/api/v2/knowledge/${kb.id}/documents/${doc.id}?workspaceId=${ws}`)).body.data.processingStatus).toBe('processing');
    first.child.removeAllListeners('exit');
    const exited = new Promise((r) => first.child.on('exit', r));
    first.child.kill('SIGKILL');
    await exited;
    for (const res of hanging.splice(0)) res.destroy();

    mode = 'ok';
    const second = await start();
    try {
      const data = await waitUntil('the document to be processed again', async () => {
        const d = (await call(second.url, 'GET', `/api/v2/knowledge/${kb.id}/documents/${doc.id}?workspaceId=${ws}`)).body.data;
        return d.processingStatus === 'completed' || d.processingStatus === 'failed' ? d : null;
      });
      expect(data.processingStatus).toBe('completed');
      expect(data.chunkCount).toBeGreaterThan(1);
      const db = new DatabaseSync(path.join(dataDir, 'workspace.sqlite'), { readOnly: true });
      const rows = db.prepare('SELECT chunk_index, COUNT(*) AS n FROM knowledge_chunks WHERE document_id = ? GROUP BY chunk_index').all(doc.id) as { n: number }[];
      const fts = db.prepare('SELECT COUNT(*) AS n FROM knowledge_chunks_fts WHERE rowid IN (SELECT seq FROM knowledge_chunks WHERE document_id = ?)').get(doc.id) as { n: number };
      db.close();
      expect(rows.length).toBe(data.chunkCount);
      expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
      expect(Number(fts.n)).toBe(data.chunkCount);
    } finally {
      second.child.removeAllListeners('exit');
      const exited2 = new Promise((r) => second.child.on('exit', r));
      second.child.kill('SIGTERM');
      await exited2;
    }
  });

  it('a document cut off by a dead process twice is failed once the lease runs out, not queued again', async () => {
    const call = async (url: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
      const r = await fetch(url + p, { method, headers: { 'x-api-key': KEY, ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });
      return { status: r.status, body: (await r.json()) as any };
    };
    const kill = async (child: ChildProcess) => {
      child.removeAllListeners('exit');
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGKILL');
      await exited;
      for (const res of hanging.splice(0)) res.destroy();
    };
    mode = 'hang';
    const first = await start();
    const ws = (await call(first.url, 'GET', '/api/v2/workspaces')).body.data[0].id;
    const kb = (await call(first.url, 'POST', '/api/v2/knowledge', { workspaceId: ws, name: 'Twice', chunkingConfig: { maxSize: 100, overlap: 0 } })).body.data;
    const bytes = Buffer.from(text);
    const created = (await call(first.url, 'POST', `/api/v2/knowledge/${kb.id}/documents/uploads`, { workspaceId: ws, name: 'twice.txt', contentType: 'text/plain', size: bytes.length })).body.data;
    await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: bytes });
    const doc = (await call(first.url, 'POST', `/api/v2/knowledge/${kb.id}/documents/uploads/${created.session.id}/complete?workspaceId=${ws}`, undefined, { 'upload-token': created.uploadToken })).body.data.document;
    const docPath = `/api/v2/knowledge/${kb.id}/documents/${doc.id}?workspaceId=${ws}`;
    // Each time: wait until the worker is inside the (hanging) embedding call, then kill the process outright.
    let server = first;
    for (let round = 0; round < 2; round++) {
      if (round > 0) server = await start();
      requests = 0;
      while (requests === 0) await new Promise((r) => setTimeout(r, 25));
      expect((await call(server.url, 'GET', docPath)).body.data.processingStatus).toBe('processing');
      await kill(server.child);
    }
    mode = 'ok';
    requests = 0;
    const third = await start();
    try {
      const data = await waitUntil('the dead worker\'s lease to be reclaimed', async () => {
        const d = (await call(third.url, 'GET', docPath)).body.data;
        return d.processingStatus === 'processing' ? null : d;
      });
      expect(data.processingStatus).toBe('failed');
      expect(data.processingError).toMatch(/cut off twice .* not retried again/);
      expect(requests).toBe(0);
      // A retry asked for by a user starts afresh.
      expect((await call(third.url, 'PATCH', `/api/v2/knowledge/${kb.id}/documents/${doc.id}`, { workspaceId: ws, retryProcessing: true })).status).toBe(200);
      let status = 'pending';
      while (status !== 'completed' && status !== 'failed') {
        status = (await call(third.url, 'GET', docPath)).body.data.processingStatus;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(status).toBe('completed');
    } finally {
      third.child.removeAllListeners('exit');
      const exited = new Promise((r) => third.child.on('exit', r));
      third.child.kill('SIGTERM');
      await exited;
    }
  }, 180_000);
});

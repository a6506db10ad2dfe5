// BLOB_DIR shared by several servers: two server processes, each with its own DATA_DIR (staging, temporary
// files, lock) and one database between them (a shared SQLite file standing in for the shared Postgres of
// issue 20), serve each other's files; and the purge of one never takes a blob the other is committing.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskBlobStore } from '../src/files/disk-blob-store.ts';
import { spawnServer, exited, type SpawnedServer } from './support/children.ts';

const KEY = 'sk-owa-shared-blob-dir-test-key-0123456789';
const SECRETS_KEY = Buffer.alloc(32, 9).toString('base64');
const dirs: string[] = [];
const tempDir = (prefix: string, base = os.tmpdir()) => {
  const dir = fs.mkdtempSync(path.join(base, prefix));
  dirs.push(dir);
  return dir;
};
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function api(p: SpawnedServer) {
  return async (method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(p.url + pathname, {
      method,
      headers: { 'X-API-Key': KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
}
async function data(res: Promise<Response>): Promise<any> {
  const r = await res;
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${r.status} ${text}`);
  return JSON.parse(text).data;
}

describe('two servers on one BLOB_DIR', () => {
  it('a file uploaded through one downloads through the other, and its bytes are in BLOB_DIR only', async () => {
    const blobDir = tempDir('owa-shared-blobs-');
    const database = path.join(tempDir('owa-shared-db-'), 'workspace.sqlite');
    const env = (dataDir: string) => ({
      PATH: process.env.PATH ?? '', DATA_DIR: dataDir, DATABASE_FILE: database, BLOB_DIR: blobDir, SECRETS_KEY, BOOTSTRAP_API_KEY: KEY,
      PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'test', UPLOAD_PART_SIZE: '1kb', FILE_PURGE_INTERVAL_SECONDS: '0',
    });
    const [dirA, dirB] = [tempDir('owa-server-a-'), tempDir('owa-server-b-')];
    // One after the other: the first creates the schema and the bootstrap user in the shared database.
    const a = await spawnServer(env(dirA));
    const b = await spawnServer(env(dirB));
    try {
      const [callA, callB] = [api(a), api(b)];
      const ws = (await data(callA('GET', '/api/v2/workspaces')))[0].id;

      const written = await data(callA('POST', '/api/v2/files', { workspaceId: ws, name: 'from-a.txt', content: 'written through server A' }));
      const viaB = await callB('GET', `/api/v2/files/${written.id}?workspaceId=${ws}`);
      expect(viaB.status).toBe(200);
      expect(await viaB.text()).toBe('written through server A');

      // The other way, through an upload session in parts sent to B.
      const bytes = Buffer.from(Array.from({ length: 2500 }, (_, i) => i % 253));
      const up = await data(callB('POST', '/api/v2/files/uploads', { workspaceId: ws, name: 'from-b.bin', contentType: 'application/octet-stream', size: bytes.length }));
      const { parts } = await data(callB('POST', `/api/v2/files/uploads/${up.session.id}/parts?workspaceId=${ws}`, { partNumbers: [1, 2, 3] }, { 'upload-token': up.uploadToken }));
      for (const p of parts) expect((await fetch(p.url, { method: 'PUT', headers: p.headers, body: bytes.subarray((p.partNumber - 1) * 1024, p.partNumber * 1024) })).status).toBe(200);
      const done = await data(callB('POST', `/api/v2/files/uploads/${up.session.id}/complete?workspaceId=${ws}`, undefined, { 'upload-token': up.uploadToken }));
      const viaA = await callA('GET', `/api/v2/files/${done.file.id}?workspaceId=${ws}`, undefined, { range: 'bytes=1000-1099' });
      expect(viaA.status).toBe(206);
      expect(Buffer.from(await viaA.arrayBuffer()).equals(bytes.subarray(1000, 1100))).toBe(true);

      for (const key of [sha('written through server A'), sha(bytes)]) {
        expect(fs.existsSync(path.join(blobDir, key.slice(0, 2), key.slice(2, 4), key))).toBe(true);
        for (const dataDir of [dirA, dirB]) expect(fs.existsSync(path.join(dataDir, 'files', 'blobs'))).toBe(false);
      }
    } finally {
      for (const p of [a, b]) p.child.kill('SIGTERM');
      await Promise.all([exited(a.child), exited(b.child)]);
    }
  });
});

describe('the purge and a writer on another server', () => {
  const HOUR = 3600_000;
  const twoStores = (blobBase = os.tmpdir()) => {
    const blobDir = tempDir('owa-blobs-', blobBase);
    return [new DiskBlobStore(tempDir('owa-staging-'), blobDir), new DiskBlobStore(tempDir('owa-staging-'), blobDir), blobDir] as const;
  };
  const age = (blobDir: string, key: string, ms: number) => {
    const then = new Date(Date.now() - ms);
    fs.utimesSync(path.join(blobDir, key.slice(0, 2), key.slice(2, 4), key), then, then);
  };

  it('finding its content already stored, a writer refreshes the blob, and the purge leaves it', async () => {
    const [first, second, blobDir] = twoStores();
    const stored = await first.write(Readable.from([Buffer.from('shared content')]));
    age(blobDir, stored.key, 2 * HOUR);
    // Another server commits the same content: its row will refer to the blob from now on.
    expect(await second.write(Readable.from([Buffer.from('shared content')]))).toEqual(stored);
    expect(await first.deleteIfUnused(stored.key, Date.now() - HOUR)).toBe(false);
    expect(await first.size(stored.key)).toBe(14);
    // Left alone, old and unreferenced, it goes.
    age(blobDir, stored.key, 2 * HOUR);
    expect(await first.deleteIfUnused(stored.key, Date.now() - HOUR)).toBe(true);
    expect(await second.size(stored.key)).toBe(null);
    expect(fs.readdirSync(path.join(blobDir, 'purging'))).toEqual([]);
  });

  it('an upload committed on one server after the blob went old is protected too (commit links and refreshes)', async () => {
    const [first, second, blobDir] = twoStores();
    const content = Buffer.from('committed in parts');
    await second.writeUploadPart('up_1', 0, content.length, Readable.from([content]));
    const committed = await second.commitUpload('up_1', content.length);
    age(blobDir, committed.key, 2 * HOUR);
    await first.writeUploadPart('up_2', 0, content.length, Readable.from([content]));
    await first.commitUpload('up_2', content.length);
    expect(await second.deleteIfUnused(committed.key, Date.now() - HOUR)).toBe(false);
    await first.discardUpload('up_2');
    await second.discardUpload('up_1');
    const chunks: Buffer[] = [];
    for await (const c of first.read(committed.key)) chunks.push(c);
    expect(Buffer.concat(chunks).equals(content)).toBe(true);
  });

  it('a candidate a dying purge left in purging/ is put back by the next one', async () => {
    const [first, , blobDir] = twoStores();
    const stored = await first.write(Readable.from([Buffer.from('left mid-purge')]));
    const target = path.join(blobDir, stored.key.slice(0, 2), stored.key.slice(2, 4), stored.key);
    const held = path.join(blobDir, 'purging', `${stored.key}.dead-purge`);
    fs.renameSync(target, held);
    const old = new Date(Date.now() - 2 * HOUR);
    fs.utimesSync(held, old, old);
    // Only leftovers older than the grace period: a live purge's candidate is just as young as its rename.
    expect(await first.tidyShared(Date.now() - 10 * HOUR)).toBe(0);
    expect(await first.tidyShared(Date.now() + 1000)).toBe(1);
    expect(fs.existsSync(target)).toBe(true);
    expect(fs.existsSync(held)).toBe(false);
  });

  it('a BLOB_DIR on another filesystem than DATA_DIR: blobs are copied in through incoming/ and linked into place', async (ctx) => {
    if (!fs.existsSync('/dev/shm') || fs.statSync('/dev/shm').dev === fs.statSync(os.tmpdir()).dev) ctx.skip();
    const [first, second, blobDir] = twoStores('/dev/shm');
    const a = await first.write(Readable.from([Buffer.from('across filesystems')]));
    const b = await second.write(Readable.from([Buffer.from('across filesystems')]));
    expect(b).toEqual(a);
    expect(fs.readdirSync(path.join(blobDir, 'incoming'))).toEqual([]);
    expect(await first.size(a.key)).toBe(18);
  });
});

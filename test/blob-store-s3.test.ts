// BLOB_STORE=s3: every family that stores file bytes keeps working with them in an S3-compatible bucket (a
// local s3rver the test starts), and a wrong configuration or bucket is one clear line.
// (TEST_BLOB_STORE=s3 runs any other test file against a bucket as well: test/support/server.ts.)
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { BlobStoreUnavailableError } from '../src/files/blob-store.ts';
import { purgeFiles } from '../src/files/purge.ts';
import { createBackup, restoreBackup } from '../src/ops/backup.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startLocalS3, type LocalS3 } from './support/s3.ts';
import { spawnServer } from './support/children.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { waitUntil } from './support/wait.ts';

let s3: LocalS3;
let s: TestServer;
let ws: string;
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

async function ok(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  const res = await s.request(pathname, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${pathname} → ${res.status} ${text}`);
  return JSON.parse(text).data;
}
const createFile = (name: string, content: string | Buffer, folderPath = '/') =>
  ok('POST', '/api/v2/files', { workspaceId: ws, name, content: Buffer.from(content).toString('base64'), encoding: 'base64', folderPath });
const download = async (id: string, range?: string) => {
  const res = await s.request(`/api/v2/files/${id}?workspaceId=${ws}`, range ? { headers: { range } } : {});
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
};
async function bucketKeys(): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of s.services.blobs.list()) keys.push(b.key);
  return keys.sort();
}

/** Uploads `bytes` through an upload session (one PUT or every part), completes it, returns the file. */
async function uploadThroughSession(name: string, bytes: Buffer): Promise<any> {
  const up = await ok('POST', '/api/v2/files/uploads', { workspaceId: ws, name, contentType: 'application/octet-stream', size: bytes.length });
  const headers = { 'upload-token': up.uploadToken };
  if (up.transfer.method === 'put') {
    expect((await fetch(up.transfer.url, { method: 'PUT', headers: up.transfer.headers, body: bytes })).status).toBe(200);
  } else {
    const { partSize, partCount } = up.transfer;
    const { parts } = await ok('POST', `/api/v2/files/uploads/${up.session.id}/parts?workspaceId=${ws}`, { partNumbers: Array.from({ length: partCount }, (_, i) => partCount - i) }, headers);
    for (const p of parts) {
      const put = await fetch(p.url, { method: 'PUT', headers: p.headers, body: bytes.subarray((p.partNumber - 1) * partSize, p.partNumber * partSize) });
      expect(put.status).toBe(200);
    }
  }
  return (await ok('POST', `/api/v2/files/uploads/${up.session.id}/complete?workspaceId=${ws}`, undefined, headers)).file;
}

function zipOf(entries: [string, string][]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of entries) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    (zip.outputStream as Readable).on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
  });
}

beforeAll(async () => {
  s3 = await startLocalS3();
  // Upload sessions in 1 MiB parts; blobs over 5 MiB go up to the bucket as an S3 multipart upload.
  s = await startTestServer({ ...s3.env, UPLOAD_PART_SIZE: '1mb', S3_PART_SIZE: '5mb' });
  ws = s.workspaceId;
});
afterAll(async () => {
  await s?.stop();
  await s3?.stop();
});

describe('file bytes in an S3 bucket', () => {
  it('a file written in one request lands in the bucket, not in DATA_DIR, and downloads whole and by ranges', async () => {
    const f = await createFile('digits.txt', '0123456789');
    expect(await bucketKeys()).toContain(sha('0123456789'));
    expect(fs.existsSync(path.join(s.dataDir, 'files', 'blobs', sha('0123456789').slice(0, 2)))).toBe(false);
    const whole = await download(f.id);
    expect(whole.bytes.toString()).toBe('0123456789');
    expect(whole.headers.get('etag')).toBe(`"${sha('0123456789')}"`);
    const part = await download(f.id, 'bytes=2-4');
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 2-4/10');
    expect(part.bytes.toString()).toBe('234');
    expect((await download(f.id, 'bytes=-3')).bytes.toString()).toBe('789');
  });

  it('an upload session in parts (sent last part first) becomes one blob, multipart in the bucket; a range from its middle', async () => {
    const bytes = Buffer.alloc(5.5 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32BE(i, i);
    const file = await uploadThroughSession('big.bin', bytes);
    expect(file.size).toBe(bytes.length);
    expect(await s.services.blobs.size(sha(bytes))).toBe(bytes.length);
    const whole = await download(file.id);
    expect(sha(whole.bytes)).toBe(sha(bytes));
    const start = 3 * 1024 * 1024 + 17;
    const mid = await download(file.id, `bytes=${start}-${start + 99}`);
    expect(mid.status).toBe(206);
    expect(mid.bytes.equals(bytes.subarray(start, start + 100))).toBe(true);
    // Nothing is left staged on the local disk once the file is recorded.
    expect(fs.readdirSync(path.join(s.dataDir, 'files', 'uploads'))).toEqual([]);
  });

  it('a small upload session in one PUT', async () => {
    const file = await uploadThroughSession('small.bin', Buffer.from('small and whole'));
    expect((await download(file.id)).bytes.toString()).toBe('small and whole');
  });

  it('versions, a revert and a second file with the same content share their blobs', async () => {
    const f = await createFile('v.txt', 'version one');
    const meta = await ok('GET', `/api/v2/files/${f.id}/metadata?workspaceId=${ws}`);
    await ok('PUT', `/api/v2/files/${f.id}/content`, { workspaceId: ws, content: 'version two', expectedRevision: meta.revision });
    await ok('POST', `/api/v2/files/${f.id}/versions/1/revert`, { workspaceId: ws, expectedCurrentVersion: 2 });
    expect((await download(f.id)).bytes.toString()).toBe('version one');
    const twin = await createFile('twin.txt', 'version one');
    expect((await download(twin.id)).bytes.toString()).toBe('version one');
    const keys = await bucketKeys();
    expect(keys.filter((k) => k === sha('version one') || k === sha('version two'))).toHaveLength(2);
  });

  it('bulk download zips files read from the bucket', async () => {
    await ok('POST', '/api/v2/files/folders', { workspaceId: ws, path: '/zipme' });
    const a = await createFile('one.txt', 'first', '/zipme');
    await createFile('two.txt', 'second', '/zipme');
    const res = await s.request(`/api/v2/files/bulk-download?workspaceId=${ws}&folderPaths=/zipme&fileIds=${a.id}`);
    expect(res.status).toBe(200);
    const zip = Buffer.from(await res.arrayBuffer());
    expect(zip.subarray(0, 2).toString()).toBe('PK');
    expect(zip.includes(Buffer.from('zipme/two.txt'))).toBe(true);
  });

  it('unzip reads the archive by ranges from the bucket and writes its entries there (in a worker thread)', async () => {
    const zip = await zipOf([['a.txt', 'entry A'], ['deep/b.txt', 'entry B']]);
    await ok('POST', '/api/v2/files/folders', { workspaceId: ws, path: '/arch' });
    const f = await createFile('bundle.zip', zip, '/arch');
    expect(await ok('POST', `/api/v2/files/${f.id}/unzip`, { workspaceId: ws })).toEqual({ folderPath: '/arch/bundle', extractedFileCount: 2, skippedFileCount: 0 });
    const files = await ok('GET', `/api/v2/files?workspaceId=${ws}&folderPath=/arch/bundle&recursive=true&sortBy=name`);
    expect(files.map((x: any) => x.name)).toEqual(['a.txt', 'b.txt']);
    expect((await download(files[1].id)).bytes.toString()).toBe('entry B');
    expect(await bucketKeys()).toContain(sha('entry A'));
  });

  it('a table imported from an uploaded CSV and exported again', async () => {
    const csv = Buffer.from('city,people\nLyon,522000\nNantes,320000\n');
    const created = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'cities.csv', contentType: 'text/csv', size: csv.length }, target: { type: 'new', name: 'cities' } });
    expect(created.transfer.method).toBe('put');
    expect((await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: csv })).status).toBe(200);
    await ok('POST', `/api/v2/tables/imports/${created.session.id}/complete?workspaceId=${ws}`, undefined, { 'upload-token': created.uploadToken });
    const imp = await waitUntil('the import to end', async () => {
      const i = await ok('GET', `/api/v2/tables/imports/${created.session.id}?workspaceId=${ws}`);
      return i.status === 'processing' || i.status === 'uploading' ? null : i;
    });
    expect(imp).toMatchObject({ status: 'completed' });
    const exported = await ok('POST', `/api/v2/tables/${imp.tableId}/exports`, { workspaceId: ws, format: 'csv' });
    const link = await ok('GET', `/api/v2/tables/${imp.tableId}/exports/${exported.id}/download?workspaceId=${ws}`);
    expect(await (await fetch(link.url)).text()).toBe('city,people\nLyon,522000\nNantes,320000\n');
  });

  it('a knowledge document uploaded into the bucket is processed from there', async () => {
    const kb = await createBase(s);
    const text = 'Blobs live in the bucket.\n\nThe knowledge worker reads them back to chunk them.';
    const session = await uploadDocument(s, kb.id, 'notes.txt', text);
    const doc = await waitForDocument(s, kb.id, session.document.id);
    expect(doc).toMatchObject({ processingStatus: 'completed', characterCount: text.length });
    expect(await bucketKeys()).toContain(sha(text));
  });

  it('the purge deletes only blobs no row refers to, and none younger than the grace period', async () => {
    const gone = await createFile('gone.txt', 'soon unreferenced');
    const kept = await createFile('kept.txt', 'still referenced');
    await ok('DELETE', `/api/v2/files/${gone.id}?workspaceId=${ws}`);
    // A blob just stored by a write whose row is not recorded yet (another server committing).
    const pending = await s.services.blobs.write(Readable.from([Buffer.from('being committed elsewhere')]));
    // The deleted file's row goes at once (no retention), its blob not yet: the grace period holds it.
    const young = await purgeFiles(s.services.store, s.services.blobs, { archiveRetentionMs: 0, graceMs: 3_600_000 });
    expect(young).toMatchObject({ blobs: 0 });
    expect(young.files).toBeGreaterThanOrEqual(1);
    expect(await bucketKeys()).toEqual(expect.arrayContaining([sha('soon unreferenced'), pending.key]));
    // A minute on (the bucket's clock counts whole seconds), with no grace: the deleted file's blob and the
    // unrecorded one go; referenced ones stay.
    const report = await purgeFiles(s.services.store, s.services.blobs, { archiveRetentionMs: 0, graceMs: 0, now: Date.now() + 60_000 });
    expect(report.blobs).toBeGreaterThanOrEqual(2);
    const keys = await bucketKeys();
    expect(keys).not.toContain(sha('soon unreferenced'));
    expect(keys).not.toContain(pending.key);
    expect(keys).toContain(sha('still referenced'));
    expect((await download(kept.id)).bytes.toString()).toBe('still referenced');
    expect((await download((await createFile('again.txt', '0123456789')).id)).bytes.toString()).toBe('0123456789');
  });

  it('a backup says the bytes stay in the bucket; its restore needs that bucket, not the bytes', async () => {
    const backupDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-backup-'));
    const restoreDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-restore-'));
    try {
      const config = s.services.config;
      const manifest = await createBackup(config, path.join(backupDir, 'b'));
      expect(manifest.blobLocation).toEqual({ bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1' });
      expect(manifest.blobs).toEqual({ count: 0, bytes: 0 });
      expect(fs.readFileSync(path.join(backupDir, 'b', 'FILE-BYTES-IN-BUCKET.txt'), 'utf8')).toContain(`S3 bucket "${s3.bucket}"`);
      expect(fs.existsSync(path.join(backupDir, 'b', 'files'))).toBe(false);
      const toDisk = loadConfig({ DATA_DIR: path.join(restoreDir, 'disk') });
      await expect(restoreBackup(path.join(backupDir, 'b'), toDisk)).rejects.toThrow(`This backup's file bytes live in the S3 bucket "${s3.bucket}"; restore with BLOB_STORE=s3 and that bucket`);
      const toBucket = loadConfig({ DATA_DIR: path.join(restoreDir, 's3'), ...s3.env });
      const restored = await restoreBackup(path.join(backupDir, 'b'), toBucket);
      expect(restored.blobs).toEqual({ count: 0, bytes: 0 });
      expect(fs.existsSync(toBucket.databaseFile)).toBe(true);
    } finally {
      fs.rmSync(backupDir, { recursive: true, force: true });
      fs.rmSync(restoreDir, { recursive: true, force: true });
    }
  });
});

describe('a misconfigured bucket', () => {
  it('a server whose bucket does not exist does not start: one line naming S3_BUCKET', async () => {
    await expect(startTestServer({ ...s3.env, S3_BUCKET: 'no-such-bucket' })).rejects.toThrow(
      new BlobStoreUnavailableError(`S3_BUCKET "no-such-bucket" does not exist at S3_ENDPOINT ${s3.endpoint}`),
    );
    const started = spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'owa-nobucket-')), PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'test', ...s3.env, S3_BUCKET: 'no-such-bucket' });
    await expect(started).rejects.toThrow(`Cannot start: S3_BUCKET "no-such-bucket" does not exist at S3_ENDPOINT ${s3.endpoint}\n`);
  });

  it('wrong credentials are refused at start, naming the key settings', async () => {
    await expect(startTestServer({ ...s3.env, S3_ACCESS_KEY_ID: 'WRONG', S3_SECRET_ACCESS_KEY: 'WRONG' })).rejects.toThrow(/refused access \(\w+\); check S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY$/);
  });
});

describe('configuration', () => {
  const dataDir = path.join(os.tmpdir(), 'owa-config-only');
  const error = (env: Record<string, string>) => {
    try {
      loadConfig({ DATA_DIR: dataDir, ...env });
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    return null;
  };

  it('names the setting that is missing or wrong, in one line', () => {
    expect(error({ BLOB_STORE: 's3' })).toBe('BLOB_STORE=s3 needs S3_BUCKET, the name of the bucket that holds the file bytes');
    expect(error({ BLOB_STORE: 'gcs' })).toBe('BLOB_STORE must be disk or s3, got "gcs"');
    expect(error({ S3_BUCKET: 'b' })).toBe('S3_BUCKET is set but BLOB_STORE is not s3; set BLOB_STORE=s3 to keep file bytes in the bucket, or unset S3_BUCKET');
    expect(error({ BLOB_STORE: 's3', S3_BUCKET: 'b', BLOB_DIR: '/shared' })).toBe('BLOB_DIR is set but BLOB_STORE=s3 keeps file bytes in the bucket; unset one of them');
    expect(error({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'k' })).toBe('S3_ACCESS_KEY_ID is set but S3_SECRET_ACCESS_KEY is not');
    expect(error({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_SECRET_ACCESS_KEY: 's' })).toBe('S3_SECRET_ACCESS_KEY is set but S3_ACCESS_KEY_ID is not');
    expect(error({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'minio:9000' })).toBe('S3_ENDPOINT must be an http(s) URL, got "minio:9000"');
    expect(error({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_FORCE_PATH_STYLE: 'maybe' })).toBe('S3_FORCE_PATH_STYLE must be true or false, got "maybe"');
    expect(error({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_PART_SIZE: '1mb' })).toBe('S3_PART_SIZE must be from 5mb to 5gb (S3\'s part limits), got "1mb"');
  });

  it('defaults: blobs where earlier versions kept them; BLOB_DIR elsewhere; S3 region us-east-1 and virtual-host style', () => {
    expect(loadConfig({ DATA_DIR: dataDir }).blobStore).toEqual({ kind: 'local-disk', dir: path.join(path.resolve(dataDir), 'files', 'blobs') });
    expect(loadConfig({ DATA_DIR: dataDir, BLOB_DIR: '/mnt/shared/blobs' }).blobStore).toEqual({ kind: 'local-disk', dir: '/mnt/shared/blobs' });
    expect(loadConfig({ DATA_DIR: dataDir, BLOB_STORE: 'S3', S3_BUCKET: 'b' }).blobStore).toEqual({
      kind: 's3', endpoint: null, bucket: 'b', region: 'us-east-1', accessKeyId: null, secretAccessKey: null, forcePathStyle: false, partSize: 16 * 1024 * 1024,
    });
  });

  it('npm start refuses BLOB_STORE=s3 without S3_BUCKET with a configuration error', async () => {
    const started = spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'owa-nobucket-')), PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'test', BLOB_STORE: 's3' });
    await expect(started).rejects.toThrow('Configuration error: BLOB_STORE=s3 needs S3_BUCKET, the name of the bucket that holds the file bytes\n');
  });
});

describe('a bucket that goes away while serving', () => {
  it('a write answers 503 naming the endpoint that cannot be reached', async () => {
    await s3.stop();
    const r = await s.call('POST', '/api/v2/files', { workspaceId: ws, name: 'late.txt', content: 'late' });
    expect(r.status).toBe(503);
    expect(r.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(r.body.error.message).toMatch(new RegExp(`^the bucket cannot be reached at S3_ENDPOINT ${s3.endpoint} \\(ECONNREFUSED\\)`));
  });
});

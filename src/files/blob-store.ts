// Where file bytes live. Blobs are immutable and content-addressed (the key is the SHA-256 of the bytes), so
// versions and copies of the same content share one blob and a blob is never rewritten in place. The purge job
// deletes blobs no row refers to any more.
//
// Uploads are staged per session: each part is written at its offset in one staging file, and committing
// hashes the staged bytes, checks the size and renames the file into place, so a reader (or a crash) never
// sees a partly written blob. Everything streams; no content is ever held whole in memory.
//
// Every file and directory is created owner-only (0600 / 0700). A commit keeps its bytes under a name derived
// from the upload id (`tmp/commit-<uploadId>`, hard-linked into place) until the caller has recorded the file
// and calls discardUpload, so a process killed mid-commit leaves bytes that restoreUpload can hand back to
// the session; any other temporary file left untouched for long belongs to a write that died, and the purge
// job removes it by age (listTemporary, removeTemporary).
import { createHash, randomUUID, type Hash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface BlobInfo {
  key: string;
  size: number;
  sha256: string;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

/** Why a write was refused; the caller turns it into an API error. */
export class BlobSizeError extends Error {
  readonly kind: 'too_many_bytes' | 'too_few_bytes';
  readonly expected: number;
  readonly received: number;
  constructor(kind: 'too_many_bytes' | 'too_few_bytes', expected: number, received: number) {
    super(kind === 'too_many_bytes' ? `More than the declared ${expected} bytes were sent.` : `Only ${received} of the declared ${expected} bytes arrived.`);
    this.kind = kind;
    this.expected = expected;
    this.received = received;
  }
}

export class BlobIntegrityError extends Error {}

/**
 * Which blob store to open and where: plain data, so that a worker thread (src/files/unzip-worker.ts) can open
 * its own instance of the store the server uses. Another kind of store would be one more variant here.
 */
export type BlobStoreSettings = { kind: 'local-disk'; root: string };

/** The blob store the configuration names (today always the local disk under $DATA_DIR/files). */
export const blobStoreSettings = (config: { dataDir: string }): BlobStoreSettings => ({ kind: 'local-disk', root: path.join(config.dataDir, 'files') });

export function openBlobStore(settings: BlobStoreSettings): BlobStore {
  switch (settings.kind) {
    case 'local-disk':
      return new LocalDiskBlobStore(settings.root);
  }
}

export interface BlobStore {
  /** How to open this same store again, e.g. in a worker thread. */
  readonly settings: BlobStoreSettings;
  /** Streams `source` into a new blob. `expectedSize` (exact) or `maxSize` (ceiling) bound what is accepted. */
  write(source: Readable, limits?: { expectedSize?: number; maxSize?: number; expectedSha256?: string }): Promise<BlobInfo>;
  read(key: string, range?: ByteRange): Readable;
  size(key: string): Promise<number | null>;
  delete(key: string): Promise<void>;
  /** Every stored blob with its age, for the purge job. */
  list(): AsyncIterable<{ key: string; modifiedAt: number }>;

  /** Writes exactly `length` bytes at `offset` of an upload's staging area. */
  writeUploadPart(uploadId: string, offset: number, length: number, source: Readable): Promise<void>;
  /** Turns a fully staged upload of `size` bytes into a blob (verified size, computed SHA-256). */
  commitUpload(uploadId: string, size: number): Promise<BlobInfo>;
  discardUpload(uploadId: string): Promise<void>;
  /** Staged uploads with their age, for the purge job. */
  listUploads(): AsyncIterable<{ uploadId: string; modifiedAt: number }>;
  /**
   * After a crash during commitUpload: puts the upload's bytes back in its staging area so the session can be
   * completed again. False when they are gone. Only at start, with the data directory locked.
   */
  restoreUpload(uploadId: string): Promise<boolean>;
  /**
   * Temporary files: writes in progress or that never finished, and commits (`uploadId` set) not yet recorded.
   * The purge job removes those untouched for long enough (src/files/purge.ts).
   */
  listTemporary(): AsyncIterable<{ name: string; uploadId: string | null; modifiedAt: number }>;
  removeTemporary(name: string): Promise<void>;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** Larger buffers than the stream default (64 KiB) cut per-chunk overhead on big files; memory stays bounded. */
const CHUNK = 1024 * 1024;
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,128}$/;
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Counts, hashes (when given a hash) and bounds the bytes flowing through it. */
class Meter extends Transform {
  readonly hash: Hash | null;
  bytes = 0;
  private readonly max: number;
  constructor(max: number, hash: Hash | null) {
    super({ highWaterMark: CHUNK });
    this.max = max;
    this.hash = hash;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.max) {
      done(new BlobSizeError('too_many_bytes', this.max, this.bytes));
      return;
    }
    this.hash?.update(chunk);
    done(null, chunk);
  }
}

/**
 * The SHA-256 of an upload's bytes, kept while its parts arrive one after another from offset 0, so that
 * committing need not read the whole file again. Anything else (parts out of order, overlapping writes, a
 * failed part, a restart) drops it, and the commit hashes the staged file instead.
 */
interface RunningHash {
  next: number;
  hash: Hash;
  busy: boolean;
}

export class LocalDiskBlobStore implements BlobStore {
  private readonly blobsDir: string;
  private readonly tmpDir: string;
  private readonly uploadsDir: string;
  private readonly running: Map<string, RunningHash>;
  readonly settings: BlobStoreSettings;

  constructor(root: string) {
    this.settings = { kind: 'local-disk', root };
    this.blobsDir = path.join(root, 'blobs');
    this.tmpDir = path.join(root, 'tmp');
    this.uploadsDir = path.join(root, 'uploads');
    this.running = new Map();
    for (const dir of [this.blobsDir, this.tmpDir, this.uploadsDir]) fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  }

  private blobPath(key: string): string {
    if (!SHA256_HEX.test(key)) throw new Error(`Not a blob key: ${key}`);
    return path.join(this.blobsDir, key.slice(0, 2), key.slice(2, 4), key);
  }

  private stagingPath(uploadId: string): string {
    if (!UPLOAD_ID.test(uploadId)) throw new Error(`Not an upload id: ${uploadId}`);
    return path.join(this.uploadsDir, uploadId);
  }

  private commitPath(uploadId: string): string {
    if (!UPLOAD_ID.test(uploadId)) throw new Error(`Not an upload id: ${uploadId}`);
    return path.join(this.tmpDir, `commit-${uploadId}`);
  }

  /**
   * Flushes a finished temporary file and moves it under its content key (or drops it if already there).
   * `keep` links it into place instead, leaving the temporary name too (a commit, until discardUpload).
   */
  private async settle(tempPath: string, sha256: string, size: number, keep = false): Promise<BlobInfo> {
    const handle = await fsp.open(tempPath, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    const target = this.blobPath(sha256);
    await fsp.mkdir(path.dirname(target), { recursive: true, mode: DIR_MODE });
    if (!keep) await fsp.rename(tempPath, target);
    else {
      try {
        await fsp.link(tempPath, target);
      } catch (err) {
        // The same content is already stored: blobs are immutable and named by their hash.
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    return { key: sha256, size, sha256 };
  }

  async write(source: Readable, limits: { expectedSize?: number; maxSize?: number; expectedSha256?: string } = {}): Promise<BlobInfo> {
    const tempPath = path.join(this.tmpDir, randomUUID());
    const meter = new Meter(limits.expectedSize ?? limits.maxSize ?? Number.MAX_SAFE_INTEGER, createHash('sha256'));
    try {
      await pipeline(source, meter, fs.createWriteStream(tempPath, { flags: 'wx', mode: FILE_MODE, highWaterMark: CHUNK }));
      if (limits.expectedSize !== undefined && meter.bytes !== limits.expectedSize) {
        throw new BlobSizeError('too_few_bytes', limits.expectedSize, meter.bytes);
      }
      const sha256 = meter.hash!.digest('hex');
      if (limits.expectedSha256 && limits.expectedSha256 !== sha256) throw new BlobIntegrityError('The content does not match its SHA-256.');
      return await this.settle(tempPath, sha256, meter.bytes);
    } catch (err) {
      await fsp.rm(tempPath, { force: true });
      throw err;
    }
  }

  read(key: string, range?: ByteRange): Readable {
    return fs.createReadStream(this.blobPath(key), range ? { start: range.start, end: range.end, highWaterMark: CHUNK } : { highWaterMark: CHUNK });
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await fsp.stat(this.blobPath(key))).size;
    } catch {
      return null;
    }
  }

  async delete(key: string): Promise<void> {
    await fsp.rm(this.blobPath(key), { force: true });
  }

  async *list(): AsyncIterable<{ key: string; modifiedAt: number }> {
    for (const a of await fsp.readdir(this.blobsDir).catch(() => [] as string[])) {
      for (const b of await fsp.readdir(path.join(this.blobsDir, a)).catch(() => [] as string[])) {
        const dir = path.join(this.blobsDir, a, b);
        for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
          if (!SHA256_HEX.test(name)) continue;
          const st = await fsp.stat(path.join(dir, name)).catch(() => null);
          if (st) yield { key: name, modifiedAt: st.mtimeMs };
        }
      }
    }
  }

  async writeUploadPart(uploadId: string, offset: number, length: number, source: Readable): Promise<void> {
    const file = this.stagingPath(uploadId);
    // Open without truncating: other parts may already sit in the file at their own offsets.
    await (await fsp.open(file, fs.constants.O_WRONLY | fs.constants.O_CREAT, FILE_MODE)).close();
    let state = this.running.get(uploadId);
    if (offset === 0 && !state) {
      state = { next: 0, hash: createHash('sha256'), busy: false };
      this.running.set(uploadId, state);
    }
    const hashing = state !== undefined && !state.busy && state.next === offset;
    if (state && !hashing) this.running.delete(uploadId);
    if (hashing) state!.busy = true;
    const meter = new Meter(length, hashing ? state!.hash : null);
    try {
      await pipeline(source, meter, fs.createWriteStream(file, { flags: 'r+', start: offset, highWaterMark: CHUNK }));
      if (meter.bytes !== length) throw new BlobSizeError('too_few_bytes', length, meter.bytes);
      if (hashing && this.running.get(uploadId) === state) {
        state!.next += length;
        state!.busy = false;
      }
    } catch (err) {
      if (hashing) this.running.delete(uploadId);
      throw err;
    }
  }

  async commitUpload(uploadId: string, size: number): Promise<BlobInfo> {
    const staged = this.stagingPath(uploadId);
    if (size === 0) await fsp.writeFile(staged, '', { flag: 'a', mode: FILE_MODE });
    const actual = (await fsp.stat(staged)).size;
    if (actual !== size) throw new BlobSizeError(actual > size ? 'too_many_bytes' : 'too_few_bytes', size, actual);
    // Move it out of the staging area first, so a racing part write cannot touch what is being committed.
    const tempPath = this.commitPath(uploadId);
    await fsp.rename(staged, tempPath);
    const state = this.running.get(uploadId);
    this.running.delete(uploadId);
    try {
      let sha256: string;
      if (state && !state.busy && state.next === size) sha256 = state.hash.digest('hex');
      else {
        const hash = createHash('sha256');
        await pipeline(fs.createReadStream(tempPath, { highWaterMark: CHUNK }), async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) hash.update(chunk);
        });
        sha256 = hash.digest('hex');
      }
      return await this.settle(tempPath, sha256, size, true);
    } catch (err) {
      await fsp.rm(tempPath, { force: true });
      throw err;
    }
  }

  async discardUpload(uploadId: string): Promise<void> {
    this.running.delete(uploadId);
    await fsp.rm(this.stagingPath(uploadId), { force: true });
    await fsp.rm(this.commitPath(uploadId), { force: true });
  }

  async restoreUpload(uploadId: string): Promise<boolean> {
    const staged = this.stagingPath(uploadId);
    const committing = this.commitPath(uploadId);
    const st = await fsp.stat(committing).catch(() => null);
    if (st) {
      // Already linked into the blob store: staging must get its own copy, or a part written again would
      // change a stored (immutable, shared) blob in place.
      if (st.nlink > 1) {
        await fsp.copyFile(committing, staged);
        await fsp.chmod(staged, FILE_MODE);
        await fsp.rm(committing, { force: true });
      } else await fsp.rename(committing, staged);
    }
    this.running.delete(uploadId);
    return (await fsp.stat(staged).catch(() => null)) !== null;
  }

  async *listTemporary(): AsyncIterable<{ name: string; uploadId: string | null; modifiedAt: number }> {
    for (const name of await fsp.readdir(this.tmpDir).catch(() => [] as string[])) {
      const st = await fsp.stat(path.join(this.tmpDir, name)).catch(() => null);
      if (st) yield { name, uploadId: name.startsWith('commit-') ? name.slice('commit-'.length) : null, modifiedAt: st.mtimeMs };
    }
  }

  async removeTemporary(name: string): Promise<void> {
    if (name !== path.basename(name)) throw new Error(`not a temporary file name: ${name}`);
    await fsp.rm(path.join(this.tmpDir, name), { force: true, recursive: true });
  }

  async *listUploads(): AsyncIterable<{ uploadId: string; modifiedAt: number }> {
    for (const name of await fsp.readdir(this.uploadsDir).catch(() => [] as string[])) {
      const st = await fsp.stat(path.join(this.uploadsDir, name)).catch(() => null);
      if (st) yield { uploadId: name, modifiedAt: st.mtimeMs };
    }
  }
}

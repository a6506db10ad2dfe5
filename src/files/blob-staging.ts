// What every blob store does the same way, on the local disk of one server ($DATA_DIR/files): writes in
// progress (tmp/) and upload sessions' staged parts (uploads/). Only a finished, hashed file is handed to the
// store's `place`, which puts it where committed blobs live (a shared directory, a bucket).
//
// Uploads are staged per session: each part is written at its offset in one staging file, and committing
// hashes the staged bytes, checks the size and places the file, so a reader (or a crash) never sees a partly
// written blob. Everything streams; no content is ever held whole in memory.
//
// Every file and directory is created owner-only (0600 / 0700). A commit keeps its bytes under a name derived
// from the upload id (`tmp/commit-<uploadId>`) until the caller has recorded the file and calls discardUpload,
// so a process killed mid-commit leaves bytes that restoreUpload can hand back to the session; any other
// temporary file left untouched for long belongs to a write that died, and the purge job removes it by age
// (listTemporary, removeTemporary).
import { createHash, randomUUID, type Hash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobIntegrityError, BlobSizeError, type BlobInfo, type BlobStore, type BlobStoreSettings, type ByteRange } from './blob-contract.ts';

/** Larger buffers than the stream default (64 KiB) cut per-chunk overhead on big files; memory stays bounded. */
export const CHUNK = 1024 * 1024;
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,128}$/;
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

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

export abstract class StagedBlobStore implements BlobStore {
  abstract readonly settings: BlobStoreSettings;
  private readonly tmpDir: string;
  private readonly uploadsDir: string;
  private readonly running = new Map<string, RunningHash>();

  constructor(staging: string) {
    this.tmpDir = path.join(staging, 'tmp');
    this.uploadsDir = path.join(staging, 'uploads');
    for (const dir of [this.tmpDir, this.uploadsDir]) fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  }

  /**
   * Makes the finished local file `file` (its SHA-256 and size checked) the blob `sha256`, or refreshes the
   * blob's modification time when that content is already stored. `file` stays where it is.
   */
  protected abstract place(file: string, sha256: string, size: number): Promise<void>;
  abstract check(): Promise<void>;
  abstract close(): void;
  abstract read(key: string, range?: ByteRange): Readable;
  abstract size(key: string): Promise<number | null>;
  abstract delete(key: string): Promise<void>;
  abstract deleteIfUnused(key: string, notModifiedSince: number): Promise<boolean>;
  abstract list(): AsyncIterable<{ key: string; modifiedAt: number }>;
  abstract tidyShared(olderThan: number): Promise<number>;

  private stagingPath(uploadId: string): string {
    if (!UPLOAD_ID.test(uploadId)) throw new Error(`Not an upload id: ${uploadId}`);
    return path.join(this.uploadsDir, uploadId);
  }

  private commitPath(uploadId: string): string {
    if (!UPLOAD_ID.test(uploadId)) throw new Error(`Not an upload id: ${uploadId}`);
    return path.join(this.tmpDir, `commit-${uploadId}`);
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
      await this.place(tempPath, sha256, meter.bytes);
      return { key: sha256, size: meter.bytes, sha256 };
    } finally {
      await fsp.rm(tempPath, { force: true });
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
      // The commit file stays (discardUpload removes it once the row is recorded).
      await this.place(tempPath, sha256, size);
      return { key: sha256, size, sha256 };
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
      // Hard-linked into a blob directory: staging must get its own copy, or a part written again would
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

// What every blob store is: the interface, the settings that open one, and the errors it throws. The stores
// themselves (./disk-blob-store.ts, ./s3-blob-store.ts) and openBlobStore (./blob-store.ts) build on this.
import type { Readable } from 'node:stream';
import type { S3Settings } from '../config.ts';
import { DomainError } from '../domain/errors.ts';

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
 * The place committed blobs live cannot be used (the bucket is missing or refuses us, BLOB_DIR is not
 * writable). One line that names the setting to check; a request that meets it answers 503.
 */
export class BlobStoreUnavailableError extends DomainError {
  constructor(message: string) {
    super('unavailable', message);
  }
}

/**
 * Which blob store to open and where: plain data, so that a worker thread (src/files/unzip-worker.ts) can open
 * its own instance of the store the server uses. `staging` is the local directory ($DATA_DIR/files) for upload
 * parts and writes in progress, whichever store keeps the committed blobs.
 */
export type BlobStoreSettings = { kind: 'local-disk'; staging: string; blobDir: string } | { kind: 's3'; staging: string; s3: S3Settings };

export interface BlobStore {
  /** How to open this same store again, e.g. in a worker thread. */
  readonly settings: BlobStoreSettings;
  /** Whether committed blobs can be reached (at start): throws BlobStoreUnavailableError naming the setting. */
  check(): Promise<void>;
  /** Lets go of connections (an S3 client's sockets); the store is not used afterwards. */
  close(): void;
  /** Streams `source` into a new blob. `expectedSize` (exact) or `maxSize` (ceiling) bound what is accepted. */
  write(source: Readable, limits?: { expectedSize?: number; maxSize?: number; expectedSha256?: string }): Promise<BlobInfo>;
  /** The blob's bytes; a missing blob fails the stream with an error whose `code` is ENOENT. */
  read(key: string, range?: ByteRange): Readable;
  size(key: string): Promise<number | null>;
  delete(key: string): Promise<void>;
  /**
   * Deletes the blob unless it was stored or reused (its modification time refreshed) at or after
   * `notModifiedSince` (ms since the epoch). A write that finds its content already stored refreshes that time
   * before its row is recorded, so the purge never takes a blob another server is committing. True if deleted.
   */
  deleteIfUnused(key: string, notModifiedSince: number): Promise<boolean>;
  /** Every stored blob with its age, for the purge job. */
  list(): AsyncIterable<{ key: string; modifiedAt: number }>;
  /** Repairs what a process that died mid-write or mid-purge left in the shared place; the number of leftovers. */
  tidyShared(olderThan: number): Promise<number>;

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

export const SHA256_HEX = /^[0-9a-f]{64}$/;

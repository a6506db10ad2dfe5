// Committed blobs in an S3-compatible bucket (BLOB_STORE=s3), one object per blob at `blobs/<sha256>`.
// Staging stays on the local disk (./blob-staging.ts): a blob's SHA-256, which names it, is known only once
// all its bytes have arrived, so they are hashed locally first and then streamed up, in one PUT that carries
// the SHA-256 for the bucket to verify, or as a multipart upload in S3_PART_SIZE parts (checked by size
// afterwards). Reads are streamed GETs, with a Range for a byte range.
//
// Several servers share the bucket the way they share a BLOB_DIR: content-addressed objects are never changed,
// only written whole, and a writer that finds its content already stored refreshes the object's
// LastModified (a copy onto itself) before recording its row; the purge deletes only objects whose
// LastModified, looked up again just before the delete, is older than the grace period. S3 has no atomic
// "delete if unchanged", so the one request between that look and the delete is the window left.
import fs from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createRequire } from 'node:module';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type * as S3Storage from '@aws-sdk/lib-storage';
import type { S3Settings } from '../config.ts';
import { BlobIntegrityError, BlobStoreUnavailableError, SHA256_HEX, type BlobStoreSettings, type ByteRange } from './blob-contract.ts';
import { CHUNK, StagedBlobStore } from './blob-staging.ts';

// The AWS SDK (about 6 MB of heap, and a fifth of a second to load) is loaded when an S3 store is opened: a
// server on the local disk never needs it. Its classes are bound to these names then.
let CopyObjectCommand: typeof S3Sdk.CopyObjectCommand;
let DeleteObjectCommand: typeof S3Sdk.DeleteObjectCommand;
let GetObjectCommand: typeof S3Sdk.GetObjectCommand;
let HeadBucketCommand: typeof S3Sdk.HeadBucketCommand;
let HeadObjectCommand: typeof S3Sdk.HeadObjectCommand;
let ListObjectsV2Command: typeof S3Sdk.ListObjectsV2Command;
let PutObjectCommand: typeof S3Sdk.PutObjectCommand;
let S3Client: typeof S3Sdk.S3Client | undefined;
let Upload: typeof S3Storage.Upload;
function loadSdk(): typeof S3Sdk.S3Client {
  if (S3Client) return S3Client;
  const load = createRequire(import.meta.url);
  const sdk = load('@aws-sdk/client-s3') as typeof S3Sdk;
  ({ CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } = sdk);
  ({ Upload } = load('@aws-sdk/lib-storage') as typeof S3Storage);
  return (S3Client = sdk.S3Client);
}

const PREFIX = 'blobs/';
/** The largest object one CopyObject request can copy; a larger one is refreshed by uploading it again. */
const MAX_COPY_BYTES = 5 * 1024 ** 3;

interface S3Failure {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

const statusOf = (err: unknown) => (err as S3Failure)?.$metadata?.httpStatusCode;
const isMissingObject = (err: unknown) => {
  const name = (err as S3Failure)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || (statusOf(err) === 404 && name !== 'NoSuchBucket');
};

export class S3BlobStore extends StagedBlobStore {
  readonly settings: BlobStoreSettings;
  private readonly s3: S3Settings;
  private readonly client: S3Sdk.S3Client;

  constructor(staging: string, s3: S3Settings) {
    super(staging);
    this.settings = { kind: 's3', staging, s3 };
    this.s3 = s3;
    const Client = loadSdk();
    this.client = new Client({
      region: s3.region,
      ...(s3.endpoint ? { endpoint: s3.endpoint } : {}),
      forcePathStyle: s3.forcePathStyle,
      ...(s3.accessKeyId && s3.secretAccessKey ? { credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } } : {}),
      // Only the checksums S3 requires: many S3-compatible servers do not know the newer default ones.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private objectKey(key: string): string {
    if (!SHA256_HEX.test(key)) throw new Error(`Not a blob key: ${key}`);
    return PREFIX + key;
  }

  /** One line saying what is wrong with the bucket, naming the setting to check. */
  private unavailable(err: unknown): BlobStoreUnavailableError {
    const e = err as S3Failure;
    const bucket = `S3_BUCKET "${this.s3.bucket}"`;
    const where = this.s3.endpoint ? `at S3_ENDPOINT ${this.s3.endpoint}` : `in S3_REGION ${this.s3.region}`;
    const name = e?.name ?? e?.code ?? 'Error';
    const status = statusOf(err);
    if (name === 'NoSuchBucket' || (name === 'NotFound' && status === 404)) return new BlobStoreUnavailableError(`${bucket} does not exist ${where}`);
    if (status === 403 || ['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'Forbidden'].includes(name)) {
      return new BlobStoreUnavailableError(`${bucket} ${where} refused access (${name}); check S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY`);
    }
    if (status === 301 || name === 'PermanentRedirect') return new BlobStoreUnavailableError(`${bucket} is in another region than S3_REGION ${this.s3.region}; set S3_REGION`);
    if (['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EAI_AGAIN'].includes(e?.code ?? name)) {
      return new BlobStoreUnavailableError(`the bucket cannot be reached ${where} (${e?.code ?? name})`);
    }
    return new BlobStoreUnavailableError(`${bucket} ${where} failed: ${name}${e?.message && e.message !== name ? `: ${e.message}` : ''}`);
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.s3.bucket }));
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  close(): void {
    this.client.destroy();
  }

  private async head(key: string): Promise<{ size: number; modifiedAt: number } | null> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.s3.bucket, Key: this.objectKey(key) }));
      return { size: Number(res.ContentLength ?? 0), modifiedAt: res.LastModified?.getTime() ?? 0 };
    } catch (err) {
      if (isMissingObject(err)) return null;
      throw this.unavailable(err);
    }
  }

  protected async place(file: string, sha256: string, size: number): Promise<void> {
    const existing = await this.head(sha256);
    if (existing && existing.size === size && size <= MAX_COPY_BYTES && (await this.refresh(sha256))) return;
    const params = { Bucket: this.s3.bucket, Key: this.objectKey(sha256), ContentType: 'application/octet-stream', Metadata: { sha256 } };
    try {
      if (size <= this.s3.partSize) {
        await this.client.send(
          new PutObjectCommand({
            ...params,
            Body: fs.createReadStream(file, { highWaterMark: CHUNK }),
            ContentLength: size,
            ChecksumSHA256: Buffer.from(sha256, 'hex').toString('base64'),
          }),
        );
      } else {
        // At most two parts in memory at a time.
        await new Upload({ client: this.client, params: { ...params, Body: fs.createReadStream(file, { highWaterMark: CHUNK }) }, partSize: this.s3.partSize, queueSize: 2 }).done();
      }
    } catch (err) {
      throw this.unavailable(err);
    }
    const stored = await this.head(sha256);
    if (stored?.size !== size) throw new BlobIntegrityError(`The bucket holds ${stored ? stored.size : 'no'} bytes for blob ${sha256} after uploading ${size}.`);
  }

  /** Refreshes the object's LastModified (a copy onto itself); false when it is gone meanwhile. */
  private async refresh(sha256: string): Promise<boolean> {
    const key = this.objectKey(sha256);
    try {
      await this.client.send(
        new CopyObjectCommand({ Bucket: this.s3.bucket, Key: key, CopySource: `${this.s3.bucket}/${key}`, MetadataDirective: 'REPLACE', ContentType: 'application/octet-stream', Metadata: { sha256 } }),
      );
      return true;
    } catch (err) {
      if (isMissingObject(err)) return false;
      throw this.unavailable(err);
    }
  }

  read(key: string, range?: ByteRange): Readable {
    const out = new PassThrough({ highWaterMark: CHUNK });
    const abort = new AbortController();
    // A reader that stops early (a prefix read, a client gone) ends the GET too.
    out.once('close', () => abort.abort());
    const command = new GetObjectCommand({ Bucket: this.s3.bucket, Key: this.objectKey(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) });
    this.client
      .send(command, { abortSignal: abort.signal })
      .then((res) => pipeline(res.Body as Readable, out))
      .catch((err: unknown) => {
        if (out.destroyed) return;
        if (isMissingObject(err)) out.destroy(Object.assign(new Error(`No blob ${key} in the bucket.`), { code: 'ENOENT' }));
        else out.destroy(this.unavailable(err));
      });
    return out;
  }

  async size(key: string): Promise<number | null> {
    return (await this.head(key))?.size ?? null;
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.s3.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  async deleteIfUnused(key: string, notModifiedSince: number): Promise<boolean> {
    const found = await this.head(key);
    if (!found || found.modifiedAt >= notModifiedSince) return false;
    await this.delete(key);
    return true;
  }

  async *list(): AsyncIterable<{ key: string; modifiedAt: number }> {
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: this.s3.bucket, Prefix: PREFIX, ContinuationToken: token }));
      } catch (err) {
        throw this.unavailable(err);
      }
      for (const object of page.Contents ?? []) {
        const key = object.Key?.slice(PREFIX.length) ?? '';
        if (SHA256_HEX.test(key)) yield { key, modifiedAt: object.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * Nothing to repair: a failed PUT stores nothing and a failed multipart upload is aborted. Only the parts of a
   * process killed mid-upload stay, until the bucket's lifecycle rule for incomplete uploads removes them (README).
   */
  async tidyShared(): Promise<number> {
    return 0;
  }
}

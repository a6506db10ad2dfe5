// Where file bytes live. Blobs are immutable and content-addressed (the key is the SHA-256 of the bytes), so
// versions and copies of the same content share one blob and a blob is never rewritten in place. The purge job
// deletes blobs no row refers to any more.
//
// Committed blobs live in a directory (BLOB_DIR, which several servers may share: ./disk-blob-store.ts) or in
// an S3-compatible bucket (BLOB_STORE=s3: ./s3-blob-store.ts). Writes in progress and staged upload parts
// always stay on this server's own disk, in $DATA_DIR/files (./blob-staging.ts).
import path from 'node:path';
import type { BlobStoreConfig } from '../config.ts';
import type { BlobStore, BlobStoreSettings } from './blob-contract.ts';
import { DiskBlobStore } from './disk-blob-store.ts';
import { S3BlobStore } from './s3-blob-store.ts';

export * from './blob-contract.ts';

/**
 * The blob store the configuration names. Without a `blobStore` (a backup directory, say), the default layout
 * under `dataDir`: staging in files/, blobs in files/blobs.
 */
export const blobStoreSettings = (config: { dataDir: string; blobStore?: BlobStoreConfig }): BlobStoreSettings => {
  const staging = path.join(config.dataDir, 'files');
  const chosen = config.blobStore ?? { kind: 'local-disk', dir: path.join(staging, 'blobs') };
  if (chosen.kind === 'local-disk') return { kind: 'local-disk', staging, blobDir: chosen.dir };
  const { kind: _kind, ...s3 } = chosen;
  return { kind: 's3', staging, s3 };
};

export function openBlobStore(settings: BlobStoreSettings): BlobStore {
  switch (settings.kind) {
    case 'local-disk':
      return new DiskBlobStore(settings.staging, settings.blobDir);
    case 's3':
      return new S3BlobStore(settings.staging, settings.s3);
  }
}

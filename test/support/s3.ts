// A local S3-compatible server (s3rver) for tests of BLOB_STORE=s3: loopback only, a free port, its objects in
// a temporary directory, stopped (and the directory removed) by stop().
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

export interface LocalS3 {
  endpoint: string;
  bucket: string;
  /** The server settings for BLOB_STORE=s3 against this bucket. */
  env: Record<string, string>;
  /** Where s3rver keeps the objects: `<dir>/<bucket>/blobs/<sha256>._S3rver_object` and sidecar files. */
  dir: string;
  /** Stops the server and removes its objects; calling it again waits for the same stop. */
  stop(): Promise<void>;
}

export async function startLocalS3(bucket = 'owa-test'): Promise<LocalS3> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  let stopped: Promise<void> | null = null;
  return {
    endpoint,
    bucket,
    dir,
    env: {
      BLOB_STORE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_REGION: 'us-east-1',
      // s3rver's fixed credentials.
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
    },
    stop() {
      stopped ??= server.close().then(() => fs.rmSync(dir, { recursive: true, force: true }));
      return stopped;
    },
  };
}

// Backups of a live server's data and their restore into an empty data directory (`npm run admin -- backup`,
// `restore`). A backup is a directory:
//
//   workspace.sqlite   the database, copied through SQLite's online backup: one consistent snapshot, taken in
//                      a read transaction that (in WAL mode) never holds up the server's writes
//   files/blobs/...    the file bytes, in the blob store's own layout; with BLOB_STORE=s3 they stay in the
//                      bucket (back it up with the bucket's own means: versioning, replication) and
//                      FILE-BYTES-IN-BUCKET.txt says so; the backup checks that every blob it needs is there
//   secrets.key        the secrets key, or SECRETS_KEY-IS-EXTERNAL.txt when it comes from the environment
//   manifest.json      written last: a backup without one is unfinished
//
// Ordering makes the copy consistent without stopping the server: blobs are immutable and named by their
// content, and a row is recorded only after its blob is stored, so every blob the snapshot refers to exists
// when the snapshot is taken; copying the blobs afterwards finds them all (blobs written since are harmless
// extras). The one way one could go missing is the purge job deleting it after a later change dropped its last
// reference, so the backup checks every blob the snapshot refers to and fails (run it again) if one is gone.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DatabaseSync, backup } from 'node:sqlite';
import { BlobIntegrityError, blobStoreSettings, openBlobStore, type BlobStore, type BlobStoreSettings } from '../files/blob-store.ts';
import type { BlobStoreConfig } from '../config.ts';
import { blobKeysInUse } from '../files/purge.ts';
import { openWorkerStore } from '../store/index.ts';
import { SecretCipher, loadSecretsKey } from '../secrets/cipher.ts';
import { signingKeyOpens } from '../secrets/signing-key.ts';
import { SecretVault } from '../secrets/vault.ts';

export const MANIFEST_FILE = 'manifest.json';
const DATABASE_COPY = 'workspace.sqlite';
const KEY_FILE = 'secrets.key';
const EXTERNAL_KEY_NOTE = 'SECRETS_KEY-IS-EXTERNAL.txt';
const BUCKET_NOTE = 'FILE-BYTES-IN-BUCKET.txt';
const FORMAT = 'open-workspace-automation-backup/1';
/** The most pages sqlite3_backup_step may copy at once: the whole database in one step, so writes cannot restart it. */
const ALL_PAGES = 2 ** 31 - 1;

/** A refusal or a failure the operator can act on; its message is one line. */
export class BackupError extends Error {}

export interface BackupManifest {
  format: typeof FORMAT;
  /** When the database snapshot was taken. */
  createdAt: string;
  /** The highest migration applied to the copied database. */
  schemaVersion: number;
  database: { file: string; bytes: number; sha256: string };
  blobs: { count: number; bytes: number };
  /**
   * Where the file bytes are: in the backup (absent in older manifests), or left in an S3 bucket, which
   * restoring needs (BLOB_STORE=s3 with that bucket).
   */
  blobLocation?: 'included' | { bucket: string; endpoint: string | null; region: string };
  /** Rows per table in the snapshot. */
  counts: Record<string, number>;
  /** Where the secrets key is: in the backup, or supplied through SECRETS_KEY (keep it yourself). */
  secretsKey: 'included' | 'external';
}

export interface DataLocation {
  dataDir: string;
  databaseFile: string;
  /** SECRETS_KEY as configured, or null when the key lives in $DATA_DIR/secrets.key. */
  secretsKey: string | null;
  /** Where the file bytes live (BLOB_DIR or BLOB_STORE=s3); absent: $DATA_DIR/files/blobs. */
  blobStore?: BlobStoreConfig;
}

function isEmptyDir(dir: string): boolean {
  try {
    return fs.readdirSync(dir).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw err;
  }
}

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(file), async function* (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) hash.update(chunk);
  });
  return hash.digest('hex');
}

/** Copies every blob of `from` into `to`, each verified against its key; blobs removed meanwhile are skipped. */
async function copyBlobs(fromSettings: BlobStoreSettings, toSettings: BlobStoreSettings): Promise<{ count: number; bytes: number }> {
  const from = openBlobStore(fromSettings);
  const to = openBlobStore(toSettings);
  try {
    return await copyEach(from, to);
  } finally {
    from.close();
    to.close();
  }
}

async function copyEach(from: BlobStore, to: BlobStore): Promise<{ count: number; bytes: number }> {
  let count = 0;
  let bytes = 0;
  for await (const { key } of from.list()) {
    let size: number;
    try {
      size = (await to.write(from.read(key), { expectedSha256: key })).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // purged since it was listed
      if (err instanceof BlobIntegrityError) throw new BackupError(`The blob ${key} does not match its SHA-256: the source is damaged`);
      throw err;
    }
    count++;
    bytes += size;
  }
  return { count, bytes };
}

/** Schema version and rows per table of a database file (opened read-only, so it is not changed). */
function describeDatabase(file: string): { schemaVersion: number; counts: Record<string, number> } {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[];
    const counts: Record<string, number> = {};
    for (const { name } of tables) counts[name] = Number((db.prepare(`SELECT count(*) AS n FROM "${name.replaceAll('"', '""')}"`).get() as { n: number }).n);
    const version = db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null };
    return { schemaVersion: Number(version.v ?? 0), counts };
  } finally {
    db.close();
  }
}

/** The blobs a database's rows refer to, and whether `key` opens its secrets (null: none sealed yet). */
async function inspect(file: string, key: Buffer): Promise<{ blobKeys: Set<string>; keyOpens: boolean | null }> {
  const store = openWorkerStore({ engine: 'sqlite', file });
  try {
    return { blobKeys: await blobKeysInUse(store), keyOpens: await signingKeyOpens(store, new SecretVault(store, new SecretCipher(key))) };
  } finally {
    await store.close();
  }
}

const WRONG_KEY = 'does not open the secrets of this database';

/** Makes a consistent backup of the data at `source` (possibly in use by a running server) in the empty directory `target`. */
export async function createBackup(source: DataLocation, target: string): Promise<BackupManifest & { directory: string }> {
  const dir = path.resolve(target);
  if (!isEmptyDir(dir)) throw new BackupError(`${dir} is not an empty directory; back up into a new or empty one`);
  if (!fs.existsSync(source.databaseFile)) throw new BackupError(`There is no database at ${source.databaseFile}; check DATA_DIR or DATABASE_FILE`);
  const keyFile = path.join(source.dataDir, KEY_FILE);
  if (source.secretsKey === null && !fs.existsSync(keyFile)) {
    throw new BackupError(`Neither SECRETS_KEY nor ${keyFile} is there; run the backup with the server's environment`);
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    return await backupInto(dir, source, keyFile);
  } catch (err) {
    // An unfinished backup is of no use; leave the directory empty so the same command can simply run again.
    for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    throw err;
  }
}

async function backupInto(dir: string, source: DataLocation, keyFile: string): Promise<BackupManifest & { directory: string }> {
  // 1. The database snapshot, first: everything it refers to exists from this moment on.
  const createdAt = new Date().toISOString();
  const dbCopy = path.join(dir, DATABASE_COPY);
  const live = new DatabaseSync(source.databaseFile);
  try {
    live.exec('PRAGMA busy_timeout = 5000');
    await backup(live, dbCopy, { rate: ALL_PAGES });
  } finally {
    live.close();
  }
  const { blobKeys: needed, keyOpens } = await inspect(dbCopy, loadSecretsKey(source.secretsKey, source.dataDir));
  if (keyOpens === false) throw new BackupError(`The secrets key (${source.secretsKey !== null ? 'SECRETS_KEY' : keyFile}) ${WRONG_KEY}; run the backup with the server's environment`);
  // The copy keeps the source's WAL mode in its header; make it one self-contained file.
  const settle = new DatabaseSync(dbCopy);
  settle.exec('PRAGMA journal_mode = DELETE');
  settle.close();

  // 2. The bytes, then the check that the snapshot's blobs all made it (or, in a bucket, are all there).
  const sourceBlobs = blobStoreSettings(source);
  let copied = { count: 0, bytes: 0 };
  let blobLocation: BackupManifest['blobLocation'] = 'included';
  if (sourceBlobs.kind === 's3') {
    blobLocation = { bucket: sourceBlobs.s3.bucket, endpoint: sourceBlobs.s3.endpoint, region: sourceBlobs.s3.region };
    fs.writeFileSync(
      path.join(dir, BUCKET_NOTE),
      `The file bytes of this data live in the S3 bucket "${sourceBlobs.s3.bucket}"${sourceBlobs.s3.endpoint ? ` at ${sourceBlobs.s3.endpoint}` : ''}, so they are not in this backup.\n` +
        'Back that bucket up with its own means (versioning, replication); restoring this backup needs BLOB_STORE=s3 with the same bucket.\n',
      { mode: 0o600 },
    );
  } else copied = await copyBlobs(sourceBlobs, blobStoreSettings({ dataDir: dir }));
  await expectBlobs(sourceBlobs.kind === 's3' ? sourceBlobs : blobStoreSettings({ dataDir: dir }), needed, (key) =>
    sourceBlobs.kind === 's3'
      ? `The blob ${key}, which the database snapshot refers to, is not in S3_BUCKET "${sourceBlobs.s3.bucket}"; run the backup again`
      : `The blob ${key}, which the database snapshot refers to, was deleted while the backup ran; run the backup again`,
  );

  // 3. The key: without it, no secret in the backup can be read again.
  let secretsKey: BackupManifest['secretsKey'];
  if (source.secretsKey !== null) {
    secretsKey = 'external';
    fs.writeFileSync(
      path.join(dir, EXTERNAL_KEY_NOTE),
      'The secrets key of this data is supplied through the SECRETS_KEY environment variable, so it is not in this backup.\n' +
        'Keep that key: restoring this backup needs the same SECRETS_KEY, and without it no stored secret can be read.\n',
      { mode: 0o600 },
    );
  } else {
    secretsKey = 'included';
    fs.copyFileSync(keyFile, path.join(dir, KEY_FILE));
    fs.chmodSync(path.join(dir, KEY_FILE), 0o600);
  }

  // 4. The manifest, last and atomically.
  const { schemaVersion, counts } = describeDatabase(dbCopy);
  const manifest: BackupManifest = {
    format: FORMAT,
    createdAt,
    schemaVersion,
    database: { file: DATABASE_COPY, bytes: fs.statSync(dbCopy).size, sha256: await sha256OfFile(dbCopy) },
    blobs: copied,
    blobLocation,
    counts,
    secretsKey,
  };
  const temp = path.join(dir, `${MANIFEST_FILE}.tmp`);
  fs.writeFileSync(temp, JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(temp, path.join(dir, MANIFEST_FILE));
  return { directory: dir, ...manifest };
}

/** Fails with `missing(key)` for the first of `keys` that `settings`' store does not hold. */
async function expectBlobs(settings: BlobStoreSettings, keys: Iterable<string>, missing: (key: string) => string): Promise<void> {
  const store = openBlobStore(settings);
  try {
    for (const key of keys) if ((await store.size(key)) === null) throw new BackupError(missing(key));
  } finally {
    store.close();
  }
}

function readManifest(dir: string): BackupManifest {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8');
  } catch {
    throw new BackupError(`${path.join(dir, MANIFEST_FILE)} is missing: ${dir} is not a finished backup`);
  }
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(text) as BackupManifest;
  } catch {
    throw new BackupError(`${path.join(dir, MANIFEST_FILE)} is not valid JSON`);
  }
  if (manifest.format !== FORMAT || typeof manifest.database?.sha256 !== 'string' || typeof manifest.blobs?.count !== 'number') {
    throw new BackupError(`${path.join(dir, MANIFEST_FILE)} is not a manifest this version understands (format ${JSON.stringify(manifest.format)})`);
  }
  return manifest;
}

/**
 * Brings the backup in `from` into `target`'s data directory, which must be empty: checks the database against
 * the manifest first, copies and verifies every blob, then the key, and puts the database in place last.
 */
export async function restoreBackup(from: string, target: DataLocation): Promise<{ dataDir: string; databaseFile: string; blobs: { count: number; bytes: number }; schemaVersion: number; createdAt: string }> {
  const dir = path.resolve(from);
  const manifest = readManifest(dir);
  const dbCopy = path.join(dir, manifest.database.file);
  const sha256 = fs.existsSync(dbCopy) ? await sha256OfFile(dbCopy) : null;
  if (sha256 !== manifest.database.sha256) {
    throw new BackupError(`${dbCopy} does not match the SHA-256 in the manifest (${sha256 === null ? 'missing' : 'damaged or changed'}); nothing was restored`);
  }
  if (!isEmptyDir(target.dataDir)) throw new BackupError(`${target.dataDir} is not empty; restore into a new or empty DATA_DIR`);
  if (fs.existsSync(target.databaseFile)) throw new BackupError(`${target.databaseFile} already exists; restore into a new DATABASE_FILE`);
  const backupKey = path.join(dir, KEY_FILE);
  if (manifest.secretsKey === 'external' && target.secretsKey === null) {
    throw new BackupError('This backup\'s secrets key was supplied through SECRETS_KEY; set the same SECRETS_KEY to restore it');
  }
  if (manifest.secretsKey === 'included') {
    if (!fs.existsSync(backupKey)) throw new BackupError(`${backupKey} is missing from the backup; without it no secret can be read`);
    if (target.secretsKey !== null) throw new BackupError('This backup includes its secrets key, but SECRETS_KEY is set and would take its place; unset SECRETS_KEY to restore');
  }

  const targetBlobs = blobStoreSettings(target);
  const inBucket = manifest.blobLocation !== undefined && manifest.blobLocation !== 'included' ? manifest.blobLocation : null;
  if (inBucket && targetBlobs.kind !== 's3') {
    throw new BackupError(`This backup's file bytes live in the S3 bucket "${inBucket.bucket}"; restore with BLOB_STORE=s3 and that bucket`);
  }

  fs.mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
  try {
    // File bytes left in a bucket stay there: the restored database is checked against it below.
    const copied = inBucket ? manifest.blobs : await copyBlobs(blobStoreSettings({ dataDir: dir }), targetBlobs);
    if (copied.count !== manifest.blobs.count || copied.bytes !== manifest.blobs.bytes) {
      throw new BackupError(`The backup's files/ holds ${copied.count} blobs (${copied.bytes} bytes), the manifest says ${manifest.blobs.count} (${manifest.blobs.bytes} bytes); it is incomplete`);
    }
    if (manifest.secretsKey === 'included') {
      fs.copyFileSync(backupKey, path.join(target.dataDir, KEY_FILE), fs.constants.COPYFILE_EXCL);
      fs.chmodSync(path.join(target.dataDir, KEY_FILE), 0o600);
    }
    // The database last, and whole: a restore that stopped before this has no database a server would start on.
    fs.mkdirSync(path.dirname(target.databaseFile), { recursive: true, mode: 0o700 });
    const temp = `${target.databaseFile}.restoring`;
    fs.copyFileSync(dbCopy, temp, fs.constants.COPYFILE_EXCL);
    fs.chmodSync(temp, 0o600);
    if ((await sha256OfFile(temp)) !== manifest.database.sha256) throw new BackupError(`The database copied to ${temp} does not match the manifest; the disk may be failing`);
    const handle = await fsp.open(temp, 'r+');
    await handle.sync().finally(() => handle.close());
    await fsp.rename(temp, target.databaseFile);
    const { keyOpens, blobKeys } = await inspect(target.databaseFile, loadSecretsKey(target.secretsKey, target.dataDir));
    if (inBucket && targetBlobs.kind === 's3') {
      await expectBlobs(targetBlobs, blobKeys, (key) => `The blob ${key}, which the backup's database refers to, is not in S3_BUCKET "${targetBlobs.s3.bucket}"; restore with the bucket the backup was taken from; nothing was restored`);
    }
    if (keyOpens === false) throw new BackupError(`The secrets key (${manifest.secretsKey === 'external' ? 'SECRETS_KEY' : 'secrets.key of the backup'}) ${WRONG_KEY}; nothing was restored`);
  } catch (err) {
    // Leave the directory as empty as it was found, so the restore can simply be run again.
    for (const name of fs.readdirSync(target.dataDir)) fs.rmSync(path.join(target.dataDir, name), { recursive: true, force: true });
    for (const suffix of ['.restoring', '', '-wal', '-shm']) fs.rmSync(`${target.databaseFile}${suffix}`, { force: true });
    throw err;
  }
  return { dataDir: target.dataDir, databaseFile: target.databaseFile, blobs: manifest.blobs, schemaVersion: manifest.schemaVersion, createdAt: manifest.createdAt };
}

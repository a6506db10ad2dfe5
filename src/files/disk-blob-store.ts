// Committed blobs in a directory (BLOB_DIR, by default $DATA_DIR/files/blobs), which several servers may share
// (a network filesystem). Each blob is one file named by its SHA-256 under two levels of fan-out directories.
//
// Sharing is safe because nothing is ever changed in place: a blob appears whole through link(2) (a file
// finished elsewhere is copied into `incoming/` first, so the link is within one filesystem), and two servers
// storing the same content link the same bytes under the same name. Finding the content already there, a
// writer refreshes the blob's modification time before recording its row. The purge moves a candidate into
// `purging/` (an atomic rename, so a writer can no longer refresh it and stores its own copy), looks at its
// modification time once more there, and only then deletes it, or puts it back. A purge that died half-way
// leaves its candidates in `purging/`; the next one puts them back (tidyShared). Clocks of servers sharing
// the directory must agree to well within the purge grace period (FILE_STALE_AFTER_SECONDS).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { BlobStoreUnavailableError, SHA256_HEX, type BlobStoreSettings, type ByteRange } from './blob-contract.ts';
import { CHUNK, DIR_MODE, FILE_MODE, StagedBlobStore } from './blob-staging.ts';

const FAN_OUT = /^[0-9a-f]{2}$/;
const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

export class DiskBlobStore extends StagedBlobStore {
  readonly settings: BlobStoreSettings;
  private readonly blobDir: string;
  private readonly incomingDir: string;
  private readonly purgingDir: string;

  constructor(staging: string, blobDir: string) {
    super(staging);
    this.settings = { kind: 'local-disk', staging, blobDir };
    this.blobDir = blobDir;
    this.incomingDir = path.join(blobDir, 'incoming');
    this.purgingDir = path.join(blobDir, 'purging');
    for (const dir of [this.blobDir, this.incomingDir, this.purgingDir]) fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  }

  private blobPath(key: string): string {
    if (!SHA256_HEX.test(key)) throw new Error(`Not a blob key: ${key}`);
    return path.join(this.blobDir, key.slice(0, 2), key.slice(2, 4), key);
  }

  async check(): Promise<void> {
    try {
      await fsp.access(this.incomingDir, fs.constants.W_OK);
    } catch (err) {
      throw new BlobStoreUnavailableError(`BLOB_DIR ${this.blobDir} is not writable by this server (${code(err)})`);
    }
  }

  close(): void {}

  protected async place(file: string, sha256: string): Promise<void> {
    const handle = await fsp.open(file, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    const target = this.blobPath(sha256);
    await fsp.mkdir(path.dirname(target), { recursive: true, mode: DIR_MODE });
    try {
      await this.linkOrRefresh(file, target);
    } catch (err) {
      if (code(err) !== 'EXDEV') throw err;
      // BLOB_DIR is on another filesystem than DATA_DIR: copy within the shared one first, then link from there.
      const incoming = path.join(this.incomingDir, randomUUID());
      try {
        await fsp.copyFile(file, incoming, fs.constants.COPYFILE_EXCL);
        await fsp.chmod(incoming, FILE_MODE);
        const copy = await fsp.open(incoming, 'r+');
        await copy.sync().finally(() => copy.close());
        await this.linkOrRefresh(incoming, target);
      } finally {
        await fsp.rm(incoming, { force: true });
      }
    }
  }

  /** Links `file` to `target`, or, when `target` is there already, refreshes its modification time. */
  private async linkOrRefresh(file: string, target: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await fsp.link(file, target);
      } catch (err) {
        if (code(err) !== 'EEXIST') throw err;
      }
      const now = new Date();
      try {
        // Also for a fresh link: a commit's file is as old as its last part, and the purge goes by this time.
        await fsp.utimes(target, now, now);
        return;
      } catch (err) {
        // The purge moved it aside between the link and now: link again (it will not take this fresh one).
        if (code(err) !== 'ENOENT' || attempt >= 3) throw err;
      }
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

  async deleteIfUnused(key: string, notModifiedSince: number): Promise<boolean> {
    const target = this.blobPath(key);
    const held = path.join(this.purgingDir, `${key}.${randomUUID()}`);
    try {
      await fsp.rename(target, held);
    } catch (err) {
      if (code(err) === 'ENOENT') return false;
      throw err;
    }
    // Moved aside, it cannot be refreshed any more: this time is final.
    if ((await fsp.stat(held)).mtimeMs < notModifiedSince) {
      await fsp.rm(held, { force: true });
      return true;
    }
    await this.putBack(held, key);
    return false;
  }

  /** Returns a blob moved into `purging/` to its place (unless a writer has stored the same bytes there since). */
  private async putBack(held: string, key: string): Promise<void> {
    try {
      await fsp.link(held, this.blobPath(key));
    } catch (err) {
      if (code(err) !== 'EEXIST') throw err;
    }
    await fsp.rm(held, { force: true });
  }

  async *list(): AsyncIterable<{ key: string; modifiedAt: number }> {
    for (const a of await fsp.readdir(this.blobDir).catch(() => [] as string[])) {
      if (!FAN_OUT.test(a)) continue;
      for (const b of await fsp.readdir(path.join(this.blobDir, a)).catch(() => [] as string[])) {
        const dir = path.join(this.blobDir, a, b);
        for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
          if (!SHA256_HEX.test(name)) continue;
          const st = await fsp.stat(path.join(dir, name)).catch(() => null);
          if (st) yield { key: name, modifiedAt: st.mtimeMs };
        }
      }
    }
  }

  async tidyShared(olderThan: number): Promise<number> {
    let count = 0;
    // Candidates of a purge that died before deciding go back to their place. A live purge's candidate is as
    // young as its rename (ctime), so it is left to that purge.
    for (const name of await fsp.readdir(this.purgingDir).catch(() => [] as string[])) {
      const key = name.split('.')[0]!;
      const held = path.join(this.purgingDir, name);
      const st = await fsp.stat(held).catch(() => null);
      if (!st || !SHA256_HEX.test(key) || st.ctimeMs >= olderThan) continue;
      await fsp.mkdir(path.dirname(this.blobPath(key)), { recursive: true, mode: DIR_MODE });
      await this.putBack(held, key);
      count++;
    }
    // Copies a server was making when it died.
    for (const name of await fsp.readdir(this.incomingDir).catch(() => [] as string[])) {
      const st = await fsp.stat(path.join(this.incomingDir, name)).catch(() => null);
      if (!st || st.mtimeMs >= olderThan) continue;
      await fsp.rm(path.join(this.incomingDir, name), { force: true });
      count++;
    }
    return count;
  }
}

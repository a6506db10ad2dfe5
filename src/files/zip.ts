// Zip archives: reading one that a workspace file holds (yauzl, straight from the blob store through a
// random-access reader, never whole in memory) and writing one on the fly for bulk downloads (yazl).
//
// An archive is checked from its central directory before anything is extracted: entry count, total
// declared uncompressed bytes (zip-bomb guard; yauzl then holds every entry to its declared size while
// inflating, and the bytes actually inflated are counted against the same limit) and every entry name
// (absolute paths, "..", backslashes: zip-slip). One bad entry refuses all. Reading an uploaded archive runs
// in a worker thread (unzip-worker.ts), never on the server's event loop.
import { pipeline, Transform, type Readable } from 'node:stream';
import yauzl from 'yauzl';
import yazl from 'yazl';
import type { BlobStore } from './blob-store.ts';
import { checkFileName, NameError } from './names.ts';
import { ExpansionBudget } from '../content/guards.ts';

export class ZipRefused extends Error {
  readonly reason: 'not_a_zip' | 'too_many_entries' | 'too_large' | 'unsafe_path' | 'bad_name' | 'encrypted';
  constructor(reason: ZipRefused['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

class BlobReader extends yauzl.RandomAccessReader {
  private readonly blobs: BlobStore;
  private readonly key: string;
  constructor(blobs: BlobStore, key: string) {
    super();
    this.blobs = blobs;
    this.key = key;
  }
  override _readStreamForRange(start: number, end: number): Readable {
    return this.blobs.read(this.key, { start, end: end - 1 });
  }
}

export interface ZipEntryPlan {
  entry: yauzl.Entry;
  /** Folder segments below the extraction folder (raw names, not yet encoded). */
  folders: string[];
  name: string;
}

export interface ZipPlan {
  files: ZipEntryPlan[];
  skipped: number;
  totalBytes: number;
}

const SKIPPED = /(^|\/)(__MACOSX\/|\.DS_Store$|Thumbs\.db$)/;

async function open(blobs: BlobStore, key: string, size: number): Promise<yauzl.ZipFile> {
  try {
    return await yauzl.fromRandomAccessReaderPromise(new BlobReader(blobs, key), size, {
      lazyEntries: true,
      autoClose: false,
      decodeStrings: false,
      validateEntrySizes: true,
    });
  } catch (err) {
    throw new ZipRefused('not_a_zip', `The file is not a readable zip archive (${(err as Error).message}).`);
  }
}

/** Reads and checks the central directory; throws ZipRefused for anything unsafe. */
export async function planZip(blobs: BlobStore, key: string, size: number, limits: { maxEntries: number; maxBytes: number }): Promise<ZipPlan> {
  const zip = await open(blobs, key, size);
  const files: ZipEntryPlan[] = [];
  let skipped = 0;
  let totalBytes = 0;
  let entries = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      if (++entries > limits.maxEntries) throw new ZipRefused('too_many_entries', `The archive has more than ${limits.maxEntries} entries (the limit set by UNZIP_MAX_ENTRIES).`);
      const name = Buffer.isBuffer(entry.fileName) ? (entry.fileName as Buffer).toString('utf8') : entry.fileName;
      const problem = yauzl.validateFileName(name);
      if (problem) throw new ZipRefused('unsafe_path', `The archive entry "${name}" would land outside the target folder: ${problem}.`);
      if (name.endsWith('/')) continue;
      if (SKIPPED.test(name)) {
        skipped++;
        continue;
      }
      if (entry.isEncrypted()) throw new ZipRefused('encrypted', `The archive entry "${name}" is encrypted.`);
      const segments = name.split('/').filter((s) => s !== '' && s !== '.');
      if (segments.includes('..')) throw new ZipRefused('unsafe_path', `The archive entry "${name}" would land outside the target folder.`);
      const fileName = segments.pop()!;
      try {
        checkFileName(fileName);
        for (const s of segments) checkFileName(s);
      } catch (err) {
        if (err instanceof NameError) throw new ZipRefused('bad_name', `The archive entry "${name}" has an unusable name: ${err.message}`);
        throw err;
      }
      totalBytes += entry.uncompressedSize;
      if (totalBytes > limits.maxBytes) throw new ZipRefused('too_large', `The archive expands to more than ${limits.maxBytes} bytes (the limit set by UNZIP_MAX_SIZE).`);
      files.push({ entry, folders: segments, name: fileName });
    }
  } catch (err) {
    // A central directory yauzl cannot walk to the end (bad signatures, sizes, offsets) is the archive's defect.
    if (err instanceof ZipRefused) throw err;
    throw new ZipRefused('not_a_zip', `The file is not a readable zip archive (${(err as Error).message}).`);
  } finally {
    zip.close();
  }
  return { files, skipped, totalBytes };
}

/**
 * Streams each planned entry's bytes to `sink`, one at a time, counting what is inflated against `maxBytes` for
 * the whole archive (a ContentError naming UNZIP_MAX_SIZE past it), whatever the headers declared.
 */
export async function extractZip(
  blobs: BlobStore,
  key: string,
  size: number,
  plan: ZipPlan,
  limits: { maxBytes: number },
  sink: (entry: ZipEntryPlan, content: Readable) => Promise<void>,
): Promise<void> {
  const budget = new ExpansionBudget(limits.maxBytes, 'archive', 'UNZIP_MAX_SIZE');
  const zip = await open(blobs, key, size);
  try {
    for (const item of plan.files) {
      const inflated = await zip.openReadStreamPromise(item.entry);
      const counted = new Transform({
        transform(chunk: Buffer, _enc, done) {
          try {
            budget.add(chunk.length);
          } catch (err) {
            return done(err as Error);
          }
          done(null, chunk);
        },
      });
      // Errors travel both ways: the sink sees the inflater's, and a sink that gives up stops the inflater.
      await sink(item, pipeline(inflated, counted, () => undefined));
    }
  } finally {
    zip.close();
  }
}

/** A zip written as it is read: entries are opened one after another, when the archive reaches them. */
export function zipStream(entries: { name: string; open: () => Readable; mtime: Date }[]): Readable {
  const zip = new yazl.ZipFile();
  for (const e of entries) {
    zip.addReadStreamLazy(e.name, { mtime: e.mtime, compress: true }, (cb) => cb(null, e.open()));
  }
  zip.end();
  return zip.outputStream as Readable;
}

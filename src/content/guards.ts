// Bounds on untrusted content, checked before (or while) a parser is given it. A parser that is handed a
// decompression bomb or a document nested half a million levels deep spends minutes and gigabytes on it; each
// check here costs one linear pass and fails the document with a message that names the limit it crossed.
// They run inside the content workers (src/content/pool.ts), so even the checks never hold the event loop.
import { createInflate } from 'node:zlib';
import { Parser } from 'htmlparser2';
import yauzl from 'yauzl';
import { assertJsonDepth, JsonTooDeepError } from '../domain/json-depth.ts';

/** The document is unusable as given (too deep, expands too far, malformed); retrying will not help. */
export class ContentError extends Error {
  override readonly name = 'ContentError';
}

export interface ContentLimits {
  /** Deepest nesting of JSON/YAML collections and HTML/XML elements (CONTENT_MAX_DEPTH). */
  maxDepth: number;
  /** Most bytes a compressed document (zip-based formats, PDF streams) may expand to (CONTENT_MAX_EXPANDED_BYTES). */
  maxExpandedBytes: number;
}

const mb = (n: number) => `${Math.round((n / (1024 * 1024)) * 10) / 10} MB`;

/** Counts bytes as they are inflated and stops at the limit; `setting` is the one named in the message. */
export class ExpansionBudget {
  private used = 0;
  private readonly limit: number;
  private readonly what: string;
  private readonly setting: string;
  constructor(limit: number, what: string, setting = 'CONTENT_MAX_EXPANDED_BYTES') {
    this.limit = limit;
    this.what = what;
    this.setting = setting;
  }

  add(bytes: number): void {
    this.used += bytes;
    if (this.used > this.limit) {
      throw new ContentError(`The ${this.what} expands to more than ${mb(this.limit)} (the limit set by ${this.setting}).`);
    }
  }
}

/** JSON (and JSON Lines, YAML flow collections) nested deeper than the limit is refused before it is parsed. */
export function checkJsonDepth(text: string, limits: ContentLimits, what: string): void {
  try {
    assertJsonDepth(text, limits.maxDepth);
  } catch (err) {
    if (err instanceof JsonTooDeepError) {
      throw new ContentError(`The ${what} nests more than ${limits.maxDepth} levels deep (the limit set by CONTENT_MAX_DEPTH).`);
    }
    throw err;
  }
}

class TooDeep extends Error {}

/**
 * HTML or XML whose elements nest deeper than the limit is refused. The tokenizer is htmlparser2's (the one the
 * HTML-to-text renderer uses), so implied end tags and void elements count exactly as the renderer will see them.
 */
export function checkMarkupDepth(text: string, mode: 'html' | 'xml', limits: ContentLimits, what: string): void {
  let depth = 0;
  const parser = new Parser(
    {
      onopentag() {
        if (++depth > limits.maxDepth) throw new TooDeep();
      },
      onclosetag() {
        depth--;
      },
    },
    { xmlMode: mode === 'xml', decodeEntities: false },
  );
  try {
    parser.end(text);
  } catch (err) {
    if (err instanceof TooDeep) {
      throw new ContentError(`The ${what} nests elements more than ${limits.maxDepth} levels deep (the limit set by CONTENT_MAX_DEPTH).`);
    }
    throw err;
  }
}

/**
 * Reads a zip held in memory. The sizes its central directory declares are added up first (an archive that declares
 * more than the limit is refused before anything is inflated); then every entry the caller wants is inflated
 * through yauzl, which holds it to its declared size, and counted against the limit again as it inflates.
 */
export async function readZipEntries(
  bytes: Buffer,
  wanted: (name: string) => boolean,
  limits: ContentLimits,
  what: string,
): Promise<Map<string, Buffer>> {
  let zip: yauzl.ZipFile;
  try {
    zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
      yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true }, (err, z) => (err ? reject(err) : resolve(z))),
    );
  } catch {
    throw new ContentError(`The ${what} is not a valid zip file.`);
  }
  // The central directory first: sizes declared past the limit refuse the archive before anything is inflated.
  const declared = new ExpansionBudget(limits.maxExpandedBytes, what);
  const budget = new ExpansionBudget(limits.maxExpandedBytes, what);
  const out = new Map<string, Buffer>();
  try {
    const entries: yauzl.Entry[] = [];
    for await (const entry of zip.eachEntry()) {
      declared.add(entry.uncompressedSize);
      if (wanted(entry.fileName)) entries.push(entry);
    }
    for (const entry of entries) {
      const parts: Buffer[] = [];
      let stream;
      try {
        stream = await zip.openReadStreamPromise(entry);
      } catch {
        throw new ContentError(`The ${what} could not be unpacked.`);
      }
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          budget.add(chunk.length);
          parts.push(chunk);
        }
      } catch (err) {
        stream.destroy();
        if (err instanceof ContentError) throw err;
        throw new ContentError(`The ${what} could not be unpacked.`);
      }
      out.set(entry.fileName, Buffer.concat(parts));
    }
  } catch (err) {
    if (err instanceof ContentError) throw err;
    throw new ContentError(`The ${what} could not be unpacked.`);
  } finally {
    zip.close();
  }
  return out;
}

const FLATE = /\/(?:FlateDecode|Fl)(?![A-Za-z])/;

/**
 * Inflates every Flate-compressed stream of a PDF once, discarding the output and counting it, before the PDF
 * parser sees the file: a stream that expands to gigabytes is refused after the limit's worth of inflating.
 * Streams the parser could read in other ways (object streams, other filters) stay bounded by the worker's heap
 * and time budget.
 */
export async function checkPdfExpansion(bytes: Buffer, limits: ContentLimits): Promise<void> {
  const budget = new ExpansionBudget(limits.maxExpandedBytes, 'PDF');
  let pos = 0;
  for (;;) {
    const at = bytes.indexOf('stream', pos, 'latin1');
    if (at === -1) return;
    pos = at + 6;
    // `endstream` also contains the keyword; the data starts after an end of line that follows the keyword.
    if (at >= 3 && bytes.toString('latin1', at - 3, at) === 'end') continue;
    let start = pos;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] !== 0x0a && start === pos) continue;
    if (bytes[start] === 0x0a) start++;
    const dictStart = Math.max(0, bytes.lastIndexOf('obj', at, 'latin1'));
    if (!FLATE.test(bytes.toString('latin1', Math.max(dictStart, at - 4096), at))) continue;
    const end = bytes.indexOf('endstream', start, 'latin1');
    const data = bytes.subarray(start, end === -1 ? bytes.length : end);
    await inflateCounting(data, budget);
    pos = end === -1 ? bytes.length : end + 9;
  }
}

function inflateCounting(data: Buffer, budget: ExpansionBudget): Promise<void> {
  return new Promise((resolve, reject) => {
    const inflate = createInflate({ finishFlush: 2 /* Z_SYNC_FLUSH: a stream cut short is not an error here */ });
    inflate.on('data', (chunk: Buffer) => {
      try {
        budget.add(chunk.length);
      } catch (err) {
        inflate.destroy();
        reject(err);
      }
    });
    // A stream zlib cannot read is left to the PDF parser to judge.
    inflate.on('error', () => resolve());
    inflate.on('end', () => resolve());
    inflate.end(data);
  });
}

// Text extraction: what a file says, as plain text. Text formats (plain, Markdown, CSV, JSON, YAML, XML, code)
// are decoded as UTF-8; HTML is rendered to text; PDF and DOCX go through pure-JS parsers (unpdf, mammoth).
// Reads at most `maxBytes` of the source. A document format cut short cannot be parsed, so it comes back
// empty and `degraded`. `extractText` runs in the content workers (src/content/), behind the guards that keep a
// hostile document from holding a parser for minutes; the parsers are loaded there, on first use.
import type { Readable } from 'node:stream';
import { checkMarkupDepth, checkPdfExpansion, ContentError, readZipEntries, type ContentLimits } from '../content/guards.ts';
import { essence } from './names.ts';

export type TextKind = 'text' | 'html' | 'pdf' | 'docx' | 'unsupported';

const TEXT_TYPES = new Set([
  'application/json', 'application/ld+json', 'application/xml', 'application/yaml', 'application/x-yaml', 'application/javascript',
  'application/x-javascript', 'application/typescript', 'application/sql', 'application/graphql', 'application/x-sh', 'application/toml',
  'application/csv', 'application/x-ndjson',
]);
const TEXT_EXTENSIONS = /\.(txt|md|markdown|csv|tsv|json|jsonl|ndjson|ya?ml|xml|toml|ini|log|js|mjs|cjs|ts|tsx|jsx|py|rb|go|rs|java|c|h|cpp|sh|sql|css|svg)$/i;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

export function textKind(contentType: string, name: string): TextKind {
  const type = essence(contentType);
  if (type === 'text/html' || type === 'application/xhtml+xml' || /\.html?$/i.test(name)) return 'html';
  if (type === 'application/pdf' || /\.pdf$/i.test(name)) return 'pdf';
  if (type === DOCX || /\.docx$/i.test(name)) return 'docx';
  if (type.startsWith('text/') || type.endsWith('+json') || type.endsWith('+xml') || TEXT_TYPES.has(type) || TEXT_EXTENSIONS.test(name)) return 'text';
  return 'unsupported';
}

/** Reads up to `max` bytes of a stream into one buffer, then stops reading. */
export async function readPrefix(stream: Readable, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const room = max - total;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      total += Math.min(chunk.length, room);
      if (total >= max) break;
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks, total);
}

export interface ExtractedText {
  text: string;
  degraded: boolean;
  degradedReason: string | null;
}

/** Text that could not be extracted, and why. */
export const degraded = (reason: string): ExtractedText => ({ text: '', degraded: true, degradedReason: reason });

/** `complete` says whether `bytes` is the whole source. A document beyond the limits comes back degraded, saying which. */
export async function extractText(kind: TextKind, bytes: Buffer, complete: boolean, limits: ContentLimits): Promise<ExtractedText> {
  try {
    switch (kind) {
      case 'text':
        return { text: decodeUtf8Prefix(bytes, complete), degraded: false, degradedReason: null };
      case 'html': {
        const html = decodeUtf8Prefix(bytes, complete);
        checkMarkupDepth(html, 'html', limits, 'HTML');
        const { convert } = await import('html-to-text');
        return { text: convert(html, { wordwrap: false }), degraded: false, degradedReason: null };
      }
      case 'pdf':
      case 'docx': {
        if (!complete) return degraded(`The ${kind.toUpperCase()} is larger than the extraction limit.`);
        return { text: kind === 'docx' ? await docxText(bytes, limits) : await pdfText(bytes, limits), degraded: false, degradedReason: null };
      }
      default:
        return degraded('This file type has no text to extract.');
    }
  } catch (err) {
    if (err instanceof ContentError) return degraded(err.message);
    throw err;
  }
}

async function docxText(bytes: Buffer, limits: ContentLimits): Promise<string> {
  // Every XML part is inflated (and counted) once before mammoth, which has no expansion limit of its own, sees it.
  const parts = await readZipEntries(bytes, (name) => /\.(xml|rels)$/i.test(name), limits, 'DOCX');
  if (!parts.has('word/document.xml')) throw new ContentError('The DOCX could not be parsed.');
  for (const [name, xml] of parts) if (name.endsWith('.xml')) checkMarkupDepth(xml.toString('utf8'), 'xml', limits, 'DOCX');
  const { default: mammoth } = await import('mammoth');
  try {
    return (await mammoth.extractRawText({ buffer: bytes })).value;
  } catch {
    throw new ContentError('The DOCX could not be parsed.');
  }
}

async function pdfText(bytes: Buffer, limits: ContentLimits): Promise<string> {
  await checkPdfExpansion(bytes, limits);
  const { extractText: textOf, getDocumentProxy } = await import('unpdf');
  try {
    const pdf = await getDocumentProxy(new Uint8Array(bytes));
    return (await textOf(pdf, { mergePages: true })).text;
  } catch {
    throw new ContentError('The PDF could not be parsed.');
  }
}

/** Decodes UTF-8, dropping a multi-byte character cut in half at the end of a truncated read. */
function decodeUtf8Prefix(bytes: Buffer, complete: boolean): string {
  let end = bytes.length;
  if (!complete) {
    let i = end - 1;
    let back = 0;
    while (i >= 0 && back < 4 && (bytes[i]! & 0xc0) === 0x80) {
      i--;
      back++;
    }
    if (i >= 0 && bytes[i]! >= 0xc0) {
      const need = bytes[i]! >= 0xf0 ? 4 : bytes[i]! >= 0xe0 ? 3 : 2;
      if (back + 1 < need) end = i;
    }
  }
  return bytes.subarray(0, end).toString('utf8').replace(/^\uFEFF/, '');
}

/** Lines `offset`..`offset+limit-1` (1-based) of `text`, with where they sit. */
export function selectLines(text: string, offset: number | undefined, limit: number | undefined, totalExact: boolean) {
  const lines = text.split(/\r?\n/);
  if (offset === undefined && limit === undefined) return { text, lineRange: undefined };
  const start = (offset ?? 1) - 1;
  const picked = lines.slice(start, limit === undefined ? undefined : start + limit);
  return {
    text: picked.join('\n'),
    lineRange: { offset: start + 1, lineCount: picked.length, totalLines: lines.length, totalLinesExact: totalExact },
  };
}

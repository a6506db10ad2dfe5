// Text extraction: what a file says, as plain text. Text formats (plain, Markdown, CSV, JSON, YAML, XML, code)
// are decoded as UTF-8; HTML is rendered to text; PDF and DOCX go through pure-JS parsers (unpdf, mammoth).
// Reads at most `maxBytes` of the source. A document format cut short cannot be parsed, so it comes back
// empty and `degraded`.
import type { Readable } from 'node:stream';
import { convert as htmlToText } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText as pdfText, getDocumentProxy } from 'unpdf';
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

/** `complete` says whether `bytes` is the whole source. */
export async function extractText(kind: TextKind, bytes: Buffer, complete: boolean): Promise<ExtractedText> {
  switch (kind) {
    case 'text':
      return { text: decodeUtf8Prefix(bytes, complete), degraded: false, degradedReason: null };
    case 'html':
      return { text: htmlToText(decodeUtf8Prefix(bytes, complete), { wordwrap: false }), degraded: false, degradedReason: null };
    case 'pdf':
    case 'docx': {
      if (!complete) return { text: '', degraded: true, degradedReason: `The ${kind.toUpperCase()} is larger than the extraction limit.` };
      try {
        if (kind === 'docx') return { text: (await mammoth.extractRawText({ buffer: bytes })).value, degraded: false, degradedReason: null };
        const pdf = await getDocumentProxy(new Uint8Array(bytes));
        const { text } = await pdfText(pdf, { mergePages: true });
        return { text, degraded: false, degradedReason: null };
      } catch {
        return { text: '', degraded: true, degradedReason: `The ${kind.toUpperCase()} could not be parsed.` };
      }
    }
    default:
      return { text: '', degraded: true, degradedReason: 'This file type has no text to extract.' };
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

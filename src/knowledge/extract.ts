// What text a knowledge document holds. Text formats, HTML, PDF and DOCX go through the Files extractors
// (src/files/text.ts); XLSX workbooks and PPTX decks are read here from their Office Open XML parts (yauzl for
// the zip, under the shared expansion guard; the XML text nodes in document order). Legacy binary Office formats
// (doc, xls, ppt) are refused.
import { ContentError, readZipEntries, type ContentLimits } from '../content/guards.ts';
import { essence } from '../files/names.ts';
import { extractText, textKind } from '../files/text.ts';
import type { ContentKind } from './chunker.ts';

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';

export type DocumentFormat = 'text' | 'html' | 'pdf' | 'docx' | 'xlsx' | 'pptx';

const extensionOf = (name: string) => /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase() ?? '';

/** The format a document is read as, or null when it is not supported. */
export function documentFormat(contentType: string, filename: string): DocumentFormat | null {
  const type = essence(contentType);
  const ext = extensionOf(filename);
  if (type === XLSX || ext === 'xlsx') return 'xlsx';
  if (type === PPTX || ext === 'pptx') return 'pptx';
  if (['doc', 'xls', 'ppt'].includes(ext) || ['application/msword', 'application/vnd.ms-excel', 'application/vnd.ms-powerpoint'].includes(type)) return null;
  const kind = textKind(contentType, filename);
  return kind === 'unsupported' ? null : kind;
}

/** How the auto chunking strategy should treat the text. */
export function contentKindOf(contentType: string, filename: string, format: DocumentFormat): ContentKind {
  const type = essence(contentType);
  const ext = extensionOf(filename);
  if (format === 'xlsx') return 'csv';
  if (format !== 'text') return 'text';
  if (ext === 'jsonl' || ext === 'ndjson' || type === 'application/x-ndjson' || type === 'application/jsonl') return 'jsonl';
  if (ext === 'json' || type === 'application/json' || type.endsWith('+json')) return 'json';
  if (['yaml', 'yml'].includes(ext) || type.includes('yaml')) return 'yaml';
  if (['csv', 'tsv'].includes(ext) || type === 'text/csv' || type === 'application/csv') return 'csv';
  if (['md', 'markdown', 'mdx'].includes(ext) || type === 'text/markdown') return 'markdown';
  if (/^(js|mjs|cjs|ts|tsx|jsx|py|rb|go|rs|java|c|h|cpp|sh|sql|css)$/.test(ext)) return 'code';
  return 'text';
}

/** Runs in a content worker (src/content/tasks.ts). */
export async function extractDocument(bytes: Buffer, contentType: string, filename: string, limits: ContentLimits): Promise<{ text: string; kind: ContentKind }> {
  const format = documentFormat(contentType, filename);
  if (!format) throw new ContentError(`Unsupported document type (${contentType}, ${filename}).`);
  let text: string;
  if (format === 'xlsx') text = await workbookText(bytes, limits);
  else if (format === 'pptx') text = await deckText(bytes, limits);
  else {
    const out = await extractText(format, bytes, true, limits);
    if (out.degraded) throw new ContentError(out.degradedReason ?? 'The document could not be read.');
    text = out.text;
  }
  if (text.includes('\u0000')) throw new ContentError('The document is binary data, not text of the declared type.');
  return { text: text.replace(/\r\n?/g, '\n'), kind: contentKindOf(contentType, filename, format) };
}

/** The wanted XML parts of an Office Open XML package, inflated under the shared expansion guard. */
async function xmlParts(bytes: Buffer, wanted: (name: string) => boolean, limits: ContentLimits, what: string): Promise<Map<string, string>> {
  let parts: Map<string, Buffer>;
  try {
    parts = await readZipEntries(bytes, wanted, limits, what);
  } catch (err) {
    if (err instanceof ContentError && / is not a valid zip file\.$/.test(err.message)) throw new ContentError('The document is not a valid Office Open XML (zip) file.');
    throw err;
  }
  return new Map([...parts].map(([name, xml]) => [name, xml.toString('utf8')]));
}

const decodeXml = (s: string) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e.toLowerCase()]!;
  });

const naturalOrder = (a: string, b: string) => Number(/(\d+)\.xml$/.exec(a)?.[1] ?? 0) - Number(/(\d+)\.xml$/.exec(b)?.[1] ?? 0);

/** Slides in order, the text runs of each paragraph joined, one line per paragraph. */
async function deckText(bytes: Buffer, limits: ContentLimits): Promise<string> {
  const parts = await xmlParts(bytes, (n) => /^ppt\/slides\/slide\d+\.xml$/.test(n), limits, 'presentation');
  if (parts.size === 0) throw new ContentError('The presentation has no slides.');
  return [...parts.keys()]
    .sort(naturalOrder)
    .map((name, i) => {
      const paragraphs = [...parts.get(name)!.matchAll(/<a:p\b[\s\S]*?<\/a:p>/g)].map((p) =>
        [...p[0].matchAll(/<a:t(?:\s[^>]*)?>([\s\S]*?)<\/a:t>/g)].map((t) => decodeXml(t[1]!)).join(''),
      );
      return `## Slide ${i + 1}\n${paragraphs.filter((p) => p.trim() !== '').join('\n')}`;
    })
    .join('\n\n');
}

/** Each sheet as CSV-like lines (values joined by commas, quoted when needed) under a "## Sheet" line. */
async function workbookText(bytes: Buffer, limits: ContentLimits): Promise<string> {
  const parts = await xmlParts(bytes, (n) => n === 'xl/sharedStrings.xml' || n === 'xl/workbook.xml' || /^xl\/worksheets\/sheet\d+\.xml$/.test(n), limits, 'workbook');
  const shared = [...(parts.get('xl/sharedStrings.xml') ?? '').matchAll(/<si>([\s\S]*?)<\/si>/g)].map((si) =>
    [...si[1]!.matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g)].map((t) => decodeXml(t[1]!)).join(''),
  );
  const names = [...(parts.get('xl/workbook.xml') ?? '').matchAll(/<sheet\b[^>]*\bname="([^"]*)"/g)].map((m) => decodeXml(m[1]!));
  const sheets = [...parts.keys()].filter((n) => n.startsWith('xl/worksheets/')).sort(naturalOrder);
  if (sheets.length === 0) throw new ContentError('The workbook has no sheets.');
  const csv = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  return sheets
    .map((name, i) => {
      const rows = [...parts.get(name)!.matchAll(/<row\b[^>]*>([\s\S]*?)<\/row>/g)].map((row) =>
        [...row[1]!.matchAll(/<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)]
          .map((c) => {
            const attrs = c[1] ?? '';
            const body = c[2] ?? '';
            const type = /\bt="([^"]+)"/.exec(attrs)?.[1];
            const v = /<v>([\s\S]*?)<\/v>/.exec(body)?.[1];
            if (type === 's' && v !== undefined) return shared[Number(v)] ?? '';
            if (type === 'inlineStr') return [...body.matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g)].map((t) => decodeXml(t[1]!)).join('');
            return v === undefined ? '' : decodeXml(v);
          })
          .map(csv)
          .join(','),
      );
      return `## Sheet: ${names[i] ?? `Sheet${i + 1}`}\n${rows.filter((r) => r.replace(/,/g, '') !== '').join('\n')}`;
    })
    .join('\n\n');
}

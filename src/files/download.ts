// How stored content is sent: its media type, length and name, and one byte range when asked for.
import type { Readable } from 'node:stream';
import type { BlobStore } from './blob-store.ts';

export interface Servable {
  blobKey: string;
  size: number;
  contentType: string;
  name: string;
}

export interface ServedContent {
  status: 200 | 206;
  headers: Record<string, string>;
  stream: Readable;
}

/** `attachment` with an ASCII fallback name and the exact UTF-8 name (RFC 6266 / RFC 8187). */
export function contentDisposition(name: string, kind: 'attachment' | 'inline' = 'attachment'): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

/** One satisfiable range of `size` bytes, or null to send everything (other forms are ignored, as RFC 9110 allows). */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null {
  if (!header || size === 0) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return null;
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (!Number.isSafeInteger(start) || start >= size || end < start) return null;
  return { start, end };
}

export function serveContent(blobs: BlobStore, item: Servable, rangeHeader: string | undefined): ServedContent {
  const range = parseRange(rangeHeader, item.size);
  const headers: Record<string, string> = {
    'Content-Type': item.contentType,
    'Content-Disposition': contentDisposition(item.name),
    'Accept-Ranges': 'bytes',
    ETag: `"${item.blobKey}"`,
    'X-Content-Type-Options': 'nosniff',
  };
  if (!range) {
    headers['Content-Length'] = String(item.size);
    return { status: 200, headers, stream: blobs.read(item.blobKey) };
  }
  headers['Content-Length'] = String(range.end - range.start + 1);
  headers['Content-Range'] = `bytes ${range.start}-${range.end}/${item.size}`;
  return { status: 206, headers, stream: blobs.read(item.blobKey, range) };
}

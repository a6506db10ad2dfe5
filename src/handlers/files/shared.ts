// What the Files handlers share: the request's workspace, flags, name checks as 400s, inline content, and the text view.
import { Readable } from 'node:stream';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, invalidField, notFound } from '../../http/errors.ts';
import type { StoredFile } from '../../store/files.ts';
import { folderPathOf, NameError, vfsPath } from '../../files/names.ts';
import { shareView } from '../../files/views.ts';
import { openShareToken } from '../../files/share-tokens.ts';
import type { FileShareRecord } from '../../store/file-shares.ts';
import { loadFile } from '../../files/service.ts';
import { readPrefix, selectLines, textKind } from '../../files/text.ts';

/** Inline content (createFile, updateFileContent) is capped; larger content goes through an upload session. */
export const MAX_INLINE_BYTES = 50 * 1024 * 1024;
export const MAX_BULK_DOWNLOAD_FILES = 100;
export const MAX_SEARCH_FILE_BYTES = 5 * 1024 * 1024;

export const workspaceOf = (ctx: RequestContext) => ctx.workspace!.workspace;
export const baseUrl = (ctx: RequestContext) => ctx.baseUrl;
export const nowIso = () => new Date().toISOString();
export const TRUE_FLAGS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);
export const flag = (v: string | undefined, fallback: boolean) => (v === undefined ? fallback : TRUE_FLAGS.has(v));

/** Name and path rules the schema cannot state, reported as a 400 on the field that broke them. */
export function checked<T>(where: 'body' | 'query', fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof NameError) throw invalidField([where, err.field], err.message);
    throw err;
  }
}

export function decodeContent(content: string, encoding: 'utf-8' | 'base64' | undefined): Buffer {
  let bytes: Buffer;
  if (encoding === 'base64') {
    const compact = content.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw invalidField(['body', 'content'], 'content is not valid base64.');
    bytes = Buffer.from(compact, 'base64');
  } else bytes = Buffer.from(content, 'utf8');
  if (bytes.length > MAX_INLINE_BYTES) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `Inline content may be at most ${MAX_INLINE_BYTES} bytes; use an upload session for larger files.`);
  }
  return bytes;
}

export const writeBuffer = (ctx: RequestContext, bytes: Buffer) => ctx.services.blobs.write(Readable.from([bytes]), { expectedSize: bytes.length });

export async function readWholeText(ctx: RequestContext, blobKey: string, size: number): Promise<string> {
  if (size > ctx.services.config.files.textMaxBytes) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `Only files up to ${ctx.services.config.files.textMaxBytes} bytes can be edited as text.`);
  }
  return (await readPrefix(ctx.services.blobs.read(blobKey), size)).toString('utf8');
}

/** Resolves an id, or the `files/<folder>/<name>` path form Read File Text also accepts. */
export async function fileByIdOrPath(ctx: RequestContext, idOrPath: string): Promise<StoredFile> {
  const workspaceId = workspaceOf(ctx).id;
  if (!idOrPath.startsWith('files/')) return loadFile(ctx.services.store, workspaceId, idOrPath);
  const rest = idOrPath.slice('files/'.length);
  const cut = rest.lastIndexOf('/');
  const folder = cut === -1 ? '/' : checked('query', () => folderPathOf(rest.slice(0, cut)));
  const file = await ctx.services.store.files.activeByName(workspaceId, folder, rest.slice(cut + 1));
  if (!file) throw notFound('File');
  return file;
}

export async function textOf(
  ctx: RequestContext,
  item: { fileId: string; name: string; folderPath: string; blobKey: string; size: number; contentType: string },
  query: { maxBytes?: number; offset?: number; limit?: number },
) {
  const limit = Math.min(query.maxBytes ?? Number.MAX_SAFE_INTEGER, ctx.services.config.files.textMaxBytes);
  const toRead = Math.min(limit, item.size);
  const bytes = await readPrefix(ctx.services.blobs.read(item.blobKey), toRead);
  const complete = toRead === item.size;
  const extracted = await ctx.services.content.fileText(textKind(item.contentType, item.name), bytes, complete);
  const selected = selectLines(extracted.text, query.offset, query.limit, complete);
  return {
    fileId: item.fileId,
    name: item.name,
    path: vfsPath(item.folderPath, item.name),
    type: item.contentType,
    text: selected.text,
    truncated: !complete,
    degraded: extracted.degraded,
    degradedReason: extracted.degradedReason,
    charCount: selected.text.length,
    byteCount: bytes.length,
    ...(selected.lineRange ? { lineRange: selected.lineRange } : {}),
  };
}

/** The share as members see it: its link rebuilt from the sealed token (only a hash and the sealed copy are stored). */
export const viewOfShare = (ctx: RequestContext, share: FileShareRecord) => shareView(baseUrl(ctx), share, openShareToken(ctx.services.secrets, share));

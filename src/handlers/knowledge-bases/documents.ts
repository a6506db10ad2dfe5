// Knowledge documents: upload sessions, indexing workspace files, listing, reading, updating, deleting.
// Every new or re-queued document is processed by the queue in src/knowledge/service.ts.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, badRequest, conflict, invalidField } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { KnowledgeDocumentRecord, TagValue } from '../../store/knowledge-documents.ts';
import type { UploadSessionRecord } from '../../store/file-uploads.ts';
import { BlobSizeError, type BlobInfo } from '../../files/blob-store.ts';
import { abortUpload, isExpired } from '../../files/uploads.ts';
import { newUploadSession } from '../../files/service.ts';
import { checkFileName, mediaTypeFor, NameError } from '../../files/names.ts';
import Busboy from 'busboy';
import { documentFormat } from '../../knowledge/extract.ts';
import * as documents from '../../knowledge/documents.ts';
import { completeDocumentUpload, newDocument } from '../../knowledge/documents.ts';
import { isValidDate, resolveFilters, slotType, type TagFilter } from '../../knowledge/tags.ts';
import { checkKnowledgeUploadToken, loadKnowledgeSession, partUrl, signKnowledgeUploadToken } from '../../knowledge/uploads.ts';
import { documentDetail, documentSummary, documentView, loadBase, loadDocument, workspaceOf } from './shared.ts';
import { assertAccess } from '../../access-control/policy.ts';

function checkedName(name: string, field: string): string {
  try {
    return checkFileName(name);
  } catch (err) {
    if (err instanceof NameError) throw invalidField(['body', field], err.message);
    throw err;
  }
}

// ───────────── listing and reading

export function parseTagFilters(raw: string | undefined, field: (string | number)[]): TagFilter[] | null {
  if (raw === undefined) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalidField(field, 'tagFilters must be a JSON-encoded array of filters.');
  }
  if (!Array.isArray(parsed)) throw invalidField(field, 'tagFilters must be a JSON-encoded array of filters.');
  if (parsed.length > 10) throw invalidField(field, 'At most 10 tag filters may be given.');
  return parsed.map((f, i) => {
    if (!f || typeof f !== 'object' || typeof (f as TagFilter).tagName !== 'string' || !['string', 'number', 'boolean'].includes(typeof (f as TagFilter).value)) {
      throw invalidField([...field, i], 'Each tag filter is {tagName, operator?, value, valueTo?}.');
    }
    return f as TagFilter;
  });
}

export const listKnowledgeDocuments: Handler<'listKnowledgeDocuments'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const defs = await ctx.services.store.knowledgeBases.tags(kb.id);
  const filters = parseTagFilters(query.tagFilters, ['query', 'tagFilters']);
  const tagConditions = filters && filters.length ? resolveFilters(filters, [defs], ['query', 'tagFilters']) : [];
  const sortBy = query.sortBy ?? 'uploadedAt';
  const order = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const enabledFilter = query.enabledFilter ?? 'all';
  const binding = { kb: kb.id, search: query.search ?? null, enabledFilter, sortBy, order, tagFilters: query.tagFilters ?? null };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.knowledgeDocuments.list({
    knowledgeBaseId: kb.id,
    search: binding.search,
    enabled: enabledFilter === 'all' ? null : enabledFilter === 'enabled',
    tagConditions,
    sortBy,
    order,
    after,
    limit: limit + 1,
  });
  const key = (d: KnowledgeDocumentRecord) => {
    const v = { filename: d.filename, fileSize: d.fileSize, tokenCount: d.tokenCount, chunkCount: d.chunkCount, uploadedAt: d.uploadedAt, processingStatus: d.processingStatus, enabled: d.enabled ? 1 : 0 }[sortBy];
    return [v, d.id] as const;
  };
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, (d) => documentView(d, defs)) };
};

export const getKnowledgeDocument: Handler<'getKnowledgeDocument'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  return { status: 200, body: { data: documentDetail(doc, await ctx.services.store.knowledgeBases.tags(kb.id)) } };
};

// ───────────── changing documents

export const updateKnowledgeDocument: Handler<'updateKnowledgeDocument'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const { workspaceId: _ws, retryProcessing, filename, enabled, ...tagFields } = body;
  if (retryProcessing) {
    if (filename !== undefined || enabled !== undefined || Object.keys(tagFields).length > 0) {
      throw invalidField(['body', 'retryProcessing'], 'retryProcessing must be sent alone.');
    }
    const doc = await ctx.mutate((tx, audit) => documents.retryDocument(tx, audit, kb, params.documentId));
    ctx.services.knowledge.notify();
    return { status: 200, body: { data: { id: doc.id, queued: true as const, processingStatus: 'pending', message: 'The document was queued for processing again.' } } };
  }
  const defs = await ctx.services.store.knowledgeBases.tags(kb.id);
  const tags: Record<string, TagValue> = {};
  for (const [slot, value] of Object.entries(tagFields as Record<string, unknown>)) {
    if (value === undefined) continue;
    const def = defs.find((d) => d.tagSlot === slot);
    if (!def) throw invalidField(['body', slot], `No tag is defined on slot ${slot}; create one first.`);
    if (def.fieldType !== slotType(slot)) throw invalidField(['body', slot], `The tag on ${slot} is of type ${def.fieldType}.`);
    if (slotType(slot) === 'date' && !isValidDate(value as string)) throw invalidField(['body', slot], `${slot} must be a real date written YYYY-MM-DD.`);
    tags[slot] = value as TagValue;
  }
  const name = filename === undefined ? undefined : checkedName(filename, 'filename');
  const fields = Object.keys(body).filter((k) => k !== 'workspaceId');
  const updated = await ctx.mutate((tx, audit) => documents.updateDocument(tx, audit, kb, params.documentId, { filename: name, enabled, tags, fields }));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: documentView(updated, defs) } };
};

export const deleteKnowledgeDocument: Handler<'deleteKnowledgeDocument'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  await ctx.mutate((tx, audit) => documents.deleteDocument(tx, audit, kb, params.documentId));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { id: params.documentId, deleted: true as const } } };
};

export const bulkUpdateKnowledgeDocuments: Handler<'bulkUpdateKnowledgeDocuments'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  if (!body.selectAll && !body.documentIds) throw badRequest('Send documentIds, or selectAll: true.', [{ code: 'custom', keys: [], path: ['body', 'documentIds'], message: 'documentIds or selectAll is required' }]);
  if (body.selectAll && body.documentIds) throw invalidField(['body', 'selectAll'], 'Send documentIds or selectAll, not both.');
  if (body.enabledFilter && !body.selectAll) throw invalidField(['body', 'enabledFilter'], 'enabledFilter narrows selectAll only.');
  const enabledFilter = body.enabledFilter && body.enabledFilter !== 'all' ? body.enabledFilter === 'enabled' : null;
  const changed = await ctx.mutate((tx, audit) => documents.setDocumentsEnabled(tx, audit, kb, { documentIds: body.documentIds ?? null, enabledFilter }, body.operation));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { operation: body.operation, updatedCount: changed.length, documentIds: changed } } };
};

// ───────────── workspace files

export const addWorkspaceFilesToKnowledgeBase: Handler<'addWorkspaceFilesToKnowledgeBase'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const workspace = workspaceOf(ctx);
  const max = ctx.services.config.knowledge.maxDocumentBytes;
  const failed: string[] = [];
  const docs: KnowledgeDocumentRecord[] = [];
  const seen = new Set<string>();
  for (const ref of body.fileReferences) {
    const keyed = /^workspace\/([^/]+)\/([^/]+)$/.exec(ref);
    const fileId = keyed ? (keyed[1] === workspace.id ? keyed[2]! : null) : ref;
    const file = fileId ? await ctx.services.store.files.get(fileId) : undefined;
    if (!file || file.workspaceId !== workspace.id || file.deletedAt || file.size > max || !documentFormat(file.contentType, file.name)) {
      failed.push(ref);
      continue;
    }
    if (seen.has(file.id)) continue;
    seen.add(file.id);
    docs.push(newDocument(kb, { filename: file.name, fileSize: file.size, mimeType: file.contentType, blobKey: file.blobKey, sourceFileId: file.id }));
  }
  if (docs.length > 0) {
    await ctx.mutate((tx, audit) => documents.addFileDocuments(tx, audit, kb, docs, failed.length));
    ctx.services.knowledge.notify();
  }
  return {
    status: 200,
    body: { data: { knowledgeBaseId: kb.id, added: docs.map((d) => ({ documentId: d.id, filename: d.filename, mimeType: d.mimeType, fileSize: d.fileSize })), failed } },
  };
};

// ───────────── upload sessions

async function sessionBody(ctx: RequestContext, session: UploadSessionRecord, knowledgeBaseId: string, documentId: string | null) {
  const doc = documentId ? await ctx.services.store.knowledgeDocuments.get(documentId) : undefined;
  return {
    data: {
      id: session.id,
      knowledgeBaseId,
      status: session.status,
      name: session.name,
      contentType: session.contentType,
      size: session.size,
      expiresAt: session.expiresAt,
      error: session.error,
      document: doc ? documentSummary(doc) : null,
    },
  };
}

export const createKnowledgeDocumentUpload: Handler<'createKnowledgeDocumentUpload'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const workspace = workspaceOf(ctx);
  await assertAccess(ctx.services.store, { workspaceId: kb.workspaceId, userId: ctx.principal.userId }, { kind: 'feature', key: 'disableKnowledgeBaseFileUpload', action: 'Uploading documents to knowledge bases' });
  const name = checkedName(body.name, 'name');
  if (!documentFormat(body.contentType, name)) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `Documents of type ${body.contentType} (${name}) cannot be indexed. Supported: pdf, docx, txt, md, html, csv, json, jsonl, yaml, xlsx, pptx and other text formats.`);
  }
  const max = ctx.services.config.knowledge.maxDocumentBytes;
  if (body.size > max) throw new ApiError('PAYLOAD_TOO_LARGE', `A knowledge document may be at most ${max} bytes.`, { code: 'FILE_TOO_LARGE', limit: max });
  const limits = ctx.services.config.files;
  const session = newUploadSession({ workspaceId: workspace.id, userId: ctx.principal.userId, name, contentType: body.contentType, size: body.size }, limits);
  const { multipart } = session;

  const tags = Object.fromEntries(Object.entries(body).filter(([k, v]) => /^tag[1-7]$/.test(k) && v !== undefined));
  await ctx.mutate((tx, audit) => documents.openDocumentUpload(tx, audit, kb, { workspace, limits, session, tags, processingOptions: body.processingOptions ?? null }));
  const key = ctx.services.signingKey;
  const transfer = multipart
    ? { method: 'multipart' as const, partSize: session.partSize, partCount: session.partCount }
    : { method: 'put' as const, url: partUrl(ctx.baseUrl, key, session, 1), headers: { 'Content-Type': session.contentType }, expiresAt: session.expiresAt };
  const start = await sessionBody(ctx, session, kb.id, null);
  return { status: 200, body: { data: { session: start.data, uploadToken: signKnowledgeUploadToken(key, session), transfer } } };
};

async function tokenChecked(ctx: RequestContext, knowledgeBaseId: string, uploadId: string, token: string) {
  const found = await loadKnowledgeSession(ctx.services.store, uploadId, workspaceOf(ctx).id, knowledgeBaseId);
  checkKnowledgeUploadToken(ctx.services.signingKey, token, uploadId, workspaceOf(ctx).id);
  return found;
}

export const createKnowledgeDocumentUploadPartUrls: Handler<'createKnowledgeDocumentUploadPartUrls'> = async ({ params, headers, body, ctx }) => {
  const { session } = await tokenChecked(ctx, params.knowledgeBaseId, params.uploadId, headers['upload-token']);
  if (session.status !== 'uploading' || isExpired(session)) throw conflict(`The upload session is ${isExpired(session) ? 'expired' : session.status}.`);
  const bad = body.partNumbers.findIndex((n) => n > session.partCount);
  if (bad !== -1) throw invalidField(['body', 'partNumbers', bad], `Part numbers run from 1 to ${session.partCount} for this upload.`);
  const parts = [...new Set(body.partNumbers)].map((partNumber) => ({
    partNumber,
    url: partUrl(ctx.baseUrl, ctx.services.signingKey, session, partNumber),
    headers: { 'Content-Type': session.contentType },
    expiresAt: session.expiresAt,
  }));
  return { status: 200, body: { data: { parts } } };
};

export const abortKnowledgeDocumentUpload: Handler<'abortKnowledgeDocumentUpload'> = async ({ params, headers, ctx }) => {
  const { session, link } = await tokenChecked(ctx, params.knowledgeBaseId, params.uploadId, headers['upload-token']);
  if (session.status === 'completed') throw conflict('The upload is already completed; delete the document instead.');
  await abortUpload({ blobs: ctx.services.blobs, mutate: (fn) => ctx.mutate(fn) }, session, 'knowledge_upload');
  return { status: 200, body: await sessionBody(ctx, (await ctx.services.store.fileUploads.get(session.id))!, link.knowledgeBaseId, null) };
};

export const completeKnowledgeDocumentUpload: Handler<'completeKnowledgeDocumentUpload'> = async ({ params, headers, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const { session, link } = await tokenChecked(ctx, kb.id, params.uploadId, headers['upload-token']);
  const { store, blobs } = ctx.services;
  const documentId = await completeDocumentUpload({ store, blobs, mutate: (fn) => ctx.mutate(fn), leases: ctx.services.config.leases }, kb, { sessionId: session.id, options: link.options });
  ctx.services.knowledge.notify();
  return { status: 200, body: await sessionBody(ctx, (await ctx.services.store.fileUploads.get(session.id))!, kb.id, documentId) };
};

// ───────────── direct multipart upload

/**
 * POST /documents with a multipart/form-data body: one `file` part (its filename and type name the document)
 * and optional `tag1`..`tag7` fields. The bytes stream into the blob store; the document is queued.
 */
export const uploadKnowledgeDocument: Handler<'uploadKnowledgeDocument'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const req = body as unknown as import('node:http').IncomingMessage;
  try {
    await assertAccess(ctx.services.store, { workspaceId: kb.workspaceId, userId: ctx.principal.userId }, { kind: 'feature', key: 'disableKnowledgeBaseFileUpload', action: 'Uploading documents to knowledge bases' });
  } catch (err) {
    req.resume();
    throw err;
  }
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(contentType)) {
    req.resume();
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Send the document as multipart/form-data with a "file" part.');
  }
  const max = ctx.services.config.knowledge.maxDocumentBytes;
  const fields: Record<string, string> = {};
  let stored: { blob: BlobInfo; filename: string; mimeType: string } | null = null;
  let problem: ApiError | null = null;
  await new Promise<void>((resolve, reject) => {
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({ headers: req.headers, limits: { files: 1, fields: 20, fieldSize: 2000, fileSize: max + 1 } });
    } catch {
      problem = badRequest('The multipart body could not be read.');
      req.resume();
      return resolve();
    }
    const pending: Promise<void>[] = [];
    parser.on('field', (name, value) => {
      if (/^tag[1-7]$/.test(name)) fields[name] = value.slice(0, 1000);
    });
    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        return;
      }
      let filename: string;
      try {
        filename = checkFileName(info.filename ?? '');
      } catch {
        problem = invalidField(['body', 'file'], 'The file part needs a valid filename.');
        stream.resume();
        return;
      }
      const mimeType = info.mimeType && info.mimeType !== 'application/octet-stream' ? info.mimeType : mediaTypeFor(filename);
      if (!documentFormat(mimeType, filename)) {
        problem = new ApiError('UNSUPPORTED_MEDIA_TYPE', `Documents of type ${mimeType} (${filename}) cannot be indexed.`);
        stream.resume();
        return;
      }
      pending.push(
        ctx.services.blobs.write(stream, { maxSize: max }).then(
          (blob) => {
            stored = { blob, filename, mimeType };
          },
          (err) => {
            stream.resume();
            problem = err instanceof BlobSizeError ? new ApiError('PAYLOAD_TOO_LARGE', `A knowledge document may be at most ${max} bytes.`) : (err as ApiError);
          },
        ),
      );
    });
    parser.on('error', () => {
      problem ??= badRequest('The multipart body could not be read.');
      resolve();
    });
    parser.on('close', () => void Promise.all(pending).then(() => resolve(), reject));
    req.pipe(parser);
  });
  if (problem) throw problem;
  if (!stored) throw invalidField(['body', 'file'], 'The multipart body has no "file" part.');
  const { blob, filename, mimeType } = stored as { blob: BlobInfo; filename: string; mimeType: string };
  const doc = newDocument(kb, { filename, fileSize: blob.size, mimeType, blobKey: blob.key, tags: fields });
  await ctx.mutate((tx, audit) => documents.addUploadedDocument(tx, audit, kb, doc));
  ctx.services.knowledge.notify();
  return { status: 200, body: { data: documentSummary(doc) } };
};

// Chunks of a document: list, read, add, edit (new content is embedded again), delete, bulk changes.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, conflict, invalidField, notFound } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { KnowledgeBaseRecord } from '../../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord } from '../../store/knowledge-documents.ts';
import type { KnowledgeChunkRecord } from '../../store/knowledge-chunks.ts';
import type { Repositories } from '../../store/index.ts';
import { tokenCount } from '../../knowledge/chunker.ts';
import { EmbeddingError, vectorToBlob } from '../../knowledge/embeddings.ts';
import { newChunkId, ProcessingError } from '../../knowledge/service.ts';
import { chunkView, loadBase, loadDocument, nowIso } from './shared.ts';

async function loadChunk(doc: KnowledgeDocumentRecord, id: string, repos: Repositories): Promise<KnowledgeChunkRecord> {
  const c = await repos.knowledgeChunks.get(id);
  if (!c || c.documentId !== doc.id) throw notFound('Chunk');
  return c;
}

/** Embeds chunk content with the base's model; a provider that fails is a 503, a changed model a 409. */
async function embedFor(ctx: RequestContext, kb: KnowledgeBaseRecord, content: string): Promise<Uint8Array> {
  try {
    ctx.services.knowledge.assertProviderFits(kb.embeddingModel, kb.embeddingDimension);
    return vectorToBlob(await ctx.services.knowledge.embedOne(content));
  } catch (err) {
    if (err instanceof ProcessingError) throw conflict(err.message, { code: 'EMBEDDING_MODEL_CHANGED' });
    if (err instanceof EmbeddingError) throw new ApiError('SERVICE_UNAVAILABLE', err.message);
    throw err;
  }
}

function assertSettled(doc: KnowledgeDocumentRecord): void {
  if (doc.processingStatus !== 'completed') {
    throw conflict(`The document is ${doc.processingStatus}; chunks can be changed once it is completed.`, { code: 'DOCUMENT_NOT_READY', processingStatus: doc.processingStatus });
  }
}

export const listKnowledgeChunks: Handler<'listKnowledgeChunks'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  const sortBy = query.sortBy ?? 'chunkIndex';
  const order = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const enabled = query.enabled ?? 'all';
  const binding = { doc: doc.id, search: query.search ?? null, enabled, sortBy, order };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.knowledgeChunks.list({
    documentId: doc.id,
    search: binding.search,
    enabled: enabled === 'all' ? null : enabled === 'true',
    sortBy,
    order,
    after,
    limit: limit + 1,
  });
  const key = (c: KnowledgeChunkRecord) => [{ chunkIndex: c.chunkIndex, tokenCount: c.tokenCount, enabled: c.enabled ? 1 : 0 }[sortBy], c.id] as const;
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, (c) => chunkView(c, doc)) };
};

export const getKnowledgeChunk: Handler<'getKnowledgeChunk'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  return { status: 200, body: { data: chunkView(await loadChunk(doc, params.chunkId, ctx.services.store), doc) } };
};

export const createKnowledgeChunk: Handler<'createKnowledgeChunk'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  assertSettled(await loadDocument(ctx, kb, params.documentId));
  if (body.content.trim() === '') throw invalidField(['body', 'content'], 'A chunk needs some text.');
  const embedding = await embedFor(ctx, kb, body.content);
  const tokens = tokenCount(body.content);
  const { chunk, doc } = await ctx.mutate(async (tx, audit) => {
    const doc = await loadDocument(ctx, kb, params.documentId, tx);
    assertSettled(doc);
    const at = nowIso();
    const chunk = await tx.knowledgeChunks.insert({
      id: newChunkId(), documentId: doc.id, knowledgeBaseId: kb.id, chunkIndex: await tx.knowledgeChunks.nextIndex(doc.id), content: body.content,
      tokenCount: tokens, enabled: body.enabled ?? true, startOffset: 0, endOffset: body.content.length, embedding, at,
    });
    await tx.knowledgeDocuments.recount(doc.id, at);
    audit({ action: 'knowledge_chunk.created', resourceType: 'knowledge_chunk', resourceId: chunk.id, metadata: { knowledgeBaseId: kb.id, documentId: doc.id } });
    return { chunk, doc };
  });
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: chunkView(chunk, doc) } };
};

export const updateKnowledgeChunk: Handler<'updateKnowledgeChunk'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  await loadChunk(doc, params.chunkId, ctx.services.store);
  if (body.content !== undefined && body.content.trim() === '') throw invalidField(['body', 'content'], 'A chunk needs some text.');
  const embedding = body.content === undefined ? null : await embedFor(ctx, kb, body.content);
  const updated = await ctx.mutate(async (tx, audit) => {
    const current = await loadChunk(doc, params.chunkId, tx);
    const at = nowIso();
    if (body.content !== undefined) {
      assertSettled((await tx.knowledgeDocuments.get(doc.id))!);
      await tx.knowledgeChunks.updateContent(current, body.content, tokenCount(body.content), embedding!, at);
      await tx.knowledgeDocuments.recount(doc.id, at);
    }
    if (body.enabled !== undefined) await tx.knowledgeChunks.setEnabled(current.seq, body.enabled, at);
    audit({ action: 'knowledge_chunk.updated', resourceType: 'knowledge_chunk', resourceId: current.id, metadata: { knowledgeBaseId: kb.id, documentId: doc.id, fields: Object.keys(body).filter((k) => k !== 'workspaceId') } });
    return (await tx.knowledgeChunks.get(current.id))!;
  });
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: chunkView(updated, doc) } };
};

export const deleteKnowledgeChunk: Handler<'deleteKnowledgeChunk'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  await ctx.mutate(async (tx, audit) => {
    const c = await loadChunk(doc, params.chunkId, tx);
    await tx.knowledgeChunks.delete(c.seq);
    await tx.knowledgeDocuments.recount(doc.id, nowIso());
    audit({ action: 'knowledge_chunk.deleted', resourceType: 'knowledge_chunk', resourceId: c.id, metadata: { knowledgeBaseId: kb.id, documentId: doc.id } });
  });
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { id: params.chunkId, deleted: true as const } } };
};

export const bulkUpdateKnowledgeChunks: Handler<'bulkUpdateKnowledgeChunks'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  const { processed, errors } = await ctx.mutate(async (tx, audit) => {
    const errors: string[] = [];
    let processed = 0;
    const at = nowIso();
    for (const id of [...new Set(body.chunkIds)]) {
      const c = await tx.knowledgeChunks.get(id);
      if (!c || c.documentId !== doc.id) {
        errors.push(`Chunk ${id} not found in this document.`);
        continue;
      }
      if (body.operation === 'delete') await tx.knowledgeChunks.delete(c.seq);
      else await tx.knowledgeChunks.setEnabled(c.seq, body.operation === 'enable', at);
      processed++;
    }
    if (body.operation === 'delete') await tx.knowledgeDocuments.recount(doc.id, at);
    audit({ action: `knowledge_chunk.bulk_${body.operation}`, resourceType: 'knowledge_document', resourceId: doc.id, resourceName: doc.filename, metadata: { knowledgeBaseId: kb.id, processed } });
    return { processed, errors };
  });
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { operation: body.operation, processed, errors } } };
};

// Chunks of a document: list, read, add, edit (new content is embedded again), delete, bulk changes. The rules
// are src/knowledge/chunk-edits.ts; here the request is read, content embedded before the transaction, cached
// vectors dropped after it, and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { KnowledgeChunkRecord } from '../../store/knowledge-chunks.ts';
import * as chunks from '../../knowledge/chunk-edits.ts';
import { chunkView, loadBase, loadDocument } from './shared.ts';

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
  return { status: 200, body: { data: chunkView(await chunks.findChunk(ctx.services.store, doc, params.chunkId), doc) } };
};

export const createKnowledgeChunk: Handler<'createKnowledgeChunk'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  chunks.assertSettled(await loadDocument(ctx, kb, params.documentId));
  chunks.assertContent(body.content, ['body', 'content']);
  const embedding = await chunks.embedContent(ctx.services.knowledge, kb, body.content);
  const input = { content: body.content, enabled: body.enabled, embedding };
  const { chunk, doc } = await ctx.mutate((tx, audit) => chunks.createChunk(tx, audit, kb, params.documentId, input));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: chunkView(chunk, doc) } };
};

export const updateKnowledgeChunk: Handler<'updateKnowledgeChunk'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  await chunks.findChunk(ctx.services.store, doc, params.chunkId);
  if (body.content !== undefined) chunks.assertContent(body.content, ['body', 'content']);
  const content = body.content === undefined ? undefined : { text: body.content, embedding: await chunks.embedContent(ctx.services.knowledge, kb, body.content) };
  const change = { content, enabled: body.enabled, fields: Object.keys(body).filter((k) => k !== 'workspaceId') };
  const updated = await ctx.mutate((tx, audit) => chunks.updateChunk(tx, audit, kb, doc, params.chunkId, change));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: chunkView(updated, doc) } };
};

export const deleteKnowledgeChunk: Handler<'deleteKnowledgeChunk'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  await ctx.mutate((tx, audit) => chunks.deleteChunk(tx, audit, kb, doc, params.chunkId));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { id: params.chunkId, deleted: true as const } } };
};

export const bulkUpdateKnowledgeChunks: Handler<'bulkUpdateKnowledgeChunks'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const doc = await loadDocument(ctx, kb, params.documentId);
  const { processed, errors } = await ctx.mutate((tx, audit) => chunks.bulkChange(tx, audit, kb, doc, body.chunkIds, body.operation));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { operation: body.operation, processed, errors } } };
};

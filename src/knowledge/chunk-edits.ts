// Editing the chunks of a document by hand: add, change content (embedded again with the base's model) or the
// enabled flag, delete, and bulk enable/disable/delete. Chunks change only once the document is processed; the
// document's counts follow every change. Each change works inside the caller's transaction and records its
// audit event there; embedding happens before it (a provider call is no place for a transaction), and the
// caller drops the base's cached vectors after the commit. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { KnowledgeBaseRecord } from '../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord } from '../store/knowledge-documents.ts';
import type { KnowledgeChunkRecord } from '../store/knowledge-chunks.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { tokenCount } from './chunker.ts';
import { EmbeddingError, vectorToBlob } from './embeddings.ts';
import { newChunkId, ProcessingError, type KnowledgeService } from './service.ts';

const nowIso = () => new Date().toISOString();

/** The embedding side of the knowledge engine that chunk edits use. */
export type ChunkEmbedder = Pick<KnowledgeService, 'assertProviderFits' | 'embedOne'>;

export async function findDocument(repos: Repositories, kb: KnowledgeBaseRecord, id: string): Promise<KnowledgeDocumentRecord> {
  const doc = await repos.knowledgeDocuments.get(id);
  if (!doc || doc.knowledgeBaseId !== kb.id) throw domainNotFound('Document');
  return doc;
}

export async function findChunk(repos: Repositories, doc: KnowledgeDocumentRecord, id: string): Promise<KnowledgeChunkRecord> {
  const c = await repos.knowledgeChunks.get(id);
  if (!c || c.documentId !== doc.id) throw domainNotFound('Chunk');
  return c;
}

export function assertSettled(doc: KnowledgeDocumentRecord): void {
  if (doc.processingStatus !== 'completed') {
    throw new DomainError('conflict', `The document is ${doc.processingStatus}; chunks can be changed once it is completed.`, { code: 'DOCUMENT_NOT_READY', processingStatus: doc.processingStatus });
  }
}

/** Chunk content must have some text; `path` is where it sits in the request. */
export function assertContent(content: string, path: (string | number)[]): void {
  if (content.trim() === '') {
    const message = 'A chunk needs some text.';
    throw new DomainError('invalid', message, [{ code: 'custom', keys: [], path, message }]);
  }
}

/** Embeds chunk content with the base's model; a provider that fails is unavailable, a changed model a conflict. */
export async function embedContent(embedder: ChunkEmbedder, kb: KnowledgeBaseRecord, content: string): Promise<Uint8Array> {
  try {
    embedder.assertProviderFits(kb.embeddingModel, kb.embeddingDimension);
    return vectorToBlob(await embedder.embedOne(content));
  } catch (err) {
    if (err instanceof ProcessingError) throw new DomainError('conflict', err.message, { code: 'EMBEDDING_MODEL_CHANGED' });
    if (err instanceof EmbeddingError) throw new DomainError('unavailable', err.message);
    throw err;
  }
}

/** Appends a chunk (already embedded) to a processed document. */
export async function createChunk(
  tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, documentId: string, input: { content: string; enabled?: boolean; embedding: Uint8Array },
): Promise<{ chunk: KnowledgeChunkRecord; doc: KnowledgeDocumentRecord }> {
  const doc = await findDocument(tx, kb, documentId);
  assertSettled(doc);
  const at = nowIso();
  const chunk = await tx.knowledgeChunks.insert({
    id: newChunkId(), documentId: doc.id, knowledgeBaseId: kb.id, chunkIndex: await tx.knowledgeChunks.nextIndex(doc.id), content: input.content,
    tokenCount: tokenCount(input.content), enabled: input.enabled ?? true, startOffset: 0, endOffset: input.content.length, embedding: input.embedding, at,
  });
  await tx.knowledgeDocuments.recount(doc.id, at);
  await audit({ action: 'knowledge_chunk.created', resourceType: 'knowledge_chunk', resourceId: chunk.id, metadata: { knowledgeBaseId: kb.id, documentId: doc.id } });
  return { chunk, doc };
}

export interface ChunkChange {
  /** New content with its embedding (the document must be processed). */
  content?: { text: string; embedding: Uint8Array };
  enabled?: boolean;
  /** The fields the request named (the audit event lists them). */
  fields: string[];
}

export async function updateChunk(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, doc: KnowledgeDocumentRecord, chunkId: string, change: ChunkChange): Promise<KnowledgeChunkRecord> {
  const current = await findChunk(tx, doc, chunkId);
  const at = nowIso();
  if (change.content !== undefined) {
    assertSettled((await tx.knowledgeDocuments.get(doc.id))!);
    await tx.knowledgeChunks.updateContent(current, change.content.text, tokenCount(change.content.text), change.content.embedding, at);
    await tx.knowledgeDocuments.recount(doc.id, at);
  }
  if (change.enabled !== undefined) await tx.knowledgeChunks.setEnabled(current.seq, change.enabled, at);
  await audit({ action: 'knowledge_chunk.updated', resourceType: 'knowledge_chunk', resourceId: current.id, metadata: { knowledgeBaseId: kb.id, documentId: doc.id, fields: change.fields } });
  return (await tx.knowledgeChunks.get(current.id))!;
}

export async function deleteChunk(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, doc: KnowledgeDocumentRecord, chunkId: string): Promise<void> {
  const c = await findChunk(tx, doc, chunkId);
  await tx.knowledgeChunks.delete(c.seq);
  await tx.knowledgeDocuments.recount(doc.id, nowIso());
  await audit({ action: 'knowledge_chunk.deleted', resourceType: 'knowledge_chunk', resourceId: c.id, metadata: { knowledgeBaseId: kb.id, documentId: doc.id } });
}

/** Enables, disables or deletes the listed chunks of the document; a chunk not in it is reported in `errors`. */
export async function bulkChange(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, doc: KnowledgeDocumentRecord, chunkIds: string[], operation: 'enable' | 'disable' | 'delete') {
  const errors: string[] = [];
  let processed = 0;
  const at = nowIso();
  for (const id of [...new Set(chunkIds)]) {
    const c = await tx.knowledgeChunks.get(id);
    if (!c || c.documentId !== doc.id) {
      errors.push(`Chunk ${id} not found in this document.`);
      continue;
    }
    if (operation === 'delete') await tx.knowledgeChunks.delete(c.seq);
    else await tx.knowledgeChunks.setEnabled(c.seq, operation === 'enable', at);
    processed++;
  }
  if (operation === 'delete') await tx.knowledgeDocuments.recount(doc.id, at);
  await audit({ action: `knowledge_chunk.bulk_${operation}`, resourceType: 'knowledge_document', resourceId: doc.id, resourceName: doc.filename, metadata: { knowledgeBaseId: kb.id, processed } });
  return { processed, errors };
}

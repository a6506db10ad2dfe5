// Recording knowledge documents: a new document record (queued for the processing in ./service.ts), and
// completing a knowledge upload session into one. Works inside the caller's change (transaction and audit).
import type { Repositories, Store } from '../store/index.ts';
import type { KnowledgeBaseRecord } from '../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord, TagValue } from '../store/knowledge-documents.ts';
import type { BlobStore } from '../files/blob-store.ts';
import type { Mutate } from '../domain/changes.ts';
import { domainNotFound } from '../domain/errors.ts';
import { completeUpload } from '../files/uploads.ts';
import { newDocumentId } from './service.ts';
import { ALL_SLOTS } from './tags.ts';

const emptyTags = (): Record<string, TagValue> => Object.fromEntries(ALL_SLOTS.map((s) => [s, null]));

/** A new document of `kb`, pending processing (not yet stored). */
export function newDocument(
  kb: KnowledgeBaseRecord,
  fields: { filename: string; fileSize: number; mimeType: string; blobKey: string; sourceFileId?: string; options?: string | null; tags?: Record<string, TagValue> },
): KnowledgeDocumentRecord {
  const at = new Date().toISOString();
  return {
    id: newDocumentId(),
    knowledgeBaseId: kb.id,
    workspaceId: kb.workspaceId,
    filename: fields.filename,
    fileSize: fields.fileSize,
    mimeType: fields.mimeType,
    blobKey: fields.blobKey,
    sourceFileId: fields.sourceFileId ?? null,
    processingStatus: 'pending',
    processingError: null,
    processingStartedAt: null,
    processingCompletedAt: null,
    processingAttempt: 0,
    processingOptions: fields.options ?? null,
    chunkCount: 0,
    tokenCount: 0,
    characterCount: 0,
    enabled: true,
    connectorId: null,
    connectorType: null,
    sourceUrl: null,
    externalId: null,
    contentHash: null,
    userExcluded: false,
    tags: { ...emptyTags(), ...fields.tags },
    uploadedAt: at,
    updatedAt: at,
  };
}

/** Documents are added only to a base that is still active when the change commits (404 otherwise). */
export async function assertBaseActive(repos: Repositories, kb: KnowledgeBaseRecord): Promise<void> {
  const current = await repos.knowledgeBases.get(kb.id);
  if (!current || current.workspaceId !== kb.workspaceId || current.deletedAt) throw domainNotFound('Knowledge base');
}

/**
 * Completes a knowledge upload session (src/files/uploads.ts): its bytes become a new pending document of `kb`
 * with the tags and processing options the upload was created with. Returns the document's id.
 */
export async function completeDocumentUpload(
  io: { store: Store; blobs: BlobStore; mutate: Mutate },
  kb: KnowledgeBaseRecord,
  upload: { sessionId: string; options: string },
): Promise<string> {
  const options = JSON.parse(upload.options) as { tags: Record<string, string>; processingOptions: unknown };
  return completeUpload(
    io,
    upload.sessionId,
    async (tx, audit, blob, session) => {
      const doc = newDocument(kb, {
        filename: session.name,
        fileSize: blob.size,
        mimeType: session.contentType,
        blobKey: blob.key,
        options: options.processingOptions ? JSON.stringify(options.processingOptions) : null,
        tags: options.tags,
      });
      await assertBaseActive(tx, kb);
      await tx.knowledgeDocuments.insert(doc);
      await tx.knowledgeUploads.setDocument(session.id, doc.id);
      await tx.fileUploads.setStatus(session.id, 'completed', new Date().toISOString());
      audit({ action: 'knowledge_document.created', resourceType: 'knowledge_document', resourceId: doc.id, resourceName: doc.filename, metadata: { knowledgeBaseId: kb.id, uploadId: session.id, size: doc.fileSize } });
      return doc.id;
    },
    'The document could not be registered.',
  );
}

// Changes to knowledge documents: new documents (queued for the processing in ./service.ts) from an upload
// session, a multipart upload or workspace files; retry, update, delete, enable/disable. Works inside the caller's change (transaction and audit).
import type { LeaseSettings } from '../config.ts';
import type { Repositories, Store } from '../store/index.ts';
import type { KnowledgeBaseRecord } from '../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord, TagValue } from '../store/knowledge-documents.ts';
import type { BlobStore } from '../files/blob-store.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import type { FileLimits } from '../config.ts';
import type { Audit, Mutate } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { completeUpload } from '../files/uploads.ts';
import { assertStorageFits } from '../files/service.ts';
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
  io: { store: Store; blobs: BlobStore; mutate: Mutate; leases: LeaseSettings },
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

/** A document of `kb` (404 otherwise). */
export async function documentOf(repos: Repositories, kb: KnowledgeBaseRecord, id: string): Promise<KnowledgeDocumentRecord> {
  const doc = await repos.knowledgeDocuments.get(id);
  if (!doc || doc.knowledgeBaseId !== kb.id) throw domainNotFound('Document');
  return doc;
}

/** Queues a document for processing again; one already pending or processing is refused (409). */
export async function retryDocument(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, id: string): Promise<KnowledgeDocumentRecord> {
  const current = await documentOf(tx, kb, id);
  if (current.processingStatus === 'pending' || current.processingStatus === 'processing') {
    throw new DomainError('conflict', `The document is already ${current.processingStatus}.`, { code: 'ALREADY_QUEUED', processingStatus: current.processingStatus });
  }
  await tx.knowledgeDocuments.requeue(current.id, new Date().toISOString());
  audit({ action: 'knowledge_document.retried', resourceType: 'knowledge_document', resourceId: current.id, resourceName: current.filename, metadata: { knowledgeBaseId: kb.id } });
  return current;
}

/** Renames, enables or disables a document, or sets its tag values; `fields` names what the request sent. */
export async function updateDocument(
  tx: Repositories,
  audit: Audit,
  kb: KnowledgeBaseRecord,
  id: string,
  change: { filename?: string; enabled?: boolean; tags: Record<string, TagValue>; fields: string[] },
): Promise<KnowledgeDocumentRecord> {
  const current = await documentOf(tx, kb, id);
  await tx.knowledgeDocuments.update(current.id, { filename: change.filename, enabled: change.enabled, tags: change.tags, updatedAt: new Date().toISOString() });
  audit({
    action: 'knowledge_document.updated',
    resourceType: 'knowledge_document',
    resourceId: current.id,
    resourceName: change.filename ?? current.filename,
    metadata: { knowledgeBaseId: kb.id, fields: change.fields },
  });
  return (await tx.knowledgeDocuments.get(current.id))!;
}

export async function deleteDocument(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, id: string): Promise<void> {
  const doc = await documentOf(tx, kb, id);
  await tx.knowledgeDocuments.delete(doc.id);
  audit({ action: 'knowledge_document.deleted', resourceType: 'knowledge_document', resourceId: doc.id, resourceName: doc.filename, metadata: { knowledgeBaseId: kb.id } });
}

/** Enables or disables the named documents (or every one matching `enabledFilter`); returns the ids that changed. */
export async function setDocumentsEnabled(
  tx: Repositories,
  audit: Audit,
  kb: KnowledgeBaseRecord,
  selection: { documentIds: string[] | null; enabledFilter: boolean | null },
  operation: 'enable' | 'disable',
): Promise<string[]> {
  const ids = await tx.knowledgeDocuments.setEnabled(kb.id, selection.documentIds ? [...new Set(selection.documentIds)] : null, operation === 'enable', selection.enabledFilter, new Date().toISOString());
  audit({ action: `knowledge_document.bulk_${operation}d`, resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { count: ids.length } });
  return ids;
}

/** Records documents made from workspace files (their blobs are shared, not copied); `failed` counts the refused references. */
export async function addFileDocuments(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, docs: KnowledgeDocumentRecord[], failed: number): Promise<void> {
  await assertBaseActive(tx, kb);
  for (const d of docs) await tx.knowledgeDocuments.insert(d);
  audit({ action: 'knowledge_document.created', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { fromWorkspaceFiles: docs.length, failed } });
}

/** Records a document whose bytes arrived in one request (multipart), queued for processing. */
export async function addUploadedDocument(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, doc: KnowledgeDocumentRecord): Promise<void> {
  await assertBaseActive(tx, kb);
  await tx.knowledgeDocuments.insert(doc);
  audit({ action: 'knowledge_document.created', resourceType: 'knowledge_document', resourceId: doc.id, resourceName: doc.filename, metadata: { knowledgeBaseId: kb.id, size: doc.fileSize } });
}

/** Opens an upload session for a document of `kb`, keeping its tags and processing options for completion. */
export async function openDocumentUpload(
  tx: Repositories,
  audit: Audit,
  kb: KnowledgeBaseRecord,
  input: { workspace: Workspace; limits: FileLimits; session: UploadSessionRecord; tags: Record<string, unknown>; processingOptions: unknown },
): Promise<void> {
  const { session } = input;
  await assertStorageFits(tx, input.workspace, input.limits, session.size);
  await tx.fileUploads.insert(session);
  await tx.knowledgeUploads.insert({ uploadId: session.id, knowledgeBaseId: kb.id, options: JSON.stringify({ tags: input.tags, processingOptions: input.processingOptions }), documentId: null });
  audit({ action: 'knowledge_upload.created', resourceType: 'knowledge_upload', resourceId: session.id, resourceName: session.name, metadata: { knowledgeBaseId: kb.id, size: session.size, multipart: session.multipart } });
}

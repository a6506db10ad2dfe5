// What the Knowledge Bases handlers share: loading a base of the caller's workspace, and the wire views.
import type { RequestContext } from '../../http/context.ts';
import { invalidField, notFound } from '../../http/errors.ts';
import type { KnowledgeBaseRecord, KnowledgeBaseStats, TagDefinitionRecord } from '../../store/knowledge-bases.ts';
import type { KnowledgeDocumentRecord } from '../../store/knowledge-documents.ts';
import type { KnowledgeChunkRecord } from '../../store/knowledge-chunks.ts';
import type { Repositories } from '../../store/index.ts';
import { folderPathFromWire, folderPathToWire } from '../../workflows/folder-wire.ts';
import { FolderPathError } from '../../domain/folder-paths.ts';
import type { ChunkingConfig } from '../../knowledge/chunking-config.ts';
import { tagValuesByName } from '../../knowledge/tags.ts';
import { findBase } from '../../knowledge/bases.ts';

export const nowIso = () => new Date().toISOString();
export const workspaceOf = (ctx: RequestContext) => ctx.workspace!.workspace;

/** A base of the request's workspace; archived ones only when asked for. Anything else is a 404. */
export function loadBase(ctx: RequestContext, id: string, options: { archived?: 'also' | 'only'; repos?: Repositories } = {}): Promise<KnowledgeBaseRecord> {
  return findBase(options.repos ?? ctx.services.store, workspaceOf(ctx).id, id, options.archived);
}

export async function loadDocument(ctx: RequestContext, kb: KnowledgeBaseRecord, id: string, repos: Repositories = ctx.services.store): Promise<KnowledgeDocumentRecord> {
  const doc = await repos.knowledgeDocuments.get(id);
  if (!doc || doc.knowledgeBaseId !== kb.id) throw notFound('Document');
  return doc;
}

export function parseKbFolder(wire: string, field: (string | number)[]): string {
  try {
    return folderPathFromWire(wire);
  } catch (err) {
    if (err instanceof FolderPathError) throw invalidField(field, `Invalid folder path: ${err.message}.`, 'invalid_string');
    throw err;
  }
}

export async function baseView(ctx: RequestContext, kb: KnowledgeBaseRecord, stats?: KnowledgeBaseStats, ownerEmail?: string) {
  const s = stats ?? (await ctx.services.store.knowledgeBases.stats([kb.id])).get(kb.id)!;
  const email = ownerEmail ?? (kb.createdBy ? ((await ctx.services.store.users.get(kb.createdBy))?.email ?? '') : '');
  const connectorTypes = (await ctx.services.store.knowledgeConnectors.typesOf([kb.id])).get(kb.id) ?? [];
  return {
    id: kb.id,
    name: kb.name,
    description: kb.description,
    tokenCount: s.tokenCount,
    embeddingModel: kb.embeddingModel,
    embeddingDimension: kb.embeddingDimension,
    chunkingConfig: JSON.parse(kb.chunkingConfig) as ChunkingConfig,
    docCount: s.docCount,
    connectorTypes,
    createdAt: kb.createdAt,
    updatedAt: kb.updatedAt,
    webUrl: `${ctx.baseUrl}/workspace/${encodeURIComponent(kb.workspaceId)}/knowledge/${encodeURIComponent(kb.id)}`,
    ownerEmail: email,
    folderPath: folderPathToWire(kb.folderPath),
    deletedAt: kb.deletedAt,
  };
}

export function documentSummary(d: KnowledgeDocumentRecord) {
  return {
    id: d.id,
    knowledgeBaseId: d.knowledgeBaseId,
    filename: d.filename,
    fileSize: d.fileSize,
    mimeType: d.mimeType,
    processingStatus: d.processingStatus,
    chunkCount: d.chunkCount,
    tokenCount: d.tokenCount,
    characterCount: d.characterCount,
    enabled: d.enabled,
    createdAt: d.uploadedAt,
  };
}

export function documentView(d: KnowledgeDocumentRecord, tags: TagDefinitionRecord[]) {
  return { ...documentSummary(d), tags: tagValuesByName(d, tags) };
}

export function documentDetail(d: KnowledgeDocumentRecord, tags: TagDefinitionRecord[]) {
  return {
    ...documentView(d, tags),
    processingError: d.processingError,
    processingStartedAt: d.processingStartedAt,
    processingCompletedAt: d.processingCompletedAt,
    connectorId: d.connectorId,
    connectorType: d.connectorType,
    sourceUrl: d.sourceUrl,
  };
}

export function chunkView(c: KnowledgeChunkRecord, d: KnowledgeDocumentRecord) {
  return {
    id: c.id,
    chunkIndex: c.chunkIndex,
    content: c.content,
    contentLength: c.contentLength,
    tokenCount: c.tokenCount,
    enabled: c.enabled,
    startOffset: c.startOffset,
    endOffset: c.endOffset,
    tag1: d.tags.tag1 as string | null,
    tag2: d.tags.tag2 as string | null,
    tag3: d.tags.tag3 as string | null,
    tag4: d.tags.tag4 as string | null,
    tag5: d.tags.tag5 as string | null,
    tag6: d.tags.tag6 as string | null,
    tag7: d.tags.tag7 as string | null,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}

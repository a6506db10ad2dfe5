// Knowledge bases as a whole: find one of a workspace, list, create, update, archive and restore. The rules: a
// base belongs to one workspace (anything else is not found), lives in a folder created as needed, and its
// chunking settings are checked by the caller (src/knowledge/chunking-config.ts). Each change works inside the
// caller's transaction and records its audit event there; the caller drops the base's cached vectors after the
// commit. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { KnowledgeBaseRecord } from '../store/knowledge-bases.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import type { ChunkingConfig } from './chunking-config.ts';
import { inKnowledgeTree, knowledgeTree } from './folders.ts';
import { assertAccess } from '../access-control/policy.ts';

const nowIso = () => new Date().toISOString();

export type ListQuery = Parameters<Repositories['knowledgeBases']['list']>[0];

/** A base of the workspace; archived ones only when asked for ('only': nothing but an archived one). */
export async function findBase(repos: Repositories, workspaceId: string, id: string, archived?: 'also' | 'only'): Promise<KnowledgeBaseRecord> {
  const kb = await repos.knowledgeBases.get(id);
  if (!kb || kb.workspaceId !== workspaceId) throw domainNotFound('Knowledge base');
  if (kb.deletedAt && !archived) throw domainNotFound('Knowledge base');
  if (!kb.deletedAt && archived === 'only') throw domainNotFound('Archived knowledge base');
  return kb;
}

/** The folder as stored, or null when it does not exist (or is archived): a list of it matches nothing. */
export function existingFolder(repos: Repositories, workspaceId: string, path: string): Promise<string | null> {
  return inKnowledgeTree(() => knowledgeTree(repos).resolveExisting(workspaceId, path));
}

export function listBases(repos: Repositories, q: ListQuery): Promise<KnowledgeBaseRecord[]> {
  return repos.knowledgeBases.list(q);
}

export interface NewBase {
  workspaceId: string;
  name: string;
  description: string | null;
  folderPath: string;
  chunking: ChunkingConfig;
  /** The embedding model (and its dimension) every chunk of the base is embedded with. */
  embedding: { model: string; dimension: number };
  createdBy: string;
}

export async function createBase(tx: Repositories, audit: Audit, input: NewBase): Promise<KnowledgeBaseRecord> {
  await assertAccess(tx, { workspaceId: input.workspaceId, userId: input.createdBy }, { kind: 'feature', key: 'disableKnowledgeBaseCreation', action: 'Creating knowledge bases' });
  const at = nowIso();
  const kb: KnowledgeBaseRecord = {
    id: `kb_${randomUUID().replace(/-/g, '')}`,
    workspaceId: input.workspaceId,
    name: input.name,
    description: input.description,
    folderPath: input.folderPath,
    chunkingConfig: JSON.stringify(input.chunking),
    embeddingModel: input.embedding.model,
    embeddingDimension: input.embedding.dimension,
    createdBy: input.createdBy,
    createdAt: at,
    updatedAt: at,
    deletedAt: null,
  };
  await inKnowledgeTree(() => knowledgeTree(tx).ensure(kb.workspaceId, kb.folderPath, at));
  await tx.knowledgeBases.insert(kb);
  await audit({ action: 'knowledge_base.created', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { folderPath: kb.folderPath, embeddingModel: kb.embeddingModel } });
  return kb;
}

export interface BaseChange {
  name?: string;
  description?: string | null;
  folderPath?: string;
  chunking?: ChunkingConfig;
  /** The fields the request named (the audit event lists them). */
  fields: string[];
}

export async function updateBase(tx: Repositories, audit: Audit, workspaceId: string, id: string, change: BaseChange): Promise<KnowledgeBaseRecord> {
  const current = await findBase(tx, workspaceId, id);
  const folderPath = change.folderPath;
  if (folderPath !== undefined) await inKnowledgeTree(() => knowledgeTree(tx).ensure(current.workspaceId, folderPath, nowIso()));
  await tx.knowledgeBases.update(current.id, {
    name: change.name,
    description: change.description,
    folderPath,
    chunkingConfig: change.chunking === undefined ? undefined : JSON.stringify(change.chunking),
    updatedAt: nowIso(),
  });
  await audit({ action: 'knowledge_base.updated', resourceType: 'knowledge_base', resourceId: current.id, resourceName: change.name ?? current.name, metadata: { fields: change.fields } });
  return (await tx.knowledgeBases.get(current.id))!;
}

export async function archiveBase(tx: Repositories, audit: Audit, workspaceId: string, id: string): Promise<void> {
  const kb = await findBase(tx, workspaceId, id);
  const at = nowIso();
  await tx.knowledgeBases.update(kb.id, { deletedAt: at, updatedAt: at });
  await audit({ action: 'knowledge_base.deleted', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name });
}

export async function restoreBase(tx: Repositories, audit: Audit, workspaceId: string, id: string): Promise<KnowledgeBaseRecord> {
  const kb = await findBase(tx, workspaceId, id, 'also');
  if (!kb.deletedAt) throw new DomainError('conflict', 'The knowledge base is not archived.', { code: 'NOT_ARCHIVED' });
  await tx.knowledgeBases.update(kb.id, { deletedAt: null, updatedAt: nowIso() });
  await audit({ action: 'knowledge_base.restored', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name });
  return (await tx.knowledgeBases.get(kb.id))!;
}

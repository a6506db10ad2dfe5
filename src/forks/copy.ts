// Copies of one workspace's resources into another, for a fork or a sync's `copyResources`, through each
// resource's own domain service. Each copy gets a new id and, when its name is taken in the target, the next
// free variant. Heavy content is shared or re-derived, never re-sent: file copies point at the same
// content-addressed blob, table rows are copied in SQL, knowledge documents are queued for processing again
// from their stored source bytes (connector-synced documents are not copied).
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { Audit } from '../domain/changes.ts';
import { domainNotFound } from '../domain/errors.ts';
import type { TableSettings } from '../config.ts';
import { createTable } from '../tables/table-admin.ts';
import { planTableLimits } from '../tables/service.ts';
import { actorOf, ensureFolderChain, insertNewFile } from '../files/service.ts';
import { createBase } from '../knowledge/bases.ts';
import { createTag } from '../knowledge/tag-definitions.ts';
import { addFileDocuments, newDocument } from '../knowledge/documents.ts';
import { createSkill } from '../resources/workspace-skills.ts';

export type CopyKind = 'tables' | 'files' | 'knowledgeBases' | 'customTools' | 'skills';
export const COPY_KINDS: readonly CopyKind[] = ['tables', 'files', 'knowledgeBases', 'customTools', 'skills'];
/** The mapping resource type a copy kind is remembered under. */
export const RESOURCE_TYPE_OF: Record<CopyKind, string> = { tables: 'table', files: 'file', knowledgeBases: 'knowledge_base', customTools: 'custom_tool', skills: 'skill' };

export interface CopyContext {
  tx: Repositories;
  audit: Audit;
  actorId: string;
  sourceWorkspaceId: string;
  targetWorkspaceId: string;
  tables: TableSettings;
}

/** `base`, or `base (2)`, `base (3)`… whichever `taken` does not hold. */
async function freeName(base: string, taken: (name: string) => Promise<boolean>, join = (b: string, i: number) => `${b} (${i})`): Promise<string> {
  if (!(await taken(base))) return base;
  for (let i = 2; ; i++) if (!(await taken(join(base, i)))) return join(base, i);
}

/** Whether the id names a live resource of that kind in the workspace. */
export async function resourceExists(repos: Repositories, workspaceId: string, kind: CopyKind, id: string): Promise<boolean> {
  switch (kind) {
    case 'tables': {
      const t = await repos.userTables.get(id);
      return Boolean(t && t.workspaceId === workspaceId && !t.archivedAt);
    }
    case 'files': {
      const f = await repos.files.get(id);
      return Boolean(f && f.workspaceId === workspaceId && !f.deletedAt);
    }
    case 'knowledgeBases': {
      const kb = await repos.knowledgeBases.get(id);
      return Boolean(kb && kb.workspaceId === workspaceId && !kb.deletedAt);
    }
    case 'customTools':
      return Boolean(await repos.customTools.get(workspaceId, id));
    case 'skills':
      return Boolean(await repos.skills.get(workspaceId, id));
  }
}

/** Copies one resource; answers the copy's id and how many content items (rows, documents) came with it. */
export async function copyResource(c: CopyContext, kind: CopyKind, id: string): Promise<{ id: string; items: number }> {
  const { tx, audit, actorId, targetWorkspaceId: ws } = c;
  switch (kind) {
    case 'tables': {
      const t = await tx.userTables.get(id);
      if (!t || t.workspaceId !== c.sourceWorkspaceId || t.archivedAt) throw domainNotFound('Table');
      const target = await tx.workspaces.get(ws);
      const name = await freeName(t.name, async (n) => Boolean(await tx.userTables.activeByName(ws, n)));
      const copy = await createTable(tx, audit, { workspaceId: ws, name, description: t.description, folderPath: t.folderPath, columns: t.columns, ownerId: actorId, limits: planTableLimits(c.tables, target!) });
      const rows = await tx.tableRows.copyRows(t.id, copy.id, t.columns);
      await tx.userTables.addRowCount(copy.id, rows);
      return { id: copy.id, items: rows };
    }
    case 'files': {
      const f = await tx.files.get(id);
      if (!f || f.workspaceId !== c.sourceWorkspaceId || f.deletedAt) throw domainNotFound('File');
      const now = new Date().toISOString();
      await ensureFolderChain(tx, ws, f.folderPath, now);
      const existing = new Set((await tx.files.list({ workspaceId: ws, archived: false, folderPath: f.folderPath, recursive: false, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: 100_000 })).map((x) => x.name));
      const dot = f.name.lastIndexOf('.');
      const name = await freeName(f.name, async (n) => existing.has(n), (b, i) => (dot > 0 ? `${b.slice(0, dot)} (${i})${b.slice(dot)}` : `${b} (${i})`));
      const copy = await insertNewFile(tx, { workspaceId: ws, folderPath: f.folderPath, name, contentType: f.contentType, blob: { key: f.blobKey, size: f.size, sha256: f.blobKey }, actor: await actorOf(tx, actorId), source: 'api', now });
      audit({ action: 'file.created', resourceType: 'file', resourceId: copy.id, resourceName: copy.name, metadata: { copiedFrom: f.id } });
      return { id: copy.id, items: 1 };
    }
    case 'knowledgeBases': {
      const kb = await tx.knowledgeBases.get(id);
      if (!kb || kb.workspaceId !== c.sourceWorkspaceId || kb.deletedAt) throw domainNotFound('Knowledge base');
      const names = new Set((await tx.knowledgeBases.list({ workspaceId: ws, archived: false, folderPath: null, search: null, sortBy: 'name', order: 'asc', after: null, limit: 100_000 })).map((x) => x.name));
      const name = await freeName(kb.name, async (n) => names.has(n));
      const copy = await createBase(tx, audit, { workspaceId: ws, name, description: kb.description, folderPath: kb.folderPath, chunking: JSON.parse(kb.chunkingConfig), embedding: { model: kb.embeddingModel, dimension: kb.embeddingDimension }, createdBy: actorId });
      for (const tag of await tx.knowledgeBases.tags(kb.id)) await createTag(tx, audit, copy, { displayName: tag.displayName, fieldType: tag.fieldType, tagSlot: tag.tagSlot });
      // Uploaded documents are processed again from their source bytes; connector documents belong to the connector.
      const docs = (await tx.knowledgeDocuments.allOf(kb.id))
        .filter((d) => d.connectorId === null && d.blobKey !== null)
        .map((d) => newDocument(copy, { filename: d.filename, fileSize: d.fileSize, mimeType: d.mimeType, blobKey: d.blobKey!, options: d.processingOptions, tags: d.tags }));
      await addFileDocuments(tx, audit, copy, docs, 0);
      return { id: copy.id, items: docs.length };
    }
    case 'customTools': {
      const t = await tx.customTools.get(c.sourceWorkspaceId, id);
      if (!t) throw domainNotFound('Custom tool');
      const title = await freeName(t.title, async (n) => Boolean(await tx.customTools.getByTitle(ws, n)), (b, i) => `${b}_${i}`);
      const now = new Date().toISOString();
      const copy = { ...t, id: randomUUID(), workspaceId: ws, title, createdBy: actorId, createdAt: now, updatedAt: now };
      await tx.customTools.insert(copy);
      audit({ action: 'custom_tool.created', resourceType: 'custom_tool', resourceId: copy.id, resourceName: copy.title, metadata: { copiedFrom: t.id } });
      return { id: copy.id, items: 0 };
    }
    case 'skills': {
      const s = await tx.skills.get(c.sourceWorkspaceId, id);
      if (!s) throw domainNotFound('Skill');
      const name = await freeName(s.name, async (n) => Boolean(await tx.skills.getByName(ws, n)), (b, i) => `${b}-${i}`);
      const copy = await createSkill(tx, audit, { userId: actorId, role: 'admin' }, { workspaceId: ws, name, description: s.description, content: s.content });
      return { id: copy.id, items: 0 };
    }
  }
}

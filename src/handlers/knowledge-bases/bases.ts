// Knowledge bases: create, list, read, update, archive and restore.
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../../generated/handlers.ts';
import { conflict } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { KnowledgeBaseRecord } from '../../store/knowledge-bases.ts';
import { normalizeChunkingConfig, type ChunkingConfig } from '../../knowledge/chunking-config.ts';
import { inKnowledgeTree, knowledgeTree } from '../../knowledge/folders.ts';
import { bundleDisposition, exportBundle } from '../../knowledge/export.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { baseView, loadBase, nowIso, parseKbFolder, workspaceOf } from './shared.ts';

export const listKnowledgeBases: Handler<'listKnowledgeBases'> = async ({ query, ctx }) => {
  const workspace = workspaceOf(ctx);
  let folderPath = query.folderPath === undefined ? null : parseKbFolder(query.folderPath, ['query', 'folderPath']);
  const asked = folderPath;
  // An unknown (or archived) folder matches nothing.
  if (folderPath !== null) folderPath = await inKnowledgeTree(() => knowledgeTree(ctx.services.store).resolveExisting(workspace.id, folderPath!));
  if (asked !== null && folderPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  const sortBy = query.sortBy ?? 'createdAt';
  const order = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: workspace.id, scope: query.scope ?? 'active', folderPath, search: query.search ?? null, sortBy, order };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.knowledgeBases.list({
    workspaceId: workspace.id,
    archived: binding.scope === 'archived',
    folderPath,
    search: binding.search,
    sortBy,
    order,
    after,
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const stats = await ctx.services.store.knowledgeBases.stats(page.map((kb) => kb.id));
  const emails = new Map<string, string>();
  for (const kb of page) {
    if (kb.createdBy && !emails.has(kb.createdBy)) emails.set(kb.createdBy, (await ctx.services.store.users.get(kb.createdBy))?.email ?? '');
  }
  const views = new Map<string, Awaited<ReturnType<typeof baseView>>>();
  for (const kb of page) views.set(kb.id, await baseView(ctx, kb, stats.get(kb.id), kb.createdBy ? emails.get(kb.createdBy) : ''));
  const column = { name: (k: KnowledgeBaseRecord) => k.name, createdAt: (k: KnowledgeBaseRecord) => k.createdAt, updatedAt: (k: KnowledgeBaseRecord) => k.updatedAt }[sortBy];
  return { status: 200, body: toPage(ctx, rows, limit, binding, (k) => [column(k), k.id], (k) => views.get(k.id)!) };
};

export const createKnowledgeBase: Handler<'createKnowledgeBase'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const chunking = normalizeChunkingConfig(body.chunkingConfig, ['body', 'chunkingConfig']);
  const folderPath = body.folderPath === undefined ? '/' : parseKbFolder(body.folderPath, ['body', 'folderPath']);
  const at = nowIso();
  const provider = ctx.services.knowledge.provider;
  const kb: KnowledgeBaseRecord = {
    id: `kb_${randomUUID().replace(/-/g, '')}`,
    workspaceId: workspace.id,
    name: body.name,
    description: body.description ?? null,
    folderPath,
    chunkingConfig: JSON.stringify(chunking),
    embeddingModel: provider.model,
    embeddingDimension: provider.dimension,
    createdBy: ctx.principal.userId,
    createdAt: at,
    updatedAt: at,
    deletedAt: null,
  };
  await ctx.mutate(async (tx, audit) => {
    await inKnowledgeTree(() => knowledgeTree(tx).ensure(workspace.id, folderPath, at));
    await tx.knowledgeBases.insert(kb);
    audit({ action: 'knowledge_base.created', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { folderPath, embeddingModel: kb.embeddingModel } });
  });
  return { status: 200, body: { data: await baseView(ctx, kb) } };
};

export const getKnowledgeBase: Handler<'getKnowledgeBase'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId, { archived: 'also' });
  return { status: 200, body: { data: await baseView(ctx, kb) } };
};

export const updateKnowledgeBase: Handler<'updateKnowledgeBase'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const chunking =
    body.chunkingConfig === undefined ? undefined : normalizeChunkingConfig(body.chunkingConfig, ['body', 'chunkingConfig'], JSON.parse(kb.chunkingConfig) as ChunkingConfig);
  const folderPath = body.folderPath === undefined ? undefined : parseKbFolder(body.folderPath, ['body', 'folderPath']);
  const updated = await ctx.mutate(async (tx, audit) => {
    const current = await loadBase(ctx, kb.id, { repos: tx });
    if (folderPath !== undefined) await inKnowledgeTree(() => knowledgeTree(tx).ensure(kb.workspaceId, folderPath, nowIso()));
    const fields = {
      name: body.name,
      description: body.description,
      folderPath,
      chunkingConfig: chunking === undefined ? undefined : JSON.stringify(chunking),
      updatedAt: nowIso(),
    };
    await tx.knowledgeBases.update(kb.id, fields);
    audit({
      action: 'knowledge_base.updated',
      resourceType: 'knowledge_base',
      resourceId: kb.id,
      resourceName: body.name ?? current.name,
      metadata: { fields: Object.keys(body).filter((k) => k !== 'workspaceId') },
    });
    return (await tx.knowledgeBases.get(kb.id))!;
  });
  return { status: 200, body: { data: await baseView(ctx, updated) } };
};

export const deleteKnowledgeBase: Handler<'deleteKnowledgeBase'> = async ({ params, ctx }) => {
  await ctx.mutate(async (tx, audit) => {
    const kb = await loadBase(ctx, params.knowledgeBaseId, { repos: tx });
    const at = nowIso();
    await tx.knowledgeBases.update(kb.id, { deletedAt: at, updatedAt: at });
    audit({ action: 'knowledge_base.deleted', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name });
  });
  ctx.services.knowledge.invalidate(params.knowledgeBaseId);
  return { status: 200, body: { data: { id: params.knowledgeBaseId, deleted: true as const } } };
};

export const restoreKnowledgeBase: Handler<'restoreKnowledgeBase'> = async ({ params, ctx }) => {
  const restored = await ctx.mutate(async (tx, audit) => {
    const kb = await loadBase(ctx, params.knowledgeBaseId, { repos: tx, archived: 'also' });
    if (!kb.deletedAt) throw conflict('The knowledge base is not archived.', { code: 'NOT_ARCHIVED' });
    await tx.knowledgeBases.update(kb.id, { deletedAt: null, updatedAt: nowIso() });
    audit({ action: 'knowledge_base.restored', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name });
    return (await tx.knowledgeBases.get(kb.id))!;
  });
  ctx.services.knowledge.invalidate(params.knowledgeBaseId);
  return { status: 200, body: { data: await baseView(ctx, restored) } };
};

export const exportKnowledgeBase: Handler<'exportKnowledgeBase'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId, { archived: 'also' });
  const stream = await exportBundle(ctx.services.store, ctx.services.blobs, kb, query.vectors === true);
  return { status: 200, headers: { 'Content-Type': 'application/zip', 'Content-Disposition': bundleDisposition(kb.name) }, body: new StreamBody(stream) };
};

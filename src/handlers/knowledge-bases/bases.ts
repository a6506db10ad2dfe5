// Knowledge bases: create, list, read, update, archive and restore, export. The rules are
// src/knowledge/bases.ts; here the request is read and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { KnowledgeBaseRecord } from '../../store/knowledge-bases.ts';
import { normalizeChunkingConfig, type ChunkingConfig } from '../../knowledge/chunking-config.ts';
import * as bases from '../../knowledge/bases.ts';
import { bundleDisposition, exportBundle } from '../../knowledge/export.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { baseView, loadBase, parseKbFolder, workspaceOf } from './shared.ts';
import { assertAccess } from '../../access-control/policy.ts';

export const listKnowledgeBases: Handler<'listKnowledgeBases'> = async ({ query, ctx }) => {
  const workspace = workspaceOf(ctx);
  const asked = query.folderPath === undefined ? null : parseKbFolder(query.folderPath, ['query', 'folderPath']);
  // An unknown (or archived) folder matches nothing.
  const folderPath = asked === null ? null : await bases.existingFolder(ctx.services.store, workspace.id, asked);
  if (asked !== null && folderPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  const sortBy = query.sortBy ?? 'createdAt';
  const order = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: workspace.id, scope: query.scope ?? 'active', folderPath, search: query.search ?? null, sortBy, order };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await bases.listBases(ctx.services.store, {
    workspaceId: workspace.id, archived: binding.scope === 'archived', folderPath, search: binding.search, sortBy, order, after, limit: limit + 1,
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
  const chunking = normalizeChunkingConfig(body.chunkingConfig, ['body', 'chunkingConfig']);
  const folderPath = body.folderPath === undefined ? '/' : parseKbFolder(body.folderPath, ['body', 'folderPath']);
  const { model, dimension } = ctx.services.knowledge.provider;
  const input = {
    workspaceId: workspaceOf(ctx).id, name: body.name, description: body.description ?? null, folderPath, chunking, embedding: { model, dimension }, createdBy: ctx.principal.userId,
  };
  const kb = await ctx.mutate((tx, audit) => bases.createBase(tx, audit, input));
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
  const change = { name: body.name, description: body.description, folderPath, chunking, fields: Object.keys(body).filter((k) => k !== 'workspaceId') };
  const updated = await ctx.mutate((tx, audit) => bases.updateBase(tx, audit, kb.workspaceId, kb.id, change));
  return { status: 200, body: { data: await baseView(ctx, updated) } };
};

export const deleteKnowledgeBase: Handler<'deleteKnowledgeBase'> = async ({ params, ctx }) => {
  await ctx.mutate((tx, audit) => bases.archiveBase(tx, audit, workspaceOf(ctx).id, params.knowledgeBaseId));
  ctx.services.knowledge.invalidate(params.knowledgeBaseId);
  return { status: 200, body: { data: { id: params.knowledgeBaseId, deleted: true as const } } };
};

export const restoreKnowledgeBase: Handler<'restoreKnowledgeBase'> = async ({ params, ctx }) => {
  const restored = await ctx.mutate((tx, audit) => bases.restoreBase(tx, audit, workspaceOf(ctx).id, params.knowledgeBaseId));
  ctx.services.knowledge.invalidate(params.knowledgeBaseId);
  return { status: 200, body: { data: await baseView(ctx, restored) } };
};

export const exportKnowledgeBase: Handler<'exportKnowledgeBase'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId, { archived: 'also' });
  await assertAccess(ctx.services.store, { workspaceId: kb.workspaceId, userId: ctx.principal.userId }, { kind: 'feature', key: 'disableKnowledgeBaseExport', action: 'Exporting knowledge bases' });
  const stream = await exportBundle(ctx.services.store, ctx.services.blobs, kb, query.vectors === true);
  return { status: 200, headers: { 'Content-Type': 'application/zip', 'Content-Disposition': bundleDisposition(kb.name) }, body: new StreamBody(stream) };
};

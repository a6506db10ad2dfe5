// Tag definitions of a knowledge base: 17 typed slots (text 7, number 5, date 2, boolean 3), each named by a
// display name that filters and document views use. The rules are src/knowledge/tag-definitions.ts; here the
// request is read and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import type { TagDefinitionRecord } from '../../store/knowledge-bases.ts';
import * as tags from '../../knowledge/tag-definitions.ts';
import { loadBase } from './shared.ts';

const tagView = (t: TagDefinitionRecord) => ({ id: t.id, displayName: t.displayName, tagSlot: t.tagSlot, fieldType: t.fieldType });

export const listKnowledgeTags: Handler<'listKnowledgeTags'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  return { status: 200, body: { data: (await ctx.services.store.knowledgeBases.tags(kb.id)).map(tagView), nextCursor: null } };
};

export const createKnowledgeTag: Handler<'createKnowledgeTag'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const created = await ctx.mutate((tx, audit) => tags.createTag(tx, audit, kb, body));
  return { status: 200, body: { data: tagView(created) } };
};

export const bulkSaveKnowledgeTagDefinitions: Handler<'bulkSaveKnowledgeTagDefinitions'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const { created, updated, errors } = await ctx.mutate((tx, audit) => tags.saveTagDefinitions(tx, audit, kb, body.definitions));
  return { status: 200, body: { data: { created: created.map(tagView), updated: updated.map(tagView), errors } } };
};

export const updateKnowledgeTag: Handler<'updateKnowledgeTag'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const updated = await ctx.mutate((tx, audit) => tags.updateTag(tx, audit, kb, params.tagId, { displayName: body.displayName, fieldType: body.fieldType }));
  return { status: 200, body: { data: tagView(updated) } };
};

export const deleteKnowledgeTag: Handler<'deleteKnowledgeTag'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const tag = await ctx.mutate((tx, audit) => tags.deleteTag(tx, audit, kb, params.tagId));
  return { status: 200, body: { data: { id: tag.id, tagSlot: tag.tagSlot, displayName: tag.displayName, deleted: true as const } } };
};

export const deleteKnowledgeTagDefinitions: Handler<'deleteKnowledgeTagDefinitions'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const unused = query.unused ?? true;
  const count = await ctx.mutate((tx, audit) => tags.deleteTags(tx, audit, kb, unused));
  return { status: 200, body: { data: { unused, count } } };
};

export const getNextKnowledgeTagSlot: Handler<'getNextKnowledgeTagSlot'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  return { status: 200, body: { data: await tags.slotsOf(ctx.services.store, kb, query.fieldType) } };
};

export const listKnowledgeTagUsage: Handler<'listKnowledgeTagUsage'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  return { status: 200, body: { data: await tags.tagUsage(ctx.services.store, kb), nextCursor: null } };
};

// Tag definitions of a knowledge base: 17 typed slots (text 7, number 5, date 2, boolean 3), each named by a
// display name that filters and document views use.
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../../generated/handlers.ts';
import { conflict, invalidField, notFound } from '../../http/errors.ts';
import type { Repositories } from '../../store/index.ts';
import type { KnowledgeBaseRecord, TagDefinitionRecord } from '../../store/knowledge-bases.ts';
import { SLOTS, slotType, type FieldType } from '../../knowledge/tags.ts';
import { loadBase, nowIso } from './shared.ts';
import { onUniqueViolation } from '../../store/errors.ts';

const tagView = (t: TagDefinitionRecord) => ({ id: t.id, displayName: t.displayName, tagSlot: t.tagSlot, fieldType: t.fieldType });
const newTagId = () => `kt_${randomUUID().replace(/-/g, '')}`;

function freeSlot(defs: TagDefinitionRecord[], type: FieldType): string | null {
  const used = new Set(defs.map((d) => d.tagSlot));
  return SLOTS[type].find((s) => !used.has(s)) ?? null;
}

async function loadTag(tx: Repositories, kb: KnowledgeBaseRecord, id: string): Promise<TagDefinitionRecord> {
  const t = (await tx.knowledgeBases.tags(kb.id)).find((d) => d.id === id);
  if (!t) throw notFound('Tag');
  return t;
}

export const listKnowledgeTags: Handler<'listKnowledgeTags'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  return { status: 200, body: { data: (await ctx.services.store.knowledgeBases.tags(kb.id)).map(tagView), nextCursor: null } };
};

/** Checks a definition against the others; returns the slot it takes. */
function place(defs: TagDefinitionRecord[], input: { displayName: string; fieldType?: FieldType; tagSlot?: string }, field: (string | number)[]): { slot: string; type: FieldType } {
  const type = input.fieldType ?? (input.tagSlot ? slotType(input.tagSlot) : 'text');
  if (input.tagSlot && slotType(input.tagSlot) !== type) throw invalidField([...field, 'tagSlot'], `The slot ${input.tagSlot} holds ${slotType(input.tagSlot)} values, not ${type}.`);
  if (defs.some((d) => d.displayName.toLowerCase() === input.displayName.toLowerCase())) throw tagNameTaken(input.displayName);
  const slot = input.tagSlot ?? freeSlot(defs, type);
  if (!slot) throw conflict(`All ${SLOTS[type].length} ${type} slots are in use.`, { code: 'NO_FREE_SLOT', fieldType: type });
  if (defs.some((d) => d.tagSlot === slot)) throw slotTaken(slot);
  return { slot, type };
}
const tagNameTaken = (displayName: string) => conflict(`A tag named "${displayName}" already exists.`, { code: 'TAG_NAME_TAKEN' });
const slotTaken = (slot: string) => conflict(`The slot ${slot} is already in use.`, { code: 'SLOT_TAKEN', tagSlot: slot });
/** A tag write that lost a race to another process answers as the checks before it do. */
const tagWrite = (write: Promise<void>, displayName: string, slot: string) =>
  onUniqueViolation(
    onUniqueViolation(write, 'knowledge_tag_definitions', ['knowledge_base_id', 'display_name'], () => tagNameTaken(displayName)),
    'knowledge_tag_definitions', ['knowledge_base_id', 'tag_slot'], () => slotTaken(slot),
  );

export const createKnowledgeTag: Handler<'createKnowledgeTag'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const created = await ctx.mutate(async (tx, audit) => {
    const defs = await tx.knowledgeBases.tags(kb.id);
    const { slot, type } = place(defs, body, ['body']);
    const at = nowIso();
    const t: TagDefinitionRecord = { id: newTagId(), knowledgeBaseId: kb.id, tagSlot: slot, displayName: body.displayName, fieldType: type, createdAt: at, updatedAt: at };
    await tagWrite(tx.knowledgeBases.insertTag(t), t.displayName, t.tagSlot);
    audit({ action: 'knowledge_tag.created', resourceType: 'knowledge_tag', resourceId: t.id, resourceName: t.displayName, metadata: { knowledgeBaseId: kb.id, tagSlot: slot, fieldType: type } });
    return t;
  });
  return { status: 200, body: { data: tagView(created) } };
};

export const bulkSaveKnowledgeTagDefinitions: Handler<'bulkSaveKnowledgeTagDefinitions'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const result = await ctx.mutate(async (tx, audit) => {
    const created: TagDefinitionRecord[] = [];
    const updated: TagDefinitionRecord[] = [];
    const errors: string[] = [];
    for (const def of body.definitions) {
      const defs = await tx.knowledgeBases.tags(kb.id);
      const at = nowIso();
      if (slotType(def.tagSlot) !== def.fieldType) {
        errors.push(`${def.displayName}: the slot ${def.tagSlot} holds ${slotType(def.tagSlot)} values, not ${def.fieldType}.`);
        continue;
      }
      const existing = def.originalDisplayName ? defs.find((d) => d.displayName === def.originalDisplayName) : defs.find((d) => d.tagSlot === def.tagSlot);
      const clash = defs.find((d) => d.displayName.toLowerCase() === def.displayName.toLowerCase() && d.id !== existing?.id);
      if (clash) {
        errors.push(`${def.displayName}: another tag already has this name.`);
        continue;
      }
      if (existing) {
        if (existing.tagSlot !== def.tagSlot) {
          errors.push(`${def.displayName}: the tag "${existing.displayName}" is on ${existing.tagSlot}, not ${def.tagSlot}.`);
          continue;
        }
        await tx.knowledgeBases.updateTag(existing.id, { displayName: def.displayName, updatedAt: at });
        updated.push({ ...existing, displayName: def.displayName, updatedAt: at });
      } else {
        if (defs.some((d) => d.tagSlot === def.tagSlot)) {
          errors.push(`${def.displayName}: the slot ${def.tagSlot} is already in use.`);
          continue;
        }
        const t: TagDefinitionRecord = { id: newTagId(), knowledgeBaseId: kb.id, tagSlot: def.tagSlot, displayName: def.displayName, fieldType: def.fieldType, createdAt: at, updatedAt: at };
        await tx.knowledgeBases.insertTag(t);
        created.push(t);
      }
    }
    audit({ action: 'knowledge_tag.saved', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { created: created.length, updated: updated.length, errors: errors.length } });
    return { created: created.map(tagView), updated: updated.map(tagView), errors };
  });
  return { status: 200, body: { data: result } };
};

export const updateKnowledgeTag: Handler<'updateKnowledgeTag'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const updated = await ctx.mutate(async (tx, audit) => {
    const tag = await loadTag(tx, kb, params.tagId);
    const defs = await tx.knowledgeBases.tags(kb.id);
    const fields: { displayName?: string; fieldType?: string; tagSlot?: string; updatedAt: string } = { updatedAt: nowIso() };
    if (body.displayName !== undefined && body.displayName !== tag.displayName) {
      if (defs.some((d) => d.id !== tag.id && d.displayName.toLowerCase() === body.displayName!.toLowerCase())) throw tagNameTaken(body.displayName);
      fields.displayName = body.displayName;
    }
    if (body.fieldType !== undefined && body.fieldType !== tag.fieldType) {
      if ((await tx.knowledgeDocuments.slotUsage(kb.id, tag.tagSlot)) > 0) {
        throw conflict(`Documents carry values for "${tag.displayName}"; clear them before changing its type.`, { code: 'TAG_IN_USE' });
      }
      const slot = freeSlot(defs, body.fieldType);
      if (!slot) throw conflict(`All ${SLOTS[body.fieldType].length} ${body.fieldType} slots are in use.`, { code: 'NO_FREE_SLOT', fieldType: body.fieldType });
      fields.fieldType = body.fieldType;
      fields.tagSlot = slot;
    }
    await tagWrite(tx.knowledgeBases.updateTag(tag.id, fields), fields.displayName ?? tag.displayName, fields.tagSlot ?? tag.tagSlot);
    audit({ action: 'knowledge_tag.updated', resourceType: 'knowledge_tag', resourceId: tag.id, resourceName: fields.displayName ?? tag.displayName, metadata: { knowledgeBaseId: kb.id } });
    return loadTag(tx, kb, tag.id);
  });
  return { status: 200, body: { data: tagView(updated) } };
};

export const deleteKnowledgeTag: Handler<'deleteKnowledgeTag'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const tag = await ctx.mutate(async (tx, audit) => {
    const tag = await loadTag(tx, kb, params.tagId);
    await tx.knowledgeDocuments.clearSlot(kb.id, tag.tagSlot, nowIso());
    await tx.knowledgeBases.deleteTag(tag.id);
    audit({ action: 'knowledge_tag.deleted', resourceType: 'knowledge_tag', resourceId: tag.id, resourceName: tag.displayName, metadata: { knowledgeBaseId: kb.id, tagSlot: tag.tagSlot } });
    return tag;
  });
  return { status: 200, body: { data: { id: tag.id, tagSlot: tag.tagSlot, displayName: tag.displayName, deleted: true as const } } };
};

export const deleteKnowledgeTagDefinitions: Handler<'deleteKnowledgeTagDefinitions'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const unused = query.unused ?? true;
  const count = await ctx.mutate(async (tx, audit) => {
    let count = 0;
    const at = nowIso();
    for (const tag of await tx.knowledgeBases.tags(kb.id)) {
      if (unused && (await tx.knowledgeDocuments.slotUsage(kb.id, tag.tagSlot)) > 0) continue;
      await tx.knowledgeDocuments.clearSlot(kb.id, tag.tagSlot, at);
      await tx.knowledgeBases.deleteTag(tag.id);
      count++;
    }
    audit({ action: 'knowledge_tag.deleted_many', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { unused, count } });
    return count;
  });
  return { status: 200, body: { data: { unused, count } } };
};

export const getNextKnowledgeTagSlot: Handler<'getNextKnowledgeTagSlot'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const defs = await ctx.services.store.knowledgeBases.tags(kb.id);
  const type = query.fieldType;
  const usedSlots = SLOTS[type].filter((s) => defs.some((d) => d.tagSlot === s));
  return {
    status: 200,
    body: { data: { nextAvailableSlot: freeSlot(defs, type), fieldType: type, usedSlots, totalSlots: SLOTS[type].length, availableSlots: SLOTS[type].length - usedSlots.length } },
  };
};

export const listKnowledgeTagUsage: Handler<'listKnowledgeTagUsage'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const store = ctx.services.store;
  const data = [];
  for (const t of await store.knowledgeBases.tags(kb.id)) {
    const usage = await store.knowledgeDocuments.slotUsageWithChunks(kb.id, t.tagSlot);
    data.push({ id: t.id, tagSlot: t.tagSlot, displayName: t.displayName, fieldType: t.fieldType, documentCount: usage.documents, chunkCount: usage.chunks });
  }
  return { status: 200, body: { data, nextCursor: null } };
};

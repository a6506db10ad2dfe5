// Tag definitions of a knowledge base: 17 typed slots (src/knowledge/tags.ts), each named by a display name
// that is unique in the base ignoring case. Create (a free slot of the type, or the one asked for), save many at
// once (each reported, none failing the batch), rename or retype (only while no document carries a value),
// delete (documents lose their values). Each change works inside the caller's transaction and records its audit
// event there. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { KnowledgeBaseRecord, TagDefinitionRecord } from '../store/knowledge-bases.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { SLOTS, slotType, type FieldType } from './tags.ts';

const nowIso = () => new Date().toISOString();
const newTagId = () => `kt_${randomUUID().replace(/-/g, '')}`;

const tagNameTaken = (displayName: string) => new DomainError('conflict', `A tag named "${displayName}" already exists.`, { code: 'TAG_NAME_TAKEN' });
const slotTaken = (slot: string) => new DomainError('conflict', `The slot ${slot} is already in use.`, { code: 'SLOT_TAKEN', tagSlot: slot });
/** A tag write that lost a race to another process answers as the checks before it do. */
const tagWrite = (write: Promise<void>, displayName: string, slot: string) =>
  onUniqueViolation(
    onUniqueViolation(write, 'knowledge_tag_definitions', ['knowledge_base_id', 'display_name'], () => tagNameTaken(displayName)),
    'knowledge_tag_definitions', ['knowledge_base_id', 'tag_slot'], () => slotTaken(slot),
  );
const noFreeSlot = (type: FieldType) => new DomainError('conflict', `All ${SLOTS[type].length} ${type} slots are in use.`, { code: 'NO_FREE_SLOT', fieldType: type });

export function freeSlot(defs: TagDefinitionRecord[], type: FieldType): string | null {
  const used = new Set(defs.map((d) => d.tagSlot));
  return SLOTS[type].find((s) => !used.has(s)) ?? null;
}

async function loadTag(tx: Repositories, kb: KnowledgeBaseRecord, id: string): Promise<TagDefinitionRecord> {
  const t = (await tx.knowledgeBases.tags(kb.id)).find((d) => d.id === id);
  if (!t) throw domainNotFound('Tag');
  return t;
}

/** Checks a definition against the others; returns the slot it takes. `field` is where it sits in the request. */
function place(defs: TagDefinitionRecord[], input: { displayName: string; fieldType?: FieldType; tagSlot?: string }, field: (string | number)[]): { slot: string; type: FieldType } {
  const type = input.fieldType ?? (input.tagSlot ? slotType(input.tagSlot) : 'text');
  if (input.tagSlot && slotType(input.tagSlot) !== type) {
    const message = `The slot ${input.tagSlot} holds ${slotType(input.tagSlot)} values, not ${type}.`;
    throw new DomainError('invalid', message, [{ code: 'custom', keys: [], path: [...field, 'tagSlot'], message }]);
  }
  if (defs.some((d) => d.displayName.toLowerCase() === input.displayName.toLowerCase())) throw tagNameTaken(input.displayName);
  const slot = input.tagSlot ?? freeSlot(defs, type);
  if (!slot) throw noFreeSlot(type);
  if (defs.some((d) => d.tagSlot === slot)) throw slotTaken(slot);
  return { slot, type };
}

export async function createTag(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, input: { displayName: string; fieldType?: FieldType; tagSlot?: string }): Promise<TagDefinitionRecord> {
  const defs = await tx.knowledgeBases.tags(kb.id);
  const { slot, type } = place(defs, input, ['body']);
  const at = nowIso();
  const t: TagDefinitionRecord = { id: newTagId(), knowledgeBaseId: kb.id, tagSlot: slot, displayName: input.displayName, fieldType: type, createdAt: at, updatedAt: at };
  await tagWrite(tx.knowledgeBases.insertTag(t), t.displayName, t.tagSlot);
  await audit({ action: 'knowledge_tag.created', resourceType: 'knowledge_tag', resourceId: t.id, resourceName: t.displayName, metadata: { knowledgeBaseId: kb.id, tagSlot: slot, fieldType: type } });
  return t;
}

export interface TagDefinitionInput {
  tagSlot: string;
  displayName: string;
  fieldType: FieldType;
  /** The display name of the definition to rename; without it, the definition on the slot (if any). */
  originalDisplayName?: string;
}

/** Creates or renames each definition; one that breaks a rule is reported in `errors` and skipped. */
export async function saveTagDefinitions(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, definitions: TagDefinitionInput[]) {
  const created: TagDefinitionRecord[] = [];
  const updated: TagDefinitionRecord[] = [];
  const errors: string[] = [];
  for (const def of definitions) {
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
  await audit({ action: 'knowledge_tag.saved', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { created: created.length, updated: updated.length, errors: errors.length } });
  return { created, updated, errors };
}

/** Renames a tag, or retypes it onto a free slot of the new type while no document carries a value for it. */
export async function updateTag(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, tagId: string, change: { displayName?: string; fieldType?: FieldType }): Promise<TagDefinitionRecord> {
  const tag = await loadTag(tx, kb, tagId);
  const defs = await tx.knowledgeBases.tags(kb.id);
  const fields: { displayName?: string; fieldType?: string; tagSlot?: string; updatedAt: string } = { updatedAt: nowIso() };
  const { displayName, fieldType } = change;
  if (displayName !== undefined && displayName !== tag.displayName) {
    if (defs.some((d) => d.id !== tag.id && d.displayName.toLowerCase() === displayName.toLowerCase())) throw tagNameTaken(displayName);
    fields.displayName = displayName;
  }
  if (fieldType !== undefined && fieldType !== tag.fieldType) {
    if ((await tx.knowledgeDocuments.slotUsage(kb.id, tag.tagSlot)) > 0) {
      throw new DomainError('conflict', `Documents carry values for "${tag.displayName}"; clear them before changing its type.`, { code: 'TAG_IN_USE' });
    }
    const slot = freeSlot(defs, fieldType);
    if (!slot) throw noFreeSlot(fieldType);
    fields.fieldType = fieldType;
    fields.tagSlot = slot;
  }
  await tagWrite(tx.knowledgeBases.updateTag(tag.id, fields), fields.displayName ?? tag.displayName, fields.tagSlot ?? tag.tagSlot);
  await audit({ action: 'knowledge_tag.updated', resourceType: 'knowledge_tag', resourceId: tag.id, resourceName: fields.displayName ?? tag.displayName, metadata: { knowledgeBaseId: kb.id } });
  return loadTag(tx, kb, tag.id);
}

/** Deletes a tag; documents lose their values for it. */
export async function deleteTag(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, tagId: string): Promise<TagDefinitionRecord> {
  const tag = await loadTag(tx, kb, tagId);
  await tx.knowledgeDocuments.clearSlot(kb.id, tag.tagSlot, nowIso());
  await tx.knowledgeBases.deleteTag(tag.id);
  await audit({ action: 'knowledge_tag.deleted', resourceType: 'knowledge_tag', resourceId: tag.id, resourceName: tag.displayName, metadata: { knowledgeBaseId: kb.id, tagSlot: tag.tagSlot } });
  return tag;
}

/** Deletes every tag of the base (only those no document carries a value for, when `unused`); returns how many. */
export async function deleteTags(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, unused: boolean): Promise<number> {
  let count = 0;
  const at = nowIso();
  for (const tag of await tx.knowledgeBases.tags(kb.id)) {
    if (unused && (await tx.knowledgeDocuments.slotUsage(kb.id, tag.tagSlot)) > 0) continue;
    await tx.knowledgeDocuments.clearSlot(kb.id, tag.tagSlot, at);
    await tx.knowledgeBases.deleteTag(tag.id);
    count++;
  }
  await audit({ action: 'knowledge_tag.deleted_many', resourceType: 'knowledge_base', resourceId: kb.id, resourceName: kb.name, metadata: { unused, count } });
  return count;
}

/** The slots of a type: the next free one and which are used. */
export async function slotsOf(repos: Repositories, kb: KnowledgeBaseRecord, type: FieldType) {
  const defs = await repos.knowledgeBases.tags(kb.id);
  const usedSlots = SLOTS[type].filter((s) => defs.some((d) => d.tagSlot === s));
  return { nextAvailableSlot: freeSlot(defs, type), fieldType: type, usedSlots, totalSlots: SLOTS[type].length, availableSlots: SLOTS[type].length - usedSlots.length };
}

/** Each definition with how many documents and chunks carry a value for it. */
export async function tagUsage(repos: Repositories, kb: KnowledgeBaseRecord) {
  const data = [];
  for (const t of await repos.knowledgeBases.tags(kb.id)) {
    const usage = await repos.knowledgeDocuments.slotUsageWithChunks(kb.id, t.tagSlot);
    data.push({ id: t.id, tagSlot: t.tagSlot, displayName: t.displayName, fieldType: t.fieldType, documentCount: usage.documents, chunkCount: usage.chunks });
  }
  return data;
}

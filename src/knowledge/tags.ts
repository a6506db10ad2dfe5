// The 17 typed tag slots of a knowledge base, their values and the tag filters of search and document lists.
import { invalidInput } from '../domain/errors.ts';
import type { TagDefinitionRecord } from '../store/knowledge-bases.ts';
import type { TagCondition } from '../store/knowledge-tag-conditions.ts';

export type FieldType = 'text' | 'number' | 'date' | 'boolean';
export type TagValue = string | number | boolean | null;

export const SLOTS: Record<FieldType, string[]> = {
  text: ['tag1', 'tag2', 'tag3', 'tag4', 'tag5', 'tag6', 'tag7'],
  number: ['number1', 'number2', 'number3', 'number4', 'number5'],
  date: ['date1', 'date2'],
  boolean: ['boolean1', 'boolean2', 'boolean3'],
};
export const ALL_SLOTS = [...SLOTS.text, ...SLOTS.number, ...SLOTS.date, ...SLOTS.boolean];

export function slotType(slot: string): FieldType {
  if (slot.startsWith('tag')) return 'text';
  if (slot.startsWith('number')) return 'number';
  if (slot.startsWith('date')) return 'date';
  return 'boolean';
}

/** Tag values by display name, for the slots that have a definition. */
export function tagValuesByName(doc: { tags: Record<string, TagValue> }, defs: TagDefinitionRecord[]): Record<string, TagValue> {
  const out: Record<string, TagValue> = {};
  for (const d of defs) out[d.displayName] = doc.tags[d.tagSlot] ?? null;
  return out;
}

export function isValidDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

export interface TagFilter {
  tagName: string;
  fieldType?: FieldType;
  operator?: string;
  value: string | number | boolean;
  valueTo?: string | number;
}

const OPERATORS: Record<FieldType, string[]> = {
  text: ['eq', 'neq', 'contains', 'not_contains', 'starts_with', 'ends_with'],
  number: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between'],
  date: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between'],
  boolean: ['eq', 'neq'],
};

/** One filter resolved against the definitions: which slot, and a checked value of its type. */
/** A filter resolved to its tag slot; the documents repository compiles it to SQL (TagCondition). */
export interface ResolvedFilter extends TagCondition {
  type: FieldType;
}

/**
 * Resolves filters by display name against every base's definitions: the tag must exist in each base with the
 * same slot and type, the operator must suit the type and the value must be of it. Otherwise a 400 on `field`.
 */
export function resolveFilters(filters: TagFilter[], defsPerBase: TagDefinitionRecord[][], field: (string | number)[]): ResolvedFilter[] {
  return filters.map((f, i) => {
    const at = [...field, i];
    const matches = defsPerBase.map((defs) => defs.find((d) => d.displayName === f.tagName));
    if (matches.some((m) => !m)) throw invalidInput([...at, 'tagName'], `No tag named "${f.tagName}" is defined${defsPerBase.length > 1 ? ' in every selected knowledge base' : ' in this knowledge base'}.`);
    const first = matches[0]!;
    if (matches.some((m) => m!.tagSlot !== first.tagSlot || m!.fieldType !== first.fieldType)) {
      throw invalidInput([...at, 'tagName'], `The tag "${f.tagName}" has a different slot or type in the selected knowledge bases.`);
    }
    const type = first.fieldType;
    if (f.fieldType && f.fieldType !== type) throw invalidInput([...at, 'fieldType'], `The tag "${f.tagName}" is of type ${type}, not ${f.fieldType}.`);
    const operator = f.operator ?? 'eq';
    if (!OPERATORS[type].includes(operator)) throw invalidInput([...at, 'operator'], `The operator ${operator} does not apply to ${type} tags (use ${OPERATORS[type].join(', ')}).`);
    const value = checkValue(type, f.value, [...at, 'value']);
    const out: ResolvedFilter = { slot: first.tagSlot, type, operator, value };
    if (operator === 'between') {
      if (f.valueTo === undefined) throw invalidInput([...at, 'valueTo'], 'The between operator needs valueTo.');
      out.valueTo = checkValue(type, f.valueTo, [...at, 'valueTo']) as string | number;
      // Numbers compare as numbers, YYYY-MM-DD dates as text (which orders them by date).
      if (out.valueTo < (value as string | number)) throw invalidInput([...at, 'valueTo'], `valueTo (${out.valueTo}) is below value (${value}): between takes the lower bound first.`);
    } else if (f.valueTo !== undefined) {
      throw invalidInput([...at, 'valueTo'], `valueTo only goes with the between operator, not ${operator}.`);
    }
    return out;
  });
}

function checkValue(type: FieldType, value: unknown, field: (string | number)[]): string | number | boolean {
  switch (type) {
    case 'text':
      // A request validator that coerces types may have turned "1" into 1: text compares as written.
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      if (typeof value !== 'string') throw invalidInput(field, 'A text tag is compared with a string.');
      return value;
    case 'number': {
      const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      if (!Number.isFinite(n)) throw invalidInput(field, 'A number tag is compared with a number.');
      return n;
    }
    case 'date':
      if (typeof value !== 'string' || !isValidDate(value)) throw invalidInput(field, 'A date tag is compared with a date written YYYY-MM-DD.');
      return value;
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      if (value === 1 || value === 0) return value === 1;
      throw invalidInput(field, 'A boolean tag is compared with true or false.');
  }
}


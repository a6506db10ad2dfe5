// How a deployed workflow looks as an MCP tool: its name, description and input schema, derived from the
// workflow and its Start-block fields. Pure functions; no store, no HTTP.
import type { WorkflowState } from '../execution/index.ts';

export const MAX_TOOLS_PER_SERVER = 100;
export const MAX_TOOL_NAME_CHARS = 64;
export const MAX_SCHEMA_BYTES = 2 * 1024 * 1024;
export const MAX_DESCRIPTION_BYTES = 64 * 1024;
export const TOOLS_PAGE_SIZE = 100;

export type McpInputSchema = {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  [key: string]: unknown;
};

/**
 * A tool name in the MCP grammar: lowercase; only letters, digits, spaces, `_` and `-` kept; spaces and hyphens
 * become `_`; runs of `_` collapse; no `_` at either end; at most 64 characters. Empty: `workflow_tool`.
 */
export function normalizeToolName(raw: string): string {
  const name = raw
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/[ -]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_TOOL_NAME_CHARS)
    .replace(/_+$/, '');
  return name || 'workflow_tool';
}

export function toolDescriptionFor(toolDescription: string | null, workflow: { name: string; description: string | null }): string {
  return toolDescription || workflow.description || `Execute workflow: ${workflow.name}`;
}

const FILE_OBJECT = {
  type: 'object',
  properties: { name: { type: 'string' }, url: { type: 'string' }, type: { type: 'string' }, size: { type: 'number' } },
};

function propertyFor(type: unknown): Record<string, unknown> {
  switch (type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'object':
    case 'array':
      return { type };
    case 'files':
      return { type: 'array' };
    case 'file[]':
      return { type: 'array', items: FILE_OBJECT };
    default:
      return { type: 'string' };
  }
}

function rawFields(value: unknown): Record<string, unknown>[] {
  let list = value;
  if (typeof list === 'string') {
    try {
      list = JSON.parse(list);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(list)) return [];
  return list.filter((f): f is Record<string, unknown> => typeof f === 'object' && f !== null && typeof f.name === 'string' && f.name.trim() !== '');
}

const START_TYPES = ['start_trigger', 'api_trigger', 'starter'];

/**
 * The input schema of a workflow as a tool: one property per Start-block field (every one required), its
 * description the field's description or name, overridden by `parameterDescriptions` (unknown names ignored).
 */
export function inputSchemaFor(state: WorkflowState, parameterDescriptions: { name: string; description: string }[] = []): McpInputSchema {
  const blocks = Object.values(state.blocks ?? {});
  const start = blocks.find((b) => START_TYPES.includes(b.type));
  const overrides = new Map(parameterDescriptions.map((p) => [p.name, p.description]));
  const properties: McpInputSchema['properties'] = {};
  const required: string[] = [];
  for (const field of rawFields(start?.subBlocks?.inputFormat?.value)) {
    const name = (field.name as string).trim();
    if (Object.hasOwn(properties, name)) continue;
    const description = overrides.get(name) ?? (typeof field.description === 'string' && field.description ? field.description : name);
    properties[name] = { ...propertyFor(field.type), description };
    required.push(name);
  }
  return { type: 'object', properties, required };
}

// Handlers for the Catalog operations: the block registry (src/workflows/blocks.ts) as the API shows it.
import type { Handler } from '../../generated/handlers.ts';
import { notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { getBlockDefinition, listBlockDefinitions, type BlockDefinition } from '../workflows/blocks.ts';
import * as toolHandlers from './tools.ts';

const summaryView = (b: BlockDefinition) => ({
  id: b.id,
  name: b.name,
  description: b.description,
  category: b.category,
  source: 'builtin' as const,
  triggerAllowed: b.triggerAllowed,
  triggerCapable: b.triggerAllowed,
  triggerIds: b.triggerAllowed ? [b.id] : [],
  toolIds: [],
  operationIds: [],
  preview: false,
  tags: b.tags,
});

const detailView = (b: BlockDefinition) => ({
  ...summaryView(b),
  inputSchema: b.inputs.map((input) => ({ ...input })),
  operationInputSchema: {},
  inputDefinitions: {},
  operations: {},
  tools: [],
  triggers: [],
  outputs: b.outputs,
});

const SORT_VALUE = { id: (b: BlockDefinition) => b.id, name: (b: BlockDefinition) => b.name, category: (b: BlockDefinition) => b.category };

export const listBlocks: Handler<'listBlocks'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'id';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const { workspaceId, search, category, capability, source, includeSunset } = query;
  const binding = { workspaceId, search, category, capability, source, includeSunset, sortBy, sortOrder };
  const after = readCursor(ctx, query.cursor, binding);
  const needle = search?.toLowerCase();
  const dir = sortOrder === 'asc' ? 1 : -1;
  const key = (b: BlockDefinition): [string, string] => [SORT_VALUE[sortBy](b), b.id];
  const compare = (a: [string, string], b: [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) * dir;
  const rows = listBlockDefinitions()
    .filter((b) => !needle || [b.id, b.name, b.description].some((t) => t.toLowerCase().includes(needle)))
    .filter((b) => !category || b.category === category)
    .filter((b) => !capability || b.triggerAllowed)
    // Every block of this server is built in; no block is sunset yet, so includeSunset changes nothing.
    .filter(() => source !== 'custom')
    .sort((a, b) => compare(key(a), key(b)))
    .filter((b) => !after || compare(key(b), [String(after[0]), after[1]]) > 0)
    .slice(0, limit + 1);
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, summaryView) };
};

export const getBlock: Handler<'getBlock'> = async ({ params }) => {
  const block = getBlockDefinition(params.blockId);
  if (!block) throw notFound('Block type');
  return { status: 200, body: { data: detailView(block) } };
};

// The tool catalog and tool execution live in their own module (same Catalog tag).
export const listTools: Handler<'listTools'> = toolHandlers.listTools;
export const getTool: Handler<'getTool'> = toolHandlers.getTool;
export const executeTool: Handler<'executeTool'> = toolHandlers.executeTool;

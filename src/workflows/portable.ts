// The portable workflow document: what export writes and import reads. Import accepts the export document,
// a bare state ({blocks, edges, ...}), or a JSON string holding either, and says precisely what is wrong
// with anything else.
import { randomUUID } from 'node:crypto';
import { checkAgainstSpec } from '../domain/spec-schemas.ts';
import { assertJsonDepth, EMBEDDED_JSON_MAX_DEPTH } from '../domain/json-depth.ts';
import { recomputeContainers, StateError, type Block, type Edge, type Variable, type WorkflowState } from './state.ts';

export const EXPORT_FORMAT_VERSION = '1.0';

export interface ExportDocument {
  version: '1.0';
  exportedAt: string;
  workflow: { id: string; name: string; description: string | null; workspaceId: string | null; folderPath: string };
  state: WorkflowState;
}

export interface ParsedDocument {
  name: string | null;
  description: string | null;
  state: WorkflowState;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const VARIABLE_TYPES = new Set(['string', 'number', 'boolean', 'object', 'array', 'plain']);

function fail(message: string, path: (string | number)[]): never {
  throw new StateError(message, ['body', 'workflow', ...path]);
}

function parseBlock(key: string, raw: unknown, path: (string | number)[]): Block {
  if (!isRecord(raw)) fail(`Block "${key}" is not an object.`, path);
  const id = raw.id ?? key;
  if (id !== key) fail(`Block key "${key}" does not match its id "${String(raw.id)}".`, [...path, 'id']);
  if (typeof raw.type !== 'string' || raw.type === '') fail(`Block "${key}" has no type.`, [...path, 'type']);
  if (typeof raw.name !== 'string') fail(`Block "${key}" has no name.`, [...path, 'name']);
  const position = isRecord(raw.position) && typeof raw.position.x === 'number' && typeof raw.position.y === 'number' ? { x: raw.position.x, y: raw.position.y } : { x: 0, y: 0 };
  const subBlocks: Block['subBlocks'] = {};
  if (raw.subBlocks !== undefined) {
    if (!isRecord(raw.subBlocks)) fail(`Block "${key}" has subBlocks that are not an object.`, [...path, 'subBlocks']);
    for (const [subId, sub] of Object.entries(raw.subBlocks)) {
      if (!isRecord(sub)) fail(`Sub-block "${subId}" of block "${key}" is not an object.`, [...path, 'subBlocks', subId]);
      subBlocks[subId] = { id: typeof sub.id === 'string' ? sub.id : subId, type: typeof sub.type === 'string' ? sub.type : 'short-input', value: sub.value ?? null };
    }
  }
  const block: Block = {
    ...optionalBlockFields(raw),
    id: key,
    type: raw.type,
    name: raw.name,
    position,
    subBlocks,
    outputs: isRecord(raw.outputs) ? raw.outputs : {},
    enabled: typeof raw.enabled === 'boolean' ? raw.enabled : true,
  };
  if (raw.data !== undefined && !isRecord(raw.data)) fail(`Block "${key}" has data that is not an object.`, [...path, 'data']);
  return block;
}

const BOOLEAN_BLOCK_FIELDS = ['horizontalHandles', 'advancedMode', 'errorEnabled', 'triggerMode', 'locked'];

/** The optional block fields the state schema knows, when they have the right type; anything else is dropped. */
function optionalBlockFields(raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of BOOLEAN_BLOCK_FIELDS) if (typeof raw[k] === 'boolean') out[k] = raw[k];
  if (typeof raw.height === 'number') out.height = raw.height;
  const retry = raw.retry;
  if (isRecord(retry) && typeof retry.enabled === 'boolean' && Number.isInteger(retry.maxTries) && (retry.maxTries as number) >= 1 && Number.isInteger(retry.waitBetweenTriesMs) && (retry.waitBetweenTriesMs as number) >= 0) {
    out.retry = { enabled: retry.enabled, maxTries: retry.maxTries, waitBetweenTriesMs: retry.waitBetweenTriesMs };
  }
  if (isRecord(raw.data)) out.data = sanitizeData(raw.data);
  return out;
}

const DATA_FIELD_OK: Record<string, (v: unknown) => boolean> = {
  parentId: (v) => typeof v === 'string',
  extent: (v) => v === 'parent',
  width: (v) => typeof v === 'number',
  height: (v) => typeof v === 'number',
  count: (v) => typeof v === 'number',
  batchSize: (v) => typeof v === 'number',
  loopType: (v) => v === 'for' || v === 'forEach' || v === 'while' || v === 'doWhile',
  parallelType: (v) => v === 'collection' || v === 'count',
  whileCondition: (v) => typeof v === 'string',
  doWhileCondition: (v) => typeof v === 'string',
  type: (v) => typeof v === 'string',
  canonicalModes: (v) => isRecord(v) && Object.values(v).every((m) => m === 'basic' || m === 'advanced'),
};

/** Keeps container and layout data, dropping known fields whose values have the wrong type. */
function sanitizeData(data: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(data).filter(([k, v]) => DATA_FIELD_OK[k]?.(v) ?? true));
}

function parseEdge(raw: unknown, i: number, path: (string | number)[]): Edge {
  if (!isRecord(raw)) fail(`Edge ${i} is not an object.`, [...path, i]);
  if (typeof raw.source !== 'string' || typeof raw.target !== 'string') fail(`Edge ${i} needs a source and a target block id.`, [...path, i]);
  const edge: Edge = { id: typeof raw.id === 'string' && raw.id !== '' ? raw.id : randomUUID(), source: raw.source, target: raw.target };
  if (typeof raw.sourceHandle === 'string' || raw.sourceHandle === null) edge.sourceHandle = raw.sourceHandle;
  if (typeof raw.targetHandle === 'string' || raw.targetHandle === null) edge.targetHandle = raw.targetHandle;
  if (typeof raw.type === 'string') edge.type = raw.type;
  return edge;
}

function parseVariables(raw: unknown, path: (string | number)[]): Record<string, Variable> {
  if (raw === undefined || raw === null) return {};
  const entries = Array.isArray(raw) ? raw.map((v, i) => [String(i), v] as const) : isRecord(raw) ? Object.entries(raw) : fail('variables must be an object keyed by variable id.', path);
  const out: Record<string, Variable> = {};
  const names = new Set<string>();
  for (const [key, v] of entries) {
    if (!isRecord(v) || typeof v.name !== 'string' || v.name === '') fail(`Variable "${key}" needs a name.`, [...path, key]);
    const type = typeof v.type === 'string' && VARIABLE_TYPES.has(v.type) ? (v.type as Variable['type']) : 'plain';
    if (names.has(v.name)) fail(`Variable name "${v.name}" is used twice.`, [...path, key]);
    names.add(v.name);
    const id = typeof v.id === 'string' && v.id !== '' ? v.id : randomUUID();
    out[id] = { id, name: v.name, type, value: v.value ?? null };
  }
  return out;
}

function parseState(raw: Record<string, unknown>, path: (string | number)[]): WorkflowState {
  if (!isRecord(raw.blocks)) fail('A workflow state needs "blocks", an object keyed by block id.', [...path, 'blocks']);
  const blocks: Record<string, Block> = {};
  for (const [key, b] of Object.entries(raw.blocks)) blocks[key] = parseBlock(key, b, [...path, 'blocks', key]);
  const rawEdges = raw.edges ?? [];
  if (!Array.isArray(rawEdges)) fail('"edges" must be an array.', [...path, 'edges']);
  const edges = rawEdges.map((e, i) => parseEdge(e, i, [...path, 'edges']));
  const seen = new Set<string>();
  for (const [i, e] of edges.entries()) {
    if (seen.has(e.id)) fail(`Edge id "${e.id}" is used twice.`, [...path, 'edges', i, 'id']);
    seen.add(e.id);
  }
  const state: WorkflowState = { blocks, edges, ...recomputeContainers(blocks), variables: parseVariables(raw.variables, [...path, 'variables']) };
  // What normalization kept must be a state the spec allows (sub-block values, data fields, variable shapes).
  const [issue] = checkAgainstSpec('WorkflowState', state);
  if (issue) fail(`The workflow state at ${['state', ...issue.path].join('.')} ${issue.message}.`, [...path, ...issue.path]);
  return state;
}

/** Reads whatever was sent as `workflow` into a state, or throws StateError naming the problem. */
export function parseWorkflowDocument(input: unknown): ParsedDocument {
  let doc = input;
  if (typeof doc === 'string') {
    try {
      assertJsonDepth(doc, EMBEDDED_JSON_MAX_DEPTH);
    } catch (err) {
      fail((err as Error).message, []);
    }
    try {
      doc = JSON.parse(doc);
    } catch {
      fail('The workflow string is not valid JSON.', []);
    }
  }
  if (!isRecord(doc)) fail('The workflow must be an export document or a workflow state object.', []);
  if (isRecord(doc.state)) {
    if (doc.version !== undefined && doc.version !== EXPORT_FORMAT_VERSION) {
      fail(`Unsupported export version "${String(doc.version)}"; this server reads version ${EXPORT_FORMAT_VERSION}.`, ['version']);
    }
    const meta = isRecord(doc.workflow) ? doc.workflow : {};
    return {
      name: typeof meta.name === 'string' && meta.name.trim() !== '' ? meta.name : null,
      description: typeof meta.description === 'string' ? meta.description : null,
      state: parseState(doc.state, ['state']),
    };
  }
  if ('blocks' in doc) return { name: null, description: null, state: parseState(doc, []) };
  fail('This is not a workflow document: expected an export ({version, workflow, state}) or a state ({blocks, edges}).', []);
}

export function exportDocument(
  workflow: { id: string; name: string; description: string | null; workspaceId: string; folderPath: string },
  state: WorkflowState,
  now: string,
): ExportDocument {
  return {
    version: EXPORT_FORMAT_VERSION,
    exportedAt: now,
    workflow: { id: workflow.id, name: workflow.name, description: workflow.description, workspaceId: workflow.workspaceId, folderPath: workflow.folderPath },
    state,
  };
}

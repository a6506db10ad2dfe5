// The draft graph of a workflow and what the server derives from it: loop and parallel containers recomputed
// from the blocks' parent ids, the normalized form deployments are compared on, the start block's input
// fields, and id remapping for imports and copies. No HTTP and no storage here.
import { randomUUID } from 'node:crypto';
import { getBlockDefinition, START_BLOCK_TYPE } from './blocks.ts';
import { DomainError } from '../domain/errors.ts';
import type { components } from '../../generated/types.ts';

// The graph's types are the spec's own (components in spec/components/workflows.yaml).
type Schemas = components['schemas'];
export type Block = Schemas['WorkflowBlock'];
export type SubBlockValue = Block['subBlocks'][string];
export type BlockData = NonNullable<Block['data']>;
export type Edge = Schemas['WorkflowEdge'];
export type Loop = Schemas['WorkflowLoop'];
export type Parallel = Schemas['WorkflowParallel'];
export type Variable = Schemas['WorkflowVariable'];
export type VariableType = Variable['type'];
export type WorkflowState = Schemas['WorkflowState'];

export class StateError extends DomainError {
  readonly path: (string | number)[];
  constructor(message: string, path: (string | number)[] = []) {
    super('invalid', message, [{ code: 'custom', keys: [], path, message }]);
    this.path = path;
  }
}

const DEFAULT_ITERATIONS = 5;

/** A new workflow's draft: one start block with no input fields. */
export function seedState(): { state: WorkflowState; startBlock: Block } {
  const id = randomUUID();
  const startBlock: Block = {
    id,
    type: START_BLOCK_TYPE,
    name: 'Start',
    position: { x: 100, y: 100 },
    subBlocks: { inputFormat: { id: 'inputFormat', type: 'input-format', value: [] } },
    outputs: {},
    enabled: true,
  };
  return { state: { blocks: { [id]: startBlock }, edges: [], loops: {}, parallels: {}, variables: {} }, startBlock };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Rebuilds loops and parallels from the blocks: a loop or parallel block is a container, and every block whose
 * `data.parentId` names it is one of its nodes. What a client sends as `loops`/`parallels` is never trusted.
 */
export function recomputeContainers(blocks: Record<string, Block>): { loops: Record<string, Loop>; parallels: Record<string, Parallel> } {
  const children = new Map<string, string[]>();
  for (const block of Object.values(blocks)) {
    const parent = block.data?.parentId;
    if (typeof parent === 'string' && blocks[parent]) {
      const list = children.get(parent) ?? [];
      list.push(block.id);
      children.set(parent, list);
    }
  }
  const loops: Record<string, Loop> = {};
  const parallels: Record<string, Parallel> = {};
  for (const block of Object.values(blocks)) {
    const kind = getBlockDefinition(block.type)?.container;
    const data = block.data ?? {};
    const nodes = children.get(block.id) ?? [];
    if (kind === 'loop') {
      const loop: Loop = {
        id: block.id,
        nodes,
        iterations: typeof data.count === 'number' ? data.count : DEFAULT_ITERATIONS,
        loopType: data.loopType ?? 'for',
        enabled: block.enabled,
      };
      const items = data.collection;
      if (typeof items === 'string' || Array.isArray(items) || isRecord(items)) loop.forEachItems = items as Loop['forEachItems'];
      if (typeof data.whileCondition === 'string') loop.whileCondition = data.whileCondition;
      if (typeof data.doWhileCondition === 'string') loop.doWhileCondition = data.doWhileCondition;
      if (block.locked !== undefined) loop.locked = block.locked;
      loops[block.id] = loop;
    } else if (kind === 'parallel') {
      const parallel: Parallel = {
        id: block.id,
        nodes,
        count: typeof data.count === 'number' ? data.count : DEFAULT_ITERATIONS,
        parallelType: data.parallelType ?? 'count',
        enabled: block.enabled,
      };
      const items = data.collection;
      if (typeof items === 'string' || Array.isArray(items) || isRecord(items)) parallel.distribution = items as Parallel['distribution'];
      if (typeof data.batchSize === 'number') parallel.batchSize = data.batchSize;
      if (block.locked !== undefined) parallel.locked = block.locked;
      parallels[block.id] = parallel;
    }
  }
  return { loops, parallels };
}

/**
 * Checks what the schema cannot (keys match ids, edge ids unique, variable names unique) and returns the state
 * the server stores: containers recomputed, variables from the body or, when it has none, the stored ones.
 */
export function prepareState(
  input: { blocks: Record<string, Block>; edges: Edge[]; variables?: Record<string, Variable> },
  storedVariables: Record<string, Variable>,
): WorkflowState {
  for (const [key, block] of Object.entries(input.blocks)) {
    if (block.id !== key) throw new StateError(`Block key "${key}" does not match its id "${block.id}".`, ['body', 'blocks', key, 'id']);
  }
  const edgeIds = new Set<string>();
  input.edges.forEach((edge, i) => {
    if (edgeIds.has(edge.id)) throw new StateError(`Edge id "${edge.id}" is used twice.`, ['body', 'edges', i, 'id']);
    edgeIds.add(edge.id);
  });
  const variables = input.variables ?? storedVariables;
  if (input.variables) {
    const names = new Set<string>();
    for (const [key, variable] of Object.entries(input.variables)) {
      if (variable.id !== key) throw new StateError(`Variable key "${key}" does not match its id "${variable.id}".`, ['body', 'variables', key, 'id']);
      if (names.has(variable.name)) throw new StateError(`Variable name "${variable.name}" is used twice.`, ['body', 'variables', key, 'name']);
      names.add(variable.name);
    }
  }
  const blocks = input.blocks;
  return { blocks, edges: input.edges, ...recomputeContainers(blocks), variables };
}

/** JSON with object keys sorted, so equal values serialize equally whatever order they were written in. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const LAYOUT_ONLY_BLOCK_FIELDS = new Set(['position', 'height', 'horizontalHandles']);
const LAYOUT_ONLY_DATA_FIELDS = new Set(['width', 'height', 'extent']);

/**
 * The form two states are compared on to decide whether a redeployment is needed: what runs, not how it is
 * drawn. Layout (positions, sizes), key order and edge order do not count; edge and variable ids do not either.
 */
export function executableFingerprint(state: Pick<WorkflowState, 'blocks' | 'edges' | 'variables'>): string {
  const blocks = Object.values(state.blocks)
    .map((b) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(b)) if (!LAYOUT_ONLY_BLOCK_FIELDS.has(k)) out[k] = v;
      if (b.data) out.data = Object.fromEntries(Object.entries(b.data).filter(([k]) => !LAYOUT_ONLY_DATA_FIELDS.has(k)));
      return out;
    })
    .sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1));
  const edges = state.edges
    .map((e) => [e.source, e.target, e.sourceHandle ?? null, e.targetHandle ?? null])
    .map((e) => JSON.stringify(e))
    .sort();
  const variables = Object.values(state.variables)
    .map((v) => ({ name: v.name, type: v.type, value: v.value }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return stableStringify({ blocks, edges, variables });
}

export interface InputField {
  name: string;
  type: string;
  description?: string;
}

/** The input fields of the workflow's start block (its `inputFormat`), for clients that call it. */
export function startInputs(state: WorkflowState): InputField[] {
  const start = Object.values(state.blocks).find((b) => getBlockDefinition(b.type)?.triggerAllowed && b.subBlocks?.inputFormat);
  return start ? inputFields(start) : [];
}

/** The fields a block's `inputFormat` declares (a start block's run input, a human step's answer). */
export function inputFields(block: Block): InputField[] {
  let value = block.subBlocks?.inputFormat?.value;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(value)) return [];
  const fields: InputField[] = [];
  for (const item of value) {
    if (!isRecord(item) || typeof item.name !== 'string' || item.name.trim() === '') continue;
    const field: InputField = { name: item.name.trim(), type: typeof item.type === 'string' ? item.type : 'string' };
    if (typeof item.description === 'string') field.description = item.description;
    fields.push(field);
  }
  return fields;
}

/** The seeded or current blocks as {id, type, name}, in the order they are stored. */
export function blockRefs(state: WorkflowState): { id: string; type: string; name: string }[] {
  return Object.values(state.blocks).map((b) => ({ id: b.id, type: b.type, name: b.name }));
}

/**
 * Gives new ids to the blocks and edges `shouldReplace` selects, rewriting every reference to a replaced block
 * id (edge ends, parent ids, and handles derived from block ids). Containers are recomputed afterwards.
 */
export function remapIds(state: WorkflowState, shouldReplace: (id: string) => boolean): { state: WorkflowState; idMap: Record<string, string> } {
  const idMap: Record<string, string> = {};
  for (const id of Object.keys(state.blocks)) if (shouldReplace(id)) idMap[id] = randomUUID();
  const mapBlock = (id: string) => idMap[id] ?? id;
  const mapHandle = (handle: string | null | undefined) => {
    if (typeof handle !== 'string') return handle;
    let out = handle;
    for (const [from, to] of Object.entries(idMap)) if (out.includes(from)) out = out.split(from).join(to);
    return out;
  };
  const blocks: Record<string, Block> = {};
  for (const block of Object.values(state.blocks)) {
    const id = mapBlock(block.id);
    const copy: Block = structuredClone(block);
    copy.id = id;
    if (copy.data?.parentId) copy.data.parentId = mapBlock(copy.data.parentId);
    // Condition and router entries carry ids derived from their block's id ("<blockId>-if"): keep them in step.
    for (const sub of Object.values(copy.subBlocks ?? {})) {
      if (typeof sub.value === 'string' && idMap[block.id] && sub.value.includes(block.id)) {
        sub.value = sub.value.split(block.id).join(id);
      } else if (Array.isArray(sub.value) && idMap[block.id]) {
        sub.value = JSON.parse(JSON.stringify(sub.value).split(block.id).join(id));
      }
    }
    blocks[id] = copy;
  }
  const edges = state.edges.map((edge) => {
    const replaced = shouldReplace(edge.id);
    const newId = replaced ? randomUUID() : edge.id;
    if (replaced) idMap[edge.id] = newId;
    const out: Edge = { ...edge, id: newId, source: mapBlock(edge.source), target: mapBlock(edge.target) };
    if (edge.sourceHandle !== undefined) out.sourceHandle = mapHandle(edge.sourceHandle);
    if (edge.targetHandle !== undefined) out.targetHandle = mapHandle(edge.targetHandle);
    return out;
  });
  return { state: { blocks, edges, ...recomputeContainers(blocks), variables: structuredClone(state.variables) }, idMap };
}

/** A complete copy under fresh ids (duplicate). Variables get fresh ids too. */
export function copyWithFreshIds(state: WorkflowState): WorkflowState {
  const { state: copy } = remapIds(state, () => true);
  const variables: Record<string, Variable> = {};
  for (const v of Object.values(copy.variables)) {
    const id = randomUUID();
    variables[id] = { ...v, id };
  }
  return { ...copy, variables };
}

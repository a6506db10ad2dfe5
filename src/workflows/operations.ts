// Semantic edits of a draft graph: add, edit, delete, move into or out of a loop/parallel, connect, enable or
// disable, then place what moved. Every rule is checked against the block registry and the graph as it stands
// at that point of the batch; what cannot be done is reported (never thrown) so the caller can choose between
// applying the rest and refusing the whole batch. Works on a copy; no HTTP and no storage here.
import { randomUUID } from 'node:crypto';
import { getBlockDefinition, type BlockDefinition, type SubBlockDefinition } from './blocks.ts';
import { branchHandles, referenceName } from './lint.ts';
import { recomputeContainers, StateError, type Block, type BlockData, type Edge, type WorkflowState } from './state.ts';

export type FindingType =
  | 'block_not_found'
  | 'invalid_block_type'
  | 'block_not_allowed'
  | 'block_locked'
  | 'invalid_edge_target'
  | 'invalid_edge_scope'
  | 'invalid_source_handle'
  | 'invalid_subflow_parent'
  | 'nested_subflow_not_allowed'
  | 'duplicate_block_name'
  | 'reserved_block_name'
  | 'duplicate_trigger'
  | 'duplicate_single_instance_block'
  | 'disabled_ancestor';

export interface Finding {
  type: FindingType;
  operationType: string;
  blockId: string;
  reason: string;
  details?: Record<string, unknown>;
}

export interface InputValidationError {
  blockId: string;
  blockType: string;
  field: string;
  error: string;
}

type Inputs = Record<string, unknown>;
type Connections = Record<string, string | string[] | null>;
type Position = { x: number; y: number };
interface BlockParams {
  type?: string;
  name?: string;
  inputs?: Inputs;
  connections?: Connections;
  position?: Position;
}

export type BlockOperation =
  | { operation_type: 'add'; block_id: string; params: BlockParams & { type: string; name: string } }
  | { operation_type: 'edit'; block_id: string; params: BlockParams }
  | { operation_type: 'delete'; block_id: string }
  | { operation_type: 'insert_into_subflow'; block_id: string; params: BlockParams & { subflowId: string; type: string; name: string } }
  | { operation_type: 'extract_from_subflow'; block_id: string; params: { subflowId: string } };

export interface OperationsRequest {
  operations: BlockOperation[];
  setBlockEnabled?: { block_id: string; enabled: boolean }[];
  layout?: 'targeted' | 'none';
}

export interface OperationsOutcome {
  state: WorkflowState;
  /** Whether the resulting state differs from the one given, layout included. */
  changed: boolean;
  applied: number;
  skipped: Finding[];
  inputValidationErrors: InputValidationError[];
  /** Placeholder → id of each block created (and still present at the end of the batch). */
  minted: Record<string, string>;
  warnings: string[];
  counts: { added: number; edited: number; deleted: number; moved: number; enabledChanged: number; connectionsSet: number };
}

/** Names a block may not take because references would read them as something else. */
const RESERVED_NAMES = new Set(['variable', 'loop', 'parallel', 'env']);

/** Container settings: stored on the loop or parallel block's `data`, not as sub-blocks. */
type SettingCheck = (v: unknown) => string | null;
const oneOf = (values: string[]): SettingCheck => (v) => (typeof v === 'string' && values.includes(v) ? null : `expects one of ${values.join(', ')}`);
const positiveInteger: SettingCheck = (v) => (Number.isInteger(v) && (v as number) >= 1 ? null : 'expects a whole number of at least 1');
const collection: SettingCheck = (v) => (typeof v === 'string' || Array.isArray(v) || (typeof v === 'object' && v !== null) ? null : 'expects a list, an object or an expression');
const text: SettingCheck = (v) => (typeof v === 'string' ? null : 'expects text');
const CONTAINER_SETTINGS: Record<'loop' | 'parallel', Record<string, { key: keyof BlockData; check: SettingCheck }>> = {
  loop: {
    loopType: { key: 'loopType', check: oneOf(['for', 'forEach', 'while', 'doWhile']) },
    iterations: { key: 'count', check: positiveInteger },
    count: { key: 'count', check: positiveInteger },
    collection: { key: 'collection', check: collection },
    whileCondition: { key: 'whileCondition', check: text },
    doWhileCondition: { key: 'doWhileCondition', check: text },
  },
  parallel: {
    parallelType: { key: 'parallelType', check: oneOf(['count', 'collection']) },
    count: { key: 'count', check: positiveInteger },
    collection: { key: 'collection', check: collection },
    batchSize: { key: 'batchSize', check: positiveInteger },
  },
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why a value does not fit a sub-block, or null when it does. Null always fits (it clears the value). */
function checkInputValue(sub: SubBlockDefinition, value: unknown): string | null {
  switch (sub.type) {
    case 'switch':
      return typeof value === 'boolean' ? null : 'expects true or false';
    case 'slider': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'expects a number';
      if (sub.integer && !Number.isInteger(value)) return 'expects a whole number';
      if ((sub.min !== undefined && value < sub.min) || (sub.max !== undefined && value > sub.max)) return `expects a number from ${sub.min} to ${sub.max}`;
      return null;
    }
    case 'dropdown':
      if (typeof value !== 'string') return 'expects text';
      if (sub.options && sub.options.length > 0 && !sub.options.some((o) => o.id === value)) return `expects one of ${sub.options.map((o) => o.id).join(', ')}`;
      return null;
    case 'short-input':
    case 'long-input':
      return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? null : 'expects text';
    case 'workflow-selector':
      return typeof value === 'string' ? null : 'expects a workflow id';
    case 'condition-input':
    case 'router-input':
      return Array.isArray(value) || typeof value === 'string' ? null : 'expects a list of entries';
    case 'input-format':
    case 'table':
    case 'messages-input':
    case 'tool-input':
    case 'skill-input':
    case 'variables-input':
      return Array.isArray(value) ? null : 'expects a list';
    case 'response-format':
      return isRecord(value) || typeof value === 'string' ? null : 'expects a JSON schema object';
    default:
      return null;
  }
}

/** Deep copy of `value` with `fn` applied to every string in it. */
function mapStrings(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, fn)]));
  return value;
}

const REFERENCE_ROOT = /<([^<>\s.]+)\./g;

const DEFAULT_BLOCK = { width: 250, height: 100 };
const DEFAULT_CONTAINER = { width: 500, height: 300 };
const GAP = { x: 100, y: 50 };
const ROOT_ORIGIN = { x: 100, y: 100 };
const CONTAINER_ORIGIN = { x: 50, y: 80 };
const CONTAINER_PADDING = 50;
/** Free space kept around a placed block. */
const MARGIN = 20;

class BatchEditor {
  readonly blocks: Record<string, Block>;
  edges: Edge[];
  private readonly aliases = new Map<string, string>();
  readonly minted: Record<string, string> = {};
  readonly skipped: Finding[] = [];
  readonly inputErrors: InputValidationError[] = [];
  readonly warnings: string[] = [];
  readonly counts = { added: 0, edited: 0, deleted: 0, moved: 0, enabledChanged: 0, connectionsSet: 0 };
  applied = 0;
  private readonly pendingConnections: { operationType: string; requestedId: string; blockId: string; connections: Connections; replace: boolean }[] = [];
  /** Blocks created or moved by the batch, in order, with the position the request suggested. */
  private readonly toPlace: { id: string; hint: Position | undefined }[] = [];

  private readonly mintId: () => string;

  constructor(state: WorkflowState, mintId: () => string) {
    this.mintId = mintId;
    this.blocks = structuredClone(state.blocks);
    this.edges = structuredClone(state.edges);
  }

  // ---- lookups

  /** A block id or a placeholder of this batch → the block's id, if the block exists now. */
  resolve(ref: string): string | undefined {
    const aliased = this.aliases.get(ref);
    if (aliased !== undefined) return this.blocks[aliased] ? aliased : undefined;
    return this.blocks[ref] ? ref : undefined;
  }

  parentOf(id: string): string | undefined {
    const parent = this.blocks[id]?.data?.parentId;
    return typeof parent === 'string' && this.blocks[parent] ? parent : undefined;
  }

  /** The block and its containers, innermost first (bounded, so a cyclic parent chain cannot loop). */
  private chain(id: string): string[] {
    const out: string[] = [];
    for (let at: string | undefined = id; at !== undefined && !out.includes(at); at = this.parentOf(at)) out.push(at);
    return out;
  }

  /** The block that locks `id`: itself or a container around it. */
  lockHolder(id: string): string | undefined {
    return this.chain(id).find((b) => this.blocks[b]!.locked === true);
  }

  private descendants(id: string): string[] {
    return Object.keys(this.blocks).filter((b) => b !== id && this.chain(b).includes(id));
  }

  private kind(id: string): 'loop' | 'parallel' | undefined {
    return getBlockDefinition(this.blocks[id]?.type ?? '')?.container;
  }

  private decline(type: FindingType, operationType: string, blockId: string, reason: string, details?: Record<string, unknown>): false {
    this.skipped.push({ type, operationType, blockId, reason, ...(details ? { details } : {}) });
    return false;
  }

  private declineLocked(operationType: string, requestedId: string, id: string): boolean {
    const holder = this.lockHolder(id);
    if (holder === undefined) return true;
    const reason = holder === id ? 'The block is locked.' : `The block is inside the locked container "${this.blocks[holder]!.name}".`;
    return this.decline('block_locked', operationType, requestedId, reason, { lockedBlockId: holder });
  }

  /** A name the block `exceptId` may take; declines and returns false otherwise. */
  private nameAllowed(operationType: string, requestedId: string, name: string, isTrigger: boolean, exceptId: string | null): boolean {
    const ref = referenceName(name);
    if (RESERVED_NAMES.has(ref) || (ref === 'start' && !isTrigger)) {
      return this.decline('reserved_block_name', operationType, requestedId, `"${name}" is reserved: references would read it as the built-in "${ref}".`, { name });
    }
    const clash = Object.values(this.blocks).find((b) => b.id !== exceptId && referenceName(b.name) === ref);
    if (clash) {
      return this.decline('duplicate_block_name', operationType, requestedId, `Block "${clash.name}" (${clash.id}) already has this name; names are compared without case or spaces.`, {
        name,
        conflictingBlockId: clash.id,
      });
    }
    return true;
  }

  // ---- operations

  apply(op: BlockOperation, index: number): void {
    const path = ['body', 'operations', index, 'params', 'name'];
    if ('params' in op && 'name' in op.params && typeof op.params.name === 'string' && op.params.name.trim() === '') {
      throw new StateError('A block name may not be blank.', path);
    }
    let done: boolean;
    switch (op.operation_type) {
      case 'add':
        done = this.add(op.operation_type, op.block_id, op.params, undefined);
        break;
      case 'edit':
        done = this.edit(op.block_id, op.params);
        break;
      case 'delete':
        done = this.remove(op.block_id);
        break;
      case 'insert_into_subflow':
        done = this.insert(op.block_id, op.params);
        break;
      case 'extract_from_subflow':
        done = this.extract(op.block_id, op.params.subflowId);
        break;
    }
    if (done) this.applied++;
  }

  private add(operationType: string, placeholder: string, params: BlockParams & { type: string; name: string }, parentId: string | undefined): boolean {
    const def = getBlockDefinition(params.type);
    if (!def) return this.decline('invalid_block_type', operationType, placeholder, `There is no block type "${params.type}"; GET /api/v2/blocks lists them.`, { type: params.type });
    if (this.blocks[placeholder]) return this.decline('block_not_allowed', operationType, placeholder, 'block_id names an existing block; a new block needs a placeholder of its own (use edit to change a block).');
    if (this.aliases.has(placeholder)) return this.decline('block_not_allowed', operationType, placeholder, 'This placeholder already names a block created earlier in the batch.');
    if (parentId !== undefined) {
      if (def.container) return this.decline('nested_subflow_not_allowed', operationType, placeholder, 'A loop or parallel cannot be placed inside another one.', { subflowId: parentId });
      if (def.triggerAllowed) return this.decline('block_not_allowed', operationType, placeholder, 'A trigger block cannot be inside a loop or parallel.', { subflowId: parentId });
    }
    if (def.triggerAllowed) {
      const trigger = Object.values(this.blocks).find((b) => getBlockDefinition(b.type)?.triggerAllowed);
      if (trigger) return this.decline('duplicate_trigger', operationType, placeholder, `The workflow already starts at "${trigger.name}" (${trigger.id}).`, { existingBlockId: trigger.id });
    } else if (def.singleInstance) {
      const same = Object.values(this.blocks).find((b) => b.type === def.id);
      if (same) return this.decline('duplicate_single_instance_block', operationType, placeholder, `A workflow holds one "${def.id}" block; "${same.name}" is it.`, { existingBlockId: same.id });
    }
    if (!this.nameAllowed(operationType, placeholder, params.name, def.triggerAllowed, null)) return false;

    const id = this.mintId();
    const subBlocks: Block['subBlocks'] = {};
    for (const input of def.inputs) subBlocks[input.id] = { id: input.id, type: input.type, value: input.defaultValue === undefined ? null : structuredClone(input.defaultValue) };
    const data: BlockData = {};
    if (def.container) Object.assign(data, DEFAULT_CONTAINER);
    if (parentId !== undefined) Object.assign(data, { parentId, extent: 'parent' as const });
    const block: Block = { id, type: def.id, name: params.name, position: params.position ? { ...params.position } : { x: 0, y: 0 }, subBlocks, outputs: {}, enabled: true };
    if (Object.keys(data).length > 0) block.data = data;
    this.blocks[id] = block;
    this.aliases.set(placeholder, id);
    this.minted[placeholder] = id;
    this.setInputs(block, def, params.inputs, placeholder);
    this.queueConnections(operationType, placeholder, id, params.connections, false);
    this.toPlace.push({ id, hint: params.position });
    this.counts.added++;
    return true;
  }

  private edit(requestedId: string, params: BlockParams): boolean {
    const op = 'edit';
    const id = this.resolve(requestedId);
    if (id === undefined) return this.decline('block_not_found', op, requestedId, 'No block of this workflow has this id or placeholder.');
    if (!this.declineLocked(op, requestedId, id)) return false;
    const block = this.blocks[id]!;
    if (params.type !== undefined && params.type !== block.type) {
      return this.decline('invalid_block_type', op, requestedId, `The block is a "${block.type}"; a block's type cannot change (delete it and add another).`, { type: params.type });
    }
    const def = getBlockDefinition(block.type);
    if (params.name !== undefined && params.name !== block.name) {
      if (!this.nameAllowed(op, requestedId, params.name, def?.triggerAllowed === true, id)) return false;
      this.rename(block, params.name);
    }
    if (params.inputs !== undefined) {
      if (def) this.setInputs(block, def, params.inputs, requestedId);
      else for (const field of Object.keys(params.inputs)) this.inputErrors.push({ blockId: requestedId, blockType: block.type, field, error: `The block type "${block.type}" is unknown to this server, so its inputs cannot be checked.` });
    }
    if (params.position !== undefined) block.position = { ...params.position };
    this.queueConnections(op, requestedId, id, params.connections, true);
    this.counts.edited++;
    return true;
  }

  private remove(requestedId: string): boolean {
    const op = 'delete';
    const id = this.resolve(requestedId);
    if (id === undefined) return this.decline('block_not_found', op, requestedId, 'No block of this workflow has this id or placeholder.');
    if (!this.declineLocked(op, requestedId, id)) return false;
    const inside = this.descendants(id);
    const lockedInside = inside.filter((b) => this.blocks[b]!.locked === true);
    if (lockedInside.length > 0) return this.decline('block_locked', op, requestedId, `${lockedInside.length} locked block(s) inside would go with it.`, { lockedBlockIds: lockedInside });
    const gone = new Set([id, ...inside]);
    for (const b of gone) delete this.blocks[b];
    this.edges = this.edges.filter((e) => !gone.has(e.source) && !gone.has(e.target));
    for (const [placeholder, minted] of Object.entries(this.minted)) if (gone.has(minted)) delete this.minted[placeholder];
    this.counts.deleted += gone.size;
    return true;
  }

  private insert(requestedId: string, params: BlockParams & { subflowId: string; type: string; name: string }): boolean {
    const op = 'insert_into_subflow';
    const containerId = this.resolve(params.subflowId);
    if (containerId === undefined || !this.kind(containerId)) {
      return this.decline('invalid_subflow_parent', op, requestedId, `"${params.subflowId}" is not a loop or parallel of this workflow.`, { subflowId: params.subflowId });
    }
    const outer = this.parentOf(containerId);
    if (outer !== undefined) return this.decline('nested_subflow_not_allowed', op, requestedId, 'The container is itself inside another loop or parallel; containers cannot be nested.', { subflowId: params.subflowId });
    if (!this.declineLocked(op, requestedId, containerId)) return false;

    const id = this.resolve(requestedId);
    if (id === undefined) return this.add(op, requestedId, params, containerId);

    const block = this.blocks[id]!;
    if (id === containerId) return this.decline('invalid_subflow_parent', op, requestedId, 'A container cannot be put inside itself.', { subflowId: params.subflowId });
    if (!this.declineLocked(op, requestedId, id)) return false;
    if (params.type !== block.type) return this.decline('invalid_block_type', op, requestedId, `The block is a "${block.type}", not a "${params.type}".`, { type: params.type });
    const def = getBlockDefinition(block.type);
    if (def?.container) return this.decline('nested_subflow_not_allowed', op, requestedId, 'A loop or parallel cannot be placed inside another one.', { subflowId: params.subflowId });
    if (def?.triggerAllowed) return this.decline('block_not_allowed', op, requestedId, 'A trigger block cannot be inside a loop or parallel.', { subflowId: params.subflowId });
    if (params.name !== block.name) {
      if (!this.nameAllowed(op, requestedId, params.name, def?.triggerAllowed === true, id)) return false;
      this.rename(block, params.name);
    }
    const absolute = this.absolutePosition(id);
    const origin = this.absolutePosition(containerId);
    block.data = { ...block.data, parentId: containerId, extent: 'parent' };
    block.position = params.position ? { ...params.position } : { x: absolute.x - origin.x, y: absolute.y - origin.y };
    this.dropCrossingEdges(id);
    if (params.inputs !== undefined && def) this.setInputs(block, def, params.inputs, requestedId);
    this.queueConnections(op, requestedId, id, params.connections, true);
    this.toPlace.push({ id, hint: block.position });
    this.counts.moved++;
    return true;
  }

  private extract(requestedId: string, subflowRef: string): boolean {
    const op = 'extract_from_subflow';
    const id = this.resolve(requestedId);
    if (id === undefined) return this.decline('block_not_found', op, requestedId, 'No block of this workflow has this id or placeholder.');
    const containerId = this.resolve(subflowRef);
    if (containerId === undefined || !this.kind(containerId) || this.parentOf(id) !== containerId) {
      return this.decline('invalid_subflow_parent', op, requestedId, `The block is not inside a loop or parallel "${subflowRef}".`, { subflowId: subflowRef });
    }
    if (!this.declineLocked(op, requestedId, id)) return false;
    const block = this.blocks[id]!;
    const absolute = this.absolutePosition(id);
    const { parentId: _parent, extent: _extent, ...rest } = block.data ?? {};
    if (Object.keys(rest).length > 0) block.data = rest;
    else delete block.data;
    block.position = absolute;
    this.dropCrossingEdges(id);
    this.toPlace.push({ id, hint: absolute });
    this.counts.moved++;
    return true;
  }

  // ---- inputs, names, edges

  private setInputs(block: Block, def: BlockDefinition, inputs: Inputs | undefined, requestedId: string): void {
    if (!inputs) return;
    const reject = (field: string, error: string) => this.inputErrors.push({ blockId: requestedId, blockType: block.type, field, error });
    if (def.container) {
      const settings = CONTAINER_SETTINGS[def.container];
      for (const [field, value] of Object.entries(inputs)) {
        const setting = settings[field];
        if (!setting) {
          reject(field, `A ${def.container} has no setting "${field}"; it takes ${Object.keys(settings).join(', ')}.`);
          continue;
        }
        const problem = value === null ? null : setting.check(value);
        if (problem) {
          reject(field, `The value ${problem}.`);
          continue;
        }
        const data: BlockData = { ...block.data };
        if (value === null) delete data[setting.key];
        else data[setting.key] = structuredClone(value) as never;
        block.data = data;
      }
      return;
    }
    for (const [field, value] of Object.entries(inputs)) {
      const sub = def.inputs.find((i) => i.id === field);
      if (!sub) {
        reject(field, `The block type "${def.id}" has no input "${field}"; its inputs are ${def.inputs.map((i) => i.id).join(', ') || 'none'}.`);
        continue;
      }
      const problem = value === null ? null : checkInputValue(sub, value);
      if (problem) {
        reject(field, `The value ${problem}.`);
        continue;
      }
      block.subBlocks[field] = { id: field, type: sub.type, value: this.withEntryIds(block, def, sub, structuredClone(value)) };
    }
  }

  /** Condition and route entries need ids (their edges leave from `condition-<id>`); give the missing ones one. */
  private withEntryIds(block: Block, def: BlockDefinition, sub: SubBlockDefinition, value: unknown): unknown {
    if (!def.branching || (sub.type !== 'condition-input' && sub.type !== 'router-input') || !Array.isArray(value)) return value;
    const used = new Set(value.filter(isRecord).map((e) => e.id).filter((v) => typeof v === 'string'));
    return value.map((entry, i) => {
      if (!isRecord(entry) || typeof entry.id === 'string') return entry;
      const title = typeof entry.title === 'string' ? entry.title.trim().toLowerCase() : '';
      let id = def.branching === 'condition' && (title === 'if' || title === 'else') ? `${block.id}-${title}` : `${block.id}-${def.branching === 'condition' ? 'else-if' : 'route'}-${i}`;
      if (used.has(id)) id = `${block.id}-${i}`;
      used.add(id);
      return { ...entry, id };
    });
  }

  /** Renames a block and keeps references to it (`<oldname.field>`) pointing at it in unlocked blocks. */
  private rename(block: Block, name: string): void {
    const from = referenceName(block.name);
    const to = referenceName(name);
    block.name = name;
    if (from === to) return;
    let hits = 0;
    const rewrite = (s: string) =>
      s.replace(REFERENCE_ROOT, (whole, root: string) => {
        if (referenceName(root) !== from) return whole;
        hits++;
        return `<${to}.`;
      });
    const stale: string[] = [];
    for (const other of Object.values(this.blocks)) {
      for (const sub of Object.values(other.subBlocks ?? {})) {
        hits = 0;
        const next = mapStrings(sub.value, rewrite);
        if (hits === 0) continue;
        if (this.lockHolder(other.id) !== undefined) stale.push(other.name);
        else sub.value = next;
      }
    }
    if (stale.length > 0) this.warnings.push(`Locked block(s) ${[...new Set(stale)].map((n) => `"${n}"`).join(', ')} still refer to "${from}", which is now "${to}".`);
  }

  private queueConnections(operationType: string, requestedId: string, blockId: string, connections: Connections | undefined, replace: boolean): void {
    if (connections && Object.keys(connections).length > 0) this.pendingConnections.push({ operationType, requestedId, blockId, connections, replace });
  }

  /** The handle a connection key means on this block, or undefined when the block has no such handle. */
  private sourceHandle(block: Block, key: string): string | undefined {
    const kind = getBlockDefinition(block.type)?.container;
    if (kind) {
      const start = `${kind}-start-source`;
      const end = `${kind}-end-source`;
      if (key === 'start' || key === start) return start;
      if (key === 'end' || key === end || key === 'source' || key === 'success') return end;
      return undefined;
    }
    if (key === 'error') return 'error';
    const branching = getBlockDefinition(block.type)?.branching;
    if (branching) {
      const branches = branchHandles(block);
      const prefix = branching === 'condition' ? 'condition' : 'router';
      const exact = branches.find((h) => h.handle === key || h.handle === `${prefix}-${key}`);
      if (exact) return exact.handle;
      const titled = branches.filter((h) => h.label.toLowerCase() === key.toLowerCase());
      return titled.length === 1 ? titled[0]!.handle : undefined;
    }
    if (key === 'source' || key === 'success') return 'source';
    return undefined;
  }

  /** Whether an edge may join these blocks: the same scope, or a container's start into its own child. */
  private inScope(source: string, target: string, handle: string | null | undefined): boolean {
    const kind = this.kind(source);
    if (kind && handle === `${kind}-start-source`) return this.parentOf(target) === source;
    return this.parentOf(source) === this.parentOf(target);
  }

  private dropCrossingEdges(id: string): void {
    const before = this.edges.length;
    this.edges = this.edges.filter((e) => (e.source !== id && e.target !== id) || this.inScope(e.source, e.target, e.sourceHandle));
    const dropped = before - this.edges.length;
    if (dropped > 0) this.warnings.push(`${dropped} connection(s) of "${this.blocks[id]!.name}" would cross a loop or parallel boundary and were removed.`);
  }

  connectAll(): void {
    for (const pending of this.pendingConnections) {
      const block = this.blocks[pending.blockId];
      if (!block) continue; // deleted later in the batch: its connections went with it
      const op = pending.operationType;
      for (const [key, raw] of Object.entries(pending.connections)) {
        const handle = this.sourceHandle(block, key);
        if (handle === undefined) {
          this.decline('invalid_source_handle', op, pending.requestedId, `The block has no output "${key}".`, { handle: key });
          continue;
        }
        const targets: string[] = raw === null ? [] : Array.isArray(raw) ? raw : [raw];
        const valid: string[] = [];
        for (const target of targets) {
          const targetId = this.resolve(target);
          const details = { handle: key, target };
          if (targetId === undefined) this.decline('invalid_edge_target', op, pending.requestedId, `No block of this workflow is "${target}".`, details);
          else if (targetId === block.id) this.decline('invalid_edge_target', op, pending.requestedId, 'A block cannot connect to itself.', details);
          else if (getBlockDefinition(this.blocks[targetId]!.type)?.triggerAllowed) this.decline('invalid_edge_target', op, pending.requestedId, 'A trigger block cannot have incoming connections.', details);
          else if (!this.inScope(block.id, targetId, handle)) {
            this.decline('invalid_edge_scope', op, pending.requestedId, 'The connection would cross a loop or parallel boundary.', details);
          } else if (!valid.includes(targetId)) valid.push(targetId);
        }
        const sameHandle = (e: Edge) => e.source === block.id && (e.sourceHandle ?? 'source') === handle;
        // Replacing keeps the edges that stay (same ids), so restating a connection changes nothing.
        if (pending.replace) this.edges = this.edges.filter((e) => !sameHandle(e) || valid.includes(e.target));
        for (const targetId of valid) {
          if (this.edges.some((e) => sameHandle(e) && e.target === targetId)) continue;
          this.edges.push({ id: randomUUID(), source: block.id, target: targetId, sourceHandle: handle, targetHandle: 'target' });
        }
        this.counts.connectionsSet++;
      }
    }
  }

  // ---- enabling

  setEnabled(requestedId: string, enabled: boolean): void {
    const op = 'set_block_enabled';
    const id = this.resolve(requestedId);
    if (id === undefined) {
      this.decline('block_not_found', op, requestedId, 'No block of this workflow has this id or placeholder.');
      return;
    }
    if (!this.declineLocked(op, requestedId, id)) return;
    if (enabled) {
      const off = this.chain(id).slice(1).find((b) => this.blocks[b]!.enabled === false);
      if (off !== undefined) {
        this.decline('disabled_ancestor', op, requestedId, `The container "${this.blocks[off]!.name}" is disabled; enable it first.`, { ancestorBlockId: off });
        return;
      }
    }
    const targets = [id, ...(this.kind(id) ? this.descendants(id).filter((b) => this.lockHolder(b) === undefined) : [])];
    for (const b of targets) {
      if (this.blocks[b]!.enabled !== enabled) this.counts.enabledChanged++;
      this.blocks[b]!.enabled = enabled;
    }
    this.applied++;
  }

  // ---- layout

  private size(id: string): { width: number; height: number } {
    const b = this.blocks[id]!;
    if (this.kind(id)) return { width: numberOr(b.data?.width, DEFAULT_CONTAINER.width), height: numberOr(b.data?.height, DEFAULT_CONTAINER.height) };
    return { width: DEFAULT_BLOCK.width, height: numberOr(b.height, DEFAULT_BLOCK.height) };
  }

  private absolutePosition(id: string): Position {
    let x = 0;
    let y = 0;
    for (const b of this.chain(id)) {
      x += this.blocks[b]!.position?.x ?? 0;
      y += this.blocks[b]!.position?.y ?? 0;
    }
    return { x, y };
  }

  /**
   * Places each created or moved block in its scope (the top level or its container): from the suggested
   * position, or beside the block that connects into it, or right of its siblings; then down until it overlaps
   * nothing already placed. Blocks the batch did not create or move keep their positions.
   */
  layOut(): void {
    const waiting = new Set(this.toPlace.map((p) => p.id));
    for (const { id, hint } of this.toPlace) {
      waiting.delete(id);
      const block = this.blocks[id];
      if (!block) continue;
      const scope = this.parentOf(id);
      const siblings = new Set(Object.keys(this.blocks).filter((b) => b !== id && !waiting.has(b) && this.parentOf(b) === scope));
      const at = hint ? { ...hint } : this.anchor(id, scope, siblings);
      const { width, height } = this.size(id);
      // Only siblings sharing the column can be in the way; step below each one that is, until none is.
      const column = [...siblings]
        .map((b) => ({ position: this.blocks[b]!.position, size: this.size(b) }))
        .filter((o) => at.x < o.position.x + o.size.width + MARGIN && o.position.x < at.x + width + MARGIN)
        .map((o) => ({ top: o.position.y, bottom: o.position.y + o.size.height }))
        .sort((a, b) => a.top - b.top);
      for (let moved = true, passes = 0; moved && passes < 100; passes++) {
        moved = false;
        for (const o of column) {
          if (at.y < o.bottom + MARGIN && o.top < at.y + height + MARGIN) {
            at.y = o.bottom + GAP.y;
            moved = true;
          }
        }
      }
      block.position = at;
      if (scope !== undefined) this.fitContainer(scope, at, width, height);
    }
  }

  private anchor(id: string, scope: string | undefined, siblings: Set<string>): Position {
    const feeder = this.edges.find((e) => e.target === id && siblings.has(e.source));
    if (feeder) {
      const p = this.blocks[feeder.source]!.position;
      return { x: p.x + this.size(feeder.source).width + GAP.x, y: p.y };
    }
    if (siblings.size > 0) {
      const rightmost = [...siblings].reduce((a, b) => (this.blocks[b]!.position.x + this.size(b).width > this.blocks[a]!.position.x + this.size(a).width ? b : a));
      const p = this.blocks[rightmost]!.position;
      return { x: p.x + this.size(rightmost).width + GAP.x, y: p.y };
    }
    return { ...(scope === undefined ? ROOT_ORIGIN : CONTAINER_ORIGIN) };
  }

  /** Grows an unlocked container so a child placed in it fits inside. */
  private fitContainer(containerId: string, at: Position, width: number, height: number): void {
    const container = this.blocks[containerId]!;
    if (this.lockHolder(containerId) !== undefined) return;
    const size = this.size(containerId);
    const needW = at.x + width + CONTAINER_PADDING;
    const needH = at.y + height + CONTAINER_PADDING;
    if (needW > size.width || needH > size.height) container.data = { ...container.data, width: Math.max(size.width, needW), height: Math.max(size.height, needH) };
  }
}

const numberOr = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);

/**
 * Applies a batch to a copy of `state`: the operations in order, then the connections they name (so they may
 * name blocks created later in the batch), then `setBlockEnabled`, then the layout. Containers are recomputed
 * from the parent ids at the end. Throws StateError only for a malformed request (a blank name).
 */
export function applyOperations(state: WorkflowState, request: OperationsRequest, mintId: () => string = randomUUID): OperationsOutcome {
  const editor = new BatchEditor(state, mintId);
  request.operations.forEach((op, i) => editor.apply(op, i));
  editor.connectAll();
  for (const entry of request.setBlockEnabled ?? []) editor.setEnabled(entry.block_id, entry.enabled);
  if ((request.layout ?? 'targeted') === 'targeted') editor.layOut();
  const next: WorkflowState = { blocks: editor.blocks, edges: editor.edges, ...recomputeContainers(editor.blocks), variables: state.variables };
  return {
    state: next,
    // The copy keeps key order and edits keep it too, so plain JSON text is a sound (and much cheaper) comparison.
    changed: JSON.stringify(next) !== JSON.stringify(state),
    applied: editor.applied,
    skipped: editor.skipped,
    inputValidationErrors: editor.inputErrors,
    minted: editor.minted,
    warnings: editor.warnings,
    counts: editor.counts,
  };
}

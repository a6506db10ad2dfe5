// Advisory findings about a draft graph, read against the block registry. Nothing here rejects a write:
// unknown block types, dangling edges, unreachable blocks, missing required inputs, and references to blocks,
// outputs or input fields that do not exist are reported so an author (or an agent) can fix them.
import { parsePath } from '../execution/references.ts';
import { getBlockDefinition } from './blocks.ts';
import { checkOutputPath } from './outputs.ts';
import type { Block, WorkflowState } from './state.ts';

interface BlockRef {
  blockId: string;
  blockName: string | null;
  blockType: string | null;
}

export interface LintResult {
  sources: BlockRef[];
  sinks: BlockRef[];
  orphanBlocks: BlockRef[];
  emptyOutgoingPorts: (BlockRef & { handle: string; label: string })[];
  invalidBranchPorts: (BlockRef & { sourceHandle: string; reason: string })[];
  invalidConnectionTargets: { sourceBlockId: string; sourceBlockName: string | null; sourceHandle: string | null; targetBlockId: string; reason: string }[];
  fieldIssues: (BlockRef & { missingRequiredFields: string[]; inactiveModeValues: [] })[];
  unresolvedReferences: (BlockRef & { field: string; value: string; kind: 'block-output'; reason: string })[];
  tableFieldIssues: [];
  notes: string[];
}

const ref = (b: Block): BlockRef => ({ blockId: b.id, blockName: b.name, blockType: b.type });

/** How a block is addressed in a reference: its name, lower-cased, without spaces. */
export function referenceName(name: string): string {
  return name.toLowerCase().replace(/\s+/g, '');
}

/** Names a reference may start with besides block names. */
const BUILTIN_REFERENCE_ROOTS = new Set(['variable', 'start', 'loop', 'parallel', 'env']);

const isEmpty = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0);

const REFERENCE = /<([A-Za-z_][^<>\s]*\.[^<>\s]*)>/g;
const UNCLOSED_REFERENCE = /<([A-Za-z_][A-Za-z0-9_]*\.[A-Za-z0-9_.[\]]*)(?=\s|$)/g;
const WELL_FORMED = /^[A-Za-z0-9_-]+(\[\d+\])*(\.[A-Za-z0-9_-]+(\[\d+\])*)+$/;

function collectStrings(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectStrings(v, out);
}

/** The source handles a branching block offers, with their labels. */
export function branchHandles(block: Block): { handle: string; label: string }[] {
  const def = getBlockDefinition(block.type);
  if (!def?.branching) return [];
  const field = def.branching === 'condition' ? 'conditions' : 'routes';
  let entries = block.subBlocks?.[field]?.value;
  if (typeof entries === 'string') {
    try {
      entries = JSON.parse(entries);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(entries)) return [];
  const prefix = def.branching === 'condition' ? 'condition' : 'router';
  return entries
    .filter((e): e is { id: string; title?: unknown } => !!e && typeof e === 'object' && typeof (e as { id?: unknown }).id === 'string')
    .map((e) => ({ handle: `${prefix}-${e.id}`, label: typeof e.title === 'string' ? e.title : e.id }));
}

export function lintState(state: WorkflowState): LintResult {
  const blocks = state.blocks;
  const list = Object.values(blocks);
  const result: LintResult = {
    sources: [],
    sinks: [],
    orphanBlocks: [],
    emptyOutgoingPorts: [],
    invalidBranchPorts: [],
    invalidConnectionTargets: [],
    fieldIssues: [],
    unresolvedReferences: [],
    tableFieldIssues: [],
    notes: [],
  };

  for (const b of list) {
    if (!getBlockDefinition(b.type)) result.notes.push(`Block "${b.name}" (${b.id}) has unknown type "${b.type}"; this server cannot run it.`);
    const parent = b.data?.parentId;
    if (parent !== undefined && !getBlockDefinition(blocks[parent]?.type ?? '')?.container) {
      result.notes.push(`Block "${b.name}" (${b.id}) names parent "${parent}", which is not a loop or parallel of this workflow.`);
    }
  }

  const incoming = new Map<string, number>();
  const outgoing = new Map<string, string[]>();
  for (const e of state.edges) {
    const source = blocks[e.source];
    if (!source || !blocks[e.target]) {
      result.invalidConnectionTargets.push({
        sourceBlockId: e.source,
        sourceBlockName: source?.name ?? null,
        sourceHandle: e.sourceHandle ?? null,
        targetBlockId: e.target,
        reason: !source ? `Edge ${e.id} starts at a block that does not exist.` : `Edge ${e.id} ends at a block that does not exist.`,
      });
      continue;
    }
    if (e.source === e.target) {
      result.invalidConnectionTargets.push({ sourceBlockId: e.source, sourceBlockName: source.name, sourceHandle: e.sourceHandle ?? null, targetBlockId: e.target, reason: `Edge ${e.id} connects a block to itself.` });
    }
    incoming.set(e.target, (incoming.get(e.target) ?? 0) + 1);
    outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e.target]);
    const handles = branchHandles(source);
    if (handles.length > 0 && typeof e.sourceHandle === 'string' && e.sourceHandle !== 'error' && !handles.some((h) => h.handle === e.sourceHandle)) {
      result.invalidBranchPorts.push({ ...ref(source), sourceHandle: e.sourceHandle, reason: 'No condition or route of the block has this handle.' });
    }
  }

  for (const b of list) {
    if (!incoming.get(b.id)) result.sources.push(ref(b));
    if (!outgoing.get(b.id)?.length) result.sinks.push(ref(b));
    const used = new Set(state.edges.filter((e) => e.source === b.id).map((e) => e.sourceHandle));
    for (const h of branchHandles(b)) if (!used.has(h.handle)) result.emptyOutgoingPorts.push({ ...ref(b), ...h });
  }

  // Reachability from the trigger blocks; a reached container reaches everything inside it.
  const children = new Map<string, string[]>();
  for (const b of list) {
    const parent = b.data?.parentId;
    if (parent && blocks[parent]) children.set(parent, [...(children.get(parent) ?? []), b.id]);
  }
  const reached = new Set<string>();
  const queue = list.filter((b) => getBlockDefinition(b.type)?.triggerAllowed).map((b) => b.id);
  if (queue.length === 0 && list.length > 0) result.notes.push('The workflow has no start block, so no block can run.');
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (reached.has(id)) continue;
    reached.add(id);
    for (const next of [...(outgoing.get(id) ?? []), ...(children.get(id) ?? [])]) if (!reached.has(next)) queue.push(next);
  }
  for (const b of list) if (!reached.has(b.id)) result.orphanBlocks.push(ref(b));

  const byName = new Map(list.map((b) => [referenceName(b.name), b]));
  const trigger = list.find((b) => getBlockDefinition(b.type)?.triggerAllowed);
  /** Why a well-formed reference cannot resolve, or null when it can (or cannot be known before a run). */
  const problem = (body: string): string | null => {
    const path = parsePath(body);
    const root = String(path[0]).toLowerCase();
    const target = byName.get(root) ?? (root === 'start' ? trigger : undefined);
    if (!target) return BUILTIN_REFERENCE_ROOTS.has(root) ? null : `No block named "${root}" in this workflow.`;
    const check = checkOutputPath(state, target, path.slice(1));
    return check.ok ? null : check.reason;
  };
  for (const b of list) {
    const def = getBlockDefinition(b.type);
    if (def) {
      const missing = def.inputs.filter((input) => input.required && isEmpty(b.subBlocks?.[input.id]?.value)).map((input) => input.id);
      if (missing.length > 0) result.fieldIssues.push({ ...ref(b), missingRequiredFields: missing, inactiveModeValues: [] });
    }
    for (const [field, sub] of Object.entries(b.subBlocks ?? {})) {
      const texts: string[] = [];
      collectStrings(sub.value, texts);
      for (const text of texts) {
        for (const m of text.matchAll(REFERENCE)) {
          const body = m[1]!;
          if (!WELL_FORMED.test(body)) {
            result.unresolvedReferences.push({ ...ref(b), field, value: m[0], kind: 'block-output', reason: 'Malformed reference: expected <block.path> with non-empty segments.' });
          } else {
            const reason = problem(body);
            if (reason) result.unresolvedReferences.push({ ...ref(b), field, value: m[0], kind: 'block-output', reason });
          }
        }
        // In code a "<" is usually a comparison; only prose inputs are checked for a reference left open.
        if (sub.type !== 'code') {
          for (const m of text.matchAll(UNCLOSED_REFERENCE)) {
            result.unresolvedReferences.push({ ...ref(b), field, value: m[0], kind: 'block-output', reason: 'Reference is not closed with ">".' });
          }
        }
      }
    }
  }
  return result;
}

/**
 * The findings that mean a run will fail or a block cannot run, as sentences: what a deploy answers in its
 * `warnings` (it deploys anyway). Structure that is only informative (sources, sinks, unused ports) is left out.
 */
export function lintWarnings(lint: LintResult): string[] {
  const name = (b: BlockRef) => `Block "${b.blockName ?? b.blockId}"`;
  return [
    ...lint.notes,
    ...lint.invalidConnectionTargets.map((c) => c.reason),
    ...lint.invalidBranchPorts.map((p) => `${name(p)} has a connection from "${p.sourceHandle}": ${p.reason}`),
    ...lint.fieldIssues.map((f) => `${name(f)} is missing required input(s): ${f.missingRequiredFields.join(', ')}.`),
    ...lint.unresolvedReferences.map((u) => `${name(u)} (${u.field}) references ${u.value}: ${u.reason}`),
    ...lint.orphanBlocks.map((b) => `${name(b)} cannot be reached from a start block, so it never runs.`),
  ];
}

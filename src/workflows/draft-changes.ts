// Changes to a workflow's draft state: replacing it whole, block operations, variables, reverting to a deployed
// version. Each checks the locks (./service.ts) and the same rules for a dry run and inside the write. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { WorkflowVersionRecord } from '../store/workflow-versions.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError } from '../domain/errors.ts';
import { prepareState, stableStringify, type Block, type Edge, type Variable, type WorkflowState } from './state.ts';
import { lintState } from './lint.ts';
import { applyOperations, type BlockOperation, type OperationsOutcome } from './operations.ts';
import { activeVersion, assertUnlocked, reload, stateOf, type Guard, needsRedeployment, loadVersion, locked, now, assertLockedBlocksKept, assertBlocksAllowed } from './service.ts';

/** Stores a new draft state of an unlocked workflow; returns the stored JSON (the draft's entity tag is its hash). */
async function saveState(tx: Repositories, w: WorkflowRecord, next: WorkflowState): Promise<string> {
  const at = now();
  const stored = JSON.stringify(next);
  await tx.workflows.update(w.id, { state: stored, stateSavedAt: at, updatedAt: at });
  return stored;
}

export interface StateReplacement {
  blocks: Record<string, Block>;
  edges: Edge[];
  variables?: Record<string, Variable>;
}

/** Checks a whole new draft against `w` (its shape, the locks); the same for a dry run and inside the write. */
export async function evaluateReplacement(repos: Repositories, w: WorkflowRecord, input: StateReplacement, actorId: string | null) {
  assertUnlocked(w);
  const before = stateOf(w);
  const next = prepareState(input, before.variables);
  assertLockedBlocksKept(before, next);
  await assertBlocksAllowed(repos, w.workspaceId, next, actorId);
  return { next, needsRedeployment: await needsRedeployment(repos, w, next), lint: lintState(next) };
}

/** The linter's findings on the stored draft as it is: what a dry run of the unchanged draft answers, for readers too. */
export async function evaluateDraft(repos: Repositories, w: WorkflowRecord) {
  const current = stateOf(w);
  return { needsRedeployment: await needsRedeployment(repos, w, current), lint: lintState(current) };
}

export async function replaceState(tx: Repositories, audit: Audit, id: string, input: StateReplacement, guard: Guard, actorId: string | null) {
  const w = await reload(tx, id);
  guard(w);
  const evaluated = await evaluateReplacement(tx, w, input, actorId);
  const { next } = evaluated;
  const stored = await saveState(tx, w, next);
  audit({ action: 'workflow.state_replaced', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { blocks: Object.keys(next.blocks).length, edges: next.edges.length, variablesReplaced: input.variables !== undefined } });
  return { w, evaluated, stored };
}

export interface OperationsRequest {
  operations: BlockOperation[];
  setBlockEnabled: Parameters<typeof applyOperations>[1]['setBlockEnabled'];
  layout: NonNullable<Parameters<typeof applyOperations>[1]['layout']>;
  atomic: boolean;
}

/** With `atomic`, any finding refuses the batch: 423 when a locked block is among them, 409 otherwise. */
function atomicRefusal(outcome: OperationsOutcome): DomainError | undefined {
  const { skipped, inputValidationErrors } = outcome;
  if (skipped.length === 0 && inputValidationErrors.length === 0) return undefined;
  const summary = `${skipped.length} operation(s) declined and ${inputValidationErrors.length} input(s) invalid; nothing was written.`;
  const lockedIds = skipped.filter((f) => f.type === 'block_locked').map((f) => f.blockId);
  if (lockedIds.length > 0) return locked(`The batch touches locked blocks: ${summary}`, { lock: 'block', blockIds: lockedIds, skipped, inputValidationErrors });
  return new DomainError('conflict', `The atomic batch was refused: ${summary}`, { skipped, inputValidationErrors });
}

/** Applies a batch of block operations to `w`'s draft in memory; the same for a dry run and inside the write. */
export async function evaluateOperations(repos: Repositories, w: WorkflowRecord, request: OperationsRequest, actorId: string | null) {
  assertUnlocked(w);
  const before = stateOf(w);
  const outcome = applyOperations(before, { operations: request.operations, setBlockEnabled: request.setBlockEnabled, layout: request.layout });
  if (request.atomic) {
    const refusal = atomicRefusal(outcome);
    if (refusal) throw refusal;
  }
  assertLockedBlocksKept(before, outcome.state);
  await assertBlocksAllowed(repos, w.workspaceId, outcome.state, actorId);
  return { outcome, needsRedeployment: await needsRedeployment(repos, w, outcome.state), lint: lintState(outcome.state) };
}

/** Applies the batch and stores the draft if it changed; `stored` is null when nothing changed. */
export async function applyBlockOperations(tx: Repositories, audit: Audit, id: string, request: OperationsRequest, guard: Guard, actorId: string | null) {
  const w = await reload(tx, id);
  guard(w);
  const evaluated = await evaluateOperations(tx, w, request, actorId);
  const { outcome } = evaluated;
  if (!outcome.changed) return { w, evaluated, stored: null };
  const next = outcome.state;
  const stored = await saveState(tx, w, next);
  audit({
    action: 'workflow.operations_applied',
    resourceType: 'workflow',
    resourceId: w.id,
    resourceName: w.name,
    workspaceId: w.workspaceId,
    metadata: {
      operations: request.operations.length,
      setBlockEnabled: request.setBlockEnabled?.length ?? 0,
      applied: outcome.applied,
      skipped: outcome.skipped.length,
      inputValidationErrors: outcome.inputValidationErrors.length,
      ...outcome.counts,
      blocks: Object.keys(next.blocks).length,
      edges: next.edges.length,
    },
  });
  return { w, evaluated, stored };
}

export type VariableOperation =
  | { operation: 'add'; name: string; type: Variable['type']; value?: Variable['value'] }
  | { operation: 'edit'; name: string; type?: Variable['type']; value?: Variable['value'] }
  | { operation: 'delete'; name: string };

/** Adds, edits and deletes draft variables by name; stores the draft only if it changed. */
export async function applyVariables(tx: Repositories, audit: Audit, id: string, operations: VariableOperation[], guard: Guard) {
  const w = await reload(tx, id);
  guard(w);
  const state = stateOf(w);
  const byName = new Map(Object.values(state.variables).map((v) => [v.name, v]));
  let changed = false;
  operations.forEach((op, i) => {
    const existing = byName.get(op.name);
    if (op.operation === 'add') {
      if (existing) throw new DomainError('conflict', `A variable named "${op.name}" already exists.`, { name: op.name });
      byName.set(op.name, { id: randomUUID(), name: op.name, type: op.type, value: op.value ?? null });
      changed = true;
    } else if (!existing) {
      throw new DomainError('invalid', `There is no variable named "${op.name}".`, [{ code: 'custom', keys: [], path: ['body', 'operations', i, 'name'], message: 'Unknown variable' }]);
    } else if (op.operation === 'edit') {
      const v: Variable = { ...existing, type: op.type ?? existing.type, value: op.value ?? null };
      if (stableStringify(v) !== stableStringify(existing)) changed = true;
      byName.set(op.name, v);
    } else {
      byName.delete(op.name);
      changed = true;
    }
  });
  const variables = Object.fromEntries([...byName.values()].map((v) => [v.id, v]));
  let stored = w.state;
  if (changed) {
    stored = await saveState(tx, w, { ...state, variables });
    audit({ action: 'workflow.variables_updated', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { operations: operations.length } });
  }
  return { id: w.id, variableCount: byName.size, changed, stored };
}

/** Makes a deployed version (or the live one, `'active'`) the draft again; locked blocks must survive it. */
export async function revertToVersion(tx: Repositories, audit: Audit, id: string, which: number | 'active', guard: Guard, actorId: string | null) {
  const w = await reload(tx, id);
  assertUnlocked(w);
  guard(w);
  let version: WorkflowVersionRecord;
  if (which === 'active') {
    const live = await activeVersion(tx, w);
    if (!live) throw new DomainError('conflict', 'The workflow has no active deployment to revert to.');
    version = live;
  } else version = await loadVersion(tx, w.id, which);
  assertLockedBlocksKept(stateOf(w), stateOf(version));
  await assertBlocksAllowed(tx, w.workspaceId, stateOf(version), actorId);
  const at = now();
  await tx.workflows.update(w.id, { state: version.state, stateSavedAt: at, updatedAt: at });
  audit({ action: 'workflow.reverted', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: version.version } });
  return { savedAt: at, version };
}

// Pause and resume: a paused run's state saved as a JSON checkpoint, and a run restored from one so its top-level
// scope continues where it paused, with the resumed block's reviewer input as its output.
import { ExecutionError } from '../errors.ts';
import type { Checkpoint, PausePoint } from '../types.ts';
import type { ScopeOutcome, ScopeResume } from './frame.ts';
import { now, type RunState } from './state.ts';

/** What a resumed run was given: the pause point it continues and the reviewer's answer. */
export interface ResumeWith {
  point: PausePoint;
  input: Record<string, unknown>;
  approved: boolean;
}

/** Puts the checkpoint's run state (start time, input, variables, outputs, trace, counters) back into the run. */
export function restoreRun(run: RunState, cp: Checkpoint): void {
  run.startedAt = cp.startedAt;
  run.startedAtMs = Date.parse(cp.startedAt);
  run.input = cp.input;
  for (const [id, value] of Object.entries(cp.variables)) {
    const v = run.variables.get(id);
    if (v) v.value = value;
  }
  for (const [id, output] of Object.entries(cp.outputs)) run.root.outputs.set(id, output);
  run.root.spans = [...cp.traceSpans];
  run.skipped = [...cp.skipped];
  run.blockExecutions = cp.blockExecutions;
  run.cost = structuredClone(cp.cost);
  run.response = cp.response;
  run.resumedCount = cp.resumedCount;
}

/** The top-level scope's saved scheduling state, with the resumed block completed by the reviewer's input. */
export function resumeScope(run: RunState, cp: Checkpoint, resumeWith: ResumeWith): ScopeResume {
  const block = run.blocks[resumeWith.point.blockId];
  if (!block) throw new ExecutionError('EXECUTION_FAILED', `The paused block ${resumeWith.point.blockId} is no longer in the workflow`);
  const output = { ...resumeWith.input, approved: resumeWith.approved, input: resumeWith.input, resumedAt: now() };
  run.resumedCount++;
  run.emit({ type: 'block_completed', runId: run.runId, at: now(), ...run.ref(block, run.root), output, durationMs: 0 });
  return {
    state: { status: new Map(Object.entries(cp.nodes)), edges: new Map(Object.entries(cp.edges)), completed: [...cp.completed] },
    paused: cp.pause.filter((p) => p.blockId !== block.id),
    resumed: { id: block.id, outcome: { output, handles: null } },
  };
}

/** Everything needed to continue the paused run later, in any process. */
export function saveCheckpoint(run: RunState, outcome: ScopeOutcome, paused: PausePoint[], outputs: Record<string, unknown>): Checkpoint {
  const nodes: Checkpoint['nodes'] = {};
  for (const [id, s] of outcome.state.status) if (s === 'done' || s === 'skipped' || s === 'paused') nodes[id] = s;
  const variables: Record<string, unknown> = {};
  for (const [id, v] of run.variables) variables[id] = v.value;
  return {
    version: 1,
    runId: run.runId,
    workflowId: run.workflow.id,
    startedAt: run.startedAt,
    input: run.input,
    variables,
    outputs,
    nodes,
    edges: Object.fromEntries(outcome.state.edges),
    completed: outcome.state.completed,
    pause: paused,
    traceSpans: run.redactor.value(run.root.spans),
    skipped: run.skipped,
    blockExecutions: run.blockExecutions,
    cost: run.cost,
    response: run.response,
    resumedCount: run.resumedCount,
    secretNames: [...run.secrets.keys()],
  };
}

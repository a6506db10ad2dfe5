// One run of one workflow, start to finish: checks the graph (or restores a checkpoint), runs the top-level scope
// through the scheduler, and shapes the result (redacted), with a checkpoint when the run paused.
import { CONTAINER_TYPES, TRIGGER_TYPES } from '../blocks.ts';
import { ExecutionError } from '../errors.ts';
import type { RunOptions } from '../options.ts';
import type { Checkpoint, RunResult, WorkflowDefinition } from '../types.ts';
import { resumeScope, restoreRun, saveCheckpoint, type ResumeWith } from './checkpoint.ts';
import { fetchSecretNames } from './context.ts';
import type { ScopeOutcome, ScopeResume } from './frame.ts';
import { runScope } from './scheduler.ts';
import { now, RunState, type RunHost } from './state.ts';

/** Runs a workflow, fresh (checkpoint null) or resumed from a checkpoint. Never throws for run failures: they are in the result. */
export async function runWorkflow(host: RunHost, workflow: WorkflowDefinition, options: RunOptions, checkpoint: Checkpoint | null, resumeWith: ResumeWith | null): Promise<RunResult> {
  const run = new RunState(host, workflow, options, checkpoint);
  const topNodes = Object.values(run.blocks)
    .filter((b) => !(typeof b.data?.parentId === 'string' && run.blocks[b.data.parentId]))
    .map((b) => b.id);
  let outcome: ScopeOutcome | null = null;
  let error: ExecutionError | null = null;
  try {
    if (checkpoint) {
      restoreRun(run, checkpoint);
      run.triggerId = findTrigger(run);
      await fetchSecretNames(run, checkpoint.secretNames ?? []);
    }
    run.emit({ type: 'run_started', runId: run.runId, at: now(), workflowId: workflow.id, resumed: resumeWith !== null });
    if (!resumeWith) {
      const usage = await options.checkUsage?.();
      if (usage) throw new ExecutionError('USAGE_LIMIT_EXCEEDED', usage);
      validateGraph(run);
    }
    const resume: ScopeResume | undefined = checkpoint && resumeWith ? resumeScope(run, checkpoint, resumeWith) : undefined;
    outcome = await runScope(run, topNodes, run.triggerId ? [run.triggerId] : [], run.root, run.signal, resume);
  } catch (e) {
    error = run.toExecutionError(e);
  }
  return finish(run, outcome, error);
}

function findTrigger(run: RunState): string | null {
  const wanted = run.options.triggerBlockId;
  if (wanted) return run.blocks[wanted] && TRIGGER_TYPES.has(run.blocks[wanted]!.type) ? wanted : null;
  const triggers = Object.values(run.blocks).filter((b) => TRIGGER_TYPES.has(b.type) && b.enabled !== false);
  return triggers[0]?.id ?? null;
}

/** Problems that make the whole graph unrunnable: EXECUTION_FAILED before any block runs. */
function validateGraph(run: RunState): void {
  run.triggerId = findTrigger(run);
  if (!run.triggerId) {
    throw new ExecutionError(
      'EXECUTION_FAILED',
      run.options.triggerBlockId ? `Block ${run.options.triggerBlockId} is not a trigger block of this workflow` : 'The workflow has no enabled start block',
    );
  }
  for (const block of Object.values(run.blocks)) {
    if (block.enabled === false) continue;
    if (!run.engine.handlers[block.type] && !CONTAINER_TYPES.has(block.type)) {
      throw new ExecutionError('EXECUTION_FAILED', `Block "${block.name}" has type "${block.type}", which this server cannot run`, block);
    }
  }
}

function finish(run: RunState, outcome: ScopeOutcome | null, error: ExecutionError | null): RunResult {
  const endedAt = now();
  const paused = !error && outcome && outcome.paused.length > 0 ? outcome.paused : null;
  const status: RunResult['status'] = error ? (error.code === 'CANCELLED' ? 'cancelled' : 'failed') : paused ? 'paused' : 'completed';
  const blockOutputs = Object.fromEntries(run.root.outputs);
  const output = run.response ? run.response.data : outcome ? outcome.lastOutput : null;
  const checkpoint = paused && outcome ? saveCheckpoint(run, outcome, paused, blockOutputs) : null;
  const r = run.redactor;
  const result: RunResult = {
    runId: run.runId,
    workflowId: run.workflow.id,
    status,
    output: r.value(output ?? null),
    response: run.response ? { status: run.response.status, headers: r.value(run.response.headers) } : null,
    blockOutputs: r.value(blockOutputs),
    error: error ? r.value(error.toRunError()) : null,
    startedAt: run.startedAt,
    endedAt,
    durationMs: Date.now() - run.startedAtMs,
    traceSpans: r.value(run.root.spans),
    skipped: run.skipped,
    blockExecutions: run.blockExecutions,
    cost: run.cost,
    pause: paused,
    checkpoint,
  };
  if (paused) run.emit({ type: 'run_paused', runId: run.runId, at: endedAt, pause: paused });
  run.emit({ type: 'run_finished', runId: run.runId, at: endedAt, result });
  return result;
}

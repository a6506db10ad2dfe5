// The workflow executor: runs a workflow graph as a DAG (run/scheduler.ts), loops and parallels as nested scopes
// (run/subflows.ts), and pauses and resumes runs through checkpoints (run/checkpoint.ts). No HTTP here: a caller
// hands in a graph, input and options, and gets a RunResult, with RunEvents along the way.
import { BLOCK_HANDLERS, validateFields, type BlockHandler } from './blocks.ts';
import { ResumeError } from './errors.ts';
import type { EngineServices, ResumeInput, RunOptions } from './options.ts';
import { runWorkflow } from './run/run.ts';
import type { Checkpoint, RunResult, WorkflowDefinition } from './types.ts';

export interface EngineOptions extends EngineServices {
  /** Block implementations by type id; defaults to BLOCK_HANDLERS (override or add types here). */
  handlers?: Record<string, BlockHandler>;
}

/** The engine: holds the shared services (sandbox pool, egress policy, agent provider) and runs workflows. */
export class Engine {
  readonly options: EngineOptions;
  readonly handlers: Record<string, BlockHandler>;

  constructor(options: EngineOptions) {
    this.options = options;
    this.handlers = options.handlers ?? BLOCK_HANDLERS;
  }

  /** Runs a workflow from its trigger block. Never throws for run failures: they are in the result. */
  async execute(workflow: WorkflowDefinition, options: RunOptions = {}): Promise<RunResult> {
    return runWorkflow(this, workflow, options, null, null);
  }

  /**
   * Continues a paused run from its checkpoint with the reviewer's input. Throws ResumeError (the run stays
   * paused) when the input does not fit or the block is not paused.
   */
  async resume(workflow: WorkflowDefinition, checkpoint: Checkpoint, resume: ResumeInput, options: RunOptions = {}): Promise<RunResult> {
    if (checkpoint?.version !== 1) throw new ResumeError('Unknown checkpoint format');
    const point = resume.blockId ? checkpoint.pause.find((p) => p.blockId === resume.blockId) : checkpoint.pause[0];
    if (!point) throw new ResumeError(resume.blockId ? `Block ${resume.blockId} is not paused in this run` : 'The run has no pause point');
    const input = resume.input ?? {};
    const problem = validateFields(point.inputFormat, input);
    if (problem) throw new ResumeError(`Invalid resume input: ${problem}`);
    return runWorkflow(this, workflow, { ...options, runId: checkpoint.runId }, checkpoint, { point, input, approved: resume.approved ?? true });
  }
}

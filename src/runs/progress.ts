// Run progress for whoever follows a run (GET …/runs/{runId}/events, the console's run page), wherever the run
// executes. The engine's events are published as they happen: delivered in process, and told to the other
// servers sharing the database through the store's notes (LISTEN/NOTIFY on Postgres; nothing to tell on
// SQLite, which one process owns). Notes are small (no block outputs) and best effort: a follower re-reads the
// run from the database now and then, so a lost note delays an update but never loses the run's end.
import type { Engine, RunEvent, RunOptions } from '../execution/index.ts';
import type { Wakes } from '../store/coordination.ts';

/** What a follower hears: the engine's event without outputs or results (a status change says only which). */
export type ProgressEvent =
  | { type: 'run_started' | 'run_paused' | 'run_finished'; at: string }
  | { type: 'block_started' | 'block_completed' | 'block_failed' | 'block_skipped' | 'block_retry'; at: string; blockId: string; blockName: string; blockType: string; iteration?: number[]; durationMs?: number; error?: { code?: string; message: string }; handled?: boolean };

/** One run's event: the run by its workflow and the id callers know it by (unique within the workflow). */
interface ProgressNote {
  workflowId: string;
  runId: string;
  event: ProgressEvent;
}

const MESSAGE_CHARS = 300;

/** The event as a follower hears it (outputs and results left out; an error's message shortened). */
export function progressEvent(event: RunEvent): ProgressEvent | null {
  switch (event.type) {
    case 'run_started':
    case 'run_paused':
    case 'run_finished':
      return { type: event.type, at: event.at };
    case 'block_started':
    case 'block_completed':
    case 'block_failed':
    case 'block_skipped':
    case 'block_retry': {
      const e: ProgressEvent = { type: event.type, at: event.at, blockId: event.blockId, blockName: event.blockName, blockType: event.blockType };
      if (event.iteration?.length) e.iteration = event.iteration;
      if ('durationMs' in event) e.durationMs = event.durationMs;
      if (event.type === 'block_failed') {
        e.error = { code: event.error.code, message: event.error.message.slice(0, MESSAGE_CHARS) };
        e.handled = event.handled;
      }
      if (event.type === 'block_retry') e.error = { message: event.error.slice(0, MESSAGE_CHARS) };
      return e;
    }
    default:
      return null;
  }
}

/** Runs whose running blocks are remembered (the oldest forgotten first): far more than execute at once. */
const REMEMBERED_RUNS = 5000;

type BlockEvent = Extract<ProgressEvent, { blockId: string }>;

export class RunProgress {
  private readonly wakes: Wakes;
  private readonly followers = new Map<string, Set<(event: ProgressEvent) => void>>();
  /** Per run going on anywhere, the blocks started and not yet ended, as heard: what a new follower is shown first. */
  private readonly running = new Map<string, Map<string, BlockEvent>>();
  private stopHearing: (() => void) | null = null;
  /** What each follower does when the server stops (ends its stream, so shutting down does not wait for it). */
  private readonly onStops = new Set<() => void>();

  constructor(wakes: Wakes) {
    this.wakes = wakes;
  }

  /** Starts hearing the other servers' notes, so runs executing there are known before anyone here follows one. */
  start(): void {
    this.stopHearing ??= this.wakes.hear('run-progress', (note) => this.heard(note));
  }

  /** Stops hearing the other servers and ends every follower (the server is shutting down). */
  stop(): void {
    this.stopHearing?.();
    this.stopHearing = null;
    for (const onStop of [...this.onStops]) onStop();
    this.onStops.clear();
  }

  /** The block_started events of the run's blocks running now, as far as this server has heard. */
  runningBlocks(workflowId: string, runId: string): BlockEvent[] {
    return [...(this.running.get(keyOf(workflowId, runId))?.values() ?? [])];
  }

  /** Publishes one event of a run executing here: to this process's followers and to the other servers'. */
  publish(workflowId: string, runId: string, event: RunEvent): void {
    const e = progressEvent(event);
    if (!e) return;
    this.deliver({ workflowId, runId, event: e });
    this.wakes.tell('run-progress', JSON.stringify({ workflowId, runId, event: e } satisfies ProgressNote));
  }

  /**
   * Calls `listener` with each event of the run, from any server, and `onStop` if the server stops first;
   * returns the function that stops following.
   */
  follow(workflowId: string, runId: string, listener: (event: ProgressEvent) => void, onStop?: () => void): () => void {
    this.start();
    if (onStop) this.onStops.add(onStop);
    const key = keyOf(workflowId, runId);
    let set = this.followers.get(key);
    if (!set) this.followers.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      if (onStop) this.onStops.delete(onStop);
      set.delete(listener);
      if (!set.size) this.followers.delete(key);
    };
  }

  /** Resolves once other servers' notes are heard here (or after `waitMs`, when the database does not answer: followers poll then). */
  async ready(waitMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.wakes.listening(), new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }

  /**
   * The engine as the run service uses it, publishing every run's events here as well as to the run's own
   * listener (a streamed request's). The workflow is the definition's id, the run the id callers know.
   */
  reporting(engine: Engine): Engine {
    const wrap = (workflowId: string, options: RunOptions): RunOptions => ({
      ...options,
      onEvent: (event) => {
        options.onEvent?.(event);
        if (options.runId) this.publish(workflowId, options.runId, event);
      },
    });
    const reporting = Object.create(engine) as Engine;
    reporting.execute = (workflow, options = {}) => engine.execute(workflow, wrap(workflow.id, options));
    reporting.resume = (workflow, checkpoint, resume, options = {}) => engine.resume(workflow, checkpoint, resume, wrap(workflow.id, options));
    return reporting;
  }

  private heard(note: string): void {
    let parsed: ProgressNote;
    try {
      parsed = JSON.parse(note) as ProgressNote;
    } catch {
      return;
    }
    if (typeof parsed?.workflowId === 'string' && typeof parsed.runId === 'string' && parsed.event) this.deliver(parsed);
  }

  private remember(key: string, e: ProgressEvent): void {
    if (e.type === 'run_finished' || e.type === 'run_paused') {
      this.running.delete(key);
      return;
    }
    if (!('blockId' in e)) return;
    const blockKey = `${e.blockId}:${(e.iteration ?? []).join('.')}`;
    let blocks = this.running.get(key);
    if (e.type === 'block_started') {
      if (!blocks) {
        if (this.running.size >= REMEMBERED_RUNS) this.running.delete(this.running.keys().next().value!);
        this.running.set(key, (blocks = new Map()));
      }
      blocks.set(blockKey, e);
    } else if (e.type !== 'block_retry') blocks?.delete(blockKey);
  }

  private deliver(note: ProgressNote): void {
    this.remember(keyOf(note.workflowId, note.runId), note.event);
    const set = this.followers.get(keyOf(note.workflowId, note.runId));
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(note.event);
      } catch {
        // A follower's failure (a closed connection) is its own; the others still hear the event.
      }
    }
  }
}

const keyOf = (workflowId: string, runId: string) => `${workflowId}\u0000${runId}`;

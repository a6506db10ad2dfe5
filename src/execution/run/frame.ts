// The shapes the parts of a run pass between them: frames of block outputs, a block's outcome, a scope's
// scheduling state. No behaviour here.
import type { Edge, PausePoint, TraceSpan } from '../types.ts';

/** One level of block outputs: the run, a loop iteration or a parallel branch. Lookups fall back to outer levels. */
export interface Frame {
  outputs: Map<string, unknown>;
  parent: Frame | null;
  loop?: { index: number; currentItem: unknown; items: unknown[] | null };
  parallel?: { index: number; currentItem: unknown; items: unknown[] | null };
  iteration: number[];
  spans: TraceSpan[];
  /** Inside a loop or parallel (pausing is only possible at the top level). */
  nested: boolean;
}

/** What one block's execution leaves for the scheduler: its output and which outgoing edges it takes. */
export interface NodeOutcome {
  output: unknown;
  handles: ((edge: Edge) => boolean) | null;
  pause?: PausePoint;
}

export interface ScopeState {
  status: Map<string, 'pending' | 'running' | 'done' | 'skipped' | 'paused'>;
  edges: Map<string, boolean>;
  completed: string[];
}

export interface ScopeOutcome {
  lastOutput: unknown;
  paused: PausePoint[];
  state: ScopeState;
}

/** Where a resumed run picks up its top-level scope: the saved state and the resumed block's outcome. */
export interface ScopeResume {
  state: ScopeState;
  /** Pause points still open (every saved one but the resumed block's). */
  paused: PausePoint[];
  resumed: { id: string; outcome: NodeOutcome };
}

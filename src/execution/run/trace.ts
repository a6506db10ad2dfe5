// The run's trace: a span per block execution (and per loop iteration / parallel branch, grouping the spans of
// the blocks inside it), with secret values redacted as a span closes.
import { randomUUID } from 'node:crypto';
import type { ExecutionError } from '../errors.ts';
import type { Block, TraceSpan } from '../types.ts';
import type { Frame } from './frame.ts';
import type { RunState } from './state.ts';

export function openSpan(run: RunState, block: Block, frame: Frame): TraceSpan {
  const start = Date.now();
  const span: TraceSpan = {
    id: randomUUID(),
    name: block.name,
    type: block.type,
    blockId: block.id,
    status: 'success',
    startTime: new Date(start).toISOString(),
    endTime: '',
    durationMs: 0,
    relativeStartMs: start - run.startedAtMs,
  };
  frame.spans.push(span);
  return span;
}

export function closeSpan(run: RunState, span: TraceSpan, status: 'success' | 'error', output: unknown, durationMs: number, error?: ExecutionError, handled?: boolean): void {
  span.status = status;
  span.durationMs = Math.round(durationMs * 1000) / 1000;
  span.endTime = new Date(Date.parse(span.startTime) + Math.round(durationMs)).toISOString();
  if (output !== undefined) span.output = run.redactor.value(output);
  if (error) {
    span.errorMessage = run.redactor.text(error.message);
    span.errorType = error.code;
    if (handled) span.errorHandled = true;
  }
  if (span.input !== undefined) span.input = run.redactor.value(span.input);
}

/** The span grouping one loop iteration or parallel branch (`Iteration 1`, `Branch 2`); its children are filled as the blocks inside run. */
export function openGroupSpan(run: RunState, frame: Frame, name: string, type: string, started: number): TraceSpan {
  const span: TraceSpan = {
    id: randomUUID(),
    name,
    type,
    status: 'success',
    startTime: new Date(started).toISOString(),
    endTime: '',
    durationMs: 0,
    relativeStartMs: started - run.startedAtMs,
    children: [],
  };
  frame.spans.push(span);
  return span;
}

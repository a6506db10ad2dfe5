// GET …/runs/{runId}/events: a run followed as Server-Sent Events wherever it executes (an extension the
// console's run page reads). Block events come from the run's progress (src/runs/progress.ts: in process, or
// through the database's notes from another server); the run's status is re-read from the database when the
// engine reports a change of status, and every RUN_FOLLOW_POLL_MS in case a note was lost.
import { PassThrough } from 'node:stream';
import type { RequestContext } from '../../http/context.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { runView } from '../../runs/views.ts';
import type { ProgressEvent } from '../../runs/progress.ts';
import { TERMINAL_STATUSES, type RunRecord } from '../../store/workflow-runs.ts';

/** After the engine reports a run finished or paused, how long to wait for the outcome's commit, doubling each time. */
const FIRST_RECHECK_MS = 20;
const LAST_RECHECK_MS = 1280;

export async function followRun(ctx: RequestContext, run: RunRecord): Promise<{ status: 200; body: StreamBody; headers: Record<string, string> }> {
  const { store, runProgress, config } = ctx.services;
  const out = new PassThrough();
  const view = (r: RunRecord) => runView(r, { includeOutput: false, blockOutputs: null });
  const send = (frame: unknown) => {
    if (!out.destroyed && !out.writableEnded) out.write(`data: ${JSON.stringify(frame)}\n\n`);
  };
  let last = run;
  let ended = false;
  let recheck: NodeJS.Timeout | null = null;

  /** Sends what changed since the last read; true once the run has ended (the stream is then closed). */
  const report = (r: RunRecord): boolean => {
    if (ended) return true;
    const changed = r.status !== last.status;
    last = r;
    if (TERMINAL_STATUSES.has(r.status)) {
      send({ event: 'final', runId: r.key, data: view(r) });
      send('[DONE]');
      end();
      return true;
    }
    if (changed) send({ event: 'status', runId: r.key, data: view(r) });
    return false;
  };
  let reading: Promise<RunRecord | null> | null = null;
  const reread = async (): Promise<RunRecord | null> => {
    // Overlapping reasons to look share one read.
    reading ??= store.workflowRuns
      .get(run.id)
      .then((r) => r ?? null)
      .finally(() => (reading = null));
    try {
      const r = await reading;
      if (!r) {
        send({ event: 'error', error: 'The run no longer exists.' });
        end();
      } else report(r);
      return r;
    } catch (err) {
      ctx.log.warn({ err, runId: run.id }, 'reading a followed run failed');
      return null;
    }
  };
  /** The engine said the run stopped running: its outcome commits right after, so look until the status moved. */
  const awaitOutcome = (delay = 0) => {
    if (recheck || ended) return;
    recheck = setTimeout(async () => {
      recheck = null;
      const r = await reread();
      if (!ended && r?.status === 'running' && delay < LAST_RECHECK_MS) awaitOutcome(delay ? delay * 2 : FIRST_RECHECK_MS);
    }, delay);
  };
  const onEvent = (e: ProgressEvent) => {
    if (ended) return;
    if (e.type === 'run_finished' || e.type === 'run_paused') return awaitOutcome();
    if (e.type === 'run_started') return void reread();
    const { type, ...rest } = e;
    send({ event: type, runId: run.key, ...rest });
  };
  // A server shutting down ends the stream (the browser's EventSource reconnects, to another server if need be).
  const unfollow = runProgress.follow(run.workflowId, run.key, onEvent, () => end());
  const poll = setInterval(() => void reread(), config.runs.followPollMs);
  const heartbeat = setInterval(() => out.write(': keep-alive\n\n'), 15_000);
  poll.unref();
  heartbeat.unref();
  function end() {
    if (ended) return;
    ended = true;
    unfollow();
    clearInterval(poll);
    clearInterval(heartbeat);
    if (recheck) clearTimeout(recheck);
    if (!out.destroyed) out.end();
  }
  // The client went away (the pipeline destroys the body when the response closes).
  out.on('close', end);

  // The first frame goes out once this server hears the others, so a follower that has it misses no note.
  await runProgress.ready();
  send({ event: 'status', runId: run.key, data: view(run) });
  // Blocks already running when the follower came (as far as this server has heard) come first.
  if (!TERMINAL_STATUSES.has(run.status)) {
    for (const { type, ...rest } of runProgress.runningBlocks(run.workflowId, run.key)) send({ event: type, runId: run.key, ...rest });
  }
  // Read once more now that the follower listens: an end between the first read and listening is not missed.
  if (!report(run)) void reread();
  return {
    status: 200,
    body: new StreamBody(out),
    headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no', 'X-Run-Id': run.key },
  };
}

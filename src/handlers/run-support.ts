// What the v2 and legacy execution handlers share: finding a runnable workflow, accepting a run for the caller
// (src/runs/lifecycle.ts does the accepting) and streaming a run's events.
import { acceptRun, type RunRequest } from '../runs/lifecycle.ts';
import { PassThrough } from 'node:stream';
import type { RequestContext } from '../http/context.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { StreamBody } from '../http/stream-body.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { Workspace } from '../store/workspaces.ts';
import { TERMINAL_STATUSES, type RunRecord } from '../store/workflow-runs.ts';
import type { RunError, RunEvent, RunResult } from '../execution/index.ts';
import { pickOutputs, recordedSelectors, resolveSelectors, runResultView, type Selector } from '../runs/views.ts';
import { registerReplaySource } from '../http/idempotency.ts';


/** The workflow, checked: reachable by the caller at the operation's role, and not archived. */
export async function loadRunnableWorkflow(ctx: RequestContext, workflowId: string): Promise<{ workflow: WorkflowRecord; workspace: Workspace }> {
  const w = await ctx.services.store.workflows.get(workflowId);
  if (!w) throw notFound('Workflow');
  const access = await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  if (w.archived) throw notFound('Workflow');
  return { workflow: w, workspace: access.workspace };
}

/**
 * Of the records found under a caller-visible run id (one per workspace at most), the first the caller may
 * reach at the operation's role. None reachable is a 404, as if the id were unused; a refusal by role in a
 * workspace the caller belongs to stays a 403.
 */
export async function firstReachable<T extends { workspaceId: string }>(ctx: RequestContext, candidates: T[], resource: string): Promise<T> {
  let refusal: unknown = null;
  for (const candidate of candidates) {
    try {
      await ctx.authorizeWorkspace(candidate.workspaceId, { resource });
      return candidate;
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) refusal ??= err;
    }
  }
  throw refusal ?? notFound(resource);
}

/** What an execute request asks for; the workflow, the caller and the workspace's billing account come with the request. */
export type ExecuteRequest = Omit<RunRequest, 'workflow' | 'billingAccountId' | 'triggeredBy'>;

export const statusUrl = (ctx: RequestContext, workflowId: string, runId: string) =>
  `${ctx.baseUrl}/api/v2/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(runId)}`;

/**
 * Accepts a run for the caller (src/runs/lifecycle.ts): the run, its log, the workflow's run count and one
 * `workflow_run.started` audit event commit together, with the request's Idempotency-Key. A caller-chosen run id
 * (X-Run-Id) is the run's key, unique within its workspace: one already taken there is a 409, while another
 * workspace's run of the same id is invisible (the internal id is always generated).
 */
export function createRun(ctx: RequestContext, w: WorkflowRecord, workspace: Workspace, req: ExecuteRequest): Promise<RunRecord> {
  return acceptRun(ctx.services.runs, ctx.mutate, { ...req, workflow: w, billingAccountId: workspace.billingAccountId, triggeredBy: ctx.principal.userId }, (run) =>
    // An Idempotency-Key is recorded with this run in the same transaction, so a retry never starts a second one.
    ctx.createdResource(RUN_RESOURCE, run.id),
  );
}

const RUN_RESOURCE = 'workflow_run';

const parse = <T>(json: string | null): T | null => (json === null ? null : (JSON.parse(json) as T));

/** The 202 receipt of an async execute. */
export async function runReceipt(ctx: RequestContext, run: RunRecord) {
  const queuePosition = run.status === 'queued' ? await ctx.services.store.workflowRuns.countQueuedBefore(run.queuedAt, run.id) : 0;
  return { status: 202 as const, body: { data: { runId: run.key, statusUrl: statusUrl(ctx, run.workflowId, run.key), queuePosition } } };
}

/**
 * A repeat of an execute whose answer was not stored (a streamed run, or a crash after the run was accepted)
 * is answered from the run: an async run's receipt; otherwise the result once the run has finished or paused,
 * with the request's selectedOutputs picked from the recorded outputs; null (409 in progress) before that.
 */
registerReplaySource(RUN_RESOURCE, async (ctx, runId, requestBody) => {
  const run = await ctx.services.store.workflowRuns.get(runId);
  if (!run) throw notFound('Workflow run');
  if (run.mode === 'async') return runReceipt(ctx, run);
  if (!TERMINAL_STATUSES.has(run.status) && run.status !== 'paused') return null;
  const recorded = parse<Record<string, unknown>>(run.blockOutputs) ?? {};
  const selected = (requestBody as { selectedOutputs?: string[] } | undefined)?.selectedOutputs;
  let blockOutputs: Record<string, unknown> | null = null;
  if (selected) {
    const definition = await ctx.services.runs.definitionFor(run);
    blockOutputs = pickOutputs(definition ? resolveSelectors(selected, definition.state) : recordedSelectors(selected.join(','), null, recorded), recorded);
  }
  const data = {
    runId: run.key,
    workflowId: run.workflowId,
    status: run.status,
    output: parse<unknown>(run.output) ?? null,
    blockOutputs,
    error: parse<RunError>(run.error),
    startedAt: run.startedAt ?? run.queuedAt,
    endedAt: run.endedAt ?? run.updatedAt,
    durationMs: run.durationMs ?? 0,
  };
  return { status: 200, body: { data }, headers: { 'X-Run-Id': run.key } };
});

/**
 * Streams a run that is already accepted, in one of three forms:
 * - `sse`: Server-Sent Events as `sim workflows run --follow` reads them (`data: {"event": …}` frames, then `final`
 *   and `"[DONE]"`);
 * - `ndjson`: one `{"type": …}` object per line, ending with `{"type": "final", "data": <result>}`;
 * - `json`: one JSON document, `{"data": <result>}` like a synchronous answer, for clients that read the whole body
 *   (the Python SDK's `stream=True`). While the run goes on, whitespace (which JSON allows before a value) keeps
 *   the connection and the client's read timeout alive.
 */
export function streamRun(ctx: RequestContext, run: RunRecord, timeoutMs: number, format: 'sse' | 'ndjson' | 'json', selectors: Selector[] | null): { status: 200; body: StreamBody; headers: Record<string, string> } {
  const out = new PassThrough();
  const sse = format === 'sse';
  const write = (text: string) => {
    if (!out.destroyed && !out.writableEnded) out.write(text);
  };
  const send = (frame: unknown) => write(sse ? `data: ${JSON.stringify(frame)}\n\n` : `${JSON.stringify(frame)}\n`);
  const heartbeat = setInterval(() => {
    if (format === 'sse') write(': keep-alive\n\n');
    else if (format === 'json') write('\n');
    else send({ type: 'heartbeat' });
  }, 15_000);
  heartbeat.unref();
  const onEvent = (event: RunEvent) => {
    if (event.type === 'run_finished' || format === 'json') return;
    if (!sse) return send(event);
    const { type, ...rest } = event;
    send({ event: type, ...rest });
  };
  void ctx.services.runs
    .execute(run, { timeoutMs, onEvent })
    .then((result: RunResult) => {
      const view = runResultView(result, selectors ? pickOutputs(selectors, result.blockOutputs) : null);
      if (format === 'json') send({ data: view });
      else if (sse) {
        send({ event: 'final', data: { success: result.status === 'completed', ...view, error: result.error?.message ?? null, errorCode: result.error?.code ?? null } });
        send('[DONE]');
      } else send({ type: 'final', data: { success: result.status === 'completed', ...view } });
    })
    .catch((err: unknown) => {
      ctx.log.error({ err, runId: run.id }, 'streaming a run failed');
      if (format === 'json') send({ error: { code: 'INTERNAL_ERROR', message: 'The run failed on the server.' } });
      else send(sse ? { event: 'error', error: 'The run failed on the server.' } : { type: 'error', error: 'The run failed on the server.', status: 500, code: 'INTERNAL_ERROR' });
    })
    .finally(() => {
      clearInterval(heartbeat);
      if (!out.destroyed) out.end();
    });
  return {
    status: 200,
    body: new StreamBody(out),
    headers: {
      'Content-Type': sse ? 'text/event-stream; charset=utf-8' : format === 'json' ? 'application/json; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
      'Cache-Control': 'no-cache',
      'X-Accel-Buffering': 'no',
      'X-Run-Id': run.key,
    },
  };
}

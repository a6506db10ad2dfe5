// What the v2 and legacy execution handlers share: finding a runnable workflow, accepting a run (the run row,
// its log and one audit event in one transaction) and streaming a run's events.
import { UniqueViolation } from '../store/errors.ts';
import { newRunLog, newRunRecord } from '../runs/records.ts';
import { PassThrough } from 'node:stream';
import type { RequestContext } from '../http/context.ts';
import { ApiError, badRequest, conflict, notFound } from '../http/errors.ts';
import { StreamBody } from '../http/stream-body.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { Workspace } from '../store/workspaces.ts';
import { TERMINAL_STATUSES, type RunMode, type RunRecord } from '../store/workflow-runs.ts';
import type { RunError, RunEvent, RunResult } from '../execution/index.ts';
import { pickOutputs, recordedSelectors, resolveSelectors, runResultView, type Selector } from '../runs/views.ts';
import { registerReplaySource } from '../http/idempotency.ts';

const now = () => new Date().toISOString();

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

export const notDeployed = () =>
  badRequest('The workflow is not deployed. Deploy it first (POST /api/v2/workflows/{workflowId}/deploy), or run the draft with run.source "manual".', [
    { code: 'not_deployed', keys: [], path: ['params', 'workflowId'], message: 'Workflow is not deployed' },
  ]);

export interface RunRequest {
  mode: RunMode;
  source: 'deployment' | 'manual';
  trigger: string;
  input: unknown;
  runId: string | null;
  triggerBlockId: string | null;
  /** Wall-clock limit stored with the run (async runs). */
  timeoutMs: number | null;
  /** Where the run reports when it settles (async runs): its own callbackUrl or the workflow's default. */
  callback?: { url: string; source: 'run' | 'workflow' } | null;
}

export const statusUrl = (ctx: RequestContext, workflowId: string, runId: string) =>
  `${ctx.services.config.baseUrl}/api/v2/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(runId)}`;

const runIdConflict = (id: string) => conflict(`The run id ${id} is already taken in this workspace; choose another one.`, { code: 'RUN_ID_CONFLICT', runId: id });

/**
 * Accepts a run: the run (queued for async, running otherwise), its execution log, the workflow's run count and
 * one `workflow_run.started` audit event commit together. A caller-chosen run id (X-Run-Id) is the run's key,
 * unique within its workspace: one already taken there is a 409, while another workspace's run of the same id
 * is invisible (the internal id is always generated).
 */
export async function createRun(ctx: RequestContext, w: WorkflowRecord, workspace: Workspace, req: RunRequest): Promise<RunRecord> {
  let versionId: string | null = null;
  if (req.source === 'deployment') {
    if (!w.isDeployed || !w.activeVersionId) throw notDeployed();
    versionId = w.activeVersionId;
  }
  const at = now();
  const queued = req.mode === 'async';
  const run = newRunRecord({
    key: req.runId ?? undefined,
    workflowId: w.id,
    workspaceId: w.workspaceId,
    billingAccountId: workspace.billingAccountId,
    deploymentVersionId: versionId,
    queued,
    mode: req.mode,
    trigger: req.trigger,
    source: req.source,
    triggerBlockId: req.triggerBlockId,
    input: req.input,
    timeoutMs: req.timeoutMs,
    triggeredBy: ctx.principal.userId,
    at,
  });
  const { id, key } = run;
  // An Idempotency-Key is recorded with this run in the transaction below, so a retry never starts a second one.
  ctx.createdResource(RUN_RESOURCE, id);
  try {
    await ctx.mutate(async (tx, audit) => {
      if (await tx.workflowRuns.keyTaken(w.workspaceId, key)) throw runIdConflict(key);
      await tx.workflowRuns.insert(run);
      if (req.callback) await tx.runCallbacks.setTarget(id, req.callback.url, req.callback.source);
      await tx.executionLogs.insert(newRunLog(run));
      if (!queued) await tx.workflows.recordRun(w.id, at);
      audit({
        action: 'workflow_run.started',
        resourceType: 'workflow_run',
        resourceId: key,
        resourceName: w.name,
        workspaceId: w.workspaceId,
        metadata: { workflowId: w.id, mode: req.mode, source: req.source, trigger: req.trigger, deploymentVersionId: versionId },
      });
    });
  } catch (err) {
    // Two requests racing for one id in one workspace: the unique (workspace, key) index decides.
    if (err instanceof UniqueViolation && err.table === 'workflow_runs') throw runIdConflict(key);
    throw err;
  }
  return run;
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

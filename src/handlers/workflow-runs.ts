// Handlers for the Workflow Runs operations: execute (sync, async, streamed), list, get, cancel and resume.
// Execution itself is src/runs/service.ts; these check what the spec cannot express and shape the answers.
import { serveContent } from '../files/download.ts';
import { StreamBody } from '../http/stream-body.ts';
import type { Readable } from 'node:stream';
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { ApiError, conflict, forbidden, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { RUN_STREAM_VARY, runStreamFormat } from '../http/negotiate.ts';
import type { RunRecord, RunStatus } from '../store/workflow-runs.ts';
import { parseInputFormat, type WorkflowState } from '../execution/index.ts';
import { SelectorError, recordedSelectors, pickOutputs, resolveSelectors, runResultView, runSummaryView, runView, runFileView, type Selector } from '../runs/views.ts';
import { WorkflowNotDeployed, cancelRun, resumeRun } from '../runs/lifecycle.ts';
import { checkCallbackUrl } from '../callbacks/signing.ts';
import { createRun, loadRunnableWorkflow, runReceipt, statusUrl, streamRun } from './run-support.ts';
import * as queue from './workflow-runs/queue.ts';
import { followRun } from './workflow-runs/follow.ts';

export const getWorkspaceQueue = queue.getWorkspaceQueue;


/** A run of this workflow (by the id callers know it by) the caller can reach at the operation's role; anything else is a 404. */
async function loadRun(ctx: RequestContext, workflowId: string, runId: string): Promise<RunRecord> {
  const run = await ctx.services.store.workflowRuns.getByKey(workflowId, runId);
  if (!run) throw notFound('Workflow run');
  await ctx.authorizeWorkspace(run.workspaceId, { resource: 'Workflow run' });
  return run;
}

const selectorError = (err: unknown, field: string[]) => (err instanceof SelectorError ? invalidField(field, err.message) : err);

/** Sample input for a manual run's mock payload: a typed placeholder per declared start field. */
function mockPayload(state: WorkflowState, triggerBlockId: string | null): Record<string, unknown> {
  const trigger = Object.values(state.blocks ?? {}).find((b) => (triggerBlockId ? b.id === triggerBlockId : b.type === 'start_trigger' || b.type === 'api_trigger'));
  const sample = { string: 'sample', number: 0, boolean: false, object: {}, array: [], any: null } as const;
  const fields = trigger ? parseInputFormat(trigger.subBlocks?.inputFormat?.value) : [];
  return Object.fromEntries(fields.map((f) => [f.name, sample[f.type] ?? null]));
}

export const executeWorkflow: Handler<'executeWorkflow'> = async ({ params, headers, body = {}, principal, ctx }) => {
  const field = (name: string, message: string) => invalidField(['body', name], message);
  if (body.executionTimeoutSeconds !== undefined && body.async !== true) throw field('executionTimeoutSeconds', 'executionTimeoutSeconds requires async: true.');
  if (body.async && body.stream) throw field('stream', 'stream cannot be combined with async.');
  if (body.callbackUrl !== undefined && body.async !== true) throw field('callbackUrl', 'callbackUrl requires async: true.');
  if (body.async) {
    for (const name of ['selectedOutputs', 'includeThinking', 'includeToolCalls', 'includeFileBase64', 'base64MaxBytes'] as const) {
      if (body[name] !== undefined && body[name] !== false) throw field(name, `${name} cannot be combined with async: select outputs from the finished run instead.`);
    }
  }
  if ((body.includeThinking || body.includeToolCalls) && !body.stream) throw field(body.includeThinking ? 'includeThinking' : 'includeToolCalls', 'This option needs stream: true.');
  const manual = body.run?.source === 'manual';
  if (manual && body.async) throw field('async', 'A manual run of the draft cannot be queued; run it synchronously or streamed.');
  if (manual && principal.kind === 'workspace') throw forbidden('Running the draft manually needs a personal API key or an OAuth token.');
  const via = headers['x-sim-via']?.split(',').filter((s) => s.trim() !== '') ?? [];
  if (via.length >= ctx.services.config.execution.maxChildDepth) {
    throw conflict('The workflow-to-workflow call chain is too deep.', { code: 'CALL_CHAIN_DEPTH_EXCEEDED', depth: via.length });
  }

  const { workflow: w, workspace } = await loadRunnableWorkflow(ctx, params.workflowId);
  if (!manual && (!w.isDeployed || !w.activeVersionId)) throw new WorkflowNotDeployed();
  const definition = await ctx.services.runs.definitionFor({ workflowId: w.id, source: manual ? 'manual' : 'deployment', deploymentVersionId: w.activeVersionId });
  if (!definition) throw new WorkflowNotDeployed();
  const entry = manual && body.run?.source === 'manual' ? body.run.entry : undefined;
  const triggerBlockId = entry?.blockId ?? null;
  if (triggerBlockId && !definition.state.blocks?.[triggerBlockId]) throw invalidField(['body', 'run', 'entry', 'blockId'], `Block ${triggerBlockId} is not in this workflow.`);
  let selectors: Selector[] | null = null;
  try {
    if (body.selectedOutputs) selectors = resolveSelectors(body.selectedOutputs, definition.state);
  } catch (err) {
    throw selectorError(err, ['body', 'selectedOutputs']);
  }
  if (entry?.useMockPayload && body.input !== undefined) throw field('input', 'input cannot be combined with useMockPayload.');
  const input = entry?.useMockPayload ? mockPayload(definition.state, triggerBlockId) : (body.input ?? {});

  const { config } = ctx.services;
  const policy = config.runs.policies[workspace.plan];
  // A stream request is answered in the form the client reads (SSE, NDJSON, or one JSON document like a sync run).
  const format = body.stream ? runStreamFormat(ctx.header('accept'), ctx.header('user-agent')) : null;
  const mode = body.async ? 'async' : body.stream ? 'stream' : 'sync';
  const timeoutMs = mode === 'async' ? Math.min(body.executionTimeoutSeconds ?? policy.maxAsyncSeconds, policy.maxAsyncSeconds) * 1000 : config.runs.syncTimeoutMs;
  // Extension: an async run reports to its own callback URL, else to the workflow's default one.
  let callback: { url: string; source: 'run' | 'workflow' } | null = null;
  if (body.callbackUrl !== undefined) {
    await checkCallbackUrl(ctx.services.store, ctx.services.engine.options.egress, w.workspaceId, body.callbackUrl, ['body', 'callbackUrl']);
    callback = { url: body.callbackUrl, source: 'run' };
  } else if (mode === 'async') {
    const fallback = await ctx.services.store.runCallbacks.getDefault(w.id);
    if (fallback) callback = { url: fallback.url, source: 'workflow' };
  }
  const run = await createRun(ctx, w, workspace, {
    callback,
    mode,
    source: manual ? 'manual' : 'deployment',
    trigger: manual ? 'manual' : 'api',
    input,
    runId: headers['x-run-id'] ?? null,
    triggerBlockId,
    timeoutMs: mode === 'async' ? timeoutMs : null,
  });

  if (mode === 'async') {
    // The 202 receipt is the spec's second success shape; the generated result type names only the 200 one.
    return runReceipt(ctx, run);
  }
  if (mode === 'stream') {
    const streamed = streamRun(ctx, run, timeoutMs, format ?? 'ndjson', selectors);
    streamed.headers.Vary = RUN_STREAM_VARY;
    return streamed;
  }
  const result = await ctx.services.runs.execute(run, { timeoutMs });
  const data = runResultView(result, selectors ? pickOutputs(selectors, result.blockOutputs) : null);
  return { status: 200, body: { data } };
};

const RUN_STATUS_FILTER: Record<string, RunStatus> = {
  queued: 'queued',
  pending: 'queued',
  running: 'running',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  paused: 'paused',
};

const utc = (v: string | undefined) => (v === undefined ? null : new Date(v).toISOString());

export const listWorkflowRuns: Handler<'listWorkflowRuns'> = async ({ params, query, ctx }) => {
  await loadRunnableWorkflowForRead(ctx, params.workflowId);
  const limit = query.limit ?? 50;
  const order = query.order ?? 'desc';
  const binding = { status: query.status, trigger: query.trigger, startDate: query.startDate, endDate: query.endDate, order };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.workflowRuns.list({
    workflowId: params.workflowId,
    status: query.status ? RUN_STATUS_FILTER[query.status]! : null,
    trigger: query.trigger ?? null,
    startDate: utc(query.startDate),
    endDate: utc(query.endDate),
    order,
    after,
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (r) => [r.queuedAt, r.id], runSummaryView) };
};

/** Reads work on archived workflows too: their runs stay readable. */
async function loadRunnableWorkflowForRead(ctx: RequestContext, workflowId: string) {
  const w = await ctx.services.store.workflows.get(workflowId);
  if (!w) throw notFound('Workflow');
  await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  return w;
}

export const getWorkflowRun: Handler<'getWorkflowRun'> = async ({ params, query, ctx }) => {
  const run = await loadRun(ctx, params.workflowId, params.runId);
  if (query.includeFileBase64 && !query.includeOutput) throw invalidField(['query', 'includeFileBase64'], 'includeFileBase64 requires includeOutput=true.');
  let blockOutputs: Record<string, unknown> | null = null;
  if (query.selectedOutputs !== undefined) {
    const recorded = (run.blockOutputs ? JSON.parse(run.blockOutputs) : {}) as Record<string, unknown>;
    const definition = await ctx.services.runs.definitionFor(run);
    try {
      blockOutputs = pickOutputs(recordedSelectors(query.selectedOutputs, definition?.state ?? null, recorded), recorded);
    } catch (err) {
      throw selectorError(err, ['query', 'selectedOutputs']);
    }
  }
  const produced = await ctx.services.store.runFiles.forRun(run.id);
  const ceiling = query.base64MaxBytes ?? 16 * 1024 * 1024;
  const tooLarge = query.includeFileBase64 ? produced.find((f) => f.size > ceiling) : undefined;
  if (tooLarge) {
    const path = runFileView(tooLarge, run.key).downloadPath;
    throw new ApiError('PAYLOAD_TOO_LARGE', `The file "${tooLarge.name}" (${tooLarge.size} bytes) is larger than the inline ceiling of ${ceiling} bytes; download it from ${path}.`, {
      code: 'FILE_TOO_LARGE_TO_INLINE',
      fileId: tooLarge.id,
      downloadPath: path,
    });
  }
  const files = await Promise.all(
    produced.map(async (f) => runFileView(f, run.key, query.includeFileBase64 ? (await streamToBuffer(ctx.services.blobs.read(f.blobKey))).toString('base64') : null)),
  );
  return { status: 200, body: { data: runView(run, { includeOutput: query.includeOutput === true, blockOutputs, files }) } };
};

export const followWorkflowRun: Handler<'followWorkflowRun'> = async ({ params, ctx }) => followRun(ctx, await loadRun(ctx, params.workflowId, params.runId));

export const cancelWorkflowRun: Handler<'cancelWorkflowRun'> = async ({ params, ctx }) => {
  const run = await loadRun(ctx, params.workflowId, params.runId);
  return { status: 200, body: { data: await cancelRun(ctx.services.runs, ctx.mutate, run) } };
};

export const resumeWorkflow: Handler<'resumeWorkflow'> = async ({ params, body, ctx }) => {
  const run = await loadRun(ctx, params.workflowId, params.runId);
  const resumed = await resumeRun(ctx.services.runs, ctx.mutate, run, { contextId: body.contextId, input: body.input, timeoutMs: ctx.services.config.runs.syncTimeoutMs });
  if (resumed.queued) return { status: 202, body: { data: { runId: run.key, statusUrl: statusUrl(ctx, run.workflowId, run.key) } } };
  return { status: 200, body: { data: runResultView(resumed.result, null) } };
};

export const downloadRunFile: Handler<'downloadRunFile'> = async ({ params, headers, ctx }) => {
  const run = await loadRun(ctx, params.workflowId, params.runId);
  const file = await ctx.services.store.runFiles.get(run.id, params.fileId);
  if (!file) throw notFound('Run file');
  const served = serveContent(ctx.services.blobs, { blobKey: file.blobKey, size: file.size, contentType: file.contentType, name: file.name }, headers.range);
  return { status: served.status, headers: served.headers, body: new StreamBody(served.stream) };
};

async function streamToBuffer(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
}

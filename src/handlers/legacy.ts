// Handlers for the Legacy operations: the pre-v2 endpoints simstudio-ts-sdk calls. Execution maps onto runs
// (a legacy job id is a run id), so a run started here is listed, logged, cancelled and audited like any other.
import type { Handler } from '../../generated/handlers.ts';
import { notFound } from '../http/errors.ts';
import { personalAccountId } from '../store/billing-accounts.ts';
import type { RunRecord } from '../store/workflow-runs.ts';
import { executableFingerprint, type WorkflowState } from '../workflows/state.ts';
import { createRun, firstReachable, loadRunnableWorkflow } from './run-support.ts';

/** Options the legacy body carries next to the input fields. */
const RESERVED = new Set(['stream', 'selectedOutputs']);

/** The legacy body is the input: its fields, or the value of `input` when that is its only field. */
function inputOf(body: unknown): unknown {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) return body;
  const fields = Object.fromEntries(Object.entries(body as Record<string, unknown>).filter(([k]) => !RESERVED.has(k)));
  const keys = Object.keys(fields);
  return keys.length === 1 && keys[0] === 'input' ? fields.input : fields;
}

export const legacyExecuteWorkflow: Handler<'legacyExecuteWorkflow'> = async ({ params, headers, body, ctx }) => {
  const { workflow: w, workspace } = await loadRunnableWorkflow(ctx, params.workflowId);
  const queued = headers['x-execution-mode'] === 'async';
  const { config } = ctx.services;
  const policy = config.runs.policies[workspace.plan];
  const run = await createRun(ctx, w, workspace, {
    mode: queued ? 'async' : 'sync',
    source: 'deployment',
    trigger: 'api',
    input: inputOf(body),
    runId: null,
    triggerBlockId: null,
    timeoutMs: queued ? policy.maxAsyncSeconds * 1000 : null,
  });
  if (queued) {
    const receipt = { success: true, taskId: run.key, status: 'queued' as const, createdAt: run.queuedAt, links: { status: `${ctx.baseUrl}/api/jobs/${encodeURIComponent(run.key)}` } };
    // The 202 receipt is the spec's second success shape; the generated result type names only the 200 one.
    return { status: 202, body: receipt };
  }
  const result = await ctx.services.runs.execute(run, { timeoutMs: config.runs.syncTimeoutMs });
  return {
    status: 200,
    body: {
      success: result.status === 'completed',
      output: result.output ?? null,
      ...(result.error ? { error: result.error.message } : {}),
      logs: [],
      metadata: { duration: result.durationMs, executionId: result.runId, workflowId: result.workflowId, status: result.status, startTime: result.startedAt, endTime: result.endedAt },
      traceSpans: result.traceSpans,
      totalDuration: result.durationMs,
    },
  };
};

const JOB_STATUS: Record<RunRecord['status'], 'queued' | 'processing' | 'paused' | 'completed' | 'failed' | 'cancelled'> = {
  queued: 'queued',
  running: 'processing',
  paused: 'paused',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

export const legacyGetJobStatus: Handler<'legacyGetJobStatus'> = async ({ params, ctx }) => {
  const run = await firstReachable(ctx, await ctx.services.store.workflowRuns.findByKey(params.jobId), 'Job');
  const status = JOB_STATUS[run.status];
  const error = run.error ? (JSON.parse(run.error) as { message: string }).message : undefined;
  return {
    status: 200,
    body: {
      success: true,
      taskId: run.key,
      status,
      metadata: {
        workflowId: run.workflowId,
        createdAt: run.queuedAt,
        startedAt: run.startedAt,
        ...(run.endedAt && status !== 'paused' ? { completedAt: run.endedAt } : {}),
        ...(run.durationMs !== null && status !== 'paused' ? { duration: run.durationMs } : {}),
      },
      ...(status === 'completed' ? { output: run.output ? JSON.parse(run.output) : null } : {}),
      ...(error ? { error } : {}),
    },
  };
};

export const legacyGetWorkflowStatus: Handler<'legacyGetWorkflowStatus'> = async ({ params, ctx }) => {
  const w = await ctx.services.store.workflows.get(params.workflowId);
  if (!w || w.archived) throw notFound('Workflow');
  await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  const live = w.isDeployed && w.activeVersionId ? await ctx.services.store.workflowVersions.getById(w.activeVersionId) : undefined;
  const needsRedeployment = live ? executableFingerprint(JSON.parse(w.state) as WorkflowState) !== executableFingerprint(JSON.parse(live.state) as WorkflowState) : false;
  return { status: 200, body: { isDeployed: Boolean(live), deployedAt: live ? w.deployedAt : null, isPublished: w.isPublicApi, needsRedeployment } };
};

export const legacyGetUsageLimits: Handler<'legacyGetUsageLimits'> = async ({ principal, ctx }) => {
  const { config, rateLimits, store } = ctx.services;
  const nowMs = Date.now();
  const bucket = async (name: 'sync' | 'async') => {
    const capacity = config.rateLimits[principal.plan][name];
    const state = (await rateLimits.peek?.(`${principal.subject}:${name}`, capacity, nowMs)) ?? { limit: capacity, remaining: capacity, resetAtMs: nowMs };
    return { isLimited: state.remaining < 1, limit: state.limit, remaining: state.remaining, resetAt: new Date(state.resetAtMs).toISOString() };
  };
  let accountId = personalAccountId(principal.userId);
  if (principal.workspaceId) accountId = (await store.workspaces.get(principal.workspaceId))?.billingAccountId ?? accountId;
  const used = await store.usage.periodTotal(accountId, new Date(nowMs).toISOString().slice(0, 7));
  return {
    status: 200,
    body: {
      success: true,
      rateLimit: { sync: await bucket('sync'), async: await bucket('async'), authType: principal.kind === 'oauth_access_token' ? 'oauth' : 'api' },
      usage: { currentPeriodCost: used.cost, limit: config.runs.policies[principal.plan].usageLimitUsd, plan: principal.plan },
    },
  };
};

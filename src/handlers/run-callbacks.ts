// Handlers for the Run Callbacks operations (an extension beyond the platform): a workflow's default callback
// URL, a run's delivery log and the workspace's signing secret. Delivery itself is src/callbacks/.
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { notFound } from '../http/errors.ts';
import { checkCallbackUrl, rotateSigningSecret, signingSecretMetadata } from '../callbacks/signing.ts';
import type { CallbackDefault } from '../store/run-callbacks.ts';
import { loadRunnableWorkflow } from './run-support.ts';

/** Reads work on archived workflows too (their runs stay readable). */
async function workflowForRead(ctx: RequestContext, workflowId: string) {
  const w = await ctx.services.store.workflows.get(workflowId);
  if (!w) throw notFound('Workflow');
  await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  return w;
}

/**
 * A callback URL as reads show it: credentials in its userinfo (`https://user:pass@host/…`) are masked, since
 * read-role members see the URL that a write-role member set. Deliveries still go to the URL as given.
 */
export function displayCallbackUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return url;
    u.username = '***';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

const callbackView = (workflowId: string, d: CallbackDefault | undefined) => ({ workflowId, url: d ? displayCallbackUrl(d.url) : null, updatedAt: d?.updatedAt ?? null });

export const getWorkflowCallback: Handler<'getWorkflowCallback'> = async ({ params, ctx }) => {
  const w = await workflowForRead(ctx, params.workflowId);
  return { status: 200, body: { data: callbackView(w.id, await ctx.services.store.runCallbacks.getDefault(w.id)) } };
};

export const setWorkflowCallback: Handler<'setWorkflowCallback'> = async ({ params, body, ctx }) => {
  const { workflow: w } = await loadRunnableWorkflow(ctx, params.workflowId);
  const url = body.url;
  if (url !== null) await checkCallbackUrl(ctx.services.store, ctx.services.engine.options.egress, w.workspaceId, url, ['body', 'url']);
  const at = new Date().toISOString();
  const saved = await ctx.mutate(async (tx, audit) => {
    if (url === null) await tx.runCallbacks.clearDefault(w.id);
    else await tx.runCallbacks.setDefault({ workflowId: w.id, url, updatedBy: ctx.principal.userId, updatedAt: at });
    audit({
      action: url === null ? 'workflow.callback_cleared' : 'workflow.callback_set',
      resourceType: 'workflow',
      resourceId: w.id,
      resourceName: w.name,
      workspaceId: w.workspaceId,
      metadata: { host: url === null ? null : new URL(url).host },
    });
    return tx.runCallbacks.getDefault(w.id);
  });
  return { status: 200, body: { data: callbackView(w.id, saved) } };
};

export const listRunCallbacks: Handler<'listRunCallbacks'> = async ({ params, ctx }) => {
  const { store } = ctx.services;
  const run = await store.workflowRuns.getByKey(params.workflowId, params.runId);
  if (!run) throw notFound('Workflow run');
  await ctx.authorizeWorkspace(run.workspaceId, { resource: 'Workflow run' });
  const deliveries = await store.runCallbacks.forRun(run.id);
  const data = await Promise.all(
    deliveries.map(async (d) => ({
      deliveryId: d.id,
      event: d.event as 'run.completed' | 'run.failed' | 'run.cancelled' | 'run.paused',
      url: displayCallbackUrl(d.url),
      status: d.status,
      createdAt: d.createdAt,
      attempts: d.attempts,
      nextAttemptAt: d.status === 'pending' ? d.nextAttemptAt : null,
      deliveredAt: d.deliveredAt,
      lastError: d.lastError,
      attemptLog: (await store.runCallbacks.attemptsOf(d.id)).map((a) => ({
        attempt: a.attempt,
        startedAt: a.startedAt,
        durationMs: a.durationMs,
        statusCode: a.statusCode,
        error: a.error,
        outcome: a.outcome,
        nextAttemptAt: a.nextAttemptAt,
      })),
    })),
  );
  return { status: 200, body: { data } };
};

export const getCallbackSigningSecret: Handler<'getCallbackSigningSecret'> = async ({ params, ctx }) => {
  return { status: 200, body: { data: await signingSecretMetadata(ctx.services.store, params.workspaceId, new Date()) } };
};

export const rotateCallbackSigningSecret: Handler<'rotateCallbackSigningSecret'> = async ({ params, body, ctx }) => {
  const graceMs = body?.previousSecretGraceSeconds !== undefined ? body.previousSecretGraceSeconds * 1000 : ctx.services.config.callbacks.secretGraceMs;
  const data = await ctx.mutate(async (tx, audit) => {
    const rotated = await rotateSigningSecret(tx, ctx.services.secrets, { workspaceId: params.workspaceId, createdBy: ctx.principal.userId, graceMs, at: new Date() });
    audit({
      action: 'workspace.callback_secret_rotated',
      resourceType: 'workspace',
      resourceId: params.workspaceId,
      workspaceId: params.workspaceId,
      metadata: { secretId: rotated.current.id, previousValidUntil: rotated.previous?.expiresAt ?? null },
    });
    return rotated;
  });
  return { status: 200, body: { data } };
};

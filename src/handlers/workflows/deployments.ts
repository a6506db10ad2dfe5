// Workflows handlers: deployment (deploy, undeploy, read), the public API switch, and deployed versions
// (list, read, relabel, activate, roll back, revert the draft to one). The rules live in src/workflows/service.ts.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { Repositories } from '../../store/index.ts';
import type { WorkflowRecord } from '../../store/workflows.ts';
import type { WorkflowVersionRecord } from '../../store/workflow-versions.ts';
import * as workflows from '../../workflows/service.ts';
import * as drafts from '../../workflows/draft-changes.ts';
import * as deployments from '../../workflows/deployment-changes.ts';
import { deploymentView, loadWorkflow, stateTag } from './shared.ts';

export const deployWorkflow: Handler<'deployWorkflow'> = async ({ params, body, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  workflows.assertActive(first);
  workflows.assertUnlocked(first);
  const { deployment, version } = await ctx.mutate((tx, audit) => deployments.deploy(tx, audit, ctx.principal.userId, first.id, { name: body?.name, description: body?.description }));
  return { status: 200, body: { data: { ...deploymentView(deployment), version } } };
};

export const undeployWorkflow: Handler<'undeployWorkflow'> = async ({ params, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  workflows.assertUnlocked(first);
  const archivedMcpTools = await ctx.mutate((tx, audit) => deployments.undeploy(tx, audit, first.id));
  return {
    status: 200,
    body: { data: { id: first.id, isDeployed: false, deployedAt: null, warnings: [], activeDeployment: null, latestDeploymentAttempt: null, archivedMcpTools } },
  };
};

export const getWorkflowDeployment: Handler<'getWorkflowDeployment'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const store = ctx.services.store;
  const needsRedeployment = await workflows.needsRedeployment(store, w, workflows.stateOf(w));
  return {
    status: 200,
    body: { data: { ...deploymentView(await workflows.deploymentState(store, w)), needsRedeployment, isPublicApi: w.isPublicApi, webhooks: [] } },
  };
};

export const updateWorkflowPublicApi: Handler<'updateWorkflowPublicApi'> = async ({ params, body, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  await ctx.mutate((tx, audit) => deployments.setPublicApi(tx, audit, w, body.isPublicApi, ctx.principal.userId));
  return { status: 200, body: { data: { id: w.id, isPublicApi: body.isPublicApi } } };
};

export const listWorkflowVersions: Handler<'listWorkflowVersions'> = async ({ params, query, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const limit = query.limit ?? 50;
  const binding = { workflowId: w.id };
  const rows = await ctx.services.store.workflowVersions.list(w.id, readCursor(ctx, query.cursor, binding), limit + 1);
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, (v) => [v.version, v.id], (v) => ({
      id: v.id,
      version: v.version,
      name: v.name,
      description: v.description,
      isActive: w.isDeployed && w.activeVersionId === v.id,
      createdAt: v.createdAt,
      deployedBy: v.deployedBy,
      latestOperationStatus: v.latestStatus,
    })),
  };
};

export const getWorkflowVersion: Handler<'getWorkflowVersion'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const v = await workflows.loadVersion(ctx.services.store, w.id, params.version);
  return {
    status: 200,
    body: { data: { id: v.id, version: v.version, name: v.name, description: v.description, isActive: w.isDeployed && w.activeVersionId === v.id, createdAt: v.createdAt, state: workflows.stateOf(v) } },
  };
};

export const updateWorkflowVersion: Handler<'updateWorkflowVersion'> = async ({ params, body, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const data = await ctx.mutate((tx, audit) => deployments.relabelVersion(tx, audit, w, params.version, { name: body.name, description: body.description, fields: Object.keys(body) }));
  return { status: 200, body: { data } };
};

async function activateVersion(
  ctx: RequestContext,
  workflowId: string,
  pick: (tx: Repositories, w: WorkflowRecord) => Promise<WorkflowVersionRecord>,
  action: 'workflow.version_activated' | 'workflow.rolled_back',
) {
  const first = await loadWorkflow(ctx, workflowId);
  workflows.assertActive(first);
  workflows.assertUnlocked(first);
  const { deployment, version } = await ctx.mutate((tx, audit) => deployments.activateVersion(tx, audit, first.id, pick, action, ctx.principal.userId));
  return { ...deploymentView(deployment), version };
}

export const activateWorkflowVersion: Handler<'activateWorkflowVersion'> = async ({ params, ctx }) => {
  const data = await activateVersion(ctx, params.workflowId, (tx, w) => workflows.loadVersion(tx, w.id, params.version), 'workflow.version_activated');
  return { status: 200, body: { data } };
};

export const rollbackWorkflow: Handler<'rollbackWorkflow'> = async ({ params, body, ctx }) => {
  const data = await activateVersion(ctx, params.workflowId, (tx, w) => deployments.rollbackTarget(tx, w, body?.version), 'workflow.rolled_back');
  return { status: 200, body: { data } };
};

export const revertWorkflowVersion: Handler<'revertWorkflowVersion'> = async ({ params, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  workflows.assertUnlocked(first);
  const which = params.version === 'active' ? ('active' as const) : Number(params.version);
  const { savedAt, version } = await ctx.mutate((tx, audit) => drafts.revertToVersion(tx, audit, first.id, which, (w) => ctx.precondition(() => stateTag(w)), ctx.principal.userId));
  return { status: 200, body: { data: { id: first.id, version: which, lastSaved: Date.parse(savedAt) } }, headers: { ETag: stateTag(version) } };
};

// What the Workflows handlers share: loading a workflow the caller may reach, entity tags, and the wire views.
import type { RequestContext } from '../../http/context.ts';
import { notFound } from '../../http/errors.ts';
import { tagOf, tagOfText } from '../../http/conditional.ts';
import type { WorkflowRecord } from '../../store/workflows.ts';
import type { FolderRecord } from '../../store/folders.ts';
import type { DeploymentAttemptRecord } from '../../store/workflow-versions.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { startInputs } from '../../workflows/state.ts';
import { stateOf, type DeploymentState } from '../../workflows/service.ts';

export const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);

function webUrl(ctx: RequestContext, w: { workspaceId: string; id: string }): string {
  return `${ctx.baseUrl}/workspace/${encodeURIComponent(w.workspaceId)}/w/${encodeURIComponent(w.id)}`;
}

export function workflowView(ctx: RequestContext, w: WorkflowRecord) {
  return {
    id: w.id,
    webUrl: webUrl(ctx, w),
    name: w.name,
    description: w.description,
    folderPath: folderPathToWire(w.folderPath),
    workspaceId: w.workspaceId,
    isDeployed: w.isDeployed,
    deployedAt: w.deployedAt,
    runCount: w.runCount,
    lastRunAt: w.lastRunAt,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

export function folderView(f: FolderRecord) {
  return { name: f.name, path: folderPathToWire(f.path), parentPath: folderPathToWire(f.parentPath), createdAt: f.createdAt, updatedAt: f.updatedAt, locked: f.locked };
}

/** What getWorkflow answers: the workflow with its variables and start inputs. */
export function workflowDetail(ctx: RequestContext, w: WorkflowRecord) {
  const state = stateOf(w);
  return { ...workflowView(ctx, w), variables: state.variables, inputs: startInputs(state) };
}

/**
 * Entity tags (src/http/conditional.ts). The draft state's is the hash of its stored JSON; the workflow's is
 * the hash of getWorkflow's answer without the run statistics, which runs update without changing the
 * workflow. Both follow every write by any path, since they are computed from what is stored.
 */
export const stateTag = (w: { state: string }) => tagOfText(w.state);
export function workflowTag(ctx: RequestContext, w: WorkflowRecord, detail = workflowDetail(ctx, w)): string {
  const { runCount: _runs, lastRunAt: _lastRun, ...document } = detail;
  return tagOf(document);
}

/** Loads a workflow by id and checks the caller may act in its workspace; anything else is a 404. */
export async function loadWorkflow(ctx: RequestContext, id: string): Promise<WorkflowRecord> {
  const w = await ctx.services.store.workflows.get(id);
  if (!w) throw notFound('Workflow');
  await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  return w;
}

function attemptView(a: DeploymentAttemptRecord, w: WorkflowRecord) {
  return {
    id: a.id,
    deploymentVersionId: a.versionId,
    version: a.version,
    action: a.action,
    status: a.status,
    isCurrent: a.status === 'active' && w.isDeployed && w.activeVersionId === a.versionId,
    readiness: { webhooks: 'not_applicable' as const, schedules: 'not_applicable' as const, mcp: 'not_applicable' as const },
    requestedAt: a.requestedAt,
    activatedAt: a.activatedAt,
  };
}

/** The deployment as the deploy and activation operations answer it. */
export function deploymentView({ workflow: w, live, attempt, warnings }: DeploymentState) {
  return {
    id: w.id,
    isDeployed: Boolean(live),
    deployedAt: live ? w.deployedAt : null,
    // What is wrong with the live graph (references to missing blocks or outputs, missing inputs…); advisory.
    warnings,
    activeDeployment: live ? { deploymentVersionId: live.id, version: live.version, deployedAt: w.deployedAt ?? live.createdAt } : null,
    latestDeploymentAttempt: attempt ? attemptView(attempt, w) : null,
  };
}

// Deploying a workflow and managing its versions: deploy, undeploy, activate, roll back, relabel, the public-API
// switch. The rules they share with other changes live in ./service.ts. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { WorkflowVersionRecord } from '../store/workflow-versions.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError } from '../domain/errors.ts';
import { assertUnlocked, reload, now, loadVersion, activate, deploymentState, assertBlocksAllowed, stateOf } from './service.ts';
import { assertAccess } from '../access-control/policy.ts';

/** Snapshots the draft as the next version and makes it live. */
export async function deploy(tx: Repositories, audit: Audit, actorId: string, id: string, label: { name?: string | null; description?: string | null }) {
  const w = await reload(tx, id);
  assertUnlocked(w);
  await assertBlocksAllowed(tx, w.workspaceId, stateOf(w), actorId);
  const at = now();
  const version: WorkflowVersionRecord = {
    id: randomUUID(),
    workflowId: w.id,
    version: await tx.workflowVersions.nextVersion(w.id),
    name: label.name ?? null,
    description: label.description ?? null,
    state: w.state,
    deployedBy: actorId,
    createdAt: at,
  };
  await tx.workflowVersions.insert(version);
  const live = await activate(tx, w, version, 'deploy', at);
  audit({ action: 'workflow.deployed', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: version.version } });
  return { deployment: await deploymentState(tx, live), version: version.version };
}

/** Takes the workflow offline; returns the MCP tools that stay published but inactive until it is deployed again. */
export async function undeploy(tx: Repositories, audit: Audit, id: string): Promise<{ serverId: string; toolName: string }[]> {
  const w = await reload(tx, id);
  assertUnlocked(w);
  if (!w.isDeployed) return [];
  await tx.workflows.update(w.id, { isDeployed: false, deployedAt: null, activeVersionId: null, updatedAt: now() });
  await tx.workflowVersions.deactivate(w.id);
  audit({ action: 'workflow.undeployed', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId });
  return (await tx.workflowMcpServers.toolsOfWorkflow(w.id)).map((t) => ({ serverId: t.serverId, toolName: t.toolName }));
}

/** Makes an existing version live again; `pick` chooses it from the workflow as the transaction reads it. */
export async function activateVersion(
  tx: Repositories,
  audit: Audit,
  id: string,
  pick: (tx: Repositories, w: WorkflowRecord) => Promise<WorkflowVersionRecord>,
  action: 'workflow.version_activated' | 'workflow.rolled_back',
  actorId: string | null,
) {
  const w = await reload(tx, id);
  assertUnlocked(w);
  const version = await pick(tx, w);
  await assertBlocksAllowed(tx, w.workspaceId, stateOf(version), actorId);
  const live = await activate(tx, w, version, 'activate', now());
  audit({ action, resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: version.version } });
  return { deployment: await deploymentState(tx, live), version: version.version };
}

/** The version a rollback goes to: the one asked for, or the one live before the current. */
export async function rollbackTarget(tx: Repositories, w: WorkflowRecord, asked: number | undefined): Promise<WorkflowVersionRecord> {
  const target = asked ?? (await tx.workflowVersions.previousActiveVersion(w.id, w.isDeployed ? w.activeVersionId : null));
  if (target === undefined) throw new DomainError('conflict', 'There is no earlier deployment to roll back to.');
  return loadVersion(tx, w.id, target);
}

export async function setPublicApi(tx: Repositories, audit: Audit, w: WorkflowRecord, isPublicApi: boolean, actorId: string | null): Promise<void> {
  if (isPublicApi) await assertAccess(tx, { workspaceId: w.workspaceId, userId: actorId }, { kind: 'feature', key: 'disablePublicApi', action: 'Making a workflow a public API' });
  await tx.workflows.update(w.id, { isPublicApi, updatedAt: now() });
  audit({ action: 'workflow.public_api_updated', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { isPublicApi } });
}

export async function relabelVersion(tx: Repositories, audit: Audit, w: WorkflowRecord, version: number, label: { name?: string; description?: string | null; fields: string[] }) {
  const v = await loadVersion(tx, w.id, version);
  await tx.workflowVersions.updateLabel(v.id, { name: label.name, description: label.description });
  audit({ action: 'workflow.version_updated', resourceType: 'workflow', resourceId: w.id, resourceName: w.name, workspaceId: w.workspaceId, metadata: { version: v.version, fields: label.fields } });
  return { version: v.version, name: label.name ?? v.name, description: label.description === undefined ? v.description : label.description };
}

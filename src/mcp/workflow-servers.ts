// Workflow MCP servers: the servers of a workspace and the deployed workflows they publish as tools. The rules:
// only a deployed workflow of the server's workspace is published; tool names (normalized, src/mcp/tools.ts) are
// unique per server; a server holds at most MAX_TOOLS_PER_SERVER tools. Each change works inside the caller's
// transaction and records its audit event there. No HTTP here.
import { sortableId } from '../domain/ids.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import type { Repositories } from '../store/index.ts';
import { onUniqueViolation } from '../store/errors.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { WorkflowMcpServerRecord, WorkflowMcpToolRecord } from '../store/workflow-mcp-servers.ts';
import { MAX_TOOLS_PER_SERVER, normalizeToolName } from './tools.ts';

const nowIso = () => new Date().toISOString();

/** A tool is served while its workflow has an active deployment. */
export const isServable = (w: WorkflowRecord | undefined): w is WorkflowRecord => Boolean(w && !w.archived && w.isDeployed && w.activeVersionId);

const duplicateName = (toolName: string) =>
  new DomainError('conflict', `Another tool of this server is already named "${toolName}"; choose another toolName.`, { code: 'duplicate_tool_name', toolName });

const notDeployed = (path: (string | number)[], workflowId: string) =>
  new DomainError('invalid', `Workflow ${workflowId} is not deployed; deploy it before publishing it as an MCP tool.`, [
    { code: 'not_deployed', keys: [], path, message: 'Workflow is not deployed' },
  ]);

/** A workflow of this workspace (not archived) that has an active deployment; `path` is where the request names it. */
async function publishableWorkflow(tx: Repositories, workspaceId: string, workflowId: string, path: (string | number)[]): Promise<WorkflowRecord> {
  const w = await tx.workflows.get(workflowId);
  if (!w || w.workspaceId !== workspaceId || w.archived) throw domainNotFound('Workflow');
  if (!isServable(w)) throw notDeployed(path, workflowId);
  return w;
}

export async function findServer(repos: Repositories, serverId: string): Promise<WorkflowMcpServerRecord> {
  const s = await repos.workflowMcpServers.get(serverId);
  if (!s) throw domainNotFound('Workflow MCP server');
  return s;
}

/** At most this many tool names are listed with each server. */
export const MAX_LISTED_NAMES = 20;

/** A page of the servers of a workspace. */
export function listServers(repos: Repositories, q: Parameters<Repositories['workflowMcpServers']['list']>[0]) {
  return repos.workflowMcpServers.list(q);
}

/** The tool count and first tool names of a server; `truncated` when there are more names than listed. */
export async function toolSummary(repos: Repositories, serverId: string): Promise<{ toolCount: number; toolNames: string[]; truncated: boolean }> {
  const tools = await repos.workflowMcpServers.listTools(serverId, { limit: MAX_TOOLS_PER_SERVER + 1 });
  return { toolCount: await repos.workflowMcpServers.countTools(serverId), toolNames: tools.slice(0, MAX_LISTED_NAMES).map((t) => t.toolName), truncated: tools.length > MAX_LISTED_NAMES };
}

/** The tools of a server, each with whether its workflow is served now. */
export async function listTools(repos: Repositories, serverId: string): Promise<{ tool: WorkflowMcpToolRecord; active: boolean }[]> {
  const tools = await repos.workflowMcpServers.listTools(serverId, { limit: MAX_TOOLS_PER_SERVER });
  return Promise.all(tools.map(async (tool) => ({ tool, active: isServable(await repos.workflows.get(tool.workflowId)) })));
}

/** Creates a server publishing the given workflows (distinct ids, checked by the caller) under their names. */
export async function createServer(
  tx: Repositories, audit: Audit,
  input: { workspaceId: string; name: string; description: string | null; isPublic: boolean; createdBy: string; workflowIds: string[] },
): Promise<WorkflowMcpServerRecord> {
  const at = nowIso();
  const server: WorkflowMcpServerRecord = {
    id: sortableId(),
    workspaceId: input.workspaceId,
    name: input.name,
    description: input.description,
    isPublic: input.isPublic,
    createdBy: input.createdBy,
    createdAt: at,
    updatedAt: at,
  };
  const names = new Set<string>();
  const tools: WorkflowMcpToolRecord[] = [];
  for (const [i, id] of input.workflowIds.entries()) {
    const w = await publishableWorkflow(tx, input.workspaceId, id, ['body', 'workflowIds', i]);
    const toolName = normalizeToolName(w.name);
    if (names.has(toolName)) throw duplicateName(toolName);
    names.add(toolName);
    tools.push({ id: sortableId(), serverId: server.id, workflowId: w.id, toolName, toolDescription: null, parameterDescriptions: [], createdAt: at, updatedAt: at });
  }
  await tx.workflowMcpServers.insert(server);
  for (const t of tools) await tx.workflowMcpServers.insertTool(t);
  await audit({
    action: 'workflow_mcp_server.created',
    resourceType: 'workflow_mcp_server',
    resourceId: server.id,
    resourceName: server.name,
    metadata: { isPublic: server.isPublic, workflowIds: input.workflowIds, toolNames: [...names] },
  });
  return server;
}

export async function updateServer(
  tx: Repositories, audit: Audit, serverId: string, change: { name?: string; description?: string | null; isPublic?: boolean; fields: string[] },
): Promise<WorkflowMcpServerRecord> {
  const s = await findServer(tx, serverId);
  const next: WorkflowMcpServerRecord = {
    ...s,
    name: change.name ?? s.name,
    description: change.description === undefined ? s.description : change.description,
    isPublic: change.isPublic ?? s.isPublic,
    updatedAt: nowIso(),
  };
  await tx.workflowMcpServers.update(s.id, next);
  await audit({
    action: 'workflow_mcp_server.updated',
    resourceType: 'workflow_mcp_server',
    resourceId: s.id,
    resourceName: next.name,
    workspaceId: s.workspaceId,
    metadata: { fields: change.fields, isPublic: next.isPublic },
  });
  return next;
}

export async function deleteServer(tx: Repositories, audit: Audit, s: WorkflowMcpServerRecord): Promise<void> {
  if (!(await tx.workflowMcpServers.delete(s.id))) throw domainNotFound('Workflow MCP server');
  await audit({ action: 'workflow_mcp_server.deleted', resourceType: 'workflow_mcp_server', resourceId: s.id, resourceName: s.name, workspaceId: s.workspaceId });
}

export interface ToolInput {
  workflowId: string;
  toolName?: string;
  toolDescription?: string;
  parameterDescriptions?: WorkflowMcpToolRecord['parameterDescriptions'];
}

/** Publishes a deployed workflow as a tool of the server, or updates its tool; `updated` says which. */
export async function publishTool(tx: Repositories, audit: Audit, s: WorkflowMcpServerRecord, input: ToolInput): Promise<{ tool: WorkflowMcpToolRecord; updated: boolean }> {
  await findServer(tx, s.id);
  const w = await publishableWorkflow(tx, s.workspaceId, input.workflowId, ['body', 'workflowId']);
  const existing = await tx.workflowMcpServers.toolForWorkflow(s.id, w.id);
  const toolName = normalizeToolName(input.toolName ?? existing?.toolName ?? w.name);
  const holder = await tx.workflowMcpServers.toolByName(s.id, toolName);
  if (holder && holder.workflowId !== w.id) throw duplicateName(toolName);
  const at = nowIso();
  let tool: WorkflowMcpToolRecord;
  if (existing) {
    tool = {
      ...existing,
      toolName,
      toolDescription: input.toolDescription ?? existing.toolDescription,
      parameterDescriptions: input.parameterDescriptions ?? existing.parameterDescriptions,
      updatedAt: at,
    };
    await onUniqueViolation(tx.workflowMcpServers.updateTool(tool), 'workflow_mcp_tools', ['server_id', 'tool_name'], () => duplicateName(toolName));
  } else {
    if ((await tx.workflowMcpServers.countTools(s.id)) >= MAX_TOOLS_PER_SERVER) {
      throw new DomainError('conflict', `A server holds at most ${MAX_TOOLS_PER_SERVER} tools.`, { code: 'too_many_tools', limit: MAX_TOOLS_PER_SERVER });
    }
    tool = {
      id: sortableId(),
      serverId: s.id,
      workflowId: w.id,
      toolName,
      toolDescription: input.toolDescription ?? null,
      parameterDescriptions: input.parameterDescriptions ?? [],
      createdAt: at,
      updatedAt: at,
    };
    await onUniqueViolation(tx.workflowMcpServers.insertTool(tool), 'workflow_mcp_tools', ['server_id', 'tool_name'], () => duplicateName(toolName));
  }
  await audit({
    action: existing ? 'workflow_mcp_tool.updated' : 'workflow_mcp_tool.published',
    resourceType: 'workflow_mcp_server',
    resourceId: s.id,
    resourceName: s.name,
    workspaceId: s.workspaceId,
    metadata: { workflowId: w.id, toolName },
  });
  return { tool, updated: existing !== undefined };
}

/** Stops publishing the workflow's tool; returns the removed tool. */
export async function unpublishTool(tx: Repositories, audit: Audit, s: WorkflowMcpServerRecord, workflowId: string): Promise<WorkflowMcpToolRecord> {
  const t = await tx.workflowMcpServers.deleteTool(s.id, workflowId);
  if (!t) throw domainNotFound('Workflow MCP tool');
  await audit({
    action: 'workflow_mcp_tool.unpublished',
    resourceType: 'workflow_mcp_server',
    resourceId: s.id,
    resourceName: s.name,
    workspaceId: s.workspaceId,
    metadata: { workflowId: t.workflowId, toolName: t.toolName },
  });
  return t;
}

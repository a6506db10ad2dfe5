// Workflow MCP servers: CRUD of the servers and publishing deployed workflows as their tools. The protocol
// endpoint that serves them is ./serve.ts; naming and schemas are src/mcp/tools.ts.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { badRequest, conflict, invalidField, notFound } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import { sortableId } from '../../domain/ids.ts';
import type { Repositories } from '../../store/index.ts';
import type { WorkflowRecord } from '../../store/workflows.ts';
import type { WorkflowMcpServerRecord, WorkflowMcpToolRecord } from '../../store/workflow-mcp-servers.ts';
import { MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, MAX_TOOLS_PER_SERVER, normalizeToolName } from '../../mcp/tools.ts';
import { onUniqueViolation } from '../../store/errors.ts';

const now = () => new Date().toISOString();
const MAX_LISTED_NAMES = 20;

export const mcpServeUrl = (ctx: RequestContext<any>, serverId: string) => `${ctx.services.config.baseUrl}/api/mcp/serve/${encodeURIComponent(serverId)}`;
const apiEndpoint = (ctx: RequestContext, workflowId: string) => `${ctx.services.config.baseUrl}/api/v2/workflows/${encodeURIComponent(workflowId)}/execute`;

function serverView(ctx: RequestContext, s: WorkflowMcpServerRecord) {
  return { id: s.id, name: s.name, description: s.description, isPublic: s.isPublic, mcpServerUrl: mcpServeUrl(ctx, s.id), createdAt: s.createdAt, updatedAt: s.updatedAt };
}

function toolBase(ctx: RequestContext, t: WorkflowMcpToolRecord) {
  return {
    id: t.id,
    serverId: t.serverId,
    workflowId: t.workflowId,
    toolName: t.toolName,
    toolDescription: t.toolDescription,
    mcpServerUrl: mcpServeUrl(ctx, t.serverId),
    apiEndpoint: apiEndpoint(ctx, t.workflowId),
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
}

/** A tool is served while its workflow has an active deployment. */
export const isServable = (w: WorkflowRecord | undefined): w is WorkflowRecord => Boolean(w && !w.archived && w.isDeployed && w.activeVersionId);

const duplicateName = (toolName: string) =>
  conflict(`Another tool of this server is already named "${toolName}"; choose another toolName.`, { code: 'duplicate_tool_name', toolName });

const notDeployed = (path: (string | number)[], workflowId: string) =>
  badRequest(`Workflow ${workflowId} is not deployed; deploy it before publishing it as an MCP tool.`, [
    { code: 'not_deployed', keys: [], path, message: 'Workflow is not deployed' },
  ]);

/** A workflow of this workspace (not archived) that has an active deployment. */
async function publishableWorkflow(tx: Repositories, workspaceId: string, workflowId: string, path: (string | number)[]): Promise<WorkflowRecord> {
  const w = await tx.workflows.get(workflowId);
  if (!w || w.workspaceId !== workspaceId || w.archived) throw notFound('Workflow');
  if (!isServable(w)) throw notDeployed(path, workflowId);
  return w;
}

/** The server, if the caller can reach its workspace at the operation's role (404 otherwise). */
export async function loadServer(ctx: RequestContext, serverId: string): Promise<WorkflowMcpServerRecord> {
  const s = await ctx.services.store.workflowMcpServers.get(serverId);
  if (!s) throw notFound('Workflow MCP server');
  await ctx.authorizeWorkspace(s.workspaceId, { resource: 'Workflow MCP server' });
  return s;
}

export const listWorkflowMcpServers: Handler<'listWorkflowMcpServers'> = async ({ query, ctx }) => {
  const limit = query.limit ?? 50;
  const sortBy = query.sortBy ?? 'createdAt';
  const order = query.sortOrder ?? 'desc';
  const binding = { workspaceId: query.workspaceId, sortBy, order };
  const after = readCursor(ctx, query.cursor, binding);
  const { store } = ctx.services;
  const rows = await store.workflowMcpServers.list({ workspaceId: query.workspaceId, sortBy, order, after, limit: limit + 1 });
  const keyOf = (s: WorkflowMcpServerRecord) => [sortBy === 'name' ? s.name : sortBy === 'updatedAt' ? s.updatedAt : s.createdAt, s.id] as const;
  const page = toPage(ctx, rows, limit, binding, keyOf, (s) => s);
  let truncated = false;
  const data = await Promise.all(
    page.data.map(async (s) => {
      const tools = await store.workflowMcpServers.listTools(s.id, { limit: MAX_TOOLS_PER_SERVER + 1 });
      if (tools.length > MAX_LISTED_NAMES) truncated = true;
      return { ...serverView(ctx, s), toolCount: await store.workflowMcpServers.countTools(s.id), toolNames: tools.slice(0, MAX_LISTED_NAMES).map((t) => t.toolName) };
    }),
  );
  return { status: 200, body: { data, nextCursor: page.nextCursor, toolNamesTruncated: truncated } };
};

export const createWorkflowMcpServer: Handler<'createWorkflowMcpServer'> = async ({ body, principal, ctx }) => {
  const workspaceId = body.workspaceId;
  const workflowIds = body.workflowIds ?? [];
  const seen = new Set<string>();
  workflowIds.forEach((id, i) => {
    if (seen.has(id)) throw badRequest(`Workflow ${id} is listed twice.`, [{ code: 'duplicate', keys: [], path: ['body', 'workflowIds', i], message: 'Duplicate workflow id' }]);
    seen.add(id);
  });
  const at = now();
  const server: WorkflowMcpServerRecord = {
    id: sortableId(),
    workspaceId,
    name: body.name,
    description: body.description ?? null,
    isPublic: body.isPublic ?? false,
    createdBy: principal.userId,
    createdAt: at,
    updatedAt: at,
  };
  await ctx.mutate(async (tx, audit) => {
    const names = new Set<string>();
    const tools: WorkflowMcpToolRecord[] = [];
    for (const [i, id] of workflowIds.entries()) {
      const w = await publishableWorkflow(tx, workspaceId, id, ['body', 'workflowIds', i]);
      const toolName = normalizeToolName(w.name);
      if (names.has(toolName)) throw duplicateName(toolName);
      names.add(toolName);
      tools.push({ id: sortableId(), serverId: server.id, workflowId: w.id, toolName, toolDescription: null, parameterDescriptions: [], createdAt: at, updatedAt: at });
    }
    await tx.workflowMcpServers.insert(server);
    for (const t of tools) await tx.workflowMcpServers.insertTool(t);
    audit({
      action: 'workflow_mcp_server.created',
      resourceType: 'workflow_mcp_server',
      resourceId: server.id,
      resourceName: server.name,
      metadata: { isPublic: server.isPublic, workflowIds, toolNames: [...names] },
    });
  });
  return { status: 201, body: { data: serverView(ctx, server) } };
};

export const getWorkflowMcpServer: Handler<'getWorkflowMcpServer'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  return { status: 200, body: { data: serverView(ctx, s) } };
};

export const updateWorkflowMcpServer: Handler<'updateWorkflowMcpServer'> = async ({ params, body = {}, ctx }) => {
  const found = await loadServer(ctx, params.serverId);
  const updated = await ctx.mutate(async (tx, audit) => {
    const s = await tx.workflowMcpServers.get(found.id);
    if (!s) throw notFound('Workflow MCP server');
    const next: WorkflowMcpServerRecord = {
      ...s,
      name: body.name ?? s.name,
      description: body.description === undefined ? s.description : body.description,
      isPublic: body.isPublic ?? s.isPublic,
      updatedAt: now(),
    };
    await tx.workflowMcpServers.update(s.id, next);
    audit({
      action: 'workflow_mcp_server.updated',
      resourceType: 'workflow_mcp_server',
      resourceId: s.id,
      resourceName: next.name,
      workspaceId: s.workspaceId,
      metadata: { fields: Object.keys(body), isPublic: next.isPublic },
    });
    return next;
  });
  return { status: 200, body: { data: serverView(ctx, updated) } };
};

export const deleteWorkflowMcpServer: Handler<'deleteWorkflowMcpServer'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  await ctx.mutate(async (tx, audit) => {
    if (!(await tx.workflowMcpServers.delete(s.id))) throw notFound('Workflow MCP server');
    audit({ action: 'workflow_mcp_server.deleted', resourceType: 'workflow_mcp_server', resourceId: s.id, resourceName: s.name, workspaceId: s.workspaceId });
  });
  return { status: 200, body: { data: { id: s.id, deleted: true as const } } };
};

export const listWorkflowMcpTools: Handler<'listWorkflowMcpTools'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  const { store } = ctx.services;
  const tools = await store.workflowMcpServers.listTools(s.id, { limit: MAX_TOOLS_PER_SERVER });
  const data = await Promise.all(
    tools.map(async (t) => ({ ...toolBase(ctx, t), status: isServable(await store.workflows.get(t.workflowId)) ? ('active' as const) : ('inactive' as const) })),
  );
  return { status: 200, body: { data, nextCursor: null, truncated: false } };
};

export const deployWorkflowMcpTool: Handler<'deployWorkflowMcpTool'> = async ({ params, body, ctx }) => {
  if (body.toolDescription !== undefined && Buffer.byteLength(body.toolDescription) > MAX_DESCRIPTION_BYTES) {
    throw invalidField(['body', 'toolDescription'], `A tool description may have at most ${MAX_DESCRIPTION_BYTES} bytes.`, 'too_big');
  }
  if (body.parameterDescriptions && Buffer.byteLength(JSON.stringify(body.parameterDescriptions)) > MAX_SCHEMA_BYTES) {
    throw invalidField(['body', 'parameterDescriptions'], `Parameter descriptions may total at most ${MAX_SCHEMA_BYTES} bytes.`, 'too_big');
  }
  const s = await loadServer(ctx, params.serverId);
  const result = await ctx.mutate(async (tx, audit) => {
    if (!(await tx.workflowMcpServers.get(s.id))) throw notFound('Workflow MCP server');
    const w = await publishableWorkflow(tx, s.workspaceId, body.workflowId, ['body', 'workflowId']);
    const existing = await tx.workflowMcpServers.toolForWorkflow(s.id, w.id);
    const toolName = normalizeToolName(body.toolName ?? existing?.toolName ?? w.name);
    const holder = await tx.workflowMcpServers.toolByName(s.id, toolName);
    if (holder && holder.workflowId !== w.id) throw duplicateName(toolName);
    const at = now();
    let tool: WorkflowMcpToolRecord;
    if (existing) {
      tool = {
        ...existing,
        toolName,
        toolDescription: body.toolDescription ?? existing.toolDescription,
        parameterDescriptions: body.parameterDescriptions ?? existing.parameterDescriptions,
        updatedAt: at,
      };
      await onUniqueViolation(tx.workflowMcpServers.updateTool(tool), 'workflow_mcp_tools', ['server_id', 'tool_name'], () => duplicateName(toolName));
    } else {
      if ((await tx.workflowMcpServers.countTools(s.id)) >= MAX_TOOLS_PER_SERVER) {
        throw conflict(`A server holds at most ${MAX_TOOLS_PER_SERVER} tools.`, { code: 'too_many_tools', limit: MAX_TOOLS_PER_SERVER });
      }
      tool = {
        id: sortableId(),
        serverId: s.id,
        workflowId: w.id,
        toolName,
        toolDescription: body.toolDescription ?? null,
        parameterDescriptions: body.parameterDescriptions ?? [],
        createdAt: at,
        updatedAt: at,
      };
      await onUniqueViolation(tx.workflowMcpServers.insertTool(tool), 'workflow_mcp_tools', ['server_id', 'tool_name'], () => duplicateName(toolName));
    }
    audit({
      action: existing ? 'workflow_mcp_tool.updated' : 'workflow_mcp_tool.published',
      resourceType: 'workflow_mcp_server',
      resourceId: s.id,
      resourceName: s.name,
      workspaceId: s.workspaceId,
      metadata: { workflowId: w.id, toolName },
    });
    return { tool, updated: existing !== undefined };
  });
  return { status: 200, body: { data: { ...toolBase(ctx, result.tool), updated: result.updated } } };
};

export const undeployWorkflowMcpTool: Handler<'undeployWorkflowMcpTool'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  const removed = await ctx.mutate(async (tx, audit) => {
    const t = await tx.workflowMcpServers.deleteTool(s.id, params.workflowId);
    if (!t) throw notFound('Workflow MCP tool');
    audit({
      action: 'workflow_mcp_tool.unpublished',
      resourceType: 'workflow_mcp_server',
      resourceId: s.id,
      resourceName: s.name,
      workspaceId: s.workspaceId,
      metadata: { workflowId: t.workflowId, toolName: t.toolName },
    });
    return t;
  });
  return { status: 200, body: { data: { id: removed.id, serverId: s.id, workflowId: removed.workflowId, deleted: true as const } } };
};

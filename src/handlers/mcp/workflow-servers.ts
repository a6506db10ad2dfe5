// Workflow MCP servers: CRUD of the servers and publishing deployed workflows as their tools. The rules are
// src/mcp/workflow-servers.ts; the protocol endpoint that serves them is ./serve.ts; naming and schemas are
// src/mcp/tools.ts. Here the request is read, the workspace authorized and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { badRequest, invalidField } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { WorkflowMcpServerRecord, WorkflowMcpToolRecord } from '../../store/workflow-mcp-servers.ts';
import { MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES } from '../../mcp/tools.ts';
import * as servers from '../../mcp/workflow-servers.ts';
import { mcpServeUrl } from './shared.ts';

/** Until ./serve.ts imports them from their homes (./shared.ts, src/mcp/workflow-servers.ts). */

const apiEndpoint = (ctx: RequestContext, workflowId: string) => `${ctx.baseUrl}/api/v2/workflows/${encodeURIComponent(workflowId)}/execute`;

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

/** The server, if the caller can reach its workspace at the operation's role (404 otherwise). */
export async function loadServer(ctx: RequestContext, serverId: string): Promise<WorkflowMcpServerRecord> {
  const s = await servers.findServer(ctx.services.store, serverId);
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
  const rows = await servers.listServers(store, { workspaceId: query.workspaceId, sortBy, order, after, limit: limit + 1 });
  const keyOf = (s: WorkflowMcpServerRecord) => [sortBy === 'name' ? s.name : sortBy === 'updatedAt' ? s.updatedAt : s.createdAt, s.id] as const;
  const page = toPage(ctx, rows, limit, binding, keyOf, (s) => s);
  let truncated = false;
  const data = await Promise.all(
    page.data.map(async (s) => {
      const { toolCount, toolNames, truncated: more } = await servers.toolSummary(store, s.id);
      if (more) truncated = true;
      return { ...serverView(ctx, s), toolCount, toolNames };
    }),
  );
  return { status: 200, body: { data, nextCursor: page.nextCursor, toolNamesTruncated: truncated } };
};

export const createWorkflowMcpServer: Handler<'createWorkflowMcpServer'> = async ({ body, principal, ctx }) => {
  const workflowIds = body.workflowIds ?? [];
  const seen = new Set<string>();
  workflowIds.forEach((id, i) => {
    if (seen.has(id)) throw badRequest(`Workflow ${id} is listed twice.`, [{ code: 'duplicate', keys: [], path: ['body', 'workflowIds', i], message: 'Duplicate workflow id' }]);
    seen.add(id);
  });
  const input = { workspaceId: body.workspaceId, name: body.name, description: body.description ?? null, isPublic: body.isPublic ?? false, createdBy: principal.userId, workflowIds };
  const server = await ctx.mutate((tx, audit) => servers.createServer(tx, audit, input));
  return { status: 201, body: { data: serverView(ctx, server) } };
};

export const getWorkflowMcpServer: Handler<'getWorkflowMcpServer'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  return { status: 200, body: { data: serverView(ctx, s) } };
};

export const updateWorkflowMcpServer: Handler<'updateWorkflowMcpServer'> = async ({ params, body = {}, ctx }) => {
  const found = await loadServer(ctx, params.serverId);
  const change = { name: body.name, description: body.description, isPublic: body.isPublic, fields: Object.keys(body) };
  const updated = await ctx.mutate((tx, audit) => servers.updateServer(tx, audit, found.id, change));
  return { status: 200, body: { data: serverView(ctx, updated) } };
};

export const deleteWorkflowMcpServer: Handler<'deleteWorkflowMcpServer'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  await ctx.mutate((tx, audit) => servers.deleteServer(tx, audit, s));
  return { status: 200, body: { data: { id: s.id, deleted: true as const } } };
};

export const listWorkflowMcpTools: Handler<'listWorkflowMcpTools'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  const tools = await servers.listTools(ctx.services.store, s.id);
  const data = tools.map(({ tool, active }) => ({ ...toolBase(ctx, tool), status: active ? ('active' as const) : ('inactive' as const) }));
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
  const input = { workflowId: body.workflowId, toolName: body.toolName, toolDescription: body.toolDescription, parameterDescriptions: body.parameterDescriptions };
  const result = await ctx.mutate((tx, audit) => servers.publishTool(tx, audit, s, input));
  return { status: 200, body: { data: { ...toolBase(ctx, result.tool), updated: result.updated } } };
};

export const undeployWorkflowMcpTool: Handler<'undeployWorkflowMcpTool'> = async ({ params, ctx }) => {
  const s = await loadServer(ctx, params.serverId);
  const removed = await ctx.mutate((tx, audit) => servers.unpublishTool(tx, audit, s, params.workflowId));
  return { status: 200, body: { data: { id: removed.id, serverId: s.id, workflowId: removed.workflowId, deleted: true as const } } };
};

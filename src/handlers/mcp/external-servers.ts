// Registered external MCP servers: CRUD with write-only sealed headers and OAuth client secrets, and tool
// discovery. Talking to the servers, sealing and the tool cache are src/mcp/registry.ts.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, invalidField, notFound } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import { sortableId } from '../../domain/ids.ts';
import type { McpServerRecord } from '../../store/mcp-servers.ts';
import { advertisesOAuth, urlProblem } from '../../mcp/client.ts';
import { assertAccess } from '../../access-control/policy.ts';

const now = () => new Date().toISOString();
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRIES = 3;
/** Registration and updates wait at most this long for the first discovery. */
const PROBE_TIMEOUT_MS = 10_000;

export function mcpServerView(s: McpServerRecord) {
  return {
    id: s.id,
    name: s.name,
    ...(s.description !== null ? { description: s.description } : {}),
    transport: s.transport,
    authType: s.authType,
    url: s.url,
    timeout: s.timeoutMs,
    retries: s.retries,
    enabled: s.enabled,
    connectionStatus: s.connectionStatus,
    lastError: s.lastError,
    toolCount: s.toolCount,
    ...(s.lastToolsRefresh ? { lastToolsRefresh: s.lastToolsRefresh } : {}),
    ...(s.lastConnected ? { lastConnected: s.lastConnected } : {}),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    ...(s.oauthClientId ? { oauthClientId: s.oauthClientId } : {}),
    hasHeaders: s.headerNames.length > 0,
    headerNames: s.headerNames,
    hasOauthClientSecret: s.oauthClientSecretSealed !== null,
  };
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function checkHeaders(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw invalidField(['body', 'headers', name], `"${name}" is not a valid HTTP header name.`);
    if (/[\r\n\0]/.test(value)) throw invalidField(['body', 'headers', name], `The value of "${name}" may not contain line breaks.`);
  }
}

async function loadServer(ctx: RequestContext, id: string, workspaceId: string): Promise<McpServerRecord> {
  const s = await ctx.services.store.mcpServers.get(id);
  if (!s || s.workspaceId !== workspaceId) throw notFound('MCP server');
  return s;
}

/** Discovers the tools once, bounded, and answers the record as it is afterwards. */
async function probe(ctx: RequestContext, s: McpServerRecord): Promise<McpServerRecord> {
  if (!s.enabled) return s;
  return ctx.services.mcp.refresh(s, { timeoutMs: Math.min(s.timeoutMs, PROBE_TIMEOUT_MS), retries: 0 });
}

export const listMcpServers: Handler<'listMcpServers'> = async ({ query, ctx }) => {
  const limit = query.limit ?? 50;
  const sortBy = query.sortBy ?? 'createdAt';
  const order = query.sortOrder ?? 'desc';
  const binding = { workspaceId: query.workspaceId, search: query.search, sortBy, order };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.mcpServers.list({ workspaceId: query.workspaceId, search: query.search ?? null, sortBy, order, after, limit: limit + 1 });
  const keyOf = (s: McpServerRecord) => [sortBy === 'name' ? s.name : sortBy === 'updatedAt' ? s.updatedAt : s.createdAt, s.id] as const;
  return { status: 200, body: toPage(ctx, rows, limit, binding, keyOf, mcpServerView) };
};

export const createMcpServer: Handler<'createMcpServer'> = async ({ body, principal, ctx }) => {
  const { mcp } = ctx.services;
  await assertAccess(ctx.services.store, { workspaceId: body.workspaceId, userId: principal.userId }, { kind: 'feature', key: 'disableMcpTools', action: 'Adding MCP servers' });
  const problem = await urlProblem(mcp.egress, body.url);
  if (problem) throw invalidField(['body', 'url'], problem.message, problem.code === 'EGRESS_BLOCKED' ? 'egress_blocked' : 'invalid_url');
  const headers = body.headers ?? {};
  checkHeaders(headers);
  const timeoutMs = body.timeout ?? DEFAULT_TIMEOUT_MS;
  let authType = body.authType;
  if (!authType) authType = Object.keys(headers).length > 0 ? 'headers' : (await advertisesOAuth(mcp.egress, body.url, Math.min(timeoutMs, 5000))) ? 'oauth' : 'headers';
  const id = sortableId();
  const at = now();
  const server: McpServerRecord = {
    id,
    workspaceId: body.workspaceId,
    name: body.name,
    description: body.description ?? null,
    transport: 'streamable-http',
    url: body.url,
    authType,
    headersSealed: mcp.sealHeaders(id, headers),
    headerNames: Object.keys(headers),
    timeoutMs,
    retries: body.retries ?? DEFAULT_RETRIES,
    enabled: body.enabled ?? true,
    oauthClientId: body.oauthClientId ?? null,
    oauthClientSecretSealed: mcp.sealOAuthSecret(id, body.oauthClientSecret ?? null),
    connectionStatus: 'disconnected',
    lastError: null,
    toolCount: 0,
    tools: null,
    lastToolsRefresh: null,
    lastConnected: null,
    createdBy: principal.userId,
    createdAt: at,
    updatedAt: at,
  };
  await ctx.mutate(async (tx, audit) => {
    await tx.mcpServers.save(server);
    audit({
      action: 'mcp_server.created',
      resourceType: 'mcp_server',
      resourceId: id,
      resourceName: server.name,
      metadata: { url: server.url, authType, headerNames: server.headerNames, enabled: server.enabled },
    });
  });
  return { status: 201, body: { data: mcpServerView(await probe(ctx, server)) } };
};

export const getMcpServer: Handler<'getMcpServer'> = async ({ params, query, ctx }) => {
  return { status: 200, body: { data: mcpServerView(await loadServer(ctx, params.mcpServerId, query.workspaceId)) } };
};

export const updateMcpServer: Handler<'updateMcpServer'> = async ({ params, body, ctx }) => {
  const { mcp } = ctx.services;
  await loadServer(ctx, params.mcpServerId, body.workspaceId);
  if (body.headers) checkHeaders(body.headers);
  const updated = await ctx.mutate(async (tx, audit) => {
    const s = await tx.mcpServers.get(params.mcpServerId);
    if (!s || s.workspaceId !== body.workspaceId) throw notFound('MCP server');
    if (body.url !== undefined && body.url !== s.url) {
      throw invalidField(['body', 'url'], 'The URL of a registered MCP server cannot change; delete the server and register it again.', 'immutable');
    }
    const next: McpServerRecord = { ...s, updatedAt: now() };
    if (body.name !== undefined) next.name = body.name;
    if (body.description !== undefined) next.description = body.description;
    if (body.timeout !== undefined) next.timeoutMs = body.timeout;
    if (body.retries !== undefined) next.retries = body.retries;
    if (body.enabled !== undefined) next.enabled = body.enabled;
    if (body.authType !== undefined) next.authType = body.authType;
    if (body.headers !== undefined) {
      next.headersSealed = mcp.sealHeaders(s.id, body.headers);
      next.headerNames = Object.keys(body.headers);
    }
    if (body.oauthClientId !== undefined) next.oauthClientId = body.oauthClientId;
    if (body.oauthClientSecret !== undefined) next.oauthClientSecretSealed = mcp.sealOAuthSecret(s.id, body.oauthClientSecret);
    const reconnect = ['headers', 'authType', 'enabled', 'timeout'].some((k) => (body as Record<string, unknown>)[k] !== undefined);
    if (reconnect) {
      next.connectionStatus = 'disconnected';
      next.lastError = null;
    }
    await tx.mcpServers.save(next);
    audit({
      action: 'mcp_server.updated',
      resourceType: 'mcp_server',
      resourceId: s.id,
      resourceName: next.name,
      metadata: { fields: Object.keys(body).filter((k) => k !== 'workspaceId'), headerNames: next.headerNames },
    });
    return { record: next, reconnect };
  });
  const record = updated.reconnect ? await probe(ctx, updated.record) : updated.record;
  return { status: 200, body: { data: mcpServerView(record) } };
};

export const deleteMcpServer: Handler<'deleteMcpServer'> = async ({ params, query, ctx }) => {
  const s = await loadServer(ctx, params.mcpServerId, query.workspaceId);
  await ctx.mutate(async (tx, audit) => {
    if (!(await tx.mcpServers.delete(s.id))) throw notFound('MCP server');
    audit({ action: 'mcp_server.deleted', resourceType: 'mcp_server', resourceId: s.id, resourceName: s.name });
  });
  return { status: 200, body: { data: { id: s.id, deleted: true as const } } };
};

export const listMcpServerTools: Handler<'listMcpServerTools'> = async ({ params, query, ctx }) => {
  const s = await loadServer(ctx, params.mcpServerId, query.workspaceId);
  const { server, tools } = await ctx.services.mcp.toolsOf(s, { refresh: query.refresh === true });
  if (!tools) {
    const blocked = /egress/i.test(server.lastError ?? '');
    throw new ApiError('SERVICE_UNAVAILABLE', `The MCP server "${server.name}" could not be reached: ${server.lastError ?? 'unknown error'}`, {
      code: blocked ? 'EGRESS_BLOCKED' : 'MCP_SERVER_UNREACHABLE',
      connectionStatus: server.connectionStatus,
      lastError: server.lastError,
    });
  }
  return { status: 200, body: { data: tools.map((t) => ({ ...t, serverId: server.id, serverName: server.name })), nextCursor: null } };
};

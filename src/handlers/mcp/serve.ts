// The workflow MCP server endpoint, `/api/mcp/serve/{serverId}`. It is a spec operation like any other
// (`security: []`: the server decides who may connect, since a public server needs no credential); the
// protocol itself is src/mcp/serve.ts on the MCP SDK, and a tool call is a run on the run machinery
// (trigger `mcp`, the caller's synchronous execution bucket, billed to the workspace like any run).
import type { Handler, HandlerResult } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, forbidden, notFound, unauthorized } from '../../http/errors.ts';
import { principalFromHeaders } from '../../http/pipeline.ts';
import { recordAudit, type AuditEntry } from '../../audit/recorder.ts';
import { workspaceAccess, type WorkspaceAccess } from '../../identity/access.ts';
import { decide } from '../../identity/policy.ts';
import { API_KEY_SCOPES, hasScope, roleAtLeast, type Principal } from '../../identity/principal.ts';
import type { WorkflowMcpServerRecord } from '../../store/workflow-mcp-servers.ts';
import { handleMcpPost, McpServeError, SERVE_INFO_PROTOCOL_VERSION, SERVE_VERSION, type McpServeBackend } from '../../mcp/serve.ts';
import { inputSchemaFor, toolDescriptionFor, TOOLS_PAGE_SIZE } from '../../mcp/tools.ts';
import { createRun } from '../run-support.ts';
import { isServable, mcpServeUrl } from './workflow-servers.ts';

type AnyCtx = RequestContext<Principal | null>;

/** Largest tool result a call answers (the run itself still completes and keeps its output). */
const MAX_RESULT_BYTES = 10 * 1024 * 1024;

interface Caller {
  /** Who runs the tools: the credential's user, or the creator of a public server. */
  principal: Principal;
  access: WorkspaceAccess;
  /** Whether the caller may run tools (write role and, for tokens, the api:write scope). */
  canExecute: boolean;
}

/**
 * Who is calling and on whose behalf tools run. A credential, when sent, must be valid (401) and reach the
 * server's workspace (a workspace key of another workspace is 403, a non-member 404); without one only a
 * public server answers, acting as its creator.
 */
async function authorize(ctx: AnyCtx, server: WorkflowMcpServerRecord, options: { requireCredential?: boolean } = {}): Promise<Caller> {
  const { services } = ctx;
  const credential = await principalFromHeaders(services, ctx.header('x-api-key'), ctx.header('authorization'));
  if (!credential) {
    if (!server.isPublic || options.requireCredential) {
      throw unauthorized('This MCP server needs an API key (X-API-Key) or an access token (Authorization: Bearer).');
    }
    const workspace = await services.store.workspaces.get(server.workspaceId);
    const role = await services.store.members.role(server.workspaceId, server.createdBy);
    if (!workspace) throw notFound('Workflow MCP server');
    const principal: Principal = {
      userId: server.createdBy,
      kind: 'personal',
      credentialId: `public-mcp-server:${server.id}`,
      workspaceId: null,
      scopes: API_KEY_SCOPES,
      expiresAt: null,
      plan: workspace.plan,
      subject: `user:${server.createdBy}`,
    };
    return { principal, access: { workspace, role: role ?? 'read' }, canExecute: role !== undefined && role !== null && roleAtLeast(role, 'write') };
  }
  if (credential.kind === 'workspace' && credential.workspaceId !== server.workspaceId) {
    throw forbidden('This workspace API key belongs to another workspace.', { code: 'WORKSPACE_KEY_MISMATCH' });
  }
  const decision = await workspaceAccess(services.store, credential, server.workspaceId);
  const denial = decide(credential, { scope: 'api:read', rejectsWorkspaceKeys: false, minRole: 'read', plans: null }, decision);
  if (denial) throw denial.status === 404 ? notFound('Workflow MCP server') : forbidden(denial.message, denial.details);
  const access = (decision as Extract<typeof decision, { ok: true }>).access;
  return { principal: credential, access, canExecute: roleAtLeast(access.role, 'write') && hasScope(credential, 'api:write') };
}

async function loadServer(ctx: AnyCtx, serverId: string): Promise<WorkflowMcpServerRecord> {
  const server = await ctx.services.store.workflowMcpServers.get(serverId);
  if (!server) throw notFound('Workflow MCP server');
  return server;
}

/** The request context a run is accepted under: the acting caller, auditing as them. */
function runContext(ctx: AnyCtx, caller: Caller): RequestContext {
  const { store } = ctx.services;
  const workspaceId = caller.access.workspace.id;
  return {
    ...ctx,
    principal: caller.principal,
    workspace: caller.access,
    mutate: (fn) =>
      store.transaction(async (tx) => {
        const entries: AuditEntry[] = [];
        const result = await fn(tx, (entry) => entries.push(entry));
        for (const entry of entries) await recordAudit(tx, caller.principal, workspaceId, entry);
        return result;
      }),
  } as RequestContext;
}

function backendFor(ctx: AnyCtx, server: WorkflowMcpServerRecord, caller: Caller): McpServeBackend {
  const { store, runs, config, rateLimits } = ctx.services;
  return {
    serverName: server.name,
    instructions: server.description ?? undefined,
    async listTools(cursor) {
      const rows = await store.workflowMcpServers.listTools(server.id, { afterId: cursor ?? null, limit: TOOLS_PAGE_SIZE + 1 });
      const more = rows.length > TOOLS_PAGE_SIZE;
      const page = rows.slice(0, TOOLS_PAGE_SIZE);
      const tools = [];
      for (const t of page) {
        const w = await store.workflows.get(t.workflowId);
        if (!isServable(w) || w.workspaceId !== server.workspaceId) continue;
        const definition = await runs.definitionFor({ workflowId: w.id, source: 'deployment', deploymentVersionId: w.activeVersionId });
        if (!definition) continue;
        tools.push({ name: t.toolName, description: toolDescriptionFor(t.toolDescription, w), inputSchema: inputSchemaFor(definition.state, t.parameterDescriptions) });
      }
      return more ? { tools, nextCursor: page.at(-1)!.id } : { tools };
    },
    async callTool(name, args) {
      if (!caller.canExecute) {
        throw new McpServeError(403, 'FORBIDDEN', 'Calling a tool runs a workflow: it needs the write role in the workspace (and the api:write scope for tokens).');
      }
      const tool = await store.workflowMcpServers.toolByName(server.id, name);
      if (!tool) throw new McpServeError(404, 'TOOL_NOT_FOUND', `This server has no tool named "${name}".`);
      const w = await store.workflows.get(tool.workflowId);
      if (!isServable(w) || w.workspaceId !== server.workspaceId) {
        throw new McpServeError(404, 'TOOL_NOT_DEPLOYED', `The workflow behind "${name}" is not deployed; the tool is inactive.`);
      }
      // The same synchronous-execution bucket an API execute draws from.
      const capacity = config.rateLimits[caller.principal.plan].sync;
      const taken = await rateLimits.take(`${caller.principal.subject}:sync`, capacity, Date.now());
      if (!taken.allowed) {
        const seconds = Math.max(1, Math.ceil((taken.retryAtMs - Date.now()) / 1000));
        throw new McpServeError(429, 'RATE_LIMITED', `Rate limit of ${taken.limit} sync executions per minute reached; retry in ${seconds} s.`, { retryable: true });
      }
      const run = await createRun(runContext(ctx, caller), w, caller.access.workspace, {
        mode: 'sync',
        source: 'deployment',
        trigger: 'mcp',
        input: args,
        runId: null,
        triggerBlockId: null,
        timeoutMs: null,
      });
      const result = await runs.execute(run, { timeoutMs: config.runs.syncTimeoutMs });
      if (result.error?.code === 'TIMEOUT') {
        throw new McpServeError(408, 'TIMEOUT', `Run ${run.key} did not finish within ${config.runs.syncTimeoutMs} ms.`, { retryable: true });
      }
      const failed = result.status === 'failed' || result.status === 'cancelled';
      const payload = failed
        ? { success: false, executionId: run.key, output: result.output ?? null, error: result.error?.message ?? `The run ${result.status}.` }
        : (result.output ?? null);
      const text = JSON.stringify(payload);
      if (Buffer.byteLength(text) > MAX_RESULT_BYTES) {
        throw new McpServeError(413, 'RESPONSE_TOO_LARGE', `The output of run ${run.key} is larger than ${MAX_RESULT_BYTES} bytes; read it from the run instead.`);
      }
      return { content: [{ type: 'text', text }], ...(failed ? { isError: true } : {}) };
    },
  };
}

export const postMcpServeMessage: Handler<'postMcpServeMessage'> = async ({ params, body, ctx }) => {
  const server = await loadServer(ctx, params.serverId);
  const caller = await authorize(ctx, server);
  const exchange = await handleMcpPost(
    backendFor(ctx, server, caller),
    body,
    mcpServeUrl(ctx, server.id),
    {
      accept: ctx.header('accept'),
      'content-type': 'application/json',
      'mcp-protocol-version': ctx.header('mcp-protocol-version'),
    },
    (err) => ctx.log.error({ err, serverId: server.id }, 'an MCP request failed'),
  );
  // JSON-RPC errors the protocol layer answers with 400, 404 or 406 are declared in the spec; the generated
  // result type lists only the 2xx answers.
  return { status: exchange.status, headers: exchange.headers, body: exchange.body } as HandlerResult<'postMcpServeMessage'>;
};

export const getMcpServeInfo: Handler<'getMcpServeInfo'> = async ({ params, ctx }) => {
  const server = await loadServer(ctx, params.serverId);
  await authorize(ctx, server);
  if ((ctx.header('accept') ?? '').includes('text/event-stream')) {
    throw new ApiError('METHOD_NOT_ALLOWED', 'This server sends no SSE stream; POST each message and read the JSON answer.', undefined, {
      'X-MCP-Supported-Transport': 'streamable-http',
      Allow: 'POST, GET, DELETE',
    });
  }
  return { status: 200, body: { name: server.name, version: SERVE_VERSION, protocolVersion: SERVE_INFO_PROTOCOL_VERSION, capabilities: { tools: {} } } };
};

export const deleteMcpServeSession: Handler<'deleteMcpServeSession'> = async ({ params, ctx }) => {
  const server = await loadServer(ctx, params.serverId);
  await authorize(ctx, server, { requireCredential: true });
  return { status: 204, body: undefined };
};

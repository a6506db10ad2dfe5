// The workflow MCP server endpoint, `/api/mcp/serve/{serverId}`. It is a spec operation like any other
// (`security: []`: the server decides who may connect, since a public server needs no credential); the
// protocol itself is src/mcp/serve.ts on the MCP SDK, and a tool call is a run on the run machinery
// (trigger `mcp`, the caller's synchronous execution bucket, billed to the workspace like any run).
import type { Handler, HandlerInput, HandlerResult } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, forbidden, notFound, unauthorized } from '../../http/errors.ts';
import { principalFromHeaders } from '../../http/pipeline.ts';
import { workspaceAccess, type WorkspaceAccess } from '../../identity/access.ts';
import { decide } from '../../identity/policy.ts';
import { API_KEY_SCOPES, hasScope, roleAtLeast, type Principal } from '../../identity/principal.ts';
import type { WorkflowMcpServerRecord } from '../../store/workflow-mcp-servers.ts';
import { handleMcpPost, McpServeError, SERVE_INFO_PROTOCOL_VERSION, SERVE_VERSION, type McpServeBackend } from '../../mcp/serve.ts';
import { inputSchemaFor, toolDescriptionFor, TOOLS_PAGE_SIZE } from '../../mcp/tools.ts';
import { acceptRun } from '../../runs/lifecycle.ts';
import { actingAs } from '../../domain/changes.ts';
import { isServable } from '../../mcp/workflow-servers.ts';
import { mcpServeUrl } from './shared.ts';

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

const NEEDS_CREDENTIAL = 'This MCP server needs an API key (X-API-Key) or an access token (Authorization: Bearer).';

/** A public server's caller, whoever sent the request: its tools run as the server's creator. */
async function publicCaller(ctx: AnyCtx, server: WorkflowMcpServerRecord): Promise<Caller> {
  const { store } = ctx.services;
  const workspace = await store.workspaces.get(server.workspaceId);
  const role = await store.members.role(server.workspaceId, server.createdBy);
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

const SERVE_POLICY = { scope: 'api:read', rejectsWorkspaceKeys: false, minRole: 'read', plans: null } as const;

/**
 * The server a request names and who calls it. A public server ignores credentials entirely (none, an invalid
 * one or one of any workspace get the same answers), except that ending a session still needs a valid one.
 * Otherwise the credential is checked before the server is looked at, so without one (or with an invalid one)
 * a private server and an unknown id give the same 401 and ids cannot be probed; a valid credential that cannot
 * reach the server gets 404, as for any resource out of its reach.
 */
async function serverAndCaller(ctx: AnyCtx, serverId: string, options: { requireCredential?: boolean } = {}): Promise<{ server: WorkflowMcpServerRecord; caller: Caller | null }> {
  const { services } = ctx;
  const server = await services.store.workflowMcpServers.get(serverId);
  if (server?.isPublic && !options.requireCredential) return { server, caller: await publicCaller(ctx, server) };
  const credential = await principalFromHeaders(services, ctx.header('x-api-key'), ctx.header('authorization'));
  if (!credential) throw unauthorized(NEEDS_CREDENTIAL);
  const credentialDenial = decide(credential, SERVE_POLICY);
  if (credentialDenial) throw forbidden(credentialDenial.message, credentialDenial.details);
  if (!server) throw notFound('Workflow MCP server');
  if (server.isPublic) return { server, caller: null };
  const decision = await workspaceAccess(services.store, credential, server.workspaceId);
  const denial = decide(credential, SERVE_POLICY, decision);
  if (denial) throw denial.status === 404 ? notFound('Workflow MCP server') : forbidden(denial.message, denial.details);
  const access = (decision as Extract<typeof decision, { ok: true }>).access;
  return { server, caller: { principal: credential, access, canExecute: roleAtLeast(access.role, 'write') && hasScope(credential, 'api:write') } };
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
      // Accepted as the acting caller, auditing as them, like any other trigger.
      const run = await acceptRun(runs, actingAs(store, caller.principal, caller.access.workspace.id), {
        workflow: w,
        billingAccountId: caller.access.workspace.billingAccountId,
        mode: 'sync',
        source: 'deployment',
        trigger: 'mcp',
        input: args,
        runId: null,
        triggerBlockId: null,
        timeoutMs: null,
        triggeredBy: caller.principal.userId,
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

// Each operation is declared twice in the spec (at `/api/mcp/serve/{serverId}` and at the same path ending in `/mcp`);
// one function serves both, typed by its input so that it fits either operation.
const serveMessage = async ({ params, body, ctx }: HandlerInput<'postMcpServeMessage'>): Promise<HandlerResult<'postMcpServeMessage'>> => {
  const { server, caller } = await serverAndCaller(ctx, params.serverId);
  const exchange = await handleMcpPost(
    backendFor(ctx, server, caller!),
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

const serveInfo = async ({ params, ctx }: HandlerInput<'getMcpServeInfo'>): Promise<HandlerResult<'getMcpServeInfo'>> => {
  const { server } = await serverAndCaller(ctx, params.serverId);
  if ((ctx.header('accept') ?? '').includes('text/event-stream')) {
    throw new ApiError('METHOD_NOT_ALLOWED', 'This server sends no SSE stream; POST each message and read the JSON answer.', undefined, {
      'X-MCP-Supported-Transport': 'streamable-http',
      Allow: 'POST, GET, DELETE',
    });
  }
  return { status: 200, body: { name: server.name, version: SERVE_VERSION, protocolVersion: SERVE_INFO_PROTOCOL_VERSION, capabilities: { tools: {} } } };
};

const endSession = async ({ params, ctx }: HandlerInput<'deleteMcpServeSession'>): Promise<HandlerResult<'deleteMcpServeSession'>> => {
  await serverAndCaller(ctx, params.serverId, { requireCredential: true });
  return { status: 204, body: undefined };
};

export const postMcpServeMessage: Handler<'postMcpServeMessage'> = serveMessage;
export const getMcpServeInfo: Handler<'getMcpServeInfo'> = serveInfo;
export const deleteMcpServeSession: Handler<'deleteMcpServeSession'> = endSession;
// `/api/mcp/serve/{serverId}/mcp`: the same endpoint, for clients that only connect to URLs ending in `/mcp`.
export const postMcpServeMessageAtMcpPath: Handler<'postMcpServeMessageAtMcpPath'> = serveMessage;
export const getMcpServeInfoAtMcpPath: Handler<'getMcpServeInfoAtMcpPath'> = serveInfo;
export const deleteMcpServeSessionAtMcpPath: Handler<'deleteMcpServeSessionAtMcpPath'> = endSession;

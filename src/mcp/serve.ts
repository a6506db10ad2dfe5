// The protocol side of a workflow MCP server: one stateless, JSON-only Streamable HTTP exchange per POST, built
// on the official MCP SDK (its Server and web-standard transport). What the tools are and how a call runs is
// the backend's business (the handler wires it to the store and the run machinery). No Express here.
import type { CallToolResult, ListToolsResult, McpError } from '@modelcontextprotocol/sdk/types.js';

export const SERVE_VERSION = '1.0.0';

/** JSON-RPC 2.0's error codes (the SDK's ErrorCode), here so that an McpServeError needs no SDK loaded. */
const RPC_INVALID_PARAMS = -32602;
const RPC_INTERNAL_ERROR = -32603;
const RPC_METHOD_NOT_FOUND = -32601;

/** The MCP SDK (with zod, several MB of heap) is loaded with the first MCP request, not by every server at start. */
async function loadSdk() {
  const [{ Server }, { WebStandardStreamableHTTPServerTransport }, { AjvJsonSchemaValidator }, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Server,
    WebStandardStreamableHTTPServerTransport,
    types,
    /**
     * The SDK server builds a JSON Schema validator (a new Ajv) per instance unless given one; it only checks
     * elicitation answers, which this endpoint never asks for, so one is shared instead of built per request.
     */
    sharedValidator: new AjvJsonSchemaValidator(),
  };
}
let sdk: ReturnType<typeof loadSdk> | null = null;
/** What a plain GET reports (the protocol revision this endpoint first spoke). */
export const SERVE_INFO_PROTOCOL_VERSION = '2024-11-05';

export type ToolsPage = ListToolsResult;

/** Errors a backend raises inside a request; they become JSON-RPC errors with `data.httpStatus`, `code`, `retryable`. */
export class McpServeError extends Error {
  readonly httpStatus: number;
  readonly code: string;
  readonly retryable: boolean;
  readonly rpcCode: number;
  constructor(httpStatus: number, code: string, message: string, options: { retryable?: boolean; rpcCode?: number } = {}) {
    super(message);
    this.httpStatus = httpStatus;
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.rpcCode = options.rpcCode ?? (httpStatus === 404 || httpStatus === 400 ? RPC_INVALID_PARAMS : RPC_INTERNAL_ERROR);
  }
}

export interface McpServeBackend {
  serverName: string;
  /** Sent to clients as the server's `instructions` on initialize. */
  instructions?: string;
  listTools(cursor: string | undefined): Promise<ToolsPage>;
  callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
}

export interface McpExchange {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON-RPC reply; undefined for 202 (notifications). */
  body: unknown;
}

function rpcError({ McpError }: Awaited<ReturnType<typeof loadSdk>>['types'], err: unknown): McpError {
  if (err instanceof McpError) return err;
  if (err instanceof McpServeError) return new McpError(err.rpcCode, err.message, { httpStatus: err.httpStatus, code: err.code, retryable: err.retryable });
  return new McpError(RPC_INTERNAL_ERROR, 'The tool call failed on the server.', { httpStatus: 500, code: 'INTERNAL_ERROR', retryable: true });
}

/**
 * Handles one JSON-RPC message (already parsed) sent by POST. `headers` are the request's Accept, Content-Type
 * and MCP-Protocol-Version, which the SDK checks. A fresh SDK server and transport serve each request: the
 * endpoint keeps no sessions.
 */
export async function handleMcpPost(backend: McpServeBackend, message: unknown, url: string, headers: Record<string, string | undefined>, onError?: (err: unknown) => void): Promise<McpExchange> {
  const { Server, WebStandardStreamableHTTPServerTransport, types, sharedValidator } = await (sdk ??= loadSdk());
  const { CallToolRequestSchema, ListToolsRequestSchema } = types;
  const server = new Server(
    { name: backend.serverName, version: SERVE_VERSION },
    { capabilities: { tools: {} }, jsonSchemaValidator: sharedValidator, ...(backend.instructions ? { instructions: backend.instructions } : {}) },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    try {
      return await backend.listTools(request.params?.cursor);
    } catch (err) {
      if (!(err instanceof McpServeError)) onError?.(err);
      throw rpcError(types, err);
    }
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    try {
      return await backend.callTool(request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>);
    } catch (err) {
      if (!(err instanceof McpServeError)) onError?.(err);
      throw rpcError(types, err);
    }
  });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const forwarded = new Headers();
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) forwarded.set(k, v);
    const response = await transport.handleRequest(new Request(url, { method: 'POST', headers: forwarded }), { parsedBody: message });
    const text = await response.text();
    const body = text ? JSON.parse(text) : undefined;
    let status = response.status;
    // An unknown method is a JSON-RPC MethodNotFound, answered with HTTP 404.
    if (status === 200 && (body as { error?: { code?: number } } | undefined)?.error?.code === RPC_METHOD_NOT_FOUND) status = 404;
    const contentType = response.headers.get('content-type');
    return { status, headers: contentType && body !== undefined ? { 'Content-Type': contentType } : {}, body };
  } finally {
    // The answer is complete; tearing the per-request server down need not delay it.
    void server.close().catch(() => undefined);
  }
}

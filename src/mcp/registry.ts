// The registered external MCP servers of each workspace, as workflows use them: their tools (discovered and
// cached per server) and calling one. Headers and the OAuth client secret are sealed with the secrets vault
// and opened only to talk to the server. This is the one place that lists a workspace's MCP tools and calls
// them; the MCP tool block and the tool registry agents see both go through it. No HTTP here.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Store } from '../store/index.ts';
import type { McpServerRecord, McpToolDescriptor } from '../store/mcp-servers.ts';
import type { SecretVault } from '../secrets/vault.ts';
import type { EgressPolicy } from '../execution/egress.ts';
import { callTool, discoverTools, McpClientError, type McpEndpoint } from './client.ts';
import { inSpan } from '../ops/spans.ts';

/** Cached discoveries younger than this are reused without asking the server again. */
export const TOOLS_CACHE_MS = 5 * 60_000;

export interface WorkspaceMcpTool extends McpToolDescriptor {
  serverId: string;
  serverName: string;
}

export class McpToolError extends Error {
  readonly code: 'SERVER_NOT_FOUND' | 'SERVER_DISABLED' | 'TOOL_NOT_FOUND' | 'NEEDS_OAUTH' | McpClientError['code'];
  constructor(code: McpToolError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

const headersContext = (id: string) => `mcp-server/${id}/headers`;
const oauthSecretContext = (id: string) => `mcp-server/${id}/oauth-client-secret`;

export class McpRegistry {
  private readonly store: Store;
  private readonly vault: SecretVault;
  readonly egress: EgressPolicy;

  constructor(deps: { store: Store; vault: SecretVault; egress: EgressPolicy }) {
    this.store = deps.store;
    this.vault = deps.vault;
    this.egress = deps.egress;
  }

  /** Writes go through a transaction (the store's plain repositories read only). */
  private record(id: string, fields: Parameters<Store['mcpServers']['recordConnection']>[1]): Promise<void> {
    return this.store.transaction((tx) => tx.mcpServers.recordConnection(id, fields));
  }

  sealHeaders(serverId: string, headers: Record<string, string>): string | null {
    return Object.keys(headers).length ? this.vault.seal(JSON.stringify(headers), headersContext(serverId)) : null;
  }

  sealOAuthSecret(serverId: string, secret: string | null): string | null {
    return secret ? this.vault.seal(secret, oauthSecretContext(serverId)) : null;
  }

  endpointOf(server: McpServerRecord, timeoutMs = server.timeoutMs): McpEndpoint {
    const headers = server.headersSealed ? (JSON.parse(this.vault.open(server.headersSealed, headersContext(server.id))) as Record<string, string>) : {};
    return { url: server.url, headers: server.authType === 'none' ? {} : headers, timeoutMs, retries: server.retries };
  }

  /**
   * Asks the server for its tools and records the outcome (status, last error, tool count, the tools). Never
   * throws for the server's failures: they are in the returned record. `timeoutMs` bounds the attempt.
   */
  async refresh(server: McpServerRecord, options: { timeoutMs?: number; retries?: number } = {}): Promise<McpServerRecord> {
    if (server.authType === 'oauth') {
      const lastError = 'The server asks for OAuth authorization, which this server cannot perform yet; register it with authType "headers" and a token header instead.';
      await this.record(server.id, { connectionStatus: 'disconnected', lastError });
      return { ...server, connectionStatus: 'disconnected', lastError };
    }
    const endpoint = { ...this.endpointOf(server, options.timeoutMs ?? server.timeoutMs), retries: options.retries ?? server.retries };
    const at = new Date().toISOString();
    try {
      const tools = await discoverTools(this.egress, endpoint);
      await this.record(server.id, { connectionStatus: 'connected', lastError: null, lastConnected: at, tools, refreshedAt: at });
      return { ...server, connectionStatus: 'connected', lastError: null, lastConnected: at, tools, toolCount: tools.length, lastToolsRefresh: at };
    } catch (err) {
      const lastError = err instanceof Error ? err.message : String(err);
      await this.record(server.id, { connectionStatus: 'error', lastError });
      return { ...server, connectionStatus: 'error', lastError };
    }
  }

  /** The server's tools: the cached discovery while fresh (any member's), else a new one. */
  async toolsOf(server: McpServerRecord, options: { refresh?: boolean } = {}): Promise<{ server: McpServerRecord; tools: McpToolDescriptor[] | null }> {
    const fresh = server.tools && server.lastToolsRefresh && Date.now() - Date.parse(server.lastToolsRefresh) < TOOLS_CACHE_MS;
    if (!options.refresh && fresh) return { server, tools: server.tools };
    const updated = await this.refresh(server);
    return { server: updated, tools: updated.connectionStatus === 'connected' ? updated.tools : null };
  }

  /** Every tool of the workspace's enabled servers (servers that cannot be reached contribute none). */
  async listWorkspaceTools(workspaceId: string): Promise<WorkspaceMcpTool[]> {
    const out: WorkspaceMcpTool[] = [];
    let after: readonly [string, string] | null = null;
    for (;;) {
      const servers = await this.store.mcpServers.list({ workspaceId, search: null, sortBy: 'createdAt', order: 'asc', after, limit: 100, enabledOnly: true });
      for (const server of servers) {
        const { tools } = await this.toolsOf(server);
        for (const t of tools ?? []) out.push({ ...t, serverId: server.id, serverName: server.name });
      }
      if (servers.length < 100) return out;
      const last = servers.at(-1)!;
      after = [last.createdAt, last.id];
    }
  }

  /** Calls a tool of one of the workspace's servers. A tool's own failure comes back as `isError`, not thrown. */
  async callTool(workspaceId: string, serverId: string, toolName: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    const server = await this.store.mcpServers.get(serverId);
    if (!server || server.workspaceId !== workspaceId) throw new McpToolError('SERVER_NOT_FOUND', `No MCP server ${serverId} in this workspace.`);
    if (!server.enabled) throw new McpToolError('SERVER_DISABLED', `The MCP server "${server.name}" is disabled.`);
    if (server.authType === 'oauth') throw new McpToolError('NEEDS_OAUTH', `The MCP server "${server.name}" needs OAuth authorization, which this server cannot perform yet.`);
    try {
      // The HTTP requests of the call are client spans inside this one (src/execution/egress.ts).
      const result = await inSpan('mcp.tools/call', { attributes: { 'owa.mcp.server_id': server.id, 'gen_ai.tool.name': toolName, 'owa.workspace.id': workspaceId } }, () => callTool(this.egress, this.endpointOf(server), toolName, args, signal));
      await this.record(server.id, { connectionStatus: 'connected', lastError: null, lastConnected: new Date().toISOString() });
      return result;
    } catch (err) {
      const e = err instanceof McpClientError ? err : new McpClientError('PROTOCOL', String(err));
      // A refused connection is the server's state; a protocol error about this one call is not.
      if (e.code !== 'PROTOCOL') await this.record(server.id, { connectionStatus: 'error', lastError: e.message });
      if (/tool .*not found|unknown tool/i.test(e.message)) throw new McpToolError('TOOL_NOT_FOUND', `The MCP server "${server.name}" has no tool "${toolName}": ${e.message}`);
      throw new McpToolError(e.code, e.message);
    }
  }
}

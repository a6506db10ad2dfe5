// The workspace's MCP tools as a provider for the shared tool registry agents see (the registry lives on the
// resources branch: `services.tools.registerTool(mcpToolProvider(services.mcp))`). The shapes below are the
// registry's Tool/ToolProvider, written structurally so this module does not depend on it. Tool ids are
// `mcp_<8 hex of the server id>_<tool name>`, at most 64 characters, stable while the server exists.
import { createHash } from 'node:crypto';
import type { McpRegistry, WorkspaceMcpTool } from './registry.ts';
import { mcpOutput } from './result.ts';

export interface McpProvidedTool {
  id: string;
  name: string;
  description: string;
  hostedApiKey: 'none';
  inputSchema: Record<string, unknown>;
  outputs: Record<string, { type: string; description?: string }>;
  execute(input: Record<string, unknown>, call: { workspaceId: string; signal: AbortSignal }): Promise<unknown>;
}

export interface McpToolProvider {
  name: 'mcp';
  list(workspaceId: string): Promise<McpProvidedTool[]>;
  get(workspaceId: string, toolId: string): Promise<McpProvidedTool | undefined>;
}

const OUTPUTS = {
  result: { type: 'any', description: 'The structured result, else the text parsed as JSON when it is JSON, else the text.' },
  text: { type: 'string', description: 'The text content of the answer.' },
  content: { type: 'array', description: "The answer's content items as the server sent them." },
};

export function mcpToolId(serverId: string, toolName: string): string {
  const tag = createHash('sha256').update(serverId).digest('hex').slice(0, 8);
  return `mcp_${tag}_${toolName.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

function provided(mcp: McpRegistry, t: WorkspaceMcpTool): McpProvidedTool {
  return {
    id: mcpToolId(t.serverId, t.name),
    name: `${t.serverName}: ${t.name}`,
    description: t.description ?? `Tool ${t.name} of the MCP server ${t.serverName}`,
    hostedApiKey: 'none',
    inputSchema: { ...t.inputSchema, properties: t.inputSchema.properties ?? {} },
    outputs: OUTPUTS,
    async execute(input, call) {
      return mcpOutput(await mcp.callTool(call.workspaceId, t.serverId, t.name, input, call.signal), t.name);
    },
  };
}

/** Lists the tools of the workspace's enabled MCP servers and calls them through the registry in ./registry.ts. */
export function mcpToolProvider(mcp: McpRegistry): McpToolProvider {
  return {
    name: 'mcp',
    async list(workspaceId) {
      return (await mcp.listWorkspaceTools(workspaceId)).map((t) => provided(mcp, t));
    },
    async get(workspaceId, toolId) {
      if (!toolId.startsWith('mcp_')) return undefined;
      return (await this.list(workspaceId)).find((t) => t.id === toolId);
    },
  };
}

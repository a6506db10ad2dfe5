// What the MCP Servers handlers share: the URL a workflow MCP server is served at.
import type { RequestContext } from '../../http/context.ts';

export const mcpServeUrl = (ctx: RequestContext<any>, serverId: string) => `${ctx.baseUrl}/api/mcp/serve/${encodeURIComponent(serverId)}`;

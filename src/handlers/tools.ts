// The tool catalog (listTools, getTool) and executeTool, all over the one tool registry (src/tools).
import type { Handler } from '../../generated/handlers.ts';
import { ApiError, badRequest, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { ToolInputError, type Tool } from '../tools/registry.ts';
import { pageInMemory } from './list-support.ts';

const summary = (t: Tool) => ({
  id: t.id,
  name: t.name,
  description: t.description,
  ...(t.version ? { version: t.version } : {}),
  hostedApiKey: t.hostedApiKey,
  ...(t.oauth ? { oauth: t.oauth } : {}),
});

export const listTools: Handler<'listTools'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'id';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, search: query.search, hostedApiKey: query.hostedApiKey, oauthProvider: query.oauthProvider, sortBy, sortOrder };
  const search = query.search?.toLowerCase();
  const tools = (await ctx.services.tools.list(query.workspaceId)).filter(
    (t) =>
      (!search || [t.id, t.name, t.description].some((v) => v.toLowerCase().includes(search))) &&
      (!query.hostedApiKey || t.hostedApiKey === query.hostedApiKey) &&
      (!query.oauthProvider || t.oauth?.provider === query.oauthProvider),
  );
  const key = (t: Tool): [string, string] => [sortBy === 'name' ? t.name : t.id, t.id];
  const rows = pageInMemory(tools, key, sortOrder, readCursor(ctx, query.cursor, binding), limit);
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, summary) };
};

export const getTool: Handler<'getTool'> = async ({ params, query, ctx }) => {
  const tool = await ctx.services.tools.get(query.workspaceId, params.toolId);
  if (!tool) throw notFound('Tool');
  return { status: 200, body: { data: { ...summary(tool), params: ctx.services.tools.paramsOf(tool), outputs: tool.outputs } } };
};

export const executeTool: Handler<'executeTool'> = async ({ params, body, ctx }) => {
  const registry = ctx.services.tools;
  const tool = await registry.get(body.workspaceId, params.toolId);
  if (!tool) throw notFound('Tool');
  if (tool.oauth?.required && !body.credentialId) {
    throw badRequest(`The tool ${tool.id} needs an OAuth credential of ${tool.oauth.provider}: send credentialId.`, [
      { code: 'custom', keys: [], path: ['body', 'credentialId'], message: 'credentialId is required for this tool' },
    ]);
  }
  try {
    const { durationMs: _d, ...execution } = await registry.execute(tool, (body.input ?? {}) as Record<string, unknown>, {
      workspaceId: body.workspaceId,
      userId: ctx.principal.userId,
      timeoutMs: body.timeoutSeconds ? body.timeoutSeconds * 1000 : ctx.services.config.tools.timeoutMs,
      credentialId: body.credentialId,
      accessToken: (id) => ctx.services.workspaceCredentials.accessToken(body.workspaceId, id),
      source: 'api',
    });
    return { status: 200, body: { data: execution } };
  } catch (e) {
    if (e instanceof ToolInputError) throw new ApiError('BAD_REQUEST', e.message, e.issues.map((i) => ({ code: 'invalid_input', keys: [], path: ['body', ...i.path], message: i.message })));
    throw e;
  }
};

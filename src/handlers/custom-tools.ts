// Handlers for the Custom Tools operations. The schema is checked as a function declaration; the code runs only
// when the tool is called (executeTool or an agent), in the function sandbox.
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../generated/handlers.ts';
import { badRequest, conflict, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { tagOf } from '../http/conditional.ts';
import type { Repositories } from '../store/index.ts';
import type { CustomToolRecord } from '../store/custom-tools.ts';
import { functionSchemaIssues } from '../tools/custom-tools.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { assertAccess } from '../access-control/policy.ts';

const view = (t: CustomToolRecord) => ({ id: t.id, title: t.title, schema: t.schema, code: t.code, createdAt: t.createdAt, updatedAt: t.updatedAt });
/** A custom tool's entity tag is the hash of its answer, which is the whole stored tool. */
const toolTag = (t: CustomToolRecord) => tagOf(view(t));

function checkSchema(schema: unknown): asserts schema is CustomToolRecord['schema'] {
  const issues = functionSchemaIssues(schema);
  if (issues.length > 0) {
    throw badRequest(`Invalid function schema: ${issues.map((i) => i.message).join('; ')}`, issues.map((i) => ({ code: 'invalid_function_schema', keys: [], path: i.path, message: i.message })));
  }
}

async function titleTaken(tx: Pick<Repositories, 'customTools'>, workspaceId: string, title: string, exceptId?: string) {
  const other = await tx.customTools.getByTitle(workspaceId, title);
  if (other && other.id !== exceptId) throw toolTitleTaken(title);
}
const toolTitleTaken = (title: string) => conflict(`A custom tool titled "${title}" already exists in this workspace.`, { code: 'CUSTOM_TOOL_TITLE_TAKEN' });

const SORT = { title: (t: CustomToolRecord) => t.title, createdAt: (t: CustomToolRecord) => t.createdAt, updatedAt: (t: CustomToolRecord) => t.updatedAt };

export const listCustomTools: Handler<'listCustomTools'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, search: query.search, sortBy, sortOrder };
  const rows = await ctx.services.store.customTools.list({
    workspaceId: query.workspaceId,
    search: query.search,
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (t) => [SORT[sortBy](t), t.id], view) };
};

export const createCustomTool: Handler<'createCustomTool'> = async ({ body, ctx }) => {
  checkSchema(body.schema);
  const schema = body.schema;
  const tool = await ctx.mutate(async (tx, audit) => {
    await assertAccess(tx, { workspaceId: body.workspaceId, userId: ctx.principal.userId }, { kind: 'feature', key: 'disableCustomTools', action: 'Creating custom tools' });
    await titleTaken(tx, body.workspaceId, body.title);
    const now = new Date().toISOString();
    const record: CustomToolRecord = { id: randomUUID(), workspaceId: body.workspaceId, title: body.title, schema, code: body.code, createdBy: ctx.principal.userId, createdAt: now, updatedAt: now };
    await onUniqueViolation(tx.customTools.insert(record), 'custom_tools', ['workspace_id', 'title'], () => toolTitleTaken(record.title));
    audit({ action: 'custom_tool.created', resourceType: 'custom_tool', resourceId: record.id, resourceName: record.title });
    return record;
  });
  return { status: 200, body: { data: view(tool) } };
};

export const getCustomTool: Handler<'getCustomTool'> = async ({ params, query, ctx }) => {
  const tool = await ctx.services.store.customTools.get(query.workspaceId, params.customToolId);
  if (!tool) throw notFound('Custom tool');
  return { status: 200, body: { data: view(tool) }, headers: { ETag: toolTag(tool) } };
};

export const updateCustomTool: Handler<'updateCustomTool'> = async ({ params, body, ctx }) => {
  if (body.title === undefined && body.schema === undefined && body.code === undefined) throw invalidField(['body'], 'Send at least one of title, schema or code.');
  if (body.schema !== undefined) checkSchema(body.schema);
  const schema = body.schema as CustomToolRecord['schema'] | undefined;
  const tool = await ctx.mutate(async (tx, audit) => {
    const current = await tx.customTools.get(body.workspaceId, params.customToolId);
    if (!current) throw notFound('Custom tool');
    await assertAccess(tx, { workspaceId: body.workspaceId, userId: ctx.principal.userId }, { kind: 'feature', key: 'disableCustomTools', action: 'Changing custom tools' });
    ctx.precondition(() => toolTag(current));
    if (body.title !== undefined && body.title !== current.title) await titleTaken(tx, body.workspaceId, body.title, current.id);
    const next: CustomToolRecord = { ...current, title: body.title ?? current.title, schema: schema ?? current.schema, code: body.code ?? current.code, updatedAt: new Date().toISOString() };
    await onUniqueViolation(tx.customTools.update(next), 'custom_tools', ['workspace_id', 'title'], () => toolTitleTaken(next.title));
    audit({ action: 'custom_tool.updated', resourceType: 'custom_tool', resourceId: next.id, resourceName: next.title, metadata: { fields: Object.keys(body).filter((k) => k !== 'workspaceId') } });
    return next;
  });
  return { status: 200, body: { data: view(tool) }, headers: { ETag: toolTag(tool) } };
};

export const deleteCustomTool: Handler<'deleteCustomTool'> = async ({ params, query, ctx }) => {
  await ctx.mutate(async (tx, audit) => {
    const current = await tx.customTools.get(query.workspaceId, params.customToolId);
    if (!current) throw notFound('Custom tool');
    ctx.precondition(() => toolTag(current));
    await tx.customTools.delete(current.id);
    audit({ action: 'custom_tool.deleted', resourceType: 'custom_tool', resourceId: current.id, resourceName: current.title });
  });
  return { status: 200, body: { data: { id: params.customToolId, deleted: true as const } } };
};

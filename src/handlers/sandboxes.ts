// Handlers for the Sandboxes operations. Writes record the sandbox, then start its build in the background
// (src/sandboxes/builder.ts); reads show the build state as the builder records it.
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { conflict, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { checkSpec, SandboxSpecError, specHash, type SandboxSpec } from '../sandboxes/index.ts';
import type { Repositories } from '../store/index.ts';
import type { SandboxRecord } from '../store/sandboxes.ts';
import { onUniqueViolation } from '../store/errors.ts';

type CliTool = SandboxRecord['cliTools'][number];

const view = (s: SandboxRecord) => ({
  id: s.id,
  name: s.name,
  language: s.language,
  dependencies: s.dependencies,
  cliTools: s.cliTools as never[],
  systemPackages: s.systemPackages,
  buildStatus: s.buildStatus,
  errorCode: s.errorCode,
  errorMessage: s.errorMessage,
  errorDetail: s.errorDetail,
  builtAt: s.builtAt,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

function checked(spec: SandboxSpec): string {
  try {
    checkSpec(spec);
  } catch (e) {
    if (e instanceof SandboxSpecError) throw invalidField(['body', ...e.field.split(/[[\].]/).filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p))], e.message);
    throw e;
  }
  return specHash(spec);
}

async function nameTaken(tx: Pick<Repositories, 'sandboxes'>, workspaceId: string, name: string, exceptId?: string) {
  const other = await tx.sandboxes.getByName(workspaceId, name);
  if (other && other.id !== exceptId) throw sandboxNameTaken(name);
}
const sandboxNameTaken = (name: string) => conflict(`A sandbox named "${name}" already exists in this workspace.`, { code: 'SANDBOX_NAME_TAKEN' });

/** Starts the build after the change committed; an already built spec is ready at once. */
function startBuild(ctx: RequestContext, s: SandboxRecord): void {
  void ctx.services.sandboxes.build(s).catch((e) => ctx.log.warn({ err: e, sandboxId: s.id }, 'sandbox build failed to start'));
}

const initialState = (ctx: RequestContext, hash: string) =>
  ctx.services.sandboxes.isBuilt(hash)
    ? { buildStatus: 'ready' as const, errorCode: null, errorMessage: null, errorDetail: null, builtAt: new Date().toISOString() }
    : { buildStatus: 'pending' as const, errorCode: null, errorMessage: null, errorDetail: null, builtAt: null };

const SORT = { name: (s: SandboxRecord) => s.name, createdAt: (s: SandboxRecord) => s.createdAt, updatedAt: (s: SandboxRecord) => s.updatedAt };

export const listSandboxes: Handler<'listSandboxes'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, search: query.search, sortBy, sortOrder };
  const rows = await ctx.services.store.sandboxes.list({ workspaceId: query.workspaceId, search: query.search, sortBy, sortOrder, after: readCursor(ctx, query.cursor, binding), limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (s) => [SORT[sortBy](s), s.id], view) };
};

export const createSandbox: Handler<'createSandbox'> = async ({ body, ctx }) => {
  const spec: SandboxSpec = { language: body.language, dependencies: body.dependencies ?? [], cliTools: (body.cliTools ?? []) as CliTool[], systemPackages: body.systemPackages ?? [] };
  const hash = checked(spec);
  const sandbox = await ctx.mutate(async (tx, audit) => {
    await nameTaken(tx, body.workspaceId, body.name);
    const now = new Date().toISOString();
    const record: SandboxRecord = { id: randomUUID(), workspaceId: body.workspaceId, name: body.name, ...spec, specHash: hash, ...initialState(ctx, hash), createdBy: ctx.principal.userId, createdAt: now, updatedAt: now };
    await onUniqueViolation(tx.sandboxes.insert(record), 'sandboxes', ['workspace_id', 'name'], () => sandboxNameTaken(record.name));
    audit({ action: 'sandbox.created', resourceType: 'sandbox', resourceId: record.id, resourceName: record.name, metadata: { language: record.language, dependencies: record.dependencies.length } });
    return record;
  });
  if (sandbox.buildStatus === 'pending') startBuild(ctx, sandbox);
  return { status: 200, body: { data: view(sandbox) } };
};

export const getSandbox: Handler<'getSandbox'> = async ({ params, query, ctx }) => {
  const sandbox = await ctx.services.store.sandboxes.get(query.workspaceId, params.sandboxId);
  if (!sandbox) throw notFound('Sandbox');
  return { status: 200, body: { data: view(sandbox) } };
};

export const updateSandbox: Handler<'updateSandbox'> = async ({ params, body, ctx }) => {
  const fields = ['name', 'language', 'dependencies', 'cliTools', 'systemPackages'] as const;
  if (fields.every((f) => body[f] === undefined)) throw invalidField(['body'], `Send at least one of ${fields.join(', ')}.`);
  let rebuild = false;
  const sandbox = await ctx.mutate(async (tx, audit) => {
    const current = await tx.sandboxes.get(body.workspaceId, params.sandboxId);
    if (!current) throw notFound('Sandbox');
    if (body.name !== undefined && body.name !== current.name) await nameTaken(tx, body.workspaceId, body.name, current.id);
    const spec: SandboxSpec = {
      language: body.language ?? current.language,
      dependencies: body.dependencies ?? current.dependencies,
      cliTools: (body.cliTools ?? current.cliTools) as CliTool[],
      systemPackages: body.systemPackages ?? current.systemPackages,
    };
    const hash = checked(spec);
    rebuild = hash !== current.specHash;
    const next: SandboxRecord = { ...current, name: body.name ?? current.name, ...spec, specHash: hash, ...(rebuild ? initialState(ctx, hash) : {}), updatedAt: new Date().toISOString() };
    await onUniqueViolation(tx.sandboxes.update(next), 'sandboxes', ['workspace_id', 'name'], () => sandboxNameTaken(next.name));
    audit({ action: 'sandbox.updated', resourceType: 'sandbox', resourceId: next.id, resourceName: next.name, metadata: { fields: fields.filter((f) => body[f] !== undefined), rebuild } });
    return next;
  });
  if (rebuild && sandbox.buildStatus === 'pending') startBuild(ctx, sandbox);
  return { status: 200, body: { data: view(sandbox) } };
};

export const deleteSandbox: Handler<'deleteSandbox'> = async ({ params, query, ctx }) => {
  const deleted = await ctx.mutate(async (tx, audit) => {
    const current = await tx.sandboxes.get(query.workspaceId, params.sandboxId);
    if (!current) throw notFound('Sandbox');
    await tx.sandboxes.delete(current.id);
    audit({ action: 'sandbox.deleted', resourceType: 'sandbox', resourceId: current.id, resourceName: current.name });
    return current;
  });
  // Builds are shared by content address: the directory goes once no sandbox in any workspace uses it.
  await ctx.services.sandboxes.discard(deleted.specHash).catch((e) => ctx.log.warn({ err: e, sandboxId: deleted.id }, 'could not remove an unused sandbox build'));
  return { status: 200, body: { data: { id: params.sandboxId, deleted: true as const } } };
};

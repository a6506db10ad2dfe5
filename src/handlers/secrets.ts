// Handlers for the Secrets operations: metadata in, metadata out; values go into the vault and never come back
// (except an unredacted workspace secret's value in the list).
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { forbidden, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { roleAtLeast } from '../identity/principal.ts';
import { SecretError } from '../secrets/vault.ts';
import type { SecretRecord, SecretScope } from '../store/secrets.ts';

/** Writers and admins manage workspace secrets; everyone manages their own personal secrets. */
function canManage(ctx: RequestContext, scope: SecretScope): boolean {
  return scope === 'personal' || roleAtLeast(ctx.workspace!.role, 'write');
}

function requireManage(ctx: RequestContext, scope: SecretScope): void {
  if (!canManage(ctx, scope)) {
    throw forbidden('Changing workspace secrets needs the write role.', { code: 'INSUFFICIENT_WORKSPACE_ROLE', requiredRole: 'write', role: ctx.workspace!.role });
  }
}

const view = (ctx: RequestContext, s: SecretRecord) => ({
  name: s.name,
  scope: s.scope,
  description: s.scope === 'workspace' ? s.description || null : null,
  unredacted: s.scope === 'workspace' && s.unredacted,
  role: canManage(ctx, s.scope) ? ('admin' as const) : ('member' as const),
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

const SORT = { name: (s: SecretRecord) => s.name, createdAt: (s: SecretRecord) => s.createdAt, updatedAt: (s: SecretRecord) => s.updatedAt };

export const listSecrets: Handler<'listSecrets'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, scope: query.scope, search: query.search, sortBy, sortOrder };
  const rows = await ctx.services.store.secrets.list({
    workspaceId: query.workspaceId,
    userId: ctx.principal.userId,
    scope: query.scope,
    search: query.search,
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  const vault = ctx.services.secrets;
  const page = toPage(ctx, rows, limit, binding, (s) => [SORT[sortBy](s), s.id], (s) => ({
    ...view(ctx, s),
    ...(s.scope === 'workspace' && s.unredacted ? { value: vault.openRecord(s) } : {}),
  }));
  return { status: 200, body: page };
};

export const setSecret: Handler<'setSecret'> = async ({ params, body, ctx }) => {
  requireManage(ctx, body.scope);
  if (body.scope === 'personal') {
    for (const field of ['description', 'unredacted'] as const) {
      if (body[field] !== undefined) throw invalidField(['body', field], `${field} applies to workspace secrets only; a personal secret carries only a value.`);
    }
    if (body.value === undefined) throw invalidField(['body', 'value'], 'A personal secret needs a value.');
  }
  const record = await ctx.mutate(async (tx, audit) => {
    if (body.value === undefined && !(await tx.secrets.get(body.workspaceId, 'workspace', null, params.name))) {
      throw notFound(`Workspace secret ${params.name}`);
    }
    try {
      const saved = await ctx.services.secrets.set(tx, {
        workspaceId: body.workspaceId,
        scope: body.scope,
        ownerUserId: body.scope === 'personal' ? ctx.principal.userId : null,
        name: params.name,
        value: body.value,
        description: body.description,
        unredacted: body.unredacted,
        createdBy: ctx.principal.userId,
      });
      audit({
        action: saved.created ? 'secret.created' : 'secret.updated',
        resourceType: 'secret',
        resourceId: saved.id,
        resourceName: saved.name,
        metadata: { scope: saved.scope, valueChanged: body.value !== undefined, unredacted: saved.unredacted },
      });
      return saved;
    } catch (err) {
      if (err instanceof SecretError) throw invalidField(['body'], err.message);
      throw err;
    }
  });
  return { status: 200, body: { data: view(ctx, record) } };
};

export const deleteSecret: Handler<'deleteSecret'> = async ({ params, query, ctx }) => {
  requireManage(ctx, query.scope);
  await ctx.mutate(async (tx, audit) => {
    const existing = await tx.secrets.get(query.workspaceId, query.scope, query.scope === 'personal' ? ctx.principal.userId : null, params.name);
    if (!existing) throw notFound(`${query.scope === 'personal' ? 'Personal' : 'Workspace'} secret ${params.name}`);
    await tx.secrets.delete(existing.id);
    audit({ action: 'secret.deleted', resourceType: 'secret', resourceId: existing.id, resourceName: existing.name, metadata: { scope: existing.scope } });
  });
  return { status: 200, body: { data: { name: params.name, scope: query.scope, deleted: true as const } } };
};

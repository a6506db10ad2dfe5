// Handlers for the Credentials operations, over src/credentials (sealing, providers, the OAuth flow).
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { ApiError, conflict, forbidden, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { CredentialError } from '../credentials/service.ts';
import { howToConfigure, OAUTH_PROVIDERS, SERVICE_ACCOUNT_PROVIDERS } from '../credentials/providers.ts';
import type { CredentialRecord } from '../store/credentials.ts';
import { onUniqueViolation } from '../store/errors.ts';

const canManage = (ctx: RequestContext, c: CredentialRecord) => ctx.workspace?.role === 'admin' || c.createdBy === ctx.principal.userId;

const view = (ctx: RequestContext, c: CredentialRecord) => ({
  id: c.id,
  type: c.type,
  displayName: c.displayName,
  description: c.description,
  providerId: c.providerId,
  accountId: c.accountId,
  hasServiceAccountKey: c.type === 'service_account',
  role: canManage(ctx, c) ? ('admin' as const) : ('member' as const),
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

/** Credential failures as documented API errors. */
function apiError(e: unknown): unknown {
  if (!(e instanceof CredentialError)) return e;
  if (e.code === 'CREDENTIAL_NOT_FOUND') return notFound('Credential');
  return new ApiError('BAD_REQUEST', e.message, [{ code: e.code, keys: [], path: e.field ? ['body', e.field] : ['body'], message: e.message }]);
}

const SORT = { displayName: (c: CredentialRecord) => c.displayName, createdAt: (c: CredentialRecord) => c.createdAt, updatedAt: (c: CredentialRecord) => c.updatedAt };

export const listCredentials: Handler<'listCredentials'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, type: query.type, providerId: query.providerId, search: query.search, sortBy, sortOrder };
  const rows = await ctx.services.store.credentials.list({ ...binding, after: readCursor(ctx, query.cursor, binding), limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (c) => [SORT[sortBy](c), c.id], (c) => view(ctx, c)) };
};

export const listCredentialProviders: Handler<'listCredentialProviders'> = async ({ query, ctx }) => {
  const search = query.search?.toLowerCase();
  const creds = ctx.services.workspaceCredentials;
  const oauth = OAUTH_PROVIDERS.map((p) => ({
    type: 'oauth' as const,
    serviceId: p.id,
    name: p.name,
    description: `Connect ${p.name} with OAuth.`,
    providerFamily: p.family,
    available: creds.isConfigured(p.id),
    supportsReconnect: true,
    authorizationOptions: [{ providerId: p.id, label: p.name }],
    fields:
      p.id === 'quickbooks'
        ? [
            { id: 'clientId', label: 'Client ID', placeholder: '', required: true, secret: false, multiline: false },
            { id: 'clientSecret', label: 'Client secret', placeholder: '', required: true, secret: true, multiline: false },
          ]
        : [],
  }));
  const accounts = SERVICE_ACCOUNT_PROVIDERS.map((p) => ({
    type: 'service_account' as const,
    serviceId: p.providerId,
    name: p.name,
    description: p.description,
    providerFamily: p.family,
    available: true,
    providerId: p.providerId,
    docsUrl: p.docsUrl,
    requiresClientGeneratedCredentialId: false,
    fields: p.fields,
  }));
  const all = [...oauth, ...accounts].filter((p) => !search || p.name.toLowerCase().includes(search));
  return { status: 200, body: { data: all, nextCursor: null } };
};

export const createServiceAccountCredential: Handler<'createServiceAccountCredential'> = async ({ body, ctx }) => {
  const record = await ctx.mutate(async (tx, audit) => {
    const idTaken = (id: string) => conflict(`A credential with id ${id} already exists.`);
    if (body.id && (await tx.credentials.exists(body.id))) throw idTaken(body.id);
    try {
      const create = ctx.services.workspaceCredentials.createServiceAccount(tx, {
        workspaceId: body.workspaceId,
        providerId: body.providerId,
        credentialsJson: body.credentials,
        displayName: body.displayName,
        description: body.description,
        id: body.id,
        userId: ctx.principal.userId,
      });
      const created = body.id ? await onUniqueViolation(create, 'credentials', ['id'], () => idTaken(body.id!)) : await create;
      audit({ action: 'credential.created', resourceType: 'credential', resourceId: created.id, resourceName: created.displayName, metadata: { type: created.type, providerId: created.providerId } });
      return created;
    } catch (e) {
      throw apiError(e);
    }
  });
  return { status: 200, body: { data: view(ctx, record) } };
};

export const createCredentialConnection: Handler<'createCredentialConnection'> = async ({ body, ctx }) => {
  const creds = ctx.services.workspaceCredentials;
  let providerId: string;
  let displayName: string;
  if (body.credentialId !== undefined) {
    if (body.providerId !== undefined) throw invalidField(['body', 'providerId'], 'Send either credentialId (reconnect) or providerId (new connection), not both.');
    const existing = await ctx.services.store.credentials.get(body.workspaceId, body.credentialId);
    if (!existing) throw notFound('Credential');
    if (existing.type !== 'oauth') throw invalidField(['body', 'credentialId'], 'Only OAuth credentials can be reconnected.');
    providerId = existing.providerId;
    displayName = existing.displayName;
  } else {
    if (body.providerId === undefined) throw invalidField(['body', 'providerId'], 'providerId (or credentialId to reconnect) is required.');
    if (body.displayName === undefined) throw invalidField(['body', 'displayName'], 'displayName is required for a new connection.');
    providerId = body.providerId;
    displayName = body.displayName;
  }
  if (body.oauthClientConfig && providerId !== 'quickbooks') throw invalidField(['body', 'oauthClientConfig'], 'oauthClientConfig applies to QuickBooks only.');
  if (providerId === 'quickbooks' && !body.oauthClientConfig && !creds.isConfigured('quickbooks')) throw invalidField(['body', 'oauthClientConfig'], `QuickBooks needs oauthClientConfig, or the server needs its client: ${howToConfigure('quickbooks')}.`);
  try {
    const started = await creds.startConnection({
      workspaceId: body.workspaceId,
      userId: ctx.principal.userId,
      providerId,
      displayName,
      credentialId: body.credentialId,
      client: body.oauthClientConfig ? { clientId: body.oauthClientConfig.clientId, clientSecret: body.oauthClientConfig.clientSecret } : null,
    });
    return { status: 200, body: { data: started } };
  } catch (e) {
    throw apiError(e);
  }
};

export const completeCredentialConnection: Handler<'completeCredentialConnection'> = async ({ query, ctx }) => {
  try {
    const record = await ctx.services.workspaceCredentials.completeConnection({ state: query.state, code: query.code, error: query.error, errorDescription: query.error_description });
    return { status: 200, body: { data: { credentialId: record.id, providerId: record.providerId, displayName: record.displayName, status: 'connected' as const } } };
  } catch (e) {
    if (e instanceof CredentialError) {
      throw new ApiError('BAD_REQUEST', e.message, [{ code: e.code, keys: [], path: ['query', e.field ?? 'state'], message: e.message }]);
    }
    throw e;
  }
};

const SECRET_FIELDS = ['serviceAccountJson', 'apiToken', 'domain', 'atlassianProduct', 'signingSecret', 'botToken', 'clientId', 'clientSecret', 'certificateId', 'orgId', 'dataCenter', 'authMethod', 'privateKey', 'username'] as const;

export const updateCredential: Handler<'updateCredential'> = async ({ params, query, body, ctx }) => {
  const secrets = Object.fromEntries(SECRET_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f] as string]));
  if (body.displayName === undefined && body.description === undefined && Object.keys(secrets).length === 0) throw invalidField(['body'], 'Send at least one field to change.');
  const record = await ctx.mutate(async (tx, audit) => {
    const current = await tx.credentials.get(query.workspaceId, params.credentialId);
    if (!current) throw notFound('Credential');
    if (!canManage(ctx, current)) throw forbidden('Only the credential\'s creator or a workspace admin may change it.', { code: 'NOT_CREDENTIAL_ADMIN' });
    let next: CredentialRecord = { ...current, displayName: body.displayName ?? current.displayName, description: body.description === undefined ? current.description : body.description, updatedAt: new Date().toISOString() };
    if (Object.keys(secrets).length > 0) {
      if (current.type !== 'service_account') throw invalidField(['body'], 'Secret fields apply to service-account credentials; reconnect an OAuth credential instead.');
      try {
        next = ctx.services.workspaceCredentials.updateServiceAccountFields(next, secrets);
      } catch (e) {
        throw apiError(e);
      }
    }
    await tx.credentials.update(next);
    audit({ action: 'credential.updated', resourceType: 'credential', resourceId: next.id, resourceName: next.displayName, metadata: { fields: Object.keys(body) } });
    return next;
  });
  return { status: 200, body: { data: view(ctx, record) } };
};

export const deleteCredential: Handler<'deleteCredential'> = async ({ params, query, ctx }) => {
  await ctx.mutate(async (tx, audit) => {
    const current = await tx.credentials.get(query.workspaceId, params.credentialId);
    if (!current) throw notFound('Credential');
    if (!canManage(ctx, current)) throw forbidden('Only the credential\'s creator or a workspace admin may delete it.', { code: 'NOT_CREDENTIAL_ADMIN' });
    await tx.credentials.delete(current.id);
    audit({ action: 'credential.deleted', resourceType: 'credential', resourceId: current.id, resourceName: current.displayName, metadata: { type: current.type, providerId: current.providerId } });
  });
  return { status: 200, body: { data: { id: params.credentialId, deleted: true as const } } };
};

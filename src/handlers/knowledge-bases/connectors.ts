// Knowledge connectors: sources a base is kept in step with (see src/knowledge/connectors.ts and sync.ts), and
// the Catalog's list of the connector types this server runs. The rules are src/knowledge/connector-changes.ts;
// here the request is read, syncs started after the commit and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import { invalidField } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { ConnectorRecord, SyncLogRecord } from '../../store/knowledge-connectors.ts';
import { CONNECTOR_TYPES, connectorType } from '../../knowledge/connectors.ts';
import * as connectors from '../../knowledge/connector-changes.ts';
import { loadBase } from './shared.ts';
import { assertAccess } from '../../access-control/policy.ts';

function connectorView(c: ConnectorRecord) {
  return {
    id: c.id,
    knowledgeBaseId: c.knowledgeBaseId,
    connectorType: c.connectorType,
    credentialId: c.credentialId,
    sourceConfig: JSON.parse(c.sourceConfig) as Record<string, unknown>,
    syncMode: 'full',
    syncIntervalMinutes: c.syncIntervalMinutes,
    status: c.status,
    lastSyncAt: c.lastSyncAt,
    lastSyncError: c.lastSyncError,
    lastSyncDocCount: c.lastSyncDocCount,
    nextSyncAt: c.nextSyncAt,
    consecutiveFailures: c.consecutiveFailures,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}

const logView = (l: SyncLogRecord) => ({
  id: l.id, connectorId: l.connectorId, status: l.status, startedAt: l.startedAt, completedAt: l.completedAt, docsAdded: l.docsAdded, docsUpdated: l.docsUpdated,
  docsDeleted: l.docsDeleted, docsUnchanged: l.docsUnchanged, docsSkipped: l.docsSkipped, docsFailed: l.docsFailed, errorMessage: l.errorMessage,
});

export const listConnectorTypes: Handler<'listConnectorTypes'> = async ({ query, ctx }) => {
  const limit = query.limit ?? 25;
  const detail = query.detail ?? 'summary';
  const binding = { search: query.search ?? null, detail };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = CONNECTOR_TYPES.filter((t) => !binding.search || t.name.toLowerCase().includes(binding.search.toLowerCase()))
    .sort((a, b) => a.connectorType.localeCompare(b.connectorType))
    .filter((t) => !after || t.connectorType > String(after[1]))
    .slice(0, limit + 1);
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, (t) => [t.connectorType, t.connectorType], (t) =>
      detail === 'summary'
        ? { connectorType: t.connectorType, name: t.name, description: t.description, auth: { mode: t.auth.mode } }
        : {
            connectorType: t.connectorType, name: t.name, description: t.description, version: t.version, auth: t.auth, configFields: t.configFields,
            supportsIncrementalSync: t.supportsIncrementalSync, tagDefinitions: t.tagDefinitions,
          },
    ),
  };
};

export const listKnowledgeConnectors: Handler<'listKnowledgeConnectors'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const sortBy = query.sortBy ?? 'createdAt';
  const order = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { kb: kb.id, sortBy, order };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = await ctx.services.store.knowledgeConnectors.list({ knowledgeBaseId: kb.id, sortBy, order, after, limit: limit + 1 });
  const key = (c: ConnectorRecord) => [{ connectorType: c.connectorType, createdAt: c.createdAt, updatedAt: c.updatedAt }[sortBy], c.id] as const;
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, connectorView) };
};

export const createKnowledgeConnector: Handler<'createKnowledgeConnector'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const type = connectorType(body.connectorType);
  if (!type) throw invalidField(['body', 'connectorType'], `This server has no connector type "${body.connectorType}" (it runs ${CONNECTOR_TYPES.map((t) => t.connectorType).join(', ')}).`);
  if (body.credentialId !== undefined) throw invalidField(['body', 'credentialId'], `The ${type.connectorType} connector does not use an OAuth credential.`);
  if (body.apiKey !== undefined && !type.acceptsApiKey) throw invalidField(['body', 'apiKey'], `The ${type.connectorType} connector needs no API key.`);
  const sourceConfig = type.validate(body.sourceConfig, ['body', 'sourceConfig']);
  await assertAccess(ctx.services.store, { workspaceId: kb.workspaceId, userId: ctx.principal.userId }, { kind: 'knowledge_connector', connectorType: type.connectorType });
  const input = {
    connectorType: type.connectorType, typeName: type.name, sourceConfig, syncIntervalMinutes: body.syncIntervalMinutes ?? 1440, apiKey: body.apiKey,
    seal: (id: string, key: string) => ctx.services.knowledge.sealApiKey(id, key), createdBy: ctx.principal.userId,
  };
  const connector = await ctx.mutate((tx, audit) => connectors.createConnector(tx, audit, kb, input));
  // The first sync starts at once.
  await ctx.services.knowledge.startSync(connector.id, false);
  return { status: 200, body: { data: connectorView((await ctx.services.store.knowledgeConnectors.get(connector.id))!) } };
};

export const getKnowledgeConnector: Handler<'getKnowledgeConnector'> = async ({ params, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const c = await connectors.loadConnector(ctx.services.store, kb, params.connectorId);
  return { status: 200, body: { data: { ...connectorView(c), syncLogs: (await ctx.services.store.knowledgeConnectors.logs(c.id, 20)).map(logView) } } };
};

export const updateKnowledgeConnector: Handler<'updateKnowledgeConnector'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const current = await connectors.loadConnector(ctx.services.store, kb, params.connectorId);
  const type = connectorType(current.connectorType);
  const sourceConfig = body.sourceConfig === undefined ? undefined : type!.validate(body.sourceConfig, ['body', 'sourceConfig']);
  const change = { sourceConfig, syncIntervalMinutes: body.syncIntervalMinutes, status: body.status, fields: Object.keys(body).filter((k) => k !== 'workspaceId') };
  const updated = await ctx.mutate((tx, audit) => connectors.updateConnector(tx, audit, kb, params.connectorId, change));
  if (sourceConfig && updated.status !== 'paused') await ctx.services.knowledge.startSync(updated.id, false);
  return { status: 200, body: { data: connectorView((await ctx.services.store.knowledgeConnectors.get(updated.id))!) } };
};

export const deleteKnowledgeConnector: Handler<'deleteKnowledgeConnector'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const result = await ctx.mutate((tx, audit) => connectors.deleteConnector(tx, audit, kb, params.connectorId, query.deleteDocuments ?? false));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { id: params.connectorId, deleted: true as const, documentsDeleted: result.deleted, documentsKept: result.kept } } };
};

export const syncKnowledgeConnector: Handler<'syncKnowledgeConnector'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const c = await connectors.requestSync(ctx.services.store, kb, params.connectorId, (id) => ctx.services.knowledge.startSync(id, body.rehydrate ?? false));
  return { status: 200, body: { data: { id: c.id, syncTriggered: true as const } } };
};

export const listKnowledgeConnectorDocuments: Handler<'listKnowledgeConnectorDocuments'> = async ({ params, query, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const c = await connectors.loadConnector(ctx.services.store, kb, params.connectorId);
  const limit = query.limit ?? 50;
  const binding = { connector: c.id, includeExcluded: query.includeExcluded ?? false };
  const after = readCursor(ctx, query.cursor, binding);
  const rows = (await ctx.services.store.knowledgeDocuments.ofConnector(c.id))
    .filter((d) => binding.includeExcluded || !d.userExcluded)
    .filter((d) => !after || d.uploadedAt > String(after[0]) || (d.uploadedAt === after[0] && d.id > after[1]))
    .slice(0, limit + 1);
  return {
    status: 200,
    body: toPage(ctx, rows, limit, binding, (d) => [d.uploadedAt, d.id], (d) => ({
      id: d.id, filename: d.filename, externalId: d.externalId, sourceUrl: d.sourceUrl, enabled: d.enabled, userExcluded: d.userExcluded, createdAt: d.uploadedAt,
      processingStatus: d.processingStatus,
    })),
  };
};

export const updateKnowledgeConnectorDocuments: Handler<'updateKnowledgeConnectorDocuments'> = async ({ params, body, ctx }) => {
  const kb = await loadBase(ctx, params.knowledgeBaseId);
  const changed = await ctx.mutate((tx, audit) => connectors.setDocumentsExcluded(tx, audit, kb, params.connectorId, body.documentIds, body.operation));
  ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { operation: body.operation, updatedCount: changed.length, documentIds: changed } } };
};

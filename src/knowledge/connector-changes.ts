// Knowledge connectors of a base (sources it is kept in step with; src/knowledge/connectors.ts and sync.ts):
// create, update (a changed source or a resumed connector syncs at once, a new interval counts from the last
// sync, interval 0 unschedules), delete (its documents deleted or kept without it), include or exclude its
// documents, and the rule for a sync on request. Each change works inside the caller's transaction and records
// its audit event there; the caller starts syncs and drops cached vectors after the commit. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { KnowledgeBaseRecord } from '../store/knowledge-bases.ts';
import type { ConnectorRecord } from '../store/knowledge-connectors.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';

const nowIso = () => new Date().toISOString();

export async function loadConnector(repos: Repositories, kb: KnowledgeBaseRecord, id: string): Promise<ConnectorRecord> {
  const c = await repos.knowledgeConnectors.get(id);
  if (!c || c.knowledgeBaseId !== kb.id) throw domainNotFound('Connector');
  return c;
}

export interface NewConnector {
  connectorType: string;
  /** The type's display name (the audit event names the connector by it). */
  typeName: string;
  sourceConfig: unknown;
  syncIntervalMinutes: number;
  apiKey?: string;
  /** Seals an API key for the connector's id (the knowledge engine holds the key). */
  seal: (connectorId: string, apiKey: string) => string;
  createdBy: string;
}

/** Creates an active connector whose first sync is due now. */
export async function createConnector(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, input: NewConnector): Promise<ConnectorRecord> {
  const at = nowIso();
  const id = `kcn_${randomUUID().replace(/-/g, '')}`;
  const connector: ConnectorRecord = {
    id,
    knowledgeBaseId: kb.id,
    workspaceId: kb.workspaceId,
    connectorType: input.connectorType,
    credentialId: null,
    apiKeySealed: input.apiKey === undefined ? null : input.seal(id, input.apiKey),
    sourceConfig: JSON.stringify(input.sourceConfig),
    syncIntervalMinutes: input.syncIntervalMinutes,
    status: 'active',
    lastSyncAt: null,
    lastSyncError: null,
    lastSyncDocCount: null,
    nextSyncAt: at,
    consecutiveFailures: 0,
    createdBy: input.createdBy,
    createdAt: at,
    updatedAt: at,
  };
  await tx.knowledgeConnectors.insert(connector);
  await audit({ action: 'knowledge_connector.created', resourceType: 'knowledge_connector', resourceId: connector.id, resourceName: input.typeName, metadata: { knowledgeBaseId: kb.id, connectorType: input.connectorType } });
  return connector;
}

export interface ConnectorChange {
  /** Already checked against the connector's type. */
  sourceConfig?: unknown;
  syncIntervalMinutes?: number;
  status?: 'active' | 'paused';
  /** The fields the request named (the audit event lists them). */
  fields: string[];
}

export async function updateConnector(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, id: string, change: ConnectorChange): Promise<ConnectorRecord> {
  const c = await loadConnector(tx, kb, id);
  const at = nowIso();
  const interval = change.syncIntervalMinutes ?? c.syncIntervalMinutes;
  let status = c.status;
  if (change.status === 'paused') status = 'paused';
  else if (change.status === 'active' && c.status === 'paused') status = 'active';
  const fields: Parameters<Repositories['knowledgeConnectors']['update']>[1] = { syncIntervalMinutes: interval, status, updatedAt: at };
  if (change.sourceConfig) fields.sourceConfig = JSON.stringify(change.sourceConfig);
  // A changed source (or a resumed connector) syncs at once; a new interval counts from the last sync.
  if (change.sourceConfig || (change.status === 'active' && c.status === 'paused')) fields.nextSyncAt = at;
  else if (change.syncIntervalMinutes !== undefined && interval > 0) fields.nextSyncAt = new Date(Date.parse(c.lastSyncAt ?? at) + interval * 60_000).toISOString();
  await tx.knowledgeConnectors.update(c.id, fields);
  if (interval === 0) await tx.knowledgeConnectors.clearSchedule(c.id);
  await audit({ action: 'knowledge_connector.updated', resourceType: 'knowledge_connector', resourceId: c.id, metadata: { knowledgeBaseId: kb.id, fields: change.fields } });
  return (await tx.knowledgeConnectors.get(c.id))!;
}

/** Deletes a connector; its documents are deleted too, or kept without it. */
export async function deleteConnector(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, id: string, deleteDocuments: boolean): Promise<{ deleted: number; kept: number }> {
  const c = await loadConnector(tx, kb, id);
  const docs = await tx.knowledgeDocuments.ofConnector(c.id);
  if (deleteDocuments) for (const d of docs) await tx.knowledgeDocuments.delete(d.id);
  else await tx.knowledgeDocuments.detachConnector(c.id, nowIso());
  await tx.knowledgeConnectors.delete(c.id);
  await audit({ action: 'knowledge_connector.deleted', resourceType: 'knowledge_connector', resourceId: c.id, metadata: { knowledgeBaseId: kb.id, documentsDeleted: deleteDocuments ? docs.length : 0 } });
  return { deleted: deleteDocuments ? docs.length : 0, kept: deleteDocuments ? 0 : docs.length };
}

/** Excludes documents (or restores excluded ones) of the connector; returns the ids that changed. */
export async function setDocumentsExcluded(tx: Repositories, audit: Audit, kb: KnowledgeBaseRecord, id: string, documentIds: string[], operation: 'exclude' | 'restore'): Promise<string[]> {
  const c = await loadConnector(tx, kb, id);
  const ids = await tx.knowledgeDocuments.setExcluded(c.id, [...new Set(documentIds)], operation === 'exclude', nowIso());
  await audit({ action: `knowledge_connector.documents_${operation}d`, resourceType: 'knowledge_connector', resourceId: c.id, metadata: { knowledgeBaseId: kb.id, count: ids.length } });
  return ids;
}

/** Starts a sync on request: not of a paused or disabled connector, nor of one syncing already. */
export async function requestSync(repos: Repositories, kb: KnowledgeBaseRecord, id: string, startSync: (connectorId: string) => Promise<boolean>): Promise<ConnectorRecord> {
  const c = await loadConnector(repos, kb, id);
  if (c.status === 'paused' || c.status === 'disabled') throw new DomainError('conflict', `The connector is ${c.status}; resume it first.`, { code: 'CONNECTOR_PAUSED' });
  if (!(await startSync(c.id))) throw new DomainError('conflict', 'The connector is already syncing.', { code: 'SYNC_IN_PROGRESS' });
  return c;
}

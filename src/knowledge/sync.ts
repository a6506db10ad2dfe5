// One sync of a connector: list the source, compare each external document's content hash with the base's
// document of the same external id, then add, update (re-queue) or delete documents through the same
// processing queue as uploads. Documents a user excluded stay excluded; a source that cannot be listed changes
// nothing in the base and is recorded as a failed sync. A sync whose lease was lost (`signal`) stops before its
// next write: another process may be syncing the connector by then.
import type { ConnectorRecord, SyncLogRecord } from '../store/knowledge-connectors.ts';
import type { KnowledgeDocumentRecord } from '../store/knowledge-documents.ts';
import { ALL_SLOTS } from './tags.ts';
import { connectorType, SourceError, type ConnectorContext, type ExternalDocument } from './connectors.ts';
import { newDocumentId } from './ids.ts';

export interface SyncRun {
  /** The sync's id: its lease's and its log's. */
  id: string;
  startedAt: string;
  /** Re-reads every document, changed or not. */
  rehydrate: boolean;
  /** Aborts when the sync's lease is lost. */
  signal: AbortSignal;
}

export async function runSync(ctx: ConnectorContext, connector: ConnectorRecord, run: SyncRun): Promise<SyncLogRecord> {
  const { rehydrate, signal } = run;
  const log: SyncLogRecord = {
    id: run.id,
    connectorId: connector.id,
    status: 'completed',
    startedAt: run.startedAt,
    completedAt: null,
    docsAdded: 0,
    docsUpdated: 0,
    docsDeleted: 0,
    docsUnchanged: 0,
    docsSkipped: 0,
    docsFailed: 0,
    errorMessage: null,
  };
  const type = connectorType(connector.connectorType);
  if (!type) throw new SourceError(`The connector type ${connector.connectorType} is not available on this server.`);
  const listed = await type.list(JSON.parse(connector.sourceConfig) as Record<string, unknown>, ctx);
  const existing = new Map((await ctx.store.knowledgeDocuments.ofConnector(connector.id)).map((d) => [d.externalId ?? '', d]));
  const seen = new Set<string>();
  const { store } = ctx;
  for (const item of listed) {
    seen.add(item.externalId);
    const doc = existing.get(item.externalId);
    if ('error' in item) {
      log.docsFailed++;
      continue;
    }
    if (doc?.userExcluded) {
      log.docsSkipped++;
      continue;
    }
    if (doc && doc.contentHash === item.contentHash && !rehydrate) {
      log.docsUnchanged++;
      continue;
    }
    let loaded: { blobKey: string; size: number };
    try {
      loaded = await item.load();
    } catch {
      log.docsFailed++;
      continue;
    }
    signal.throwIfAborted();
    const at = new Date().toISOString();
    await store.transaction(async (tx) => {
      if (doc) {
        await tx.knowledgeDocuments.replaceSource(doc.id, { filename: item.filename, fileSize: loaded.size, mimeType: item.mimeType, blobKey: loaded.blobKey, contentHash: item.contentHash, sourceUrl: item.sourceUrl }, at);
      } else {
        await tx.knowledgeDocuments.insert(connectorDocument(connector, item, loaded, at));
      }
    });
    if (doc) log.docsUpdated++;
    else log.docsAdded++;
  }
  // Documents the source no longer lists go (excluded ones too: there is nothing left to exclude).
  const gone = [...existing.entries()].filter(([externalId]) => !seen.has(externalId)).map(([, d]) => d);
  if (gone.length) {
    signal.throwIfAborted();
    await store.transaction(async (tx) => {
      for (const d of gone) await tx.knowledgeDocuments.delete(d.id);
    });
    log.docsDeleted = gone.length;
  }
  log.completedAt = new Date().toISOString();
  if (log.docsFailed > 0) log.errorMessage = `${log.docsFailed} document(s) could not be read.`;
  return log;
}

function connectorDocument(connector: ConnectorRecord, item: ExternalDocument, loaded: { blobKey: string; size: number }, at: string): KnowledgeDocumentRecord {
  return {
    id: newDocumentId(),
    knowledgeBaseId: connector.knowledgeBaseId,
    workspaceId: connector.workspaceId,
    filename: item.filename,
    fileSize: loaded.size,
    mimeType: item.mimeType,
    blobKey: loaded.blobKey,
    sourceFileId: null,
    processingStatus: 'pending',
    processingError: null,
    processingStartedAt: null,
    processingCompletedAt: null,
    processingAttempt: 0,
    processingOptions: null,
    chunkCount: 0,
    tokenCount: 0,
    characterCount: 0,
    enabled: true,
    connectorId: connector.id,
    connectorType: connector.connectorType,
    sourceUrl: item.sourceUrl,
    externalId: item.externalId,
    contentHash: item.contentHash,
    userExcluded: false,
    tags: Object.fromEntries(ALL_SLOTS.map((s) => [s, null])),
    uploadedAt: at,
    updatedAt: at,
  };
}

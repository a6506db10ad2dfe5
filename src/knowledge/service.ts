// The knowledge engine a server runs: the embedding provider, the durable document processing queue and the
// in-memory vector index used by search. No HTTP here.
//
// The queue is the documents table itself: a document is `pending` until a worker claims it (`processing`,
// with a fresh attempt number), and the attempt ends `completed` or `failed`. Chunks are replaced in the same
// transaction that marks the attempt completed, and only if the document is still on that attempt, so a
// retried, deleted or re-queued document never ends up with two sets of chunks. Extraction and chunking run in
// the content workers (src/content/), bounded in depth, expansion, memory and time; an attempt cut off by those
// workers' time or memory limit, or by a dead process, is queued again once and then failed.
//
// A claimed document is leased (src/workers/lease.ts): the worker renews the lease while it extracts and
// embeds, and ends the attempt only while it holds it. A lease that expired (its process died) is reclaimed by
// the next poll of whichever process polls, counted as an interruption; nothing is reset at start-up, so a
// second process never takes work a live one holds. A connector's sync is leased the same way by the process
// running it: renewed while it runs, its outcome written only while held, and released (due again) by the
// scheduler's next poll once the lease expired.
//
// The vector index of a base is held per process (src/knowledge/vector-index/) and kept in step with the base's
// `vector_version`, which the store bumps in the transaction of every chunk change; a search reads the version
// (one indexed row) and the index catches up when another process (or this one) changed the chunks.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Store } from '../store/index.ts';
import type { BlobStore } from '../files/blob-store.ts';
import { readPrefix } from '../files/text.ts';
import type { KnowledgeDocumentRecord } from '../store/knowledge-documents.ts';
import { createEmbeddingProvider, EmbeddingError, vectorToBlob, type EmbeddingProvider } from './embeddings.ts';
import type { ChunkingConfig, ChunkRecipe } from './chunking-config.ts';
import { ContentError, WorkerOverrun, type ContentWorkers } from '../content/index.ts';
import { UserRegexError } from './user-regex.ts';
import { EgressPolicy } from '../execution/egress.ts';
import { SourceError, type ConnectorContext } from './connectors.ts';
import { runSync, type SyncRun } from './sync.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { SecretVault } from '../secrets/vault.ts';
import type { ConnectorRecord, SyncLogRecord } from '../store/knowledge-connectors.ts';
import { LeaseKeeper, PROCESS_OWNER, leaseUntil } from '../workers/lease.ts';
import { VectorIndexes, type VectorIndex } from './vector-index/index.ts';

export type { VectorIndex } from './vector-index/index.ts';

export interface KnowledgeDeps {
  store: Store;
  blobs: BlobStore;
  config: Config;
  logger: Logger;
  /** Overrides the configured provider (tests). */
  provider?: EmbeddingProvider;
  /** Seals connector API keys at rest (the secrets key); without it connectors cannot keep a key. */
  cipher?: SecretCipher;
  /** Resolves a `{{NAME}}` secret reference given as a connector's API key. */
  secrets?: SecretVault;
  /** Where documents are extracted and chunked, off the event loop. */
  content: ContentWorkers;
}

export class KnowledgeService {
  readonly provider: EmbeddingProvider;
  protected readonly deps: KnowledgeDeps;
  /** Each base's vector index. */
  readonly vectorIndexes: VectorIndexes;
  /** When the queue next looks for expired leases (at most once per renewal period, whichever worker polls). */
  private nextReclaim = 0;
  private running = false;
  private readonly workers: Promise<void>[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly inFlight = new Set<string>();
  /** Outbound requests of connectors (web pages) go through the same egress rules as workflow blocks. */
  readonly egress: EgressPolicy;
  private readonly syncs = new Set<Promise<void>>();
  /** When the connector scheduler next looks for syncs whose lease expired (at most once per renewal period). */
  private nextSyncReclaim = 0;
  private scheduler: NodeJS.Timeout | null = null;

  constructor(deps: KnowledgeDeps) {
    this.deps = deps;
    this.provider = deps.provider ?? createEmbeddingProvider(deps.config.knowledge);
    const { kind, minRows } = deps.config.knowledge.vectorIndex;
    this.vectorIndexes = new VectorIndexes(deps.store.knowledgeChunks, { kind, minRows, dir: path.join(deps.config.dataDir, 'knowledge-index') }, deps.logger);
    const e = deps.config.egress;
    this.egress = new EgressPolicy({ allowPrivate: e.allowPrivate, allowCidrs: e.allowCidrs, maxResponseBytes: e.maxResponseBytes });
  }

  /** Forgets cached vectors of a base after its chunks, documents or state changed (here; other processes see the version). */
  invalidate(knowledgeBaseId: string): void {
    this.vectorIndexes.invalidate(knowledgeBaseId);
  }

  /** The base's vector index, caught up with the base's vector version in the database. */
  index(knowledgeBaseId: string): Promise<VectorIndex> {
    return this.vectorIndexes.get(knowledgeBaseId);
  }

  // ── the processing queue

  /** Tells idle workers, here and on the other servers sharing the database, there is work (documents were queued). */
  notify(): void {
    this.wakeWorkers();
    this.deps.store.wakes.announce('knowledge');
  }

  private wakeWorkers(): void {
    for (const w of [...this.waiters]) w();
  }

  private stopListening: (() => void) | null = null;

  /**
   * Attempts whose lease expired (their process died) go back to the queue once, and are failed the second
   * time; live leases, whoever holds them, are left alone. Every poll calls it (at most once per renewal period).
   */
  async reclaimExpired(): Promise<{ requeued: number; failed: string[] }> {
    const now = new Date().toISOString();
    if (!(await this.deps.store.knowledgeDocuments.anyExpired(now))) return { requeued: 0, failed: [] };
    const outcome = await this.deps.store.transaction(async (tx) => {
      const r = await tx.knowledgeDocuments.reclaimExpired(now);
      for (const id of r.failed) await tx.knowledgeChunks.deleteForDocument(id);
      return r;
    });
    if (outcome.requeued > 0) this.deps.logger.warn({ documents: outcome.requeued }, 'knowledge documents whose worker lost its lease were queued again');
    if (outcome.failed.length > 0) this.deps.logger.warn({ documents: outcome.failed }, 'knowledge documents interrupted a second time were failed');
    return outcome;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.stopListening ??= this.deps.store.wakes.on('knowledge', () => this.wakeWorkers());
    for (let i = 0; i < this.deps.config.knowledge.workers; i++) this.workers.push(this.work());
    const poll = this.deps.config.knowledge.connectorPollMs;
    if (poll > 0) {
      this.scheduler = setInterval(() => void this.syncDue().catch((err) => this.deps.logger.error({ err }, 'connector scheduler failed')), poll);
      this.scheduler.unref();
    }
  }

  async close(): Promise<void> {
    this.running = false;
    this.stopListening?.();
    this.stopListening = null;
    if (this.scheduler) clearInterval(this.scheduler);
    this.wakeWorkers();
    await Promise.all(this.workers.splice(0));
    await Promise.all([...this.syncs]);
    await this.vectorIndexes.close();
  }

  // ── connectors

  /** Seals a connector's API key (or `{{SECRET}}` reference) for storage; bound to the connector's id. */
  sealApiKey(connectorId: string, apiKey: string): string {
    if (!this.deps.cipher) throw new Error('No secrets key: connector API keys cannot be stored.');
    return this.deps.cipher.encrypt(apiKey, `knowledge-connector:${connectorId}`);
  }

  /** The key a sync sends: the sealed value, or the workspace/personal secret a `{{NAME}}` reference names. */
  private async apiKeyOf(c: ConnectorRecord): Promise<string | null> {
    if (!c.apiKeySealed || !this.deps.cipher) return null;
    const value = this.deps.cipher.decrypt(c.apiKeySealed, `knowledge-connector:${c.id}`);
    const ref = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/.exec(value);
    if (!ref) return value;
    const resolved = await this.deps.secrets?.resolve(c.workspaceId, c.createdBy, ref[1]!);
    if (resolved === undefined) throw new SourceError(`The secret {{${ref[1]}}} named as this connector's API key does not exist.`);
    return resolved;
  }

  /**
   * Syncs whose lease expired (their process died) are released: the connector goes back to its status and is
   * due again. Live leases, whoever holds them, are left alone. The scheduler's poll calls it (at most once per
   * renewal period).
   */
  async releaseExpiredSyncs(): Promise<number> {
    const now = new Date().toISOString();
    if (!(await this.deps.store.knowledgeConnectors.anyExpiredSync(now))) return 0;
    const released = await this.deps.store.transaction((tx) => tx.knowledgeConnectors.releaseExpiredSyncs(now));
    if (released > 0) this.deps.logger.warn({ connectors: released }, 'connector syncs whose process lost its lease were released');
    return released;
  }

  /** Starts the syncs whose schedule is due (after releasing expired ones, so they are due again). */
  async syncDue(): Promise<void> {
    if (!this.running) return;
    if (Date.now() >= this.nextSyncReclaim) {
      this.nextSyncReclaim = Date.now() + this.deps.config.leases.renewMs;
      await this.releaseExpiredSyncs();
    }
    for (const c of await this.deps.store.knowledgeConnectors.due(new Date().toISOString(), 20)) await this.startSync(c.id, false);
  }

  /**
   * Claims the connector under a lease and runs one sync in the background; false when a live sync holds it (or
   * it is paused), so two syncs of one connector never run at once, whichever processes start them.
   */
  async startSync(connectorId: string, rehydrate: boolean): Promise<boolean> {
    const startedAt = new Date().toISOString();
    const syncId = `ksl_${randomUUID().replace(/-/g, '')}`;
    const { ttlMs } = this.deps.config.leases;
    const claimed = await this.deps.store.transaction((tx) => tx.knowledgeConnectors.claimSync(connectorId, syncId, PROCESS_OWNER, leaseUntil(ttlMs), startedAt));
    if (!claimed) return false;
    const run = this.sync(connectorId, { id: syncId, rehydrate, startedAt }).finally(() => this.syncs.delete(run));
    this.syncs.add(run);
    return true;
  }

  /** Resolves when every sync running now has finished (tests, shutdown). */
  async idleSyncs(): Promise<void> {
    while (this.syncs.size) await Promise.all([...this.syncs]);
  }

  private async sync(connectorId: string, run: Omit<SyncRun, 'signal'>): Promise<void> {
    const { store, config } = this.deps;
    const { ttlMs, renewMs } = config.leases;
    const keeper = new LeaseKeeper(
      () => store.transaction((tx) => tx.knowledgeConnectors.renewSync(connectorId, run.id, PROCESS_OWNER, leaseUntil(ttlMs))),
      renewMs,
      this.deps.logger,
    );
    try {
      const connector = await store.knowledgeConnectors.get(connectorId);
      if (!connector) return;
      let log: SyncLogRecord | undefined;
      let error: string | null = null;
      try {
        const ctx: ConnectorContext = {
          store, blobs: this.deps.blobs, egress: this.egress, workspaceId: connector.workspaceId, baseUrl: config.baseUrl,
          maxDocumentBytes: config.knowledge.maxDocumentBytes, timeoutMs: config.execution.apiTimeoutMs, apiKey: await this.apiKeyOf(connector),
        };
        log = await runSync(ctx, connector, { ...run, signal: keeper.signal });
      } catch (err) {
        if (keeper.lost) {
          this.deps.logger.warn({ connectorId }, 'a connector sync lost its lease and stopped; its outcome is dropped');
          return;
        }
        if (!(err instanceof SourceError)) this.deps.logger.error({ err, connectorId }, 'connector sync failed unexpectedly');
        error = err instanceof SourceError ? err.message : `The sync failed: ${(err as Error).message}`;
      }
      const now = new Date().toISOString();
      const current = await store.knowledgeConnectors.get(connectorId);
      if (!current) return; // deleted while it ran
      const nextSyncAt = current.syncIntervalMinutes > 0 ? new Date(Date.now() + current.syncIntervalMinutes * 60_000).toISOString() : null;
      const docCount = (await store.knowledgeDocuments.ofConnector(connectorId)).length;
      const kept = await store.transaction(async (tx) => {
        const outcome = { failed: error !== null, error: error ?? log?.errorMessage ?? null, docCount, nextSyncAt };
        if (!(await tx.knowledgeConnectors.finishSync(connectorId, run.id, PROCESS_OWNER, outcome, now))) return false;
        await tx.knowledgeConnectors.insertLog(
          log ?? { id: run.id, connectorId, status: 'failed', startedAt: run.startedAt, completedAt: now, docsAdded: 0, docsUpdated: 0, docsDeleted: 0, docsUnchanged: 0, docsSkipped: 0, docsFailed: 0, errorMessage: error },
        );
        return true;
      });
      if (!kept) this.deps.logger.warn({ connectorId }, 'a connector sync finished after losing its lease; its outcome is dropped');
      this.invalidate(connector.knowledgeBaseId);
      this.notify();
    } finally {
      keeper.stop();
    }
  }

  private async work(): Promise<void> {
    while (this.running) {
      const next = await this.claimNext().catch((err) => {
        this.deps.logger.error({ err }, 'knowledge queue: claiming a document failed');
        return null;
      });
      if (next) {
        await this.process(next.id, next.attempt).catch((err) => this.deps.logger.error({ err, documentId: next.id }, 'knowledge processing crashed'));
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, 2000);
        timer.unref();
        this.waiters.add(done);
      });
    }
  }

  private async claimNext(): Promise<{ id: string; attempt: number } | null> {
    if (Date.now() >= this.nextReclaim) {
      this.nextReclaim = Date.now() + this.deps.config.leases.renewMs;
      await this.reclaimExpired();
    }
    const candidates = await this.deps.store.knowledgeDocuments.pending(16);
    const { ttlMs } = this.deps.config.leases;
    for (const c of candidates) {
      if (this.inFlight.has(c.id)) continue;
      const attempt = await this.deps.store.transaction((tx) => tx.knowledgeDocuments.claim(c.id, new Date().toISOString(), PROCESS_OWNER, leaseUntil(ttlMs)));
      if (attempt !== null) return { id: c.id, attempt };
    }
    return null;
  }

  /** Runs one attempt: extract, chunk, embed, then swap the chunks in, all or nothing. */
  async process(documentId: string, attempt: number): Promise<void> {
    this.inFlight.add(documentId);
    const { ttlMs, renewMs } = this.deps.config.leases;
    const keeper = new LeaseKeeper(
      () => this.deps.store.transaction((tx) => tx.knowledgeDocuments.renew(documentId, attempt, PROCESS_OWNER, leaseUntil(ttlMs))),
      renewMs,
      this.deps.logger,
    );
    try {
      const { store } = this.deps;
      const doc = await store.knowledgeDocuments.get(documentId);
      if (!doc) return;
      let outcome: { status: 'completed'; chunks: PreparedChunk[]; characters: number } | { status: 'failed'; error: string };
      try {
        outcome = { status: 'completed', ...(await this.prepare(doc)) };
      } catch (err) {
        if (err instanceof WorkerOverrun && err.reason === 'stopped') {
          await store.transaction((tx) => tx.knowledgeDocuments.release(documentId, attempt, PROCESS_OWNER, new Date().toISOString()));
          return;
        }
        if (err instanceof WorkerOverrun) {
          const result = await store.transaction(async (tx) => {
            const r = await tx.knowledgeDocuments.interrupt(documentId, attempt, PROCESS_OWNER, err.message, new Date().toISOString());
            if (r === 'failed') await tx.knowledgeChunks.deleteForDocument(documentId);
            return r;
          });
          this.deps.logger.warn({ documentId, reason: err.reason, outcome: result }, 'knowledge document processing was cut off');
          if (result === 'requeued') this.notify();
          if (result === 'failed') this.invalidate(doc.knowledgeBaseId);
          return;
        }
        const known = err instanceof ContentError || err instanceof EmbeddingError || err instanceof UserRegexError || err instanceof ProcessingError;
        if (!known) this.deps.logger.error({ err, documentId }, 'knowledge processing failed unexpectedly');
        outcome = { status: 'failed', error: known ? (err as Error).message : `Processing failed: ${(err as Error).message}` };
      }
      const now = new Date().toISOString();
      await store.transaction(async (tx) => {
        if (outcome.status === 'failed') {
          if (await tx.knowledgeDocuments.finish(documentId, attempt, PROCESS_OWNER, outcome, now)) await tx.knowledgeChunks.deleteForDocument(documentId);
          return;
        }
        const tokens = outcome.chunks.reduce((n, c) => n + c.tokens, 0);
        const kept = await tx.knowledgeDocuments.finish(documentId, attempt, PROCESS_OWNER, { status: 'completed', chunkCount: outcome.chunks.length, tokenCount: tokens, characterCount: outcome.characters }, now);
        if (!kept) return; // deleted, re-queued or its lease lost meanwhile: this attempt's result is dropped
        await tx.knowledgeChunks.deleteForDocument(documentId);
        for (const [i, c] of outcome.chunks.entries()) {
          await tx.knowledgeChunks.insert({
            id: newChunkId(), documentId, knowledgeBaseId: doc.knowledgeBaseId, chunkIndex: i, content: c.content, tokenCount: c.tokens, enabled: true,
            startOffset: c.start, endOffset: c.end, embedding: vectorToBlob(c.vector), at: now,
          });
        }
      });
      this.invalidate(doc.knowledgeBaseId);
    } finally {
      keeper.stop();
      this.inFlight.delete(documentId);
    }
  }

  private async prepare(doc: KnowledgeDocumentRecord): Promise<{ chunks: PreparedChunk[]; characters: number }> {
    const { store, blobs, config } = this.deps;
    const kb = await store.knowledgeBases.get(doc.knowledgeBaseId);
    if (!kb) throw new ProcessingError('The knowledge base no longer exists.');
    this.assertProviderFits(kb.embeddingModel, kb.embeddingDimension);
    if (!doc.blobKey) throw new ProcessingError('The document has no stored content to process.');
    if (doc.fileSize > config.knowledge.maxDocumentBytes) throw new ProcessingError(`The document is larger than ${config.knowledge.maxDocumentBytes} bytes.`);
    let bytes: Buffer;
    try {
      bytes = await readPrefix(blobs.read(doc.blobKey), config.knowledge.maxDocumentBytes);
    } catch {
      throw new ProcessingError('The document content could not be read from storage.');
    }
    const options = doc.processingOptions ? (JSON.parse(doc.processingOptions) as { recipe?: string }) : {};
    const recipe = options.recipe && options.recipe !== 'default' ? (options.recipe as ChunkRecipe) : undefined;
    const { pieces, characters } = await this.deps.content.knowledgeDocument(bytes, {
      contentType: doc.mimeType,
      filename: doc.filename,
      chunking: JSON.parse(kb.chunkingConfig) as ChunkingConfig,
      recipe,
    });
    const vectors = await this.provider.embed(pieces.map((p) => p.content));
    return { chunks: pieces.map((p, i) => ({ ...p, vector: vectors[i]! })), characters };
  }

  /** A base keeps the model it was created with; the configured provider must still produce it. */
  assertProviderFits(model: string, dimension: number): void {
    if (model !== this.provider.model || dimension !== this.provider.dimension) {
      throw new ProcessingError(
        `This knowledge base is embedded with ${model} (${dimension} dimensions) but the server is configured for ${this.provider.model} (${this.provider.dimension}).`,
      );
    }
  }

  /** Embeds one text for a chunk write or a query. */
  async embedOne(text: string): Promise<Float32Array> {
    return (await this.provider.embed([text]))[0]!;
  }
}

export class ProcessingError extends Error {}

interface PreparedChunk {
  content: string;
  start: number;
  end: number;
  tokens: number;
  vector: Float32Array;
}

export const newChunkId = () => `kc_${randomUUID().replace(/-/g, '')}`;
export { newDocumentId } from './ids.ts';

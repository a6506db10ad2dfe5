// The knowledge engine a server runs: the embedding provider, the document processing queue and the
// in-memory vector index used by search. No HTTP here.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Store } from '../store/index.ts';
import type { BlobStore } from '../files/blob-store.ts';
import { createEmbeddingProvider, type EmbeddingProvider } from './embeddings.ts';

export interface KnowledgeDeps {
  store: Store;
  blobs: BlobStore;
  config: Config;
  logger: Logger;
  /** Overrides the configured provider (tests). */
  provider?: EmbeddingProvider;
}

export class KnowledgeService {
  readonly provider: EmbeddingProvider;
  protected readonly deps: KnowledgeDeps;

  constructor(deps: KnowledgeDeps) {
    this.deps = deps;
    this.provider = deps.provider ?? createEmbeddingProvider(deps.config.knowledge);
  }

  /** Forgets cached vectors of a base after its chunks, documents or state changed. */
  invalidate(_knowledgeBaseId: string): void {}

  async start(): Promise<void> {}

  async close(): Promise<void> {}
}

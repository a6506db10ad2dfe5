// What a request handler can reach: configuration, the store and the shared domain services.
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Store } from './store/index.ts';
import type { CredentialResolver } from './identity/credentials.ts';
import type { RateLimitStore } from './http/rate-limit.ts';
import type { BlobStore } from './files/blob-store.ts';

export interface Services {
  config: Config;
  store: Store;
  credentials: CredentialResolver;
  logger: Logger;
  /** Server secret for signing cursors and tokens; generated once and kept in the store. */
  signingKey: Buffer;
  rateLimits: RateLimitStore;
  /** Where file content lives (local disk under DATA_DIR by default). */
  blobs: BlobStore;
}

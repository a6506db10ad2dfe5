// Turns an API key into a Principal. Lookups are cached so a warm key costs no database read; a revocation
// bumps a counter in the store that every server process checks at most every `recheckMs`, so a key revoked
// anywhere (the admin command included) stops working within that window, and at once in this process.
import type { Store } from '../store/index.ts';
import type { Repositories } from '../store/index.ts';
import { API_KEY_SCOPES, type Principal } from './principal.ts';
import { hashApiKey } from './keys.ts';

const EPOCH_KEY = 'credentials_epoch';
const MAX_CACHED = 10_000;

interface Cached {
  principal: Principal;
  expiresAtMs: number | null;
}

export class CredentialResolver {
  private cache = new Map<string, Cached>();
  private epoch: string | undefined;
  private lastEpochCheck = 0;
  private epochCheck: Promise<void> | null = null;

  private readonly store: Store;
  private readonly recheckMs: number;

  constructor(store: Store, recheckMs: number) {
    this.store = store;
    this.recheckMs = recheckMs;
  }

  async resolveApiKey(key: string, now = Date.now()): Promise<Principal | null> {
    await this.refreshEpoch(now);
    const hash = hashApiKey(key);
    let entry = this.cache.get(hash);
    if (!entry) {
      const record = await this.store.apiKeys.getByHash(hash);
      if (!record || record.revokedAt) return null;
      entry = {
        principal: {
          userId: record.userId,
          kind: record.kind,
          credentialId: record.id,
          workspaceId: record.workspaceId,
          scopes: API_KEY_SCOPES,
          expiresAt: record.expiresAt,
        },
        expiresAtMs: record.expiresAt ? Date.parse(record.expiresAt) : null,
      };
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(hash, entry);
    }
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= now) return null;
    return entry.principal;
  }

  /** Forget every cached credential (after a revocation in this process). */
  invalidate(): void {
    this.cache.clear();
    this.lastEpochCheck = 0;
  }

  private refreshEpoch(now: number): Promise<void> {
    if (now - this.lastEpochCheck < this.recheckMs) return Promise.resolve();
    // One read at a time, however many requests arrive together.
    this.epochCheck ??= (async () => {
      try {
        const epoch = await this.store.settings.get(EPOCH_KEY);
        if (epoch !== this.epoch) {
          this.cache.clear();
          this.epoch = epoch;
        }
        this.lastEpochCheck = Date.now();
      } finally {
        this.epochCheck = null;
      }
    })();
    return this.epochCheck;
  }
}

/** Call inside the transaction that revokes or changes a credential, so every process drops its cache. */
export async function bumpCredentialEpoch(tx: Repositories): Promise<void> {
  await tx.settings.increment(EPOCH_KEY);
}

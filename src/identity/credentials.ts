// Turns an API key into a Principal. Lookups are cached so a warm key costs no database read; a revocation
// bumps a counter in the store that every server process checks at most every `recheckMs`, so a key revoked
// anywhere (the admin command included) stops working within that window, and at once in this process.
import type { Store } from '../store/index.ts';
import type { Repositories } from '../store/index.ts';
import { API_KEY_SCOPES, type Principal, type Scope } from './principal.ts';
import { hashApiKey } from './keys.ts';
import { personalAccountId, type Plan } from '../store/billing-accounts.ts';

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

  resolveApiKey(key: string, now = Date.now()): Promise<Principal | null> {
    return this.resolve('key:', key, now, () => this.loadApiKey(key));
  }

  resolveAccessToken(token: string, now = Date.now()): Promise<Principal | null> {
    return this.resolve('token:', token, now, () => this.loadAccessToken(token));
  }

  private async resolve(kind: string, secret: string, now: number, load: () => Promise<Cached | null>): Promise<Principal | null> {
    await this.refreshEpoch(now);
    const cacheKey = kind + hashApiKey(secret);
    let entry = this.cache.get(cacheKey);
    if (!entry) {
      const loaded = await load();
      if (!loaded) return null;
      entry = loaded;
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(cacheKey, entry);
    }
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= now) return null;
    return entry.principal;
  }

  private async planOf(userId: string, workspaceId: string | null): Promise<Plan> {
    if (workspaceId) return (await this.store.workspaces.get(workspaceId))?.plan ?? 'free';
    return (await this.store.billingAccounts.get(personalAccountId(userId)))?.plan ?? 'free';
  }

  private async loadApiKey(key: string): Promise<Cached | null> {
    const record = await this.store.apiKeys.getByHash(hashApiKey(key));
    if (!record || record.revokedAt) return null;
    return {
      principal: {
        userId: record.userId,
        kind: record.kind,
        credentialId: record.id,
        workspaceId: record.workspaceId,
        scopes: API_KEY_SCOPES,
        expiresAt: record.expiresAt,
        plan: await this.planOf(record.userId, record.workspaceId),
        subject: record.kind === 'workspace' ? `workspace-key:${record.id}` : `user:${record.userId}`,
      },
      expiresAtMs: record.expiresAt ? Date.parse(record.expiresAt) : null,
    };
  }

  private async loadAccessToken(token: string): Promise<Cached | null> {
    const t = await this.store.oauth.resolveToken(hashApiKey(token), 'access');
    if (!t || t.revokedAt || t.grantRevokedAt) return null;
    return {
      principal: {
        userId: t.userId,
        kind: 'oauth_access_token',
        credentialId: t.id,
        workspaceId: null,
        scopes: new Set(t.scopes as Scope[]),
        expiresAt: t.expiresAt,
        plan: await this.planOf(t.userId, null),
        subject: `user:${t.userId}`,
      },
      expiresAtMs: t.expiresAt ? Date.parse(t.expiresAt) : null,
    };
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

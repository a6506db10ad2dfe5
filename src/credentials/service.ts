// Workspace credentials: service-account keys and OAuth connections, their secrets sealed by the vault's key.
// OAuth runs the authorization-code flow with PKCE (S256) and a single-use state against the providers configured
// on the server, exchanges the code at the provider's token endpoint, and refreshes access tokens when they are
// about to expire. No HTTP server concerns here (outbound calls to the configured providers only).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { SecretVault } from '../secrets/vault.ts';
import type { Repositories, Store } from '../store/index.ts';
import type { CredentialRecord } from '../store/credentials.ts';
import { configuredProvider, howToConfigure, oauthProvider, serviceAccountProvider } from './providers.ts';

export type CredentialErrorCode =
  | 'PROVIDER_NOT_FOUND'
  | 'PROVIDER_NOT_CONFIGURED'
  | 'INVALID_CREDENTIALS'
  | 'STATE_INVALID'
  | 'STATE_EXPIRED'
  | 'STATE_USED'
  | 'AUTHORIZATION_DENIED'
  | 'TOKEN_EXCHANGE_FAILED'
  | 'REAUTHORIZATION_REQUIRED'
  | 'CREDENTIAL_NOT_FOUND'
  | 'NOT_OAUTH';

export class CredentialError extends Error {
  readonly code: CredentialErrorCode;
  readonly field: string | null;
  constructor(code: CredentialErrorCode, message: string, field: string | null = null) {
    super(message);
    this.code = code;
    this.field = field;
  }
}

interface TokenSet {
  accessToken: string;
  refreshToken: string | null;
  tokenType: string;
  scope: string | null;
  /** Client settings supplied with the connection (QuickBooks-style providers), used again to refresh. */
  client?: { clientId: string; clientSecret: string } | null;
}

const b64url = (buf: Buffer) => buf.toString('base64url');
const sha256 = (text: string) => createHash('sha256').update(text).digest();
const STATE_TTL_MS = 10 * 60 * 1000;
/** Refresh when an access token has less than this left. */
const REFRESH_MARGIN_MS = 60 * 1000;

export class WorkspaceCredentials {
  private readonly store: Store;
  private readonly vault: SecretVault;
  private readonly config: Config;
  private readonly refreshing = new Map<string, Promise<string>>();

  constructor(store: Store, vault: SecretVault, config: Config) {
    this.store = store;
    this.vault = vault;
    this.config = config;
  }

  get redirectUri(): string {
    return `${this.config.baseUrl}/api/v2/credentials/oauth/callback`;
  }

  isConfigured(providerId: string): boolean {
    return configuredProvider(providerId, this.config.oauthProviders) !== null;
  }

  private seal(id: string, value: unknown): string {
    return this.vault.seal(JSON.stringify(value), `sealed:credential:${id}`);
  }

  private open<T>(record: CredentialRecord): T {
    return JSON.parse(this.vault.open(record.sealedSecret, `sealed:credential:${record.id}`)) as T;
  }

  /** Checks a service-account key against its provider's fields; answers the fields and the account it names. */
  checkServiceAccount(providerId: string, fields: Record<string, unknown>, partial = false): { fields: Record<string, string>; accountId: string | null } {
    const provider = serviceAccountProvider(providerId);
    if (!provider) throw new CredentialError('PROVIDER_NOT_FOUND', `No service-account provider ${providerId}; list them with GET /api/v2/credentials/providers.`, 'providerId');
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(fields)) {
      const def = provider.fields.find((f) => f.id === k);
      if (!def) throw new CredentialError('INVALID_CREDENTIALS', `${providerId} has no field ${k} (fields: ${provider.fields.map((f) => f.id).join(', ')}).`, k);
      if (typeof v !== 'string' || v.trim() === '') throw new CredentialError('INVALID_CREDENTIALS', `${k} must be non-empty text.`, k);
      if (def.options && !def.options.some((o) => o.value === v)) throw new CredentialError('INVALID_CREDENTIALS', `${k} must be one of ${def.options.map((o) => o.value).join(', ')}.`, k);
      out[k] = v;
    }
    if (!partial) {
      for (const f of provider.fields) if (f.required && out[f.id] === undefined) throw new CredentialError('INVALID_CREDENTIALS', `${f.id} is required for ${providerId}.`, f.id);
    }
    let accountId: string | null = provider.accountField && out[provider.accountField] ? out[provider.accountField]! : null;
    if (out.serviceAccountJson !== undefined) {
      let key: Record<string, unknown>;
      try {
        key = JSON.parse(out.serviceAccountJson);
      } catch {
        throw new CredentialError('INVALID_CREDENTIALS', 'serviceAccountJson is not JSON.', 'serviceAccountJson');
      }
      if (typeof key.client_email !== 'string' || typeof key.private_key !== 'string') {
        throw new CredentialError('INVALID_CREDENTIALS', 'serviceAccountJson must be a service-account key with client_email and private_key.', 'serviceAccountJson');
      }
      accountId = key.client_email;
    }
    return { fields: out, accountId };
  }

  /** A new service-account credential, sealed (inside the caller's transaction). */
  async createServiceAccount(
    tx: Repositories,
    input: { workspaceId: string; providerId: string; credentialsJson: string; displayName?: string; description?: string; id?: string; userId: string },
  ): Promise<CredentialRecord> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(input.credentialsJson);
    } catch {
      throw new CredentialError('INVALID_CREDENTIALS', 'credentials must be a JSON object string.', 'credentials');
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new CredentialError('INVALID_CREDENTIALS', 'credentials must be a JSON object string.', 'credentials');
    const { fields, accountId } = this.checkServiceAccount(input.providerId, parsed as Record<string, unknown>);
    const id = input.id ?? randomUUID();
    const now = new Date().toISOString();
    const record: CredentialRecord = {
      id,
      workspaceId: input.workspaceId,
      type: 'service_account',
      providerId: input.providerId,
      displayName: input.displayName ?? accountId ?? serviceAccountProvider(input.providerId)!.name,
      description: input.description ?? null,
      accountId,
      sealedSecret: this.seal(id, fields),
      accessExpiresAt: null,
      createdBy: input.userId,
      createdAt: now,
      updatedAt: now,
    };
    await tx.credentials.insert(record);
    return record;
  }

  /** Replaces some fields of a service-account key (re-sealed). */
  updateServiceAccountFields(record: CredentialRecord, changes: Record<string, string>): CredentialRecord {
    const current = this.open<Record<string, string>>(record);
    const { fields, accountId } = this.checkServiceAccount(record.providerId, { ...current, ...changes });
    return { ...record, accountId: accountId ?? record.accountId, sealedSecret: this.seal(record.id, fields) };
  }

  /** Starts an OAuth connection: a single-use state, a PKCE verifier, and the provider's authorization URL. */
  async startConnection(input: {
    workspaceId: string;
    userId: string;
    providerId: string;
    displayName: string;
    credentialId?: string;
    client?: { clientId: string; clientSecret: string } | null;
  }): Promise<{ authorizationUrl: string; expiresAt: string }> {
    const base = oauthProvider(input.providerId);
    if (!base) throw new CredentialError('PROVIDER_NOT_FOUND', `No OAuth provider ${input.providerId}.`, 'providerId');
    const provider = input.client ? { ...base, ...input.client } : configuredProvider(input.providerId, this.config.oauthProviders);
    if (!provider) {
      throw new CredentialError('PROVIDER_NOT_CONFIGURED', `The OAuth provider ${input.providerId} is not configured on this server: ${howToConfigure(input.providerId)}.`, 'providerId');
    }
    const state = b64url(randomBytes(32));
    const verifier = b64url(randomBytes(48));
    const stateHash = b64url(sha256(state));
    const now = Date.now();
    const expiresAt = new Date(now + STATE_TTL_MS).toISOString();
    await this.store.transaction(async (tx) => {
      await tx.credentials.purgeStates(new Date(now - STATE_TTL_MS).toISOString());
      await tx.credentials.insertState({
        stateHash,
        workspaceId: input.workspaceId,
        userId: input.userId,
        providerId: input.providerId,
        displayName: input.displayName,
        credentialId: input.credentialId ?? null,
        sealedVerifier: this.vault.seal(JSON.stringify({ verifier, client: input.client ?? null }), `sealed:oauth-state:${stateHash}`),
        redirectUri: this.redirectUri,
        createdAt: new Date(now).toISOString(),
        expiresAt,
      });
    });
    const url = new URL(provider.authorizationUrl);
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: provider.clientId,
      redirect_uri: this.redirectUri,
      state,
      code_challenge: b64url(sha256(verifier)),
      code_challenge_method: 'S256',
      ...(provider.scopes.length ? { scope: provider.scopes.join(' ') } : {}),
      ...(provider.extraAuthParams ?? {}),
    };
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return { authorizationUrl: url.href, expiresAt };
  }

  private async tokenRequest(tokenUrl: string, form: Record<string, string>): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(form).toString(),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (e) {
      throw new CredentialError('TOKEN_EXCHANGE_FAILED', `The provider's token endpoint could not be reached: ${(e as Error).message}`);
    }
    const text = await res.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text);
    } catch {
      body = Object.fromEntries(new URLSearchParams(text));
    }
    if (!res.ok || typeof body.access_token !== 'string') {
      const why = typeof body.error_description === 'string' ? body.error_description : typeof body.error === 'string' ? body.error : `status ${res.status}`;
      throw new CredentialError('TOKEN_EXCHANGE_FAILED', `The provider refused the token request: ${why}`);
    }
    return body;
  }

  private tokenSet(body: Record<string, unknown>, previous: TokenSet | null, client: TokenSet['client']): { tokens: TokenSet; expiresAt: string | null } {
    const expiresIn = Number(body.expires_in);
    return {
      tokens: {
        accessToken: body.access_token as string,
        refreshToken: typeof body.refresh_token === 'string' ? body.refresh_token : (previous?.refreshToken ?? null),
        tokenType: typeof body.token_type === 'string' ? body.token_type : 'Bearer',
        scope: typeof body.scope === 'string' ? body.scope : (previous?.scope ?? null),
        client: client ?? null,
      },
      expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(Date.now() + expiresIn * 1000).toISOString() : null,
    };
  }

  /** Handles the provider's redirect: checks the state once, exchanges the code, stores the tokens. */
  async completeConnection(params: { state?: string; code?: string; error?: string; errorDescription?: string }): Promise<CredentialRecord> {
    if (!params.state) throw new CredentialError('STATE_INVALID', 'The callback has no state.', 'state');
    const stateHash = b64url(sha256(params.state));
    const pending = await this.store.credentials.getState(stateHash);
    if (!pending) throw new CredentialError('STATE_INVALID', 'The state is not one this server issued.', 'state');
    if (pending.usedAt) throw new CredentialError('STATE_USED', 'This connection link was already used; start a new connection.', 'state');
    if (Date.parse(pending.expiresAt) < Date.now()) throw new CredentialError('STATE_EXPIRED', 'This connection link expired; start a new connection.', 'state');
    // Single use, before anything else happens: a replayed callback finds it used.
    const fresh = await this.store.transaction((tx) => tx.credentials.useState(stateHash, new Date().toISOString()));
    if (!fresh) throw new CredentialError('STATE_USED', 'This connection link was already used; start a new connection.', 'state');
    if (params.error) throw new CredentialError('AUTHORIZATION_DENIED', `The provider reported: ${params.errorDescription ?? params.error}`);
    if (!params.code) throw new CredentialError('STATE_INVALID', 'The callback has no authorization code.', 'code');
    const { verifier, client } = JSON.parse(this.vault.open(pending.sealedVerifier, `sealed:oauth-state:${stateHash}`)) as { verifier: string; client: TokenSet['client'] };
    const base = oauthProvider(pending.providerId)!;
    const provider = client ? { ...base, ...client } : configuredProvider(pending.providerId, this.config.oauthProviders);
    if (!provider) throw new CredentialError('PROVIDER_NOT_CONFIGURED', `The OAuth provider ${pending.providerId} is no longer configured on this server: ${howToConfigure(pending.providerId)}.`);
    const body = await this.tokenRequest(provider.tokenUrl, {
      grant_type: 'authorization_code',
      code: params.code,
      redirect_uri: pending.redirectUri,
      code_verifier: verifier,
      client_id: provider.clientId,
      client_secret: provider.clientSecret,
    });
    const { tokens, expiresAt } = this.tokenSet(body, null, client);
    const accountId = ['account_id', 'user_id', 'email'].map((k) => body[k]).find((v) => typeof v === 'string') as string | undefined;
    return this.store.transaction(async (tx) => {
      const now = new Date().toISOString();
      if (pending.credentialId) {
        const existing = await tx.credentials.get(pending.workspaceId, pending.credentialId);
        if (!existing) throw new CredentialError('CREDENTIAL_NOT_FOUND', 'The credential being reconnected no longer exists.');
        const next = { ...existing, accountId: accountId ?? existing.accountId, sealedSecret: this.seal(existing.id, tokens), accessExpiresAt: expiresAt, updatedAt: now };
        await tx.credentials.update(next);
        return next;
      }
      const id = randomUUID();
      const record: CredentialRecord = {
        id,
        workspaceId: pending.workspaceId,
        type: 'oauth',
        providerId: pending.providerId,
        displayName: pending.displayName,
        description: null,
        accountId: accountId ?? null,
        sealedSecret: this.seal(id, tokens),
        accessExpiresAt: expiresAt,
        createdBy: pending.userId,
        createdAt: now,
        updatedAt: now,
      };
      await tx.credentials.insert(record);
      return record;
    });
  }

  /** A usable access token of an OAuth credential of the workspace, refreshed first when it is about to expire. */
  async accessToken(workspaceId: string, credentialId: string): Promise<string> {
    const record = await this.store.credentials.get(workspaceId, credentialId);
    if (!record) throw new CredentialError('CREDENTIAL_NOT_FOUND', `No credential ${credentialId} in this workspace.`);
    if (record.type !== 'oauth') throw new CredentialError('NOT_OAUTH', `The credential ${credentialId} is a service account, not an OAuth connection.`);
    const tokens = this.open<TokenSet>(record);
    if (!record.accessExpiresAt || Date.parse(record.accessExpiresAt) - REFRESH_MARGIN_MS > Date.now()) return tokens.accessToken;
    const running = this.refreshing.get(record.id);
    if (running) return running;
    const job = this.refresh(record, tokens).finally(() => this.refreshing.delete(record.id));
    this.refreshing.set(record.id, job);
    return job;
  }

  private async refresh(record: CredentialRecord, tokens: TokenSet): Promise<string> {
    if (!tokens.refreshToken) throw new CredentialError('REAUTHORIZATION_REQUIRED', `The access token of ${record.displayName} expired and there is no refresh token; reconnect it.`);
    const base = oauthProvider(record.providerId);
    const provider = base && (tokens.client ? { ...base, ...tokens.client } : configuredProvider(record.providerId, this.config.oauthProviders));
    if (!provider) throw new CredentialError('PROVIDER_NOT_CONFIGURED', `The OAuth provider ${record.providerId} is not configured on this server: ${howToConfigure(record.providerId)}.`);
    const body = await this.tokenRequest(provider.tokenUrl, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refreshToken,
      client_id: provider.clientId,
      client_secret: provider.clientSecret,
    });
    const next = this.tokenSet(body, tokens, tokens.client);
    await this.store.transaction((tx) =>
      tx.credentials.update({ ...record, sealedSecret: this.seal(record.id, next.tokens), accessExpiresAt: next.expiresAt, updatedAt: new Date().toISOString() }),
    );
    return next.tokens.accessToken;
  }
}

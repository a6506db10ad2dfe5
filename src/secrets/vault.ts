// Workspace and personal secrets: names are plain, values are sealed with SecretCipher before they reach the
// store and opened only to resolve a {{NAME}} reference inside a run. No value is ever returned by the API.
import { randomUUID } from 'node:crypto';
import type { Repositories, Store } from '../store/index.ts';
import type { SecretRecord } from '../store/secrets.ts';
import type { SecretCipher } from './cipher.ts';
import { recordAudit } from '../audit/recorder.ts';

/** Names as they appear in {{NAME}} references. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const MAX_SECRET_BYTES = 64 * 1024;

export class SecretError extends Error {}

export interface SecretInput {
  /** The workspace a workspace secret belongs to (for a personal one: where the request was made, unused). */
  workspaceId: string;
  scope: 'workspace' | 'personal';
  /** The owner of a personal secret. */
  ownerUserId: string | null;
  name: string;
  /** Omitted: keep the stored value (the secret must exist; workspace scope only). */
  value?: string;
  /** Omitted (undefined): keep; null or '': clear. Workspace scope only. */
  description?: string | null;
  /** Omitted: keep. Workspace scope only. */
  unredacted?: boolean;
  createdBy: string | null;
}

const contextOf = (s: { sealWorkspaceId: string; scope: string; ownerUserId: string | null; name: string }) =>
  `${s.sealWorkspaceId}/${s.scope}/${s.ownerUserId ?? ''}/${s.name}`;

/** A resolved secret: its value and whether runs must redact it. */
export interface ResolvedSecret {
  value: string;
  redact: boolean;
}

export class SecretVault {
  private readonly store: Store;
  private readonly cipher: SecretCipher;
  constructor(store: Store, cipher: SecretCipher) {
    this.store = store;
    this.cipher = cipher;
  }

  /**
   * Seals another bearer secret the server must be able to show again (e.g. a share-link token) under the
   * same key; `context` binds it to its row and must not look like a secret's (those start with a workspace id).
   */
  seal(plaintext: string, context: string): string {
    return this.cipher.encrypt(plaintext, context);
  }

  open(sealed: string, context: string): string {
    return this.cipher.decrypt(sealed, context);
  }

  /** Creates or replaces a secret inside the caller's transaction. */
  async set(tx: Repositories, input: SecretInput): Promise<SecretRecord & { created: boolean }> {
    if (!SECRET_NAME.test(input.name)) throw new SecretError('A secret name starts with a letter or underscore and has only letters, digits and underscores (at most 128)');
    if (input.value !== undefined && Buffer.byteLength(input.value) > MAX_SECRET_BYTES) throw new SecretError(`A secret value may have at most ${MAX_SECRET_BYTES} bytes`);
    if ((input.scope === 'personal') !== (input.ownerUserId !== null)) throw new SecretError('A personal secret needs its owner, a workspace secret has none');
    if (input.scope === 'personal' && (input.description !== undefined || input.unredacted !== undefined)) {
      throw new SecretError('description and unredacted belong to workspace secrets; a personal secret has only a value');
    }
    const now = new Date().toISOString();
    const workspaceId = input.scope === 'workspace' ? input.workspaceId : null;
    const existing = await tx.secrets.get(workspaceId, input.scope, input.ownerUserId, input.name);
    if (input.value === undefined && !existing) {
      throw new SecretError(input.scope === 'personal' ? 'A personal secret needs a value' : `No workspace secret ${input.name} to update; a new secret needs a value`);
    }
    const sealWorkspaceId = input.value === undefined ? existing!.sealWorkspaceId : (workspaceId ?? '');
    const base = { sealWorkspaceId, scope: input.scope, ownerUserId: input.ownerUserId, name: input.name };
    const record: SecretRecord = {
      id: existing?.id ?? randomUUID(),
      workspaceId,
      scope: input.scope,
      ownerUserId: input.ownerUserId,
      name: input.name,
      ciphertext: input.value === undefined ? existing!.ciphertext : this.cipher.encrypt(input.value, contextOf(base)),
      sealWorkspaceId,
      description: input.description === undefined ? (existing?.description ?? '') : (input.description ?? ''),
      unredacted: input.unredacted ?? existing?.unredacted ?? false,
      createdBy: existing?.createdBy ?? input.createdBy,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await tx.secrets.upsert(record);
    return { ...record, created: !existing };
  }

  /** Opens a stored secret's value (server side only). */
  openRecord(record: SecretRecord): string {
    return this.cipher.decrypt(record.ciphertext, contextOf(record));
  }

  /** The value a run sees for {{name}}: the user's personal secret first, then the workspace's. */
  async resolve(workspaceId: string, userId: string | null, name: string): Promise<string | undefined> {
    return (await this.resolveEntry(workspaceId, userId, name))?.value;
  }

  /** Like resolve, and says whether the value must be redacted (all but unredacted workspace secrets). */
  async resolveEntry(workspaceId: string, userId: string | null, name: string): Promise<ResolvedSecret | undefined> {
    if (!SECRET_NAME.test(name)) return undefined;
    const record = await this.store.secrets.resolve(workspaceId, userId, name);
    return record ? { value: this.openRecord(record), redact: !(record.scope === 'workspace' && record.unredacted) } : undefined;
  }
}

/** The operator's way to set a secret (admin command): one transaction with its audit event, never the value. */
export async function setSecretAsOperator(store: Store, vault: SecretVault, input: Omit<SecretInput, 'createdBy'>): Promise<Omit<SecretRecord, 'ciphertext'>> {
  return store.transaction(async (tx) => {
    if (!(await tx.workspaces.get(input.workspaceId))) throw new SecretError(`No workspace ${input.workspaceId}`);
    if (input.ownerUserId && !(await tx.members.role(input.workspaceId, input.ownerUserId))) {
      throw new SecretError(`User ${input.ownerUserId} is not a member of ${input.workspaceId}`);
    }
    const { ciphertext: _sealed, created: _created, ...record } = await vault.set(tx, { ...input, createdBy: null });
    await recordAudit(tx, null, input.workspaceId, {
      action: 'secret.updated',
      resourceType: 'secret',
      resourceId: record.id,
      resourceName: record.name,
      metadata: { scope: record.scope },
    });
    return record;
  });
}

export async function deleteSecretAsOperator(store: Store, input: { workspaceId: string; scope: 'workspace' | 'personal'; ownerUserId: string | null; name: string }): Promise<void> {
  await store.transaction(async (tx) => {
    const existing = await tx.secrets.get(input.scope === 'workspace' ? input.workspaceId : null, input.scope, input.ownerUserId, input.name);
    if (!existing) throw new SecretError(`No ${input.scope} secret ${input.name}`);
    await tx.secrets.delete(existing.id);
    await recordAudit(tx, null, input.workspaceId, { action: 'secret.deleted', resourceType: 'secret', resourceId: existing.id, resourceName: existing.name, metadata: { scope: existing.scope } });
  });
}

// Share-link tokens at rest: found by their SHA-256, shown again (to workspace members reading the share) by
// opening the copy sealed under the secrets key. A database read alone yields no working link.
import { createHash } from 'node:crypto';
import type { SecretVault } from '../secrets/vault.ts';
import type { Store } from '../store/index.ts';
import type { FileShareRecord } from '../store/file-shares.ts';

export const hashShareToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

const contextOf = (shareId: string) => `file-share/${shareId}`;

export function sealShareToken(vault: SecretVault, shareId: string, token: string): Pick<FileShareRecord, 'tokenHash' | 'tokenSealed'> {
  return { tokenHash: hashShareToken(token), tokenSealed: vault.seal(token, contextOf(shareId)) };
}

export const openShareToken = (vault: SecretVault, share: FileShareRecord): string => vault.open(share.tokenSealed, contextOf(share.id));

/** Seals the tokens of shares created before migration 45; run at start, before requests are served. */
export async function sealPlainShareTokens(store: Store, vault: SecretVault): Promise<number> {
  return store.transaction(async (tx) => {
    const pending = await tx.fileShares.unsealed();
    for (const p of pending) {
      const sealed = sealShareToken(vault, p.id, p.plainToken);
      await tx.fileShares.seal(p.id, sealed.tokenHash, sealed.tokenSealed);
    }
    return pending.length;
  });
}

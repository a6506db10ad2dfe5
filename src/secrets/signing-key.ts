// The server's HMAC key (pagination cursors, upload tokens, signed transfer URLs) mints bearer credentials, so
// like other secrets it is stored sealed under the secrets key, never in plain. A key stored in plain by an
// older version is sealed on the first start; one that no longer opens (the secrets key was replaced) is
// replaced too, which only invalidates outstanding cursors, upload tokens and transfer URLs.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from '../store/index.ts';
import type { SecretVault } from './vault.ts';

const SETTING = 'signing_key';
const CONTEXT = 'settings/signing_key';

export async function loadSigningKey(store: Store, vault: SecretVault, logger?: Logger): Promise<Buffer> {
  return store.transaction(async (tx) => {
    const fresh = randomBytes(32).toString('base64');
    const stored = await tx.settings.getOrInit(SETTING, vault.seal(fresh, CONTEXT));
    // Sealed values have dot-separated parts; a base64 key from before has none.
    if (!stored.includes('.')) {
      await tx.settings.set(SETTING, vault.seal(stored, CONTEXT));
      return Buffer.from(stored, 'base64');
    }
    try {
      return Buffer.from(vault.open(stored, CONTEXT), 'base64');
    } catch {
      logger?.warn('the stored signing key does not open with this secrets key; a new one replaces it (outstanding cursors and upload links stop working)');
      await tx.settings.set(SETTING, vault.seal(fresh, CONTEXT));
      return Buffer.from(fresh, 'base64');
    }
  });
}

/**
 * Whether `vault`'s key opens the stored signing key, i.e. is the key this database's secrets were sealed
 * under (backups check it); null when there is nothing sealed to try it on.
 */
export async function signingKeyOpens(store: Store, vault: SecretVault): Promise<boolean | null> {
  const stored = await store.settings.get(SETTING);
  if (stored === undefined || !stored.includes('.')) return null;
  try {
    vault.open(stored, CONTEXT);
    return true;
  } catch {
    return false;
  }
}

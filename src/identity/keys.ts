// API key material: how keys look, and the only form in which they are stored (a SHA-256 hash).
import { hash, randomBytes, randomUUID } from 'node:crypto';

/** Every key this server issues starts with this, so leaked keys are easy to scan for. */
export const API_KEY_PREFIX = 'sk-owa-';

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Keys carry 256 random bits, so a fast hash is enough: there is nothing to brute-force. Every authenticated
 * request hashes its key (the credential cache is keyed by the hash), so the one-shot form, without a Hash object.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function displaySuffix(key: string): string {
  return key.slice(-4);
}

export function newId(): string {
  return randomUUID();
}

// Signed values of the Files API: upload control tokens (the `upload-token` header), signed transfer URLs
// (PUT of raw bytes to this server) and share-link tokens. All are HMACs under the server's signing key, each
// with its own purpose label so one kind can never stand in for another.
import { createHmac, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

function mac(key: Buffer, purpose: string, payload: string): string {
  return createHmac('sha256', key).update(`${purpose}\n${payload}`).digest('base64url');
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface UploadTokenClaims {
  uploadId: string;
  workspaceId: string;
  expiresAt: number;
}

export function signUploadToken(key: Buffer, claims: UploadTokenClaims): string {
  const payload = Buffer.from(JSON.stringify([claims.uploadId, claims.workspaceId, claims.expiresAt])).toString('base64url');
  return `${payload}.${mac(key, 'upload-token', payload)}`;
}

export type TokenProblem = 'malformed' | 'bad_signature' | 'expired' | 'foreign';

/** Checks a token was issued by this server for exactly this upload in this workspace, and is still valid. */
export function checkUploadToken(key: Buffer, token: string, uploadId: string, workspaceId: string, now = Date.now()): TokenProblem | null {
  const [payload, signature, extra] = token.split('.');
  if (!payload || !signature || extra !== undefined) return 'malformed';
  if (!same(signature, mac(key, 'upload-token', payload))) return 'bad_signature';
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return 'malformed';
  }
  if (!Array.isArray(claims) || claims.length !== 3) return 'malformed';
  const [u, w, e] = claims as [string, string, number];
  if (u !== uploadId || w !== workspaceId) return 'foreign';
  if (typeof e !== 'number' || e <= now) return 'expired';
  return null;
}

export function signTransfer(key: Buffer, uploadId: string, partNumber: number, expiresAt: number): string {
  return mac(key, 'upload-transfer', `${uploadId}\n${partNumber}\n${expiresAt}`);
}

export function checkTransfer(key: Buffer, uploadId: string, partNumber: number, expiresAt: number, signature: string, now = Date.now()): TokenProblem | null {
  if (!same(signature, signTransfer(key, uploadId, partNumber, expiresAt))) return 'bad_signature';
  if (expiresAt <= now) return 'expired';
  return null;
}

export const newShareToken = () => randomBytes(24).toString('base64url');

export function hashSharePassword(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64url')}$${scryptSync(password, salt, 32).toString('base64url')}`;
}

export function checkSharePassword(password: string, stored: string): boolean {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  return same(scryptSync(password, Buffer.from(salt, 'base64url'), 32).toString('base64url'), hash);
}

/** The signed URL of one part of an upload session (PUT /transfers/files/{uploadId}/parts/{n}). */
export function transferUrl(baseUrl: string, key: Buffer, uploadId: string, partNumber: number, expiresAt: number): string {
  return `${baseUrl}/transfers/files/${uploadId}/parts/${partNumber}?expires=${expiresAt}&signature=${signTransfer(key, uploadId, partNumber, expiresAt)}`;
}

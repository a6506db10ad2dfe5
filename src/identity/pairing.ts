// The CLI's pairing handoff (`sim login --method api-key`): the CLI opens an approval page naming a request and
// the SHA-256 of a poll secret, the signed-in user checks the pairing code and approves, and the CLI's poll
// (with the secret) receives a new personal API key once. No HTTP here.
import { createHash } from 'node:crypto';
import type { Store } from '../store/index.ts';
import type { PairingRequest } from '../store/web-auth.ts';
import { addApiKey } from './admin.ts';
import { hashApiKey } from './keys.ts';

export const PAIRING_TTL_MS = 15 * 60 * 1000;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const PAIRING = /^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/;

export type PairingProblem = 'invalid_request' | 'mismatch' | 'expired' | 'answered' | 'declined' | 'verifier_mismatch';

export class PairingError extends Error {
  readonly reason: PairingProblem;
  constructor(reason: PairingProblem, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface PairingParams {
  request: string;
  challenge: string;
  pairing: string;
  scope: string;
  workspace: string | null;
}

export function checkPairingParams(q: Record<string, unknown>): PairingParams {
  const str = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : '');
  const p = { request: str('request'), challenge: str('challenge'), pairing: str('pairing'), scope: str('scope') || 'platform', workspace: str('workspace') || null };
  if (!TOKEN.test(p.request) || !TOKEN.test(p.challenge)) throw new PairingError('invalid_request', 'This sign-in link is incomplete or damaged. Run sim login again.');
  if (!PAIRING.test(p.pairing)) throw new PairingError('invalid_request', 'This sign-in link has no valid pairing code. Run sim login again.');
  if (p.scope !== 'platform') throw new PairingError('invalid_request', `This server issues only platform keys, not "${p.scope}" keys.`);
  return p;
}

/** Records the request when the approval page is first opened; the same request must keep its challenge. */
export async function openPairing(store: Store, p: PairingParams): Promise<PairingRequest> {
  const requestHash = hashApiKey(p.request);
  const now = Date.now();
  return store.transaction(async (tx) => {
    await tx.webAuth.putPairing({
      requestHash,
      challenge: p.challenge,
      pairing: p.pairing,
      workspaceId: p.workspace,
      approvedBy: null,
      approvedAt: null,
      completedAt: null,
      keyId: null,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + PAIRING_TTL_MS).toISOString(),
    });
    const stored = (await tx.webAuth.getPairing(requestHash))!;
    if (stored.challenge !== p.challenge || stored.pairing !== p.pairing) throw new PairingError('mismatch', 'This sign-in request was already opened with other details. Run sim login again.');
    if (stored.expiresAt <= new Date().toISOString()) throw new PairingError('expired', 'This sign-in request has expired. Run sim login again.');
    if (stored.completedAt || stored.approvedBy) throw new PairingError('answered', 'This sign-in request was already answered.');
    return stored;
  });
}

export async function answerPairing(store: Store, request: string, userId: string, approve: boolean): Promise<void> {
  const requestHash = hashApiKey(request);
  const at = new Date().toISOString();
  const done = await store.transaction((tx) => (approve ? tx.webAuth.approvePairing(requestHash, userId, at) : tx.webAuth.denyPairing(requestHash, at)));
  if (!done) throw new PairingError('answered', 'This sign-in request was already answered or has expired.');
}

/** `CLI (YYYY-MM-DD HH:MM:SSZ)`, the name the CLI gives keys it pairs for. */
export const cliKeyName = (d: Date) => `CLI (${d.toISOString().slice(0, 19).replace('T', ' ')}Z)`;

export type PollResult =
  | { status: 'pending' }
  | { status: 'complete'; key: { id: string; apiKey: string }; scope: 'platform'; workspaceId: string | null; workspaceBound: false };

/** The CLI's poll: pending until approved, then the key exactly once (to the holder of the poll secret). */
export async function pollPairing(store: Store, request: string, verifier: string): Promise<PollResult> {
  if (!TOKEN.test(request) || typeof verifier !== 'string' || verifier.length < 32 || verifier.length > 256) throw new PairingError('invalid_request', 'request and verifier are required.');
  const requestHash = hashApiKey(request);
  const challenge = createHash('sha256').update(verifier, 'utf8').digest('base64url');
  return store.transaction(async (tx) => {
    const p = await tx.webAuth.getPairing(requestHash);
    if (!p) return { status: 'pending' as const };
    if (p.challenge !== challenge) throw new PairingError('verifier_mismatch', 'The verifier does not match this sign-in request.');
    if (p.completedAt) throw new PairingError(p.approvedBy ? 'answered' : 'declined', p.approvedBy ? 'This sign-in request was already completed.' : 'The sign-in was declined in the browser.');
    if (p.expiresAt <= new Date().toISOString()) throw new PairingError('expired', 'This sign-in request has expired. Run sim login again.');
    if (!p.approvedBy) return { status: 'pending' as const };
    const at = new Date();
    const issued = await addApiKey(tx, { kind: 'personal', userId: p.approvedBy, name: cliKeyName(at) });
    if (!(await tx.webAuth.completePairing(requestHash, issued.record.id, at.toISOString()))) throw new PairingError('answered', 'This sign-in request was already completed.');
    const workspaceId = p.workspaceId && (await tx.members.role(p.workspaceId, p.approvedBy)) ? p.workspaceId : null;
    return { status: 'complete' as const, key: { id: issued.record.id, apiKey: issued.key }, scope: 'platform' as const, workspaceId, workspaceBound: false as const };
  });
}

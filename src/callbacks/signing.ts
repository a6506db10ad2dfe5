// Per-workspace signing secrets of completion callbacks. A rotation creates a new secret, answers it once and
// stores it sealed with the secret vault (only its last four characters stay readable); the previous secret
// keeps signing for a grace period (0 ends it at once). Each delivery is signed with every secret active at
// send time: `X-Sim-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`, each v1 the HMAC-SHA256, keyed with the
// secret string (UTF-8), of `<t>.<raw body>`.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { Repositories, Store } from '../store/index.ts';
import type { SigningSecretRecord } from '../store/run-callbacks.ts';
import type { SecretVault } from '../secrets/vault.ts';
import type { EgressPolicy } from '../execution/egress.ts';
import { urlProblem } from '../mcp/client.ts';
import { DomainError, invalidInput } from '../domain/errors.ts';

export const SECRET_PREFIX = 'whsec_';

/** The vault context binding a sealed signing secret to its row (never shaped like a workspace secret's). */
const sealContext = (s: Pick<SigningSecretRecord, 'workspaceId' | 'id'>) => `callback-signing-secret:${s.workspaceId}:${s.id}`;

export interface SecretMetadata {
  id: string;
  prefix: string;
  lastFour: string;
  createdAt: string;
  expiresAt: string | null;
}

const metadataOf = (s: SigningSecretRecord): SecretMetadata => ({ id: s.id, prefix: SECRET_PREFIX, lastFour: s.lastFour, createdAt: s.createdAt, expiresAt: s.expiresAt });

/** Creates the workspace's new current secret inside the caller's transaction; the only time its value is known. */
export async function rotateSigningSecret(
  tx: Repositories,
  vault: SecretVault,
  input: { workspaceId: string; createdBy: string | null; graceMs: number; at: Date },
): Promise<{ secret: string; current: SecretMetadata; previous: SecretMetadata | null }> {
  const at = input.at.toISOString();
  const before = (await tx.runCallbacks.activeSecrets(input.workspaceId, at)).find((s) => s.expiresAt === null) ?? null;
  await tx.runCallbacks.retireSecrets(input.workspaceId, at, new Date(input.at.getTime() + input.graceMs).toISOString());
  const secret = SECRET_PREFIX + randomBytes(32).toString('base64url');
  const record: SigningSecretRecord = {
    id: randomUUID(),
    workspaceId: input.workspaceId,
    sealed: '',
    lastFour: secret.slice(-4),
    createdBy: input.createdBy,
    createdAt: at,
    expiresAt: null,
  };
  record.sealed = vault.seal(secret, sealContext(record));
  await tx.runCallbacks.insertSecret(record);
  const previous = before && input.graceMs > 0 ? metadataOf({ ...before, expiresAt: new Date(input.at.getTime() + input.graceMs).toISOString() }) : null;
  return { secret, current: metadataOf(record), previous };
}

/** What may be read about a workspace's secrets: the current one and a previous one still signing; never a value. */
export async function signingSecretMetadata(store: Store, workspaceId: string, at: Date): Promise<{ current: SecretMetadata | null; previous: SecretMetadata | null }> {
  const active = await store.runCallbacks.activeSecrets(workspaceId, at.toISOString());
  const current = active.find((s) => s.expiresAt === null) ?? null;
  const previous = active.find((s) => s.expiresAt !== null) ?? null;
  return { current: current && metadataOf(current), previous: previous && metadataOf(previous) };
}

/** Whether the workspace has a current signing secret (callbacks are accepted only then). */
export async function hasSigningSecret(store: Store | Repositories, workspaceId: string): Promise<boolean> {
  return (await store.runCallbacks.activeSecrets(workspaceId, new Date().toISOString())).some((s) => s.expiresAt === null);
}

/** The signature header value for `body` sent `now` (t: its unix seconds), with each of the workspace's signing secrets. */
export async function signatureFor(store: Store, vault: SecretVault, workspaceId: string, now: Date, body: string): Promise<string | null> {
  const t = Math.floor(now.getTime() / 1000);
  const active = await store.runCallbacks.activeSecrets(workspaceId, now.toISOString());
  if (active.length === 0) return null;
  const parts = active.map((s) => `v1=${createHmac('sha256', vault.open(s.sealed, sealContext(s))).update(`${t}.${body}`).digest('hex')}`);
  return `t=${t},${parts.join(',')}`;
}

/**
 * The checks a callback URL passes when it is given (a run's own or a workflow's default): http(s), not on an
 * address the egress policy refuses (checked again on every attempt), and a workspace able to sign. `field` is
 * where the URL sits in the request.
 */
export async function checkCallbackUrl(store: Store, egress: EgressPolicy, workspaceId: string, url: string, field: string[]): Promise<void> {
  const problem = await urlProblem(egress, url);
  if (problem) throw invalidInput(field, problem.message, problem.code === 'EGRESS_BLOCKED' ? 'egress_blocked' : 'invalid_url');
  if (!(await hasSigningSecret(store, workspaceId))) {
    throw new DomainError(
      'conflict',
      `The workspace has no callback signing secret yet; an admin creates one with POST /api/v2/workspaces/${workspaceId}/callback-signing-secret/rotate.`,
      { code: 'CALLBACK_SECRET_MISSING' },
    );
  }
}

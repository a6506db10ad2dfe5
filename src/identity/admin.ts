// Identity management used by first start and the admin command. Each call is one transaction.
import type { Repositories, Store } from '../store/index.ts';
import type { User } from '../store/users.ts';
import type { Workspace, WorkspaceRole } from '../store/workspaces.ts';
import type { ApiKeyKind, ApiKeyRecord } from '../store/api-keys.ts';
import { personalAccountId, type Plan } from '../store/billing-accounts.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { bumpCredentialEpoch } from './credentials.ts';
import { recordAudit, type AuditEntry } from '../audit/recorder.ts';

/** Operator changes are audited like any other, with the admin command as the actor. */
const audit = (tx: Repositories, entry: AuditEntry & { workspaceId: string | null }) => recordAudit(tx, null, entry.workspaceId, entry);
import { displaySuffix, hashApiKey, newApiKey, newId } from './keys.ts';

export class IdentityError extends Error {}

const COLORS = ['#802FFF', '#2F80ED', '#27AE60', '#F2994A', '#EB5757', '#9B51E0', '#00A3A3'];

export const createUser = (store: Store, input: { email: string; name?: string }) => store.transaction((tx) => addUser(tx, input));

async function addUser(tx: Repositories, input: { email: string; name?: string }): Promise<User> {
  const email = input.email.trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new IdentityError(`"${input.email}" is not an e-mail address`);
  if (await tx.users.getByEmail(email)) throw new IdentityError(`A user with e-mail ${email} already exists`);
  const now = new Date().toISOString();
  const user: User = { id: newId(), email, name: input.name?.trim() || email.split('@')[0]!, image: null, createdAt: now, updatedAt: now };
  await onUniqueViolation(tx.users.insert(user), 'users', ['email'], () => new IdentityError(`A user with e-mail ${email} already exists`));
  await tx.billingAccounts.insert({ id: personalAccountId(user.id), name: user.name, plan: 'free', createdAt: now, updatedAt: now });
  return user;
}

type NewWorkspace = { name: string; ownerId: string; color?: string };
export const createWorkspace = (store: Store, input: NewWorkspace) => store.transaction((tx) => addWorkspace(tx, input));

export async function addWorkspace(tx: Repositories, input: NewWorkspace): Promise<Workspace> {
  const name = input.name.trim();
  if (!name || name.length > 200) throw new IdentityError('A workspace name must have 1 to 200 characters');
  if (!(await tx.users.get(input.ownerId))) throw new IdentityError(`No user ${input.ownerId}`);
  const now = new Date().toISOString();
  const id = newId();
  const color = input.color ?? COLORS[parseInt(id.slice(0, 2), 16) % COLORS.length]!;
  await tx.workspaces.insert({
    id,
    name,
    color,
    logoUrl: null,
    ownerId: input.ownerId,
    allowPersonalKeys: true,
    billingAccountId: personalAccountId(input.ownerId),
    createdAt: now,
    updatedAt: now,
  });
  await tx.members.upsert(id, input.ownerId, 'admin', now);
  await audit(tx, { action: 'workspace.created', resourceType: 'workspace', resourceId: id, resourceName: name, workspaceId: id, metadata: { ownerId: input.ownerId } });
  return (await tx.workspaces.get(id))!;
}

export async function setMember(store: Store, input: { workspaceId: string; userId: string; role: WorkspaceRole }): Promise<void> {
  await store.transaction(async (tx) => {
    if (!(await tx.workspaces.get(input.workspaceId))) throw new IdentityError(`No workspace ${input.workspaceId}`);
    if (!(await tx.users.get(input.userId))) throw new IdentityError(`No user ${input.userId}`);
    const before = await tx.members.role(input.workspaceId, input.userId);
    await tx.members.upsert(input.workspaceId, input.userId, input.role, new Date().toISOString());
    await audit(tx, {
      action: before ? 'member.role_changed' : 'member.added',
      resourceType: 'member',
      resourceId: input.userId,
      workspaceId: input.workspaceId,
      metadata: { role: input.role, previousRole: before ?? null },
    });
  });
}

export async function removeMember(store: Store, input: { workspaceId: string; userId: string }): Promise<void> {
  await store.transaction(async (tx) => {
    if (!(await tx.members.remove(input.workspaceId, input.userId))) {
      throw new IdentityError(`User ${input.userId} is not a member of ${input.workspaceId}`);
    }
    await audit(tx, { action: 'member.removed', resourceType: 'member', resourceId: input.userId, workspaceId: input.workspaceId });
    await bumpCredentialEpoch(tx);
  });
}

/** Sets the plan of the billing account a workspace bills to (shared by its other workspaces). */
export async function setWorkspacePlan(store: Store, workspaceId: string, plan: Plan): Promise<void> {
  await store.transaction(async (tx) => {
    const ws = await tx.workspaces.get(workspaceId);
    if (!ws) throw new IdentityError(`No workspace ${workspaceId}`);
    await tx.billingAccounts.setPlan(ws.billingAccountId, plan, new Date().toISOString());
    await audit(tx, { action: 'billing.plan_changed', resourceType: 'billing_account', resourceId: ws.billingAccountId, workspaceId, metadata: { plan } });
    // Cached principals carry the plan that sizes their rate limits.
    await bumpCredentialEpoch(tx);
  });
}

export async function setPersonalKeysAllowed(store: Store, workspaceId: string, allowed: boolean): Promise<void> {
  await store.transaction(async (tx) => {
    if (!(await tx.workspaces.setAllowPersonalKeys(workspaceId, allowed, new Date().toISOString()))) {
      throw new IdentityError(`No workspace ${workspaceId}`);
    }
    await audit(tx, { action: 'workspace.settings_changed', resourceType: 'workspace', resourceId: workspaceId, workspaceId, metadata: { personalKeysAllowed: allowed } });
    await bumpCredentialEpoch(tx);
  });
}

export interface IssuedKey {
  key: string;
  record: Omit<ApiKeyRecord, 'keyHash'>;
}

type NewApiKey = { kind: ApiKeyKind; userId: string; workspaceId?: string; name?: string; key?: string; expiresAt?: string | null };
export const createApiKey = (store: Store, input: NewApiKey) => store.transaction((tx) => addApiKey(tx, input));

export async function addApiKey(tx: Repositories, input: NewApiKey): Promise<IssuedKey> {
  const key = input.key ?? newApiKey();
  if (key.length < 16 || /\s/.test(key)) throw new IdentityError('An API key must have at least 16 characters and no spaces');
  if (input.expiresAt && Number.isNaN(Date.parse(input.expiresAt))) throw new IdentityError(`"${input.expiresAt}" is not a date`);
  if (!(await tx.users.get(input.userId))) throw new IdentityError(`No user ${input.userId}`);
  let workspaceId: string | null = null;
  if (input.kind === 'workspace') {
    if (!input.workspaceId) throw new IdentityError('A workspace key needs a workspace');
    const role = await tx.members.role(input.workspaceId, input.userId);
    if (role !== 'admin') throw new IdentityError('Only an admin of the workspace can create its workspace keys');
    workspaceId = input.workspaceId;
  }
  const record: ApiKeyRecord = {
    id: newId(),
    kind: input.kind,
    userId: input.userId,
    workspaceId,
    name: input.name?.trim() || (input.kind === 'workspace' ? 'Workspace key' : 'Personal key'),
    keyHash: hashApiKey(key),
    displaySuffix: displaySuffix(key),
    createdAt: new Date().toISOString(),
    expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
    revokedAt: null,
  };
  if (await tx.apiKeys.getByHash(record.keyHash)) throw new IdentityError('That key is already in use');
  await onUniqueViolation(tx.apiKeys.insert(record), 'api_keys', ['key_hash'], () => new IdentityError('That key is already in use'));
  await audit(tx, {
    action: 'api_key.created',
    resourceType: 'api_key',
    resourceId: record.id,
    resourceName: record.name,
    workspaceId,
    metadata: { kind: record.kind, userId: record.userId, expiresAt: record.expiresAt },
  });
  const { keyHash: _hash, ...shown } = record;
  return { key, record: shown };
}

export async function revokeApiKey(store: Store, id: string): Promise<void> {
  await store.transaction(async (tx) => {
    if (!(await tx.apiKeys.revoke(id, new Date().toISOString()))) throw new IdentityError(`No active key ${id}`);
    const key = await tx.apiKeys.get(id);
    await audit(tx, { action: 'api_key.revoked', resourceType: 'api_key', resourceId: id, resourceName: key?.name ?? null, workspaceId: key?.workspaceId ?? null });
    await bumpCredentialEpoch(tx);
  });
}

/** First start on an empty database: one user, one workspace, one personal key, all or nothing. */
export async function bootstrapIfEmpty(
  store: Store,
  options: { apiKey: string | null; email?: string },
): Promise<{ user: User; workspace: Workspace; key: IssuedKey } | null> {
  return store.transaction(async (tx) => {
    if ((await tx.users.count()) > 0) return null;
    const user = await addUser(tx, { email: options.email ?? 'admin@localhost.localdomain', name: 'Admin' });
    const workspace = await addWorkspace(tx, { name: 'My workspace', ownerId: user.id });
    const key = await addApiKey(tx, { kind: 'personal', userId: user.id, name: 'Bootstrap key', key: options.apiKey ?? undefined });
    return { user, workspace, key };
  });
}

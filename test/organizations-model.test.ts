// The organization data model's invariants, held by the store itself (indexes) and by src/organizations/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type Store } from '../src/store/index.ts';
import { createUser, createWorkspace } from '../src/identity/admin.ts';
import { addOrganizationMember, attachWorkspace, createOrganization, detachWorkspace, organizationOfWorkspace, requireOrgAdmin, requireOrgMember } from '../src/organizations/organizations.ts';
import { UniqueViolation } from '../src/store/errors.ts';
import { DomainError } from '../src/domain/errors.ts';

let dir: string;
let store: Store;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-orgs-'));
  store = await openSqliteStore(path.join(dir, 'db.sqlite'));
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const kindOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof DomainError) return err.kind;
    if (err instanceof UniqueViolation) return `unique:${err.table}(${err.columns.join(',')})`;
    throw err;
  }
  return 'ok';
};

describe('organization model', () => {
  it('keeps one owner, one organization per user, and bills owned workspaces to the organization', async () => {
    const owner = await createUser(store, { email: 'owner@example.com' });
    const admin = await createUser(store, { email: 'admin@example.com' });
    const other = await createUser(store, { email: 'other@example.com' });
    const org = await store.transaction((tx) => createOrganization(tx, { name: 'Acme Corp', ownerId: owner.id }));
    expect(org.slug).toBe('acme-corp');
    const now = new Date().toISOString();
    await store.transaction((tx) => addOrganizationMember(tx, org.id, admin.id, 'admin', now));
    expect(await requireOrgAdmin(store, org.id, admin.id)).toMatchObject({ id: org.id, role: 'admin' });
    // One organization per user: the domain answers conflict, and the index holds even without the check.
    expect(await kindOf(store.transaction((tx) => addOrganizationMember(tx, org.id, admin.id, 'member', now)))).toBe('conflict');
    expect(await kindOf(store.transaction((tx) => createOrganization(tx, { name: 'Second', ownerId: admin.id })))).toBe('conflict');
    const second = await store.transaction((tx) => createOrganization(tx, { name: 'Acme Corp', ownerId: other.id }));
    expect(second.slug).not.toBe('acme-corp');
    expect(await kindOf(store.transaction((tx) => tx.organizations.addMember(second.id, admin.id, 'member', now)))).toBe('unique:organization_members(user_id)');
    // Exactly one owner: a second owner row is refused by the index.
    expect(await kindOf(store.transaction((tx) => tx.organizations.setRole(org.id, admin.id, 'owner')))).toBe('unique:organization_members(organization_id)');
    // Membership checks: not a member is forbidden, no such organization is not found.
    expect(await kindOf(requireOrgMember(store, org.id, other.id))).toBe('forbidden');
    expect(await kindOf(requireOrgMember(store, 'nope', owner.id))).toBe('not_found');
    const ws = await createWorkspace(store, { name: 'Team space', ownerId: owner.id });
    await store.transaction((tx) => attachWorkspace(tx, org.id, ws.id));
    expect((await organizationOfWorkspace(store, ws.id))?.id).toBe(org.id);
    expect((await store.workspaces.get(ws.id))!.billingAccountId).toBe(org.billingAccountId);
    // A workspace whose owner is outside the organization cannot move in.
    const outside = await createWorkspace(store, { name: 'Outside', ownerId: other.id });
    expect(await kindOf(store.transaction((tx) => attachWorkspace(tx, org.id, outside.id)))).toBe('invalid');
    await store.transaction((tx) => detachWorkspace(tx, ws.id));
    expect(await organizationOfWorkspace(store, ws.id)).toBeNull();
    expect((await store.workspaces.get(ws.id))!.billingAccountId).toBe(`ba-${owner.id}`);
  });
});

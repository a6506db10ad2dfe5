// Organizations for tests, made through the organization model (src/organizations/) until its HTTP operations
// exist on this branch: an organization on a plan, with members and workspaces it owns.
import { addOrganizationMember, attachWorkspace, createOrganization } from '../../src/organizations/organizations.ts';
import type { Plan } from '../../src/store/billing-accounts.ts';
import type { TestServer } from './server.ts';

export interface TestOrganization {
  id: string;
  /** The organization's workspaces (owned by its owner, attached to it). */
  workspaces: string[];
}

export async function newOrganization(
  s: TestServer,
  input: { name: string; ownerId?: string; plan?: Plan; workspaces?: string[]; members?: { userId: string; role?: 'admin' | 'member' }[] },
): Promise<TestOrganization> {
  const store = s.services.store;
  const ownerId = input.ownerId ?? s.userId;
  const org = await store.transaction((tx) => createOrganization(tx, { name: input.name, ownerId, plan: input.plan ?? 'enterprise' }));
  const now = new Date().toISOString();
  for (const m of input.members ?? []) await store.transaction((tx) => addOrganizationMember(tx, org.id, m.userId, m.role ?? 'member', now));
  const workspaces: string[] = [];
  for (const name of input.workspaces ?? []) {
    const id = await s.newWorkspace(name, ownerId);
    await store.transaction((tx) => attachWorkspace(tx, org.id, id));
    workspaces.push(id);
  }
  return { id: org.id, workspaces };
}

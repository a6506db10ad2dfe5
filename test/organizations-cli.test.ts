// The official CLI's organization and invitation commands against this server, unchanged.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { addOrganizationMember, attachWorkspace, createOrganization } from '../src/organizations/organizations.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
let orgId: string;
let member: { userId: string; key: string };

const rows = (json: any) => (Array.isArray(json) ? json : json?.data);

beforeAll(async () => {
  s = await startTestServer();
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
  const store = s.services.store;
  orgId = (await store.transaction((tx) => createOrganization(tx, { name: 'Acme', ownerId: s.userId }))).id;
  await store.transaction((tx) => attachWorkspace(tx, orgId, s.workspaceId));
  member = await s.newUser('cli-member@example.com');
  await store.transaction((tx) => addOrganizationMember(tx, orgId, member.userId, 'member', new Date().toISOString()));
});
afterAll(() => s.stop());

describe('sim organizations', () => {
  it('lists and gets the organization', async () => {
    const list = await runCli(['--output', 'json', 'organizations', 'list'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(rows(list.json)).toEqual([expect.objectContaining({ id: orgId, name: 'Acme', role: 'owner' })]);
    const get = await runCli(['--output', 'json', 'organizations', 'get', orgId], env);
    expect(get.code, get.stderr).toBe(0);
    expect(get.json).toMatchObject({ id: orgId, slug: 'acme' });
    const workspaces = await runCli(['--output', 'json', 'organizations', 'workspaces', '--organization', orgId], env);
    expect(rows(workspaces.json)).toEqual([{ id: s.workspaceId, name: 'My workspace' }]);
  });

  it('lists members, changes a role, sets a credit limit and removes a member', async () => {
    const list = await runCli(['--output', 'json', 'organizations', 'members', 'list', '--organization', orgId, '--sort-by', 'email'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(rows(list.json).map((m: any) => [m.email, m.role])).toEqual([
      ['admin@localhost.localdomain', 'owner'],
      ['cli-member@example.com', 'member'],
    ]);
    const update = await runCli(['--output', 'json', 'organizations', 'members', 'update', member.userId, '--organization', orgId, '--role', 'admin'], env);
    expect(update.code, update.stderr).toBe(0);
    expect(update.json).toMatchObject({ userId: member.userId, role: 'admin' });
    const owner = await runCli(['--output', 'json', 'organizations', 'members', 'update', s.userId, '--organization', orgId, '--role', 'member'], env);
    expect(owner.code).not.toBe(0);
    expect(owner.stderr + owner.stdout).toMatch(/owner/i);

    const limit = await runCli(['--output', 'json', 'organizations', 'members', 'usage-limit', 'update', member.userId, '--organization', orgId, '--credit-limit', '40'], env);
    expect(limit.code, limit.stderr + limit.stdout).toBe(0);
    expect(limit.json).toEqual({ creditLimit: 40 });
    const read = await runCli(['--output', 'json', 'organizations', 'members', 'usage-limit', 'get', member.userId, '--organization', orgId], env);
    expect(read.json).toEqual({ creditsUsed: 0, creditLimit: 40, billingInterval: 'month' });

    const remove = await runCli(['--output', 'json', 'organizations', 'members', 'remove', member.userId, '--organization', orgId, '--yes'], env);
    expect(remove.code, remove.stderr).toBe(0);
    expect(remove.json).toEqual({ userId: member.userId, deleted: true });
  });

  it('reads usage reports', async () => {
    const summary = await runCli(['--output', 'json', 'organizations', 'usage', 'summary', '--organization', orgId, '--preset', '7d'], env);
    expect(summary.code, summary.stderr).toBe(0);
    expect(summary.json).toMatchObject({ window: { source: 'reporting' }, bucket: 'day', totals: { credits: 0 } });
    const breakdown = await runCli(['--output', 'json', 'organizations', 'usage', 'breakdown', '--organization', orgId, '--dimension', 'workspace'], env);
    expect(breakdown.code, breakdown.stderr).toBe(0);
    expect(breakdown.json).toMatchObject({ dimension: 'workspace', rows: [], totalCredits: 0 });
    const events = await runCli(['--output', 'json', 'organizations', 'usage', 'events', '--organization', orgId], env);
    expect(events.code, events.stderr).toBe(0);
    expect(rows(events.json)).toEqual([]);
  });

  it('is refused with a workspace key', async () => {
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
    const r = await runCli(['--output', 'json', 'organizations', 'list'], { ...env, apiKey: wsKey });
    expect(r.code).not.toBe(0);
  });
});

describe('sim organizations invitations and sim workspaces invitations', () => {
  it('creates, lists, gets, resends and revokes an organization invitation', async () => {
    const created = await runCli(['--output', 'json', 'organizations', 'invitations', 'create', '--organization', orgId, '--email', 'cli-invitee@example.com', '--role', 'admin'], env);
    expect(created.code, created.stderr + created.stdout).toBe(0);
    expect(created.json).toMatchObject({ email: 'cli-invitee@example.com', role: 'admin', status: 'pending', kind: 'organization' });
    const id = created.json.id;
    const list = await runCli(['--output', 'json', 'organizations', 'invitations', 'list', '--organization', orgId], env);
    expect(rows(list.json).map((i: any) => i.id)).toContain(id);
    const get = await runCli(['--output', 'json', 'organizations', 'invitations', 'get', id, '--organization', orgId], env);
    expect(get.json).toMatchObject({ id, status: 'pending' });
    const resend = await runCli(['--output', 'json', 'organizations', 'invitations', 'resend', id, '--organization', orgId], env);
    expect(resend.code, resend.stderr + resend.stdout).toBe(0);
    expect(resend.json).toMatchObject({ id, status: 'pending' });
    const mails = fs.readdirSync(path.join(s.dataDir, 'outbox')).filter((f) => f.endsWith('.json'));
    expect(mails.length).toBe(2);
    const duplicate = await runCli(['--output', 'json', 'organizations', 'invitations', 'create', '--organization', orgId, '--email', 'cli-invitee@example.com'], env);
    expect(duplicate.code).not.toBe(0);
    const revoke = await runCli(['--output', 'json', 'organizations', 'invitations', 'revoke', id, '--organization', orgId, '--yes'], env);
    expect(revoke.code, revoke.stderr).toBe(0);
    expect(revoke.json).toEqual({ id, status: 'cancelled' });
  });

  it('invites several addresses to the workspace and exits non-zero when one fails', async () => {
    const ok = await runCli(['--output', 'json', 'workspaces', 'invitations', 'create', '--emails', 'one@example.com', 'two@example.com', '--permission', 'write'], env);
    expect(ok.code, ok.stderr + ok.stdout).toBe(0);
    expect(ok.json).toMatchObject({ success: true, successful: ['one@example.com', 'two@example.com'], failed: [] });
    const id = ok.json.invitations[0].id;
    const grants = await runCli(['--output', 'json', 'organizations', 'invitations', 'workspaces', id, '--organization', orgId], env);
    expect(grants.code, grants.stderr).toBe(0);
    expect(rows(grants.json)).toEqual([{ id: s.workspaceId, name: 'My workspace', permission: 'write', archivedAt: null }]);
    const partial = await runCli(['--output', 'json', 'workspaces', 'invitations', 'create', '--emails', 'one@example.com', 'three@example.com'], env);
    expect(partial.code).not.toBe(0);
    expect(partial.stdout + partial.stderr).toMatch(/already been invited/);
  });
});

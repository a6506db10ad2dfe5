// The real `sim` CLI (2.1.28) against this server: permission groups, a workspace's permission configuration,
// and the access request round trip (discover, create, list, preview, resolve, settings).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { newOrganization, type TestOrganization } from './support/organizations.ts';
import { setMember } from '../src/identity/admin.ts';

let s: TestServer;
let org: TestOrganization;
let member: { userId: string; key: string };
const owner = (...args: string[]) => runCli(['--output', 'json', ...args], { endpoint: s.url, apiKey: s.key, workspace: org.workspaces[0] });
const asMember = (...args: string[]) => runCli(['--output', 'json', ...args], { endpoint: s.url, apiKey: member.key, workspace: org.workspaces[0] });
const ok = (r: { code: number; stdout: string; stderr: string; json: any }) => {
  expect(r.code, r.stderr + r.stdout).toBe(0);
  return r.json?.data ?? r.json;
};

beforeAll(async () => {
  s = await startTestServer();
  member = await s.newUser('cli-member@example.com');
  org = await newOrganization(s, { name: 'CLI Co', workspaces: ['CLI Main'], members: [{ userId: member.userId }] });
  await setMember(s.services.store, { workspaceId: org.workspaces[0]!, userId: member.userId, role: 'write' });
});
afterAll(() => s.stop());

describe('sim permission-groups', () => {
  it('creates, lists, reads, updates, manages members and deletes groups', async () => {
    const o = ['--organization', org.id];
    const def = ok(await owner('permission-groups', 'create', ...o, '--name', 'Everyone', '--default'));
    expect(def).toMatchObject({ name: 'Everyone', isDefault: true, workspaceIds: [] });
    const g = ok(await owner('permission-groups', 'create', ...o, '--name', 'Main', '--workspace-ids', JSON.stringify(org.workspaces), '--config', '{"disableSkills":true,"allowedIntegrations":["api"]}'));
    expect(g.config).toMatchObject({ disableSkills: true, allowedIntegrations: ['api'] });
    const listed = ok(await owner('permission-groups', 'list', ...o));
    expect(listed.map((x: any) => x.name)).toEqual(['Main', 'Everyone']);
    expect(ok(await owner('permission-groups', 'get', g.id, ...o)).id).toBe(g.id);
    const updated = ok(await owner('permission-groups', 'update', g.id, ...o, '--config', '{"deniedTools":["http_request"]}', '--description', 'Main rules'));
    expect(updated).toMatchObject({ description: 'Main rules', config: { disableSkills: true, deniedTools: ['http_request'] } });

    const added = ok(await owner('permission-groups', 'members', 'add', ...o, '--group', g.id, '--user', member.userId));
    expect(added).toMatchObject({ permissionGroupId: g.id, userId: member.userId });
    const members = ok(await owner('permission-groups', 'members', 'list', ...o, '--group', g.id));
    expect(members.map((m: any) => m.userEmail)).toEqual(['cli-member@example.com']);
    expect(ok(await owner('permission-groups', 'members', 'batch-add', ...o, '--group', g.id, '--all-members'))).toEqual({ added: 1, skipped: 1 });
    expect(ok(await owner('permission-groups', 'members', 'remove', s.userId, ...o, '--group', g.id, '--yes'))).toEqual({ userId: s.userId, deleted: true });

    const config = ok(await asMember('workspaces', 'permission-config'));
    expect(config).toMatchObject({ permissionGroupId: g.id, groupName: 'Main', entitled: true, organizationId: org.id, isOrgAdmin: false });

    const refused = await asMember('permission-groups', 'list', ...o);
    expect(refused.code).not.toBe(0);
    expect(ok(await owner('permission-groups', 'delete', def.id, ...o, '--yes'))).toEqual({ id: def.id, deleted: true });
  });
});

describe('sim access requests', () => {
  it('discover, create, mine, preview, resolve and the settings switch', async () => {
    const o = ['--organization', org.id];
    const items = ok(await asMember('workspaces', 'access-requests', 'discover', '--state', 'requestable', '--target-kind', 'feature'));
    expect(items.map((i: any) => i.target)).toEqual([{ kind: 'feature', configKey: 'disableSkills' }]);
    const req = ok(await asMember('workspaces', 'access-requests', 'create', '--target', JSON.stringify(items[0].target), '--reason', 'Writing agents'));
    expect(req).toMatchObject({ status: 'pending', reason: 'Writing agents', groupName: 'Main' });
    expect(ok(await asMember('workspaces', 'access-requests', 'mine')).map((r: any) => r.id)).toEqual([req.id]);
    expect(ok(await asMember('organizations', 'access-requests', 'mine', ...o)).map((r: any) => r.id)).toEqual([req.id]);

    expect(ok(await owner('organizations', 'access-requests', 'list', ...o, '--status', 'pending')).map((r: any) => r.id)).toEqual([req.id]);
    const preview = ok(await owner('organizations', 'access-requests', 'preview', req.id, ...o));
    expect(preview).toMatchObject({ resolutionKind: 'permission', canApply: true, changes: [{ configKey: 'disableSkills', before: true, after: false }] });
    const applied = ok(await owner('organizations', 'access-requests', 'resolve', req.id, ...o, '--action', 'apply', '--expected-fingerprint', preview.fingerprint));
    expect(applied.status).toBe('fulfilled');
    expect(ok(await asMember('workspaces', 'permission-config')).config.disableSkills).toBe(false);

    const second = ok(await asMember('workspaces', 'access-requests', 'create', '--target', '{"kind":"tool","id":"http_request"}'));
    const cancelled = ok(await asMember('workspaces', 'access-requests', 'cancel', second.id));
    expect(cancelled.status).toBe('cancelled');
    const third = ok(await asMember('workspaces', 'access-requests', 'create', '--target', '{"kind":"tool","id":"http_request"}'));
    expect(ok(await owner('organizations', 'access-requests', 'resolve', third.id, ...o, '--action', 'decline', '--reason', 'Use the API block'))).toMatchObject({
      status: 'declined',
      decisionReason: 'Use the API block',
    });

    expect(ok(await owner('organizations', 'access-requests', 'settings', 'get', ...o))).toEqual({ allowRequests: true });
    expect(ok(await owner('organizations', 'access-requests', 'settings', 'update', ...o, '--allow-requests', 'false'))).toEqual({ allowRequests: false });
    const off = await asMember('organizations', 'access-requests', 'create', ...o, '--target', '{"kind":"tool","id":"http_request"}');
    expect(off.code).not.toBe(0);
    expect(off.stderr + off.stdout).toMatch(/turned off/);
  });
});

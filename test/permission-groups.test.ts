// Permission groups through HTTP: the Enterprise and admin gate, the default group, scopes and their
// conflicts, members (single, bulk, removal), and a caller's effective configuration in a workspace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { newOrganization, type TestOrganization } from './support/organizations.ts';
import { createApiKey, setMember } from '../src/identity/admin.ts';

let s: TestServer;
let org: TestOrganization;
let admin: { userId: string; key: string };
let member: { userId: string; key: string };
let member2: { userId: string; key: string };
let outsider: { userId: string; key: string };
const base = () => `/api/v2/organizations/${org.id}/permission-groups`;

beforeAll(async () => {
  s = await startTestServer();
  admin = await s.newUser('pg-admin@example.com');
  member = await s.newUser('pg-member@example.com');
  member2 = await s.newUser('pg-member2@example.com');
  outsider = await s.newUser('pg-outsider@example.com');
  org = await newOrganization(s, {
    name: 'Acme',
    workspaces: ['Acme One', 'Acme Two', 'Acme Three'],
    members: [{ userId: admin.userId, role: 'admin' }, { userId: member.userId }, { userId: member2.userId }],
  });
  for (const w of org.workspaces) {
    await setMember(s.services.store, { workspaceId: w, userId: member.userId, role: 'write' });
    await setMember(s.services.store, { workspaceId: w, userId: member2.userId, role: 'write' });
  }
});
afterAll(() => s.stop());

describe('the gate', () => {
  it('refuses members who are not owner or admin, outsiders, other plans and workspace keys', async () => {
    expect((await s.call('GET', base(), undefined, member.key)).status).toBe(403);
    expect((await s.call('GET', base(), undefined, outsider.key)).status).toBe(403);
    expect((await s.call('GET', '/api/v2/organizations/nope/permission-groups')).status).toBe(404);
    expect((await s.call('GET', base(), undefined, admin.key)).status).toBe(200);

    const teamOwner = await s.newUser('team-owner@example.com');
    const team = await newOrganization(s, { name: 'Team Co', ownerId: teamOwner.userId, plan: 'team' });
    const r = await s.call('GET', `/api/v2/organizations/${team.id}/permission-groups`, undefined, teamOwner.key);
    expect(r.status).toBe(403);
    expect(r.body.error.message).toMatch(/Enterprise/);

    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', workspaceId: org.workspaces[0]!, userId: s.userId })).key;
    const k = await s.call('GET', base(), undefined, wsKey);
    expect(k.status).toBe(403);
    expect((await s.call('GET', `/api/v2/workspaces/${org.workspaces[0]}/permission-config`, undefined, wsKey)).status).toBe(403);
  });
});

describe('groups', () => {
  let defaultId: string;
  let scopedId: string;

  it('creates a default group with every config key, and a new default demotes the old one to an inert group', async () => {
    const first = await s.ok('POST', base(), { name: '  Everyone  ', isDefault: true, config: { disableSkills: true } });
    expect(first).toMatchObject({ name: 'Everyone', isDefault: true, workspaceIds: [], organizationId: org.id, createdBy: s.userId, description: null });
    expect(Object.keys(first.config)).toHaveLength(42);
    expect(first.config).toMatchObject({ disableSkills: true, allowedIntegrations: null, deniedTools: [], hideCostInfo: false });
    const second = await s.ok('POST', base(), { name: 'Company', isDefault: true });
    defaultId = second.id;
    const demoted = await s.ok('GET', `${base()}/${first.id}`);
    expect(demoted).toMatchObject({ isDefault: false, workspaceIds: [] });
    await s.ok('DELETE', `${base()}/${first.id}`);
  });

  it('checks the scope rules and names', async () => {
    const [w1, w2] = org.workspaces;
    expect((await s.call('POST', base(), { name: 'No scope' })).status).toBe(400);
    expect((await s.call('POST', base(), { name: 'Default with scope', isDefault: true, workspaceIds: [w1] })).status).toBe(400);
    const personal = await s.newWorkspace('Personal');
    const outside = await s.call('POST', base(), { name: 'Foreign', workspaceIds: [personal] });
    expect(outside.status).toBe(400);
    expect(outside.body.error.message).toMatch(/does not belong/);
    expect((await s.call('POST', base(), { name: '   ' , workspaceIds: [w1] })).status).toBe(400);
    expect((await s.call('POST', base(), { name: 'x'.repeat(101), workspaceIds: [w1] })).status).toBe(400);
    expect((await s.call('POST', base(), { name: 'Bad config', workspaceIds: [w1], config: { allowedFileShareAuthTypes: ['magic'] } })).status).toBe(400);
    expect((await s.call('POST', base(), { name: 'Bad key', workspaceIds: [w1], config: { notAKey: true } })).status).toBe(400);

    const scoped = await s.ok('POST', base(), { name: 'Contractors', description: 'Outside help', workspaceIds: [w1, w2, w1], config: { allowedIntegrations: ['api'] } });
    scopedId = scoped.id;
    expect(scoped).toMatchObject({ isDefault: false, membershipMode: 'all_members', workspaceIds: [w1, w2].sort() });
    expect((await s.call('POST', base(), { name: 'Contractors', workspaceIds: [org.workspaces[2]] })).status).toBe(409);
    const overlap = await s.call('POST', base(), { name: 'Overlap', workspaceIds: [w2] });
    expect(overlap.status).toBe(409);
    expect(overlap.body.error.message).toMatch(/Contractors/);
  });

  it('lists, searches, sorts and pages groups; a group of another organization is not found', async () => {
    await s.ok('POST', base(), { name: 'Analysts', workspaceIds: [org.workspaces[2]] });
    const all = await s.call('GET', `${base()}?sortBy=name&sortOrder=asc`);
    expect(all.body.data.map((g: any) => g.name)).toEqual(['Analysts', 'Company', 'Contractors']);
    const page1 = await s.call('GET', `${base()}?sortBy=name&sortOrder=asc&limit=2`);
    expect(page1.body.data).toHaveLength(2);
    const page2 = await s.call('GET', `${base()}?sortBy=name&sortOrder=asc&limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
    expect(page2.body.data.map((g: any) => g.name)).toEqual(['Contractors']);
    expect(page2.body.nextCursor).toBeNull();
    expect((await s.call('GET', `${base()}?search=contr`)).body.data.map((g: any) => g.name)).toEqual(['Contractors']);
    expect((await s.call('GET', `${base()}?sortBy=color`)).status).toBe(400);

    const otherOwner = await s.newUser('other-owner@example.com');
    const other = await newOrganization(s, { name: 'Other', ownerId: otherOwner.userId });
    const foreign = await s.call('POST', `/api/v2/organizations/${other.id}/permission-groups`, { name: 'Theirs', isDefault: true }, otherOwner.key);
    expect(foreign.status).toBe(200);
    expect((await s.call('GET', `${base()}/${foreign.body.data.id}`)).status).toBe(404);
    expect((await s.call('PATCH', `${base()}/${foreign.body.data.id}`, { name: 'Mine' })).status).toBe(404);
    expect((await s.call('DELETE', `${base()}/${foreign.body.data.id}`)).status).toBe(404);
  });

  it('patches config key by key, clears the description, and checks scope changes', async () => {
    const patched = await s.ok('PATCH', `${base()}/${scopedId}`, { description: '', config: { deniedTools: ['http_request'], disableCustomTools: true } });
    expect(patched.description).toBeNull();
    expect(patched.config).toMatchObject({ allowedIntegrations: ['api'], deniedTools: ['http_request'], disableCustomTools: true });
    expect((await s.call('PATCH', `${base()}/${scopedId}`, { isDefault: true, workspaceIds: [org.workspaces[0]] })).status).toBe(400);
    expect((await s.call('PATCH', `${base()}/${scopedId}`, { name: 'Analysts' })).status).toBe(409);
    // Analysts (all members) targets the third workspace: Contractors may not take it too.
    expect((await s.call('PATCH', `${base()}/${scopedId}`, { workspaceIds: [org.workspaces[2]] })).status).toBe(409);
    const inert = await s.ok('PATCH', `${base()}/${scopedId}`, { workspaceIds: [] });
    expect(inert.workspaceIds).toEqual([]);
    const back = await s.ok('PATCH', `${base()}/${scopedId}`, { workspaceIds: [org.workspaces[0], org.workspaces[1]] });
    expect(back.workspaceIds).toHaveLength(2);
    expect((await s.call('PATCH', `${base()}/${scopedId}`, { description: 'x'.repeat(501) })).status).toBe(400);
    void defaultId;
  });

  it('adds, lists and removes members with the scope rules', async () => {
    const m = `${base()}/${scopedId}/members`;
    const added = await s.ok('POST', m, { userId: member.userId });
    expect(added).toMatchObject({ permissionGroupId: scopedId, organizationId: org.id, userId: member.userId, assignedBy: s.userId });
    expect((await s.call('POST', m, { userId: member.userId })).status).toBe(409);
    expect((await s.call('POST', m, { userId: outsider.userId })).status).toBe(400);
    expect((await s.call('POST', m, {})).status).toBe(400);
    expect((await s.ok('GET', `${base()}/${scopedId}`)).membershipMode).toBe('explicit');

    // An explicit-members group sharing a workspace with Contractors: member may not be in both.
    const second = await s.ok('POST', base(), { name: 'Reviewers', workspaceIds: [org.workspaces[0]] });
    expect(second.membershipMode).toBe('all_members');
    // Contractors now has explicit members, so an all-members group may share its workspace; adding member is a conflict.
    const conflict = await s.call('POST', `${base()}/${second.id}/members`, { userId: member.userId });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.message).toMatch(/Contractors/);
    // Bulk: all or nothing, outsiders ignored, existing counted as skipped.
    expect((await s.call('POST', `${base()}/${second.id}/members/bulk`, { userIds: [member2.userId, member.userId] })).status).toBe(409);
    expect((await s.ok('GET', `${base()}/${second.id}/members`))).toEqual([]);
    expect(await s.ok('POST', `${base()}/${second.id}/members/bulk`, { userIds: [member2.userId, outsider.userId, 'nobody'] })).toEqual({ added: 1, skipped: 0 });
    expect(await s.ok('POST', `${base()}/${second.id}/members/bulk`, { userIds: [member2.userId] })).toEqual({ added: 0, skipped: 1 });
    expect(await s.ok('POST', `${base()}/${second.id}/members/bulk`, { userIds: [] })).toEqual({ added: 0, skipped: 0 });
    expect((await s.call('POST', `${base()}/${second.id}/members/bulk`, { userIds: [member2.userId], addAllOrganizationMembers: true })).status).toBe(400);

    const list = await s.call('GET', `${m}?sortBy=userId`);
    expect(list.body.data).toEqual([expect.objectContaining({ userId: member.userId, userEmail: 'pg-member@example.com', userImage: null })]);
    expect((await s.call('DELETE', `${m}/${outsider.userId}`)).status).toBe(404);

    // Removing Reviewers' last member would make it all-members again while... Contractors has members, so it is fine.
    expect(await s.ok('DELETE', `${base()}/${second.id}/members/${member2.userId}`)).toEqual({ userId: member2.userId, deleted: true });
    // Now Reviewers governs everyone in workspace one; Contractors losing its last member would collide with it.
    const collide = await s.call('DELETE', `${m}/${member.userId}`);
    expect(collide.status).toBe(409);
    expect((await s.ok('GET', `${m}`)).map((x: any) => x.userId)).toEqual([member.userId]);
    await s.ok('DELETE', `${base()}/${second.id}`);
    expect(await s.ok('DELETE', `${m}/${member.userId}`)).toEqual({ userId: member.userId, deleted: true });
    await s.ok('POST', m, { userId: member.userId });
  });
});

describe("a caller's effective configuration", () => {
  it('follows the resolution order: explicit member, all-members group, default, none', async () => {
    const [w1, , w3] = org.workspaces;
    const cfg = (w: string, key?: string) => s.call('GET', `/api/v2/workspaces/${w}/permission-config`, undefined, key);
    const mine = (await cfg(w1!, member.key)).body.data;
    expect(mine).toMatchObject({ groupName: 'Contractors', entitled: true, organizationId: org.id, isOrgAdmin: false });
    expect(mine.config.allowedIntegrations).toEqual(['api']);
    // member2 is not an explicit member of Contractors, which has members: the default governs them.
    expect((await cfg(w1!, member2.key)).body.data.groupName).toBe('Company');
    // Analysts has no members: it governs everyone in workspace three.
    expect((await cfg(w3!, member2.key)).body.data).toMatchObject({ groupName: 'Analysts' });
    expect((await cfg(w1!, admin.key)).status).toBe(404); // admin is not a member of that workspace
    const owner = (await cfg(w1!)).body.data;
    expect(owner).toMatchObject({ isOrgAdmin: true, groupName: 'Company' });

    const personal = await s.newWorkspace('Personal config');
    expect((await cfg(personal)).body.data).toEqual({ permissionGroupId: null, groupName: null, config: null, entitled: false, organizationId: null, isOrgAdmin: false });
    const teamOwner = await s.newUser('team-owner-2@example.com');
    const team = await newOrganization(s, { name: 'Team Two', ownerId: teamOwner.userId, plan: 'team', workspaces: ['Team WS'] });
    expect((await cfg(team.workspaces[0]!, teamOwner.key)).body.data).toEqual({ permissionGroupId: null, groupName: null, config: null, entitled: false, organizationId: team.id, isOrgAdmin: true });
    const freshOwner = await s.newUser('fresh-owner@example.com');
    const fresh = await newOrganization(s, { name: 'Fresh', ownerId: freshOwner.userId, workspaces: ['Fresh WS'] });
    expect((await cfg(fresh.workspaces[0]!, freshOwner.key)).body.data).toEqual({ permissionGroupId: null, groupName: null, config: null, entitled: true, organizationId: fresh.id, isOrgAdmin: true });
  });
});

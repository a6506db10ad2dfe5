// Access requests through HTTP: discovery of what a governed member may ask for, filing (workspace and
// organization routes), listing and cancelling one's own, the admin inbox, the preview with its fingerprint and
// reach, applying (group config, member credit limit) or declining, the on/off switch, and the status machine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { newOrganization, type TestOrganization } from './support/organizations.ts';
import { createApiKey, setMember } from '../src/identity/admin.ts';

let s: TestServer;
let org: TestOrganization;
let alice: { userId: string; key: string };
let bob: { userId: string; key: string };
let groupId: string;
let ws: string;
const orgBase = () => `/api/v2/organizations/${org.id}/access-requests`;
const wsBase = () => `/api/v2/workspaces/${ws}/access-requests`;

beforeAll(async () => {
  s = await startTestServer();
  alice = await s.newUser('alice@example.com');
  bob = await s.newUser('bob@example.com');
  org = await newOrganization(s, { name: 'Requests Co', workspaces: ['Main', 'Side'], members: [{ userId: alice.userId }, { userId: bob.userId }] });
  ws = org.workspaces[0]!;
  for (const u of [alice, bob]) await setMember(s.services.store, { workspaceId: ws, userId: u.userId, role: 'write' });
  const g = await s.ok('POST', `/api/v2/organizations/${org.id}/permission-groups`, {
    name: 'Main rules',
    workspaceIds: [ws],
    config: { allowedIntegrations: ['api', 'agent'], deniedTools: ['http_request'], disableSkills: true, allowedFileShareAuthTypes: ['password'] },
  });
  groupId = g.id;
  await s.ok('POST', `/api/v2/organizations/${org.id}/permission-groups`, { name: 'Org default', isDefault: true, config: { hideCostInfo: true } });
});
afterAll(() => s.stop());

describe('discovery', () => {
  it("lists the member's restrictions as requestable and the rest as allowed, filtered and paged", async () => {
    const all = await s.call('GET', `${wsBase()}/discovery?limit=100`, undefined, alice.key);
    expect(all.status).toBe(200);
    const find = (kind: string, id: string) => all.body.data.find((i: any) => i.target.kind === kind && (i.target.id ?? i.target.configKey) === id);
    expect(find('feature', 'disableSkills')).toEqual({ target: { kind: 'feature', configKey: 'disableSkills' }, label: 'Disable skills', state: 'requestable', reason: null, pendingRequestId: null });
    expect(find('feature', 'disableTableCreation').state).toBe('allowed');
    expect(find('integration', 'function').state).toBe('requestable');
    expect(find('integration', 'api').state).toBe('allowed');
    expect(find('tool', 'http_request').state).toBe('requestable');
    expect(find('file_share_auth', 'public').state).toBe('requestable');
    expect(find('file_share_auth', 'password').state).toBe('allowed');
    expect(find('usage_limit', 'member').state).toBe('allowed');

    const tools = await s.call('GET', `${wsBase()}/discovery?targetKind=tool&state=requestable`, undefined, alice.key);
    expect(tools.body.data.map((i: any) => i.label)).toEqual(['Tool: http_request']);
    const page = await s.call('GET', `${wsBase()}/discovery?state=requestable&limit=2`, undefined, alice.key);
    expect(page.body.data).toHaveLength(2);
    const next = await s.call('GET', `${wsBase()}/discovery?state=requestable&limit=2&cursor=${encodeURIComponent(page.body.nextCursor)}`, undefined, alice.key);
    expect(next.body.data[0].label > page.body.data[1].label).toBe(true);
    expect((await s.call('GET', `${wsBase()}/discovery?state=requestable&cursor=${encodeURIComponent(page.body.nextCursor)}&search=x`, undefined, alice.key)).status).toBe(400);
    expect((await s.call('GET', `${wsBase()}/discovery?targetKind=planet`, undefined, alice.key)).status).toBe(400);

    // The organization routes use the default group.
    const orgItems = await s.call('GET', `${orgBase()}/discovery?state=requestable&targetKind=feature`, undefined, alice.key);
    expect(orgItems.body.data.map((i: any) => i.target.configKey)).toEqual(['hideCostInfo']);
    expect((await s.call('GET', `${orgBase()}/discovery`, undefined, (await s.newUser('stranger@example.com')).key)).status).toBe(403);
  });
});

describe('filing, listing and cancelling', () => {
  let toolRequest: string;

  it('files requestable targets only, once each, and refuses workspace keys', async () => {
    const r = await s.call('POST', wsBase(), { target: { kind: 'tool', id: 'http_request' }, reason: 'Need to call our CRM' }, alice.key);
    expect(r.status, r.text).toBe(200);
    toolRequest = r.body.data.id;
    expect(r.body.data).toMatchObject({
      organizationId: org.id,
      workspaceId: ws,
      target: { kind: 'tool', id: 'http_request' },
      targetLabel: 'Tool: http_request',
      reason: 'Need to call our CRM',
      status: 'pending',
      decisionReason: null,
      decidedAt: null,
      groupName: 'Main rules',
      requester: { id: alice.userId, name: 'alice', email: 'alice@example.com' },
    });
    expect((await s.call('POST', wsBase(), { target: { kind: 'tool', id: 'http_request' } }, alice.key)).status).toBe(409);
    const allowed = await s.call('POST', wsBase(), { target: { kind: 'integration', id: 'api' } }, alice.key);
    expect(allowed.status).toBe(409);
    expect(allowed.body.error.message).toMatch(/already available/);
    expect((await s.call('POST', wsBase(), { target: { kind: 'feature', configKey: 'notAKey' } }, alice.key)).status).toBe(400);
    expect((await s.call('POST', wsBase(), { target: { kind: 'tool' } }, alice.key)).status).toBe(400);
    expect((await s.call('POST', wsBase(), {}, alice.key)).status).toBe(400);
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', workspaceId: ws, userId: s.userId })).key;
    expect((await s.call('POST', wsBase(), { target: { kind: 'feature', configKey: 'disableSkills' } }, wsKey)).status).toBe(403);

    const pending = await s.call('GET', `${wsBase()}/discovery?targetKind=tool`, undefined, alice.key);
    expect(pending.body.data[0].pendingRequestId).toBe(toolRequest);

    const orgFiled = await s.call('POST', orgBase(), { target: { kind: 'feature', configKey: 'hideCostInfo' } }, alice.key);
    expect(orgFiled.body.data).toMatchObject({ workspaceId: null, groupName: 'Org default', reason: '' });
    const personal = await s.newWorkspace('Personal', alice.userId);
    expect((await s.call('POST', `/api/v2/workspaces/${personal}/access-requests`, { target: { kind: 'feature', configKey: 'disableSkills' } }, alice.key)).status).toBe(409);
  });

  it("lists the caller's own requests; only the requester cancels, only while pending", async () => {
    const mine = await s.call('GET', `${orgBase()}/mine`, undefined, alice.key);
    expect(mine.body.data.map((r: any) => r.targetLabel)).toEqual(['Hide cost info', 'Tool: http_request']);
    const inWs = await s.call('GET', `${wsBase()}?sortBy=targetLabel&sortOrder=asc`, undefined, alice.key);
    expect(inWs.body.data.map((r: any) => r.id)).toEqual([toolRequest]);
    expect((await s.call('GET', `${orgBase()}/mine`, undefined, bob.key)).body.data).toEqual([]);

    const filed = await s.call('POST', wsBase(), { target: { kind: 'feature', configKey: 'disableSkills' } }, alice.key);
    expect((await s.call('POST', `${wsBase()}/${filed.body.data.id}/cancel`, undefined, bob.key)).status).toBe(403);
    const cancelled = await s.call('POST', `${wsBase()}/${filed.body.data.id}/cancel`, undefined, alice.key);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', decidedAt: expect.any(String) });
    expect((await s.call('POST', `${wsBase()}/${filed.body.data.id}/cancel`, undefined, alice.key)).status).toBe(409);
    expect((await s.call('POST', `${orgBase()}/${filed.body.data.id}/cancel`, undefined, alice.key)).status).toBe(409);
    expect((await s.call('POST', `${orgBase()}/nope/cancel`, undefined, alice.key)).status).toBe(404);
    expect((await s.call('GET', `${orgBase()}/mine?status=cancelled`, undefined, alice.key)).body.data).toHaveLength(1);
  });

  it('the admin inbox, preview, apply with the fingerprint, and the closing of what the change also grants', async () => {
    expect((await s.call('GET', orgBase(), undefined, alice.key)).status).toBe(403);
    const inbox = await s.call('GET', `${orgBase()}?status=pending&search=alice`);
    expect(inbox.body.data.map((r: any) => r.targetLabel).sort()).toEqual(['Hide cost info', 'Tool: http_request']);
    // Bob asks for the same tool: one apply grants both, and his request is closed.
    const bobs = await s.call('POST', wsBase(), { target: { kind: 'tool', id: 'http_request' } }, bob.key);
    expect(bobs.status).toBe(200);

    const preview = await s.ok('GET', `${orgBase()}/${toolRequest}/preview`);
    expect(preview).toMatchObject({
      resolutionKind: 'permission',
      group: { id: groupId, name: 'Main rules' },
      changes: [{ configKey: 'deniedTools', label: 'Denied tools', before: ['http_request'], after: [] }],
      canApply: true,
      unavailableReason: null,
      currentLimitCredits: null,
      newLimitCredits: null,
      impact: { memberCount: 3, workspaceCount: 1, workspaceNames: ['Main'], truncated: false },
    });
    expect((await s.call('POST', `${orgBase()}/${toolRequest}/resolve`, { action: 'apply', expectedFingerprint: 'stale' })).status).toBe(409);
    expect((await s.call('POST', `${orgBase()}/${toolRequest}/resolve`, { action: 'apply', expectedFingerprint: preview.fingerprint, newLimitCredits: 5 })).status).toBe(400);
    expect((await s.call('POST', `${orgBase()}/${toolRequest}/resolve`, { action: 'apply' })).status).toBe(400);
    const applied = await s.ok('POST', `${orgBase()}/${toolRequest}/resolve`, { action: 'apply', expectedFingerprint: preview.fingerprint });
    expect(applied).toMatchObject({ status: 'fulfilled', decisionReason: null, decidedAt: expect.any(String) });
    expect((await s.ok('GET', `/api/v2/organizations/${org.id}/permission-groups/${groupId}`)).config.deniedTools).toEqual([]);
    expect((await s.call('GET', `${wsBase()}?status=closed`, undefined, bob.key)).body.data.map((r: any) => r.id)).toEqual([bobs.body.data.id]);
    // Final states do not move.
    expect((await s.call('POST', `${orgBase()}/${toolRequest}/resolve`, { action: 'decline', reason: 'late' })).status).toBe(409);
    expect((await s.call('GET', `${orgBase()}/${toolRequest}/preview`)).body.data).toMatchObject({ canApply: false, unavailableReason: 'The request is fulfilled.' });
  });

  it('a changed group makes an earlier preview stale; decline needs a reason', async () => {
    const r = await s.call('POST', wsBase(), { target: { kind: 'integration', id: 'function' }, reason: 'Scripts' }, alice.key);
    const before = await s.ok('GET', `${orgBase()}/${r.body.data.id}/preview`);
    expect(before.changes).toEqual([{ configKey: 'allowedIntegrations', label: 'Allowed blocks', before: ['api', 'agent'], after: ['api', 'agent', 'function'] }]);
    await s.ok('PATCH', `/api/v2/organizations/${org.id}/permission-groups/${groupId}`, { config: { hideCopilot: true } });
    expect((await s.call('POST', `${orgBase()}/${r.body.data.id}/resolve`, { action: 'apply', expectedFingerprint: before.fingerprint })).status).toBe(409);
    expect((await s.call('POST', `${orgBase()}/${r.body.data.id}/resolve`, { action: 'decline' })).status).toBe(400);
    const declined = await s.ok('POST', `${orgBase()}/${r.body.data.id}/resolve`, { action: 'decline', reason: 'Use the API block' });
    expect(declined).toMatchObject({ status: 'declined', decisionReason: 'Use the API block' });
  });

  it('usage-limit requests raise the member credit limit to a larger whole number', async () => {
    await s.services.store.transaction((tx) => tx.organizations.setCreditLimit(org.id, bob.userId, 100, new Date().toISOString()));
    const r = await s.call('POST', orgBase(), { target: { kind: 'usage_limit', id: 'member' }, reason: 'Quarter end' }, bob.key);
    expect(r.status, r.text).toBe(200);
    const preview = await s.ok('GET', `${orgBase()}/${r.body.data.id}/preview`);
    expect(preview).toMatchObject({ resolutionKind: 'usage_limit', group: null, currentLimitCredits: 100, changes: [], canApply: true });
    const apply = (body: Record<string, unknown>) => s.call('POST', `${orgBase()}/${r.body.data.id}/resolve`, { action: 'apply', expectedFingerprint: preview.fingerprint, ...body });
    expect((await apply({})).status).toBe(400);
    expect((await apply({ newLimitCredits: 100 })).status).toBe(400);
    expect((await apply({ newLimitCredits: 150.5 })).status).toBe(400);
    expect((await apply({ newLimitCredits: 250 })).body.data.status).toBe('fulfilled');
    expect(await s.services.store.organizations.creditLimit(org.id, bob.userId)).toBe(250);
  });

  it('the switch: off refuses new requests and approvals, cancel and decline still work; admins only', async () => {
    expect(await s.ok('GET', `${orgBase()}/settings`)).toEqual({ allowRequests: true });
    expect((await s.call('GET', `${orgBase()}/settings`, undefined, alice.key)).status).toBe(403);
    expect((await s.call('PATCH', `${orgBase()}/settings`, { allowRequests: false }, alice.key)).status).toBe(403);
    expect((await s.call('PATCH', `${orgBase()}/settings`, {})).status).toBe(400);
    const one = await s.call('POST', wsBase(), { target: { kind: 'file_share_auth', id: 'public' } }, alice.key);
    const two = await s.call('POST', wsBase(), { target: { kind: 'file_share_auth', id: 'email' } }, alice.key);
    const three = await s.call('POST', wsBase(), { target: { kind: 'file_share_auth', id: 'sso' } }, alice.key);
    const preview = await s.ok('GET', `${orgBase()}/${one.body.data.id}/preview`);
    expect(await s.ok('PATCH', `${orgBase()}/settings`, { allowRequests: false })).toEqual({ allowRequests: false });
    expect((await s.call('POST', wsBase(), { target: { kind: 'feature', configKey: 'disableSkills' } }, alice.key)).status).toBe(403);
    const unavailable = await s.call('GET', `${wsBase()}/discovery?targetKind=feature&search=skills`, undefined, alice.key);
    expect(unavailable.body.data[0]).toMatchObject({ state: 'unavailable', reason: 'Access requests are turned off in this organization.' });
    expect((await s.call('POST', `${orgBase()}/${one.body.data.id}/resolve`, { action: 'apply', expectedFingerprint: preview.fingerprint })).status).toBe(403);
    expect((await s.call('POST', `${orgBase()}/${two.body.data.id}/resolve`, { action: 'decline', reason: 'No' })).body.data.status).toBe('declined');
    expect((await s.call('POST', `${wsBase()}/${three.body.data.id}/cancel`, undefined, alice.key)).body.data.status).toBe('cancelled');
    await s.ok('PATCH', `${orgBase()}/settings`, { allowRequests: true });
  });

  it('deleting the group closes its pending requests', async () => {
    const r = await s.call('POST', wsBase(), { target: { kind: 'feature', configKey: 'disableSkills' } }, alice.key);
    await s.ok('DELETE', `/api/v2/organizations/${org.id}/permission-groups/${groupId}`);
    const after = (await s.call('GET', `${orgBase()}/mine?status=closed`, undefined, alice.key)).body.data;
    expect(after.map((x: any) => x.id)).toContain(r.body.data.id);
  });
});

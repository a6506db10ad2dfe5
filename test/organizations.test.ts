// Organizations and invitations through HTTP, as a client sees them: every operation, the role rules (403 for
// non-admins, 404 for what is not there or not the organization's), the one-organization rule, bad input, and
// workspace keys refused. Invitation e-mails are read from the local outbox; accepting goes through the accept
// page with a cookie-keeping client (the Chromium test drives the same page in a real browser).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { FakeBrowser } from './support/browser-session.ts';
import { createApiKey, createUser } from '../src/identity/admin.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { addOrganizationMember, attachWorkspace, createOrganization } from '../src/organizations/organizations.ts';
import { hashInvitationToken } from '../src/organizations/invitations.ts';

let s: TestServer;
let orgId: string;
let orgAccount: string;
let wsKey: string;
const people: Record<'admin' | 'member' | 'outsider' | 'rival', { userId: string; key: string; email: string }> = {} as never;
let rivalOrg: string;

const PASSWORD = 'a long enough password';

async function person(email: string) {
  const user = await createUser(s.services.store, { email });
  const key = (await createApiKey(s.services.store, { kind: 'personal', userId: user.id })).key;
  await setUserPassword(s.services.store, user.id, PASSWORD);
  return { userId: user.id, key, email };
}

const as = (who: { key: string } | string, method: string, url: string, body?: unknown) => s.call(method, url, body, typeof who === 'string' ? who : who.key);
const ORG = () => `/api/v2/organizations/${orgId}`;

/** The newest e-mail the outbox holds for `to`, with the accept link's token. */
function lastMail(to: string): { subject: string; text: string; token: string } {
  const dir = path.join(s.dataDir, 'outbox');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort() : [];
  const mails = files.map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))).filter((m) => m.to === to);
  const mail = mails.at(-1);
  if (!mail) throw new Error(`no mail to ${to}`);
  const token = /\/invitations\/accept\?token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1];
  if (!token) throw new Error(`no accept link in ${mail.text}`);
  return { subject: mail.subject, text: mail.text, token };
}
const mailCount = () => {
  const dir = path.join(s.dataDir, 'outbox');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.json')).length : 0;
};

beforeAll(async () => {
  s = await startTestServer();
  const store = s.services.store;
  const org = await store.transaction((tx) => createOrganization(tx, { name: 'Acme', ownerId: s.userId }));
  orgId = org.id;
  orgAccount = org.billingAccountId;
  await store.transaction((tx) => attachWorkspace(tx, orgId, s.workspaceId));
  people.admin = await person('org-admin@example.com');
  people.member = await person('org-member@example.com');
  people.outsider = await person('outsider@example.com');
  people.rival = await person('rival@example.com');
  const now = new Date().toISOString();
  await store.transaction(async (tx) => {
    await addOrganizationMember(tx, orgId, people.admin.userId, 'admin', now);
    await addOrganizationMember(tx, orgId, people.member.userId, 'member', now);
  });
  rivalOrg = (await store.transaction((tx) => createOrganization(tx, { name: 'Rival', ownerId: people.rival.userId }))).id;
  wsKey = (await createApiKey(store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
});
afterAll(() => s.stop());

describe('organizations', () => {
  it('lists the caller’s one organization with their role; others see none', async () => {
    const mine = await as(s.key, 'GET', '/api/v2/organizations');
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ data: [{ id: orgId, name: 'Acme', slug: 'acme', logo: null, role: 'owner', createdAt: expect.any(String) }], nextCursor: null });
    expect((await as(people.admin, 'GET', '/api/v2/organizations')).body.data[0].role).toBe('admin');
    expect((await as(people.outsider, 'GET', '/api/v2/organizations')).body).toEqual({ data: [], nextCursor: null });
    expect((await as(s.key, 'GET', '/api/v2/organizations?search=acm')).body.data).toHaveLength(1);
    expect((await as(s.key, 'GET', '/api/v2/organizations?search=zzz')).body.data).toHaveLength(0);
    expect((await as(s.key, 'GET', '/api/v2/organizations?sortBy=size')).status).toBe(400);
  });

  it('gets an organization for its members: 403 for others, 404 when missing', async () => {
    expect((await as(people.member, 'GET', ORG())).body.data).toMatchObject({ id: orgId, role: 'member' });
    const outsider = await as(people.outsider, 'GET', ORG());
    expect(outsider.status).toBe(403);
    expect(outsider.body.error.code).toBe('FORBIDDEN');
    expect((await as(s.key, 'GET', '/api/v2/organizations/no-such-org')).status).toBe(404);
  });

  it('refuses workspace API keys on every organization and invitation operation', async () => {
    const calls: [string, string, unknown?][] = [
      ['GET', '/api/v2/organizations'],
      ['GET', ORG()],
      ['GET', `${ORG()}/workspaces`],
      ['GET', `${ORG()}/members`],
      ['PATCH', `${ORG()}/members/${people.member.userId}`, { role: 'admin' }],
      ['DELETE', `${ORG()}/members/${people.member.userId}`],
      ['GET', `${ORG()}/members/${people.member.userId}/usage-limit`],
      ['PATCH', `${ORG()}/members/${people.member.userId}/usage-limit`, { creditLimit: 1 }],
      ['GET', `${ORG()}/usage/summary`],
      ['GET', `${ORG()}/usage/breakdown?dimension=member`],
      ['GET', `${ORG()}/usage/events`],
      ['GET', `${ORG()}/invitations`],
      ['POST', `${ORG()}/invitations`, { email: 'x@example.com' }],
      ['GET', `${ORG()}/invitations/inv`],
      ['DELETE', `${ORG()}/invitations/inv`],
      ['POST', `${ORG()}/invitations/inv/resend`, {}],
      ['GET', `${ORG()}/invitations/inv/workspaces`],
      ['POST', `/api/v2/workspaces/${s.workspaceId}/invitations`, { emails: ['x@example.com'] }],
    ];
    for (const [method, url, body] of calls) {
      const r = await as(wsKey, method, url, body);
      expect([method, url, r.status, r.body.error.details?.code]).toEqual([method, url, 403, 'WORKSPACE_KEY_NOT_ALLOWED']);
    }
    expect(await s.services.store.organizations.member(orgId, people.member.userId)).toBeDefined();
  });

  it('lists the organization’s workspaces for admins only', async () => {
    const r = await as(people.admin, 'GET', `${ORG()}/workspaces`);
    expect(r.body).toEqual({ data: [{ id: s.workspaceId, name: 'My workspace' }], nextCursor: null });
    expect((await as(people.admin, 'GET', `${ORG()}/workspaces?search=nothing`)).body.data).toEqual([]);
    expect((await as(people.member, 'GET', `${ORG()}/workspaces`)).status).toBe(403);
    expect((await as(people.outsider, 'GET', `${ORG()}/workspaces`)).status).toBe(403);
  });

  it('lists members for any member, searched and sorted, a page at a time', async () => {
    const all = await as(people.member, 'GET', `${ORG()}/members?sortBy=email`);
    expect(all.body.data.map((m: any) => [m.email, m.role])).toEqual([
      ['admin@localhost.localdomain', 'owner'],
      ['org-admin@example.com', 'admin'],
      ['org-member@example.com', 'member'],
    ]);
    expect(all.body.data[0]).toEqual({ userId: s.userId, name: 'Admin', email: 'admin@localhost.localdomain', role: 'owner', joinedAt: expect.any(String) });
    expect((await as(people.member, 'GET', `${ORG()}/members?search=ORG-ADMIN`)).body.data.map((m: any) => m.userId)).toEqual([people.admin.userId]);
    const first = await as(people.member, 'GET', `${ORG()}/members?sortBy=email&sortOrder=desc&limit=2`);
    expect(first.body.data).toHaveLength(2);
    const second = await as(people.member, 'GET', `${ORG()}/members?sortBy=email&sortOrder=desc&limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toMatchObject({ data: [{ email: 'admin@localhost.localdomain' }], nextCursor: null });
    expect((await as(people.outsider, 'GET', `${ORG()}/members`)).status).toBe(403);
  });

  it('changes roles (owner/admin only); the owner’s role cannot change and owner is not a value', async () => {
    const extra = await person('promote-me@example.com');
    await s.services.store.transaction((tx) => addOrganizationMember(tx, orgId, extra.userId, 'member', new Date().toISOString()));
    const up = await as(people.admin, 'PATCH', `${ORG()}/members/${extra.userId}`, { role: 'admin' });
    expect(up.status).toBe(200);
    expect(up.body.data).toMatchObject({ userId: extra.userId, email: 'promote-me@example.com', role: 'admin' });
    expect((await as(people.member, 'PATCH', `${ORG()}/members/${extra.userId}`, { role: 'member' })).status).toBe(403);
    const owner = await as(people.admin, 'PATCH', `${ORG()}/members/${s.userId}`, { role: 'member' });
    expect(owner.status).toBe(400);
    expect(owner.body.error.message).toMatch(/owner/);
    expect((await as(s.key, 'PATCH', `${ORG()}/members/${extra.userId}`, { role: 'owner' })).status).toBe(400);
    expect((await as(s.key, 'PATCH', `${ORG()}/members/${people.outsider.userId}`, { role: 'admin' })).status).toBe(404);
    expect((await as(s.key, 'PATCH', `${ORG()}/members/${extra.userId}`, {})).status).toBe(400);
    expect((await as(s.key, 'GET', `${ORG()}/members?search=promote`)).body.data[0].role).toBe('admin');
    // Exactly one owner remains.
    expect((await as(s.key, 'GET', `${ORG()}/members`)).body.data.filter((m: any) => m.role === 'owner')).toHaveLength(1);
  });

  it('sets, reads and clears a member credit limit (owner/admin only) and enforces validation', async () => {
    const url = `${ORG()}/members/${people.member.userId}/usage-limit`;
    expect((await as(people.admin, 'GET', url)).body.data).toEqual({ creditsUsed: 0, creditLimit: null, billingInterval: 'month' });
    expect((await as(people.admin, 'PATCH', url, { creditLimit: 25 })).body.data).toEqual({ creditLimit: 25 });
    expect((await as(people.admin, 'GET', url)).body.data.creditLimit).toBe(25);
    expect((await as(people.admin, 'PATCH', url, { creditLimit: 0 })).body.data).toEqual({ creditLimit: 0 });
    expect((await as(people.admin, 'PATCH', url, { creditLimit: null })).body.data).toEqual({ creditLimit: null });
    expect((await as(people.admin, 'GET', url)).body.data.creditLimit).toBeNull();
    for (const bad of [{ creditLimit: -1 }, { creditLimit: 1.5 }, { creditLimit: '5' }, {}]) expect((await as(people.admin, 'PATCH', url, bad)).status).toBe(400);
    expect((await as(people.member, 'GET', url)).status).toBe(403);
    expect((await as(people.member, 'PATCH', url, { creditLimit: 100 })).status).toBe(403);
    expect((await as(people.admin, 'GET', `${ORG()}/members/${people.outsider.userId}/usage-limit`)).status).toBe(404);
    expect((await as(people.admin, 'GET', `/api/v2/organizations/missing/members/${people.member.userId}/usage-limit`)).status).toBe(404);
  });

  it('reports usage charged to the organization: summary, breakdown and events', async () => {
    const store = s.services.store;
    const recent = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    await store.transaction(async (tx) => {
      await tx.usage.record({ id: 'u1', billingAccountId: orgAccount, workspaceId: s.workspaceId, workflowId: null, runId: null, userId: people.member.userId, category: 'workflow_run', cost: 2, blockExecutions: 3, durationMs: 10, recordedAt: recent(30) });
      await tx.usage.record({ id: 'u2', billingAccountId: orgAccount, workspaceId: s.workspaceId, workflowId: null, runId: null, userId: people.admin.userId, category: 'workflow_run', cost: 1, blockExecutions: 1, durationMs: 10, recordedAt: recent(20) });
      await tx.usage.recordEvent({ id: 'u3', billingAccountId: orgAccount, workspaceId: s.workspaceId, workflowId: null, runId: null, userId: people.member.userId, category: 'api-tool', cost: 0.5, blockExecutions: 0, durationMs: 0, recordedAt: recent(10) });
      // Someone else's usage never shows up in the organization's reports.
      await tx.usage.record({ id: 'u4', billingAccountId: `ba-${people.outsider.userId}`, workspaceId: 'elsewhere', workflowId: null, runId: null, userId: people.outsider.userId, category: 'workflow_run', cost: 9, blockExecutions: 1, durationMs: 1, recordedAt: recent(5) });
    });
    const summaryAnswer = await as(people.admin, 'GET', `${ORG()}/usage/summary?preset=7d`);
    expect(summaryAnswer.status, summaryAnswer.text).toBe(200);
    const summary = summaryAnswer.body.data;
    expect(summary).toMatchObject({ window: { source: 'reporting' }, bucket: 'day', totals: { credits: 3.5 }, previousTotals: { credits: 0 } });
    expect(summary.series.length).toBeGreaterThanOrEqual(7);
    expect(summary.series.reduce((a: number, p: any) => a + p.events, 0)).toBe(3);
    const periodAnswer = await as(people.admin, 'GET', `${ORG()}/usage/summary?preset=current-period&timezone=Europe/Berlin`);
    expect(periodAnswer.status, periodAnswer.text).toBe(200);
    const period = periodAnswer.body.data;
    expect(period.window.source).toBe('default');
    expect((await as(people.admin, 'GET', `${ORG()}/usage/summary?workspaceId=${s.workspaceId}`)).body.data.totals.credits).toBe(3.5);

    const members = (await as(people.admin, 'GET', `${ORG()}/usage/breakdown?dimension=member`)).body.data;
    expect(members).toMatchObject({ dimension: 'member', totalCredits: 3.5, other: { credits: 0, events: 0, rowCount: 0, tokens: 0 } });
    expect(members.rows.map((r: any) => [r.id, r.credits, r.events])).toEqual([
      [people.member.userId, 2.5, 2],
      [people.admin.userId, 1, 1],
    ]);
    expect(members.rows[0].share).toBeCloseTo(2.5 / 3.5, 5);
    const folded = (await as(people.admin, 'GET', `${ORG()}/usage/breakdown?dimension=source&limit=1`)).body.data;
    expect(folded.rows).toEqual([{ id: 'workflow', label: 'workflow', credits: 3, events: 2, share: expect.any(Number) }]);
    expect(folded.other).toEqual({ credits: 0.5, events: 1, rowCount: 1, tokens: 0 });
    expect((await as(people.admin, 'GET', `${ORG()}/usage/breakdown`)).status).toBe(400);

    const events = await as(people.admin, 'GET', `${ORG()}/usage/events?limit=2`);
    expect(events.body.data.map((e: any) => e.id)).toEqual(['u3', 'u2']);
    expect(events.body.data[0]).toMatchObject({ source: 'api-tool', credits: 0.5, hasCost: true, workflowName: null });
    const rest = await as(people.admin, 'GET', `${ORG()}/usage/events?limit=2&cursor=${encodeURIComponent(events.body.nextCursor)}`);
    expect(rest.body).toMatchObject({ data: [{ id: 'u1', source: 'workflow' }], nextCursor: null });
    expect((await as(people.admin, 'GET', `${ORG()}/usage/events?source=workflow&sortOrder=asc`)).body.data.map((e: any) => e.id)).toEqual(['u1', 'u2']);

    // The member's credit limit counts their use this period.
    expect((await as(people.admin, 'GET', `${ORG()}/members/${people.member.userId}/usage-limit`)).body.data.creditsUsed).toBe(2.5);
    // Windows and filters that make no sense are refused.
    const bad = [
      'usage/summary?startDate=2026-01-01',
      'usage/summary?preset=custom&startDate=2026-01-01',
      'usage/summary?preset=custom&startDate=2026-01-01&endDate=2026-06-30',
      'usage/summary?preset=custom&startDate=2026-02-30&endDate=2026-03-01',
      'usage/summary?preset=custom&startDate=2026-03-02&endDate=2026-03-01',
      'usage/summary?timezone=Mars/Olympus',
      'usage/summary?workspaceId=not-ours',
      'usage/events?preset=weekly',
    ];
    for (const q of bad) expect([q, (await as(people.admin, 'GET', `${ORG()}/${q}`)).status]).toEqual([q, 400]);
    const custom = (await as(people.admin, 'GET', `${ORG()}/usage/summary?preset=custom&startDate=2026-01-01&endDate=2026-03-31&timezone=America/New_York`)).body.data;
    expect(custom).toMatchObject({ window: { start: '2026-01-01T05:00:00.000Z', end: '2026-04-01T04:00:00.000Z', source: 'range' }, bucket: 'week' });
    expect((await as(people.member, 'GET', `${ORG()}/usage/summary`)).status).toBe(403);
  });

  it('removes members: admins remove, members leave, the owner and workspace owners stay', async () => {
    const store = s.services.store;
    const leaver = await person('leaver@example.com');
    const removed = await person('removed@example.com');
    const now = new Date().toISOString();
    await store.transaction(async (tx) => {
      await addOrganizationMember(tx, orgId, leaver.userId, 'member', now);
      await addOrganizationMember(tx, orgId, removed.userId, 'member', now);
      await tx.members.upsert(s.workspaceId, removed.userId, 'write', now);
    });
    expect((await as(removed, 'GET', `/api/v2/workspaces/${s.workspaceId}`)).status).toBe(200);
    expect((await as(leaver, 'DELETE', `${ORG()}/members/${removed.userId}`)).status).toBe(403);
    const r = await as(people.admin, 'DELETE', `${ORG()}/members/${removed.userId}`);
    expect(r.body).toEqual({ data: { userId: removed.userId, deleted: true } });
    // Their access to the organization's workspaces ended with the membership.
    expect((await as(removed, 'GET', `/api/v2/workspaces/${s.workspaceId}`)).status).toBe(404);
    expect((await as(removed, 'GET', ORG())).status).toBe(403);
    expect((await as(leaver, 'DELETE', `${ORG()}/members/${leaver.userId}`)).body.data).toEqual({ userId: leaver.userId, deleted: true });
    expect((await as(leaver, 'GET', '/api/v2/organizations')).body.data).toEqual([]);
    expect((await as(people.admin, 'DELETE', `${ORG()}/members/${s.userId}`)).status).toBe(400);
    expect((await as(people.admin, 'DELETE', `${ORG()}/members/${people.outsider.userId}`)).status).toBe(404);
    // A member who owns one of the organization's workspaces cannot be removed while it bills through them.
    const wsOwner = await person('ws-owner@example.com');
    await store.transaction((tx) => addOrganizationMember(tx, orgId, wsOwner.userId, 'member', now));
    const theirs = await s.newWorkspace('Owned by a member', wsOwner.userId);
    await store.transaction((tx) => attachWorkspace(tx, orgId, theirs));
    const refused = await as(s.key, 'DELETE', `${ORG()}/members/${wsOwner.userId}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/Owned by a member/);
  });
});

describe('organization invitations', () => {
  it('creates an invitation, e-mails an accept link, and refuses duplicates, members and other organizations’ users', async () => {
    const before = Date.now();
    const r = await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'New.Person@Example.com', role: 'admin' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ organizationId: orgId, email: 'new.person@example.com', role: 'admin', kind: 'organization', membershipIntent: 'internal', status: 'pending' });
    const ttl = Date.parse(r.body.data.expiresAt) - before;
    expect(ttl).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(7 * 86_400_000 + 60_000);
    const mail = lastMail('new.person@example.com');
    expect(mail.subject).toMatch(/Acme/);
    expect(mail.text).toContain(`${s.url}/invitations/accept?token=`);
    // Only the token's hash is stored.
    expect((await s.services.store.invitations.getByTokenHash(hashInvitationToken(mail.token)))?.id).toBe(r.body.data.id);

    const dup = await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'new.person@example.com' });
    expect(dup.status).toBe(409);
    expect((await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'org-member@example.com' })).status).toBe(409);
    const rival = await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'rival@example.com' });
    expect(rival.status).toBe(409);
    expect(rival.body.error.message).toMatch(/another organization/);
    expect((await as(people.member, 'POST', `${ORG()}/invitations`, { email: 'someone@example.com' })).status).toBe(403);
    expect((await as(people.outsider, 'POST', `${ORG()}/invitations`, { email: 'someone@example.com' })).status).toBe(403);
    expect((await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'not-an-address' })).status).toBe(400);
    expect((await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'a@example.com', role: 'owner' })).status).toBe(400);
    expect((await as(people.admin, 'POST', '/api/v2/organizations/missing/invitations', { email: 'a@example.com' })).status).toBe(404);
  });

  it('lists, gets, resends (new link, new expiry) and revokes; only pending ones', async () => {
    const created = (await as(s.key, 'POST', `${ORG()}/invitations`, { email: 'resend-me@example.com' })).body.data;
    const firstToken = lastMail('resend-me@example.com').token;
    const list = await as(people.admin, 'GET', `${ORG()}/invitations?search=resend`);
    expect(list.body.data.map((i: any) => i.id)).toEqual([created.id]);
    expect((await as(people.admin, 'GET', `${ORG()}/invitations?status=accepted`)).body.data).toEqual([]);
    expect((await as(people.admin, 'GET', `${ORG()}/invitations?sortBy=email&sortOrder=asc`)).body.data.map((i: any) => i.email)).toEqual(
      [...(await as(people.admin, 'GET', `${ORG()}/invitations`)).body.data.map((i: any) => i.email)].sort(),
    );
    expect((await as(people.member, 'GET', `${ORG()}/invitations`)).status).toBe(403);
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/${created.id}`)).body.data).toEqual(created);
    expect((await as(people.admin, 'GET', `/api/v2/organizations/${rivalOrg}/invitations/${created.id}`)).status).toBe(403);
    expect((await as(people.rival, 'GET', `/api/v2/organizations/${rivalOrg}/invitations/${created.id}`)).status).toBe(404);
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/nope`)).status).toBe(404);

    const resent = await as(people.admin, 'POST', `${ORG()}/invitations/${created.id}/resend`, {});
    expect(resent.status).toBe(200);
    expect(resent.body.data.expiresAt >= created.expiresAt).toBe(true);
    const secondToken = lastMail('resend-me@example.com').token;
    expect(secondToken).not.toBe(firstToken);
    expect(await s.services.store.invitations.getByTokenHash(hashInvitationToken(firstToken))).toBeUndefined();
    expect((await as(people.member, 'POST', `${ORG()}/invitations/${created.id}/resend`, {})).status).toBe(403);

    expect((await as(people.member, 'DELETE', `${ORG()}/invitations/${created.id}`)).status).toBe(403);
    expect((await as(people.admin, 'DELETE', `${ORG()}/invitations/${created.id}`)).body).toEqual({ data: { id: created.id, status: 'cancelled' } });
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/${created.id}`)).body.data.status).toBe('cancelled');
    expect((await as(people.admin, 'DELETE', `${ORG()}/invitations/${created.id}`)).status).toBe(400);
    const count = mailCount();
    expect((await as(people.admin, 'POST', `${ORG()}/invitations/${created.id}/resend`, {})).status).toBe(400);
    expect(mailCount()).toBe(count);
    // Cancelled, so the address may be invited again.
    expect((await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'resend-me@example.com' })).status).toBe(200);
  });

  it('marks invitations expired after 7 days, lazily, and then allows a new one', async () => {
    const created = (await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'late@example.com' })).body.data;
    const past = new Date(Date.now() - 1000).toISOString();
    await s.services.store.transaction((tx) => tx.invitations.rotate(created.id, 'expired-token-hash', past, past));
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/${created.id}`)).body.data.status).toBe('expired');
    expect((await as(people.admin, 'GET', `${ORG()}/invitations?status=expired`)).body.data.map((i: any) => i.id)).toContain(created.id);
    expect((await s.services.store.invitations.get(created.id))!.status).toBe('expired');
    expect((await as(people.admin, 'POST', `${ORG()}/invitations/${created.id}/resend`, {})).status).toBe(400);
    expect((await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'late@example.com' })).status).toBe(200);
  });

  it('is accepted on the accept page by the invitee, signed in as the invited address', async () => {
    const invitee = await person('joiner@example.com');
    await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'joiner@example.com', role: 'admin' });
    const { token } = lastMail('joiner@example.com');
    const link = `/invitations/accept?token=${token}`;
    const anonymous = new FakeBrowser(s.url);
    const toLogin = await anonymous.get(link);
    expect(toLogin.status).toBe(303);
    expect(toLogin.location).toBe(`/login?next=${encodeURIComponent(link)}`);
    expect((await anonymous.get('/invitations/accept?token=unknown-token-000000000000')).status).toBe(404);

    const wrong = new FakeBrowser(s.url);
    await wrong.signIn(people.outsider.email, PASSWORD);
    const refused = await wrong.get(link);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('joiner@example.com');

    const browser = new FakeBrowser(s.url);
    const signedIn = await browser.signIn(invitee.email, PASSWORD, link);
    expect(signedIn.location).toBe(link);
    const page = await browser.get(link);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Acme');
    // A form without the CSRF field is refused.
    expect((await browser.post('/invitations/accept', { token })).status).toBe(403);
    const accepted = await browser.post('/invitations/accept', FakeBrowser.fields(page.text, '/invitations/accept'));
    expect(accepted.status).toBe(200);
    expect(accepted.text).toContain('Invitation accepted');
    expect((await as(invitee, 'GET', '/api/v2/organizations')).body.data).toMatchObject([{ id: orgId, role: 'admin' }]);
    const list = (await as(people.admin, 'GET', `${ORG()}/invitations?search=joiner`)).body.data;
    expect(list[0].status).toBe('accepted');
    // Used once: the page now says it is closed, and accepting again changes nothing.
    expect((await browser.get(link)).status).toBe(410);
    expect((await browser.post('/invitations/accept', FakeBrowser.fields(page.text, '/invitations/accept'))).status).toBe(400);
  });

  it('can be declined on the accept page', async () => {
    const invitee = await person('decliner@example.com');
    const created = (await as(people.admin, 'POST', `${ORG()}/invitations`, { email: 'decliner@example.com' })).body.data;
    const link = `/invitations/accept?token=${lastMail('decliner@example.com').token}`;
    const browser = new FakeBrowser(s.url);
    await browser.signIn(invitee.email, PASSWORD);
    const page = await browser.get(link);
    const declined = await browser.post('/invitations/decline', FakeBrowser.fields(page.text, '/invitations/decline'));
    expect(declined.status).toBe(200);
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/${created.id}`)).body.data.status).toBe('rejected');
    expect((await as(invitee, 'GET', '/api/v2/organizations')).body.data).toEqual([]);
  });
});

describe('workspace invitations', () => {
  const WS = () => `/api/v2/workspaces/${s.workspaceId}/invitations`;

  it('handles each address on its own: instant add, invitation, external, and per-address failures with 200', async () => {
    const colleague = await person('colleague@example.com');
    await s.services.store.transaction((tx) => addOrganizationMember(tx, orgId, colleague.userId, 'member', new Date().toISOString()));
    const r = await as(s.key, 'POST', WS(), {
      emails: [' Colleague@Example.com ', 'fresh@example.com', 'rival@example.com', 'admin@localhost.localdomain', 'broken', 'fresh@example.com'],
      permission: 'write',
    });
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d.success).toBe(false);
    expect(d.added).toEqual(['colleague@example.com']);
    expect(d.successful.sort()).toEqual(['colleague@example.com', 'fresh@example.com', 'rival@example.com']);
    expect(d.failed).toEqual([
      { email: 'admin@localhost.localdomain', error: expect.stringMatching(/already has access/) },
      { email: 'broken', error: expect.stringMatching(/e-mail/) },
    ]);
    const byEmail = Object.fromEntries(d.invitations.map((i: any) => [i.email, i]));
    expect(byEmail['colleague@example.com']).toMatchObject({ instantAdd: true, outcome: 'added', permission: 'write', workspaceIds: [s.workspaceId] });
    expect(byEmail['fresh@example.com']).toMatchObject({ membershipIntent: 'internal', outcome: 'added', workspaceIds: [s.workspaceId] });
    // Someone in another organization can only be an external collaborator.
    expect(byEmail['rival@example.com']).toMatchObject({ membershipIntent: 'external', outcome: 'added' });
    // The colleague has access now, without an e-mail round trip.
    expect((await as(colleague, 'GET', `/api/v2/workspaces/${s.workspaceId}`)).status).toBe(200);
    expect(() => lastMail('colleague@example.com')).toThrow();
    lastMail('fresh@example.com');

    const again = (await as(s.key, 'POST', WS(), { emails: ['fresh@example.com'] })).body.data;
    expect(again).toMatchObject({ success: false, failed: [{ email: 'fresh@example.com', error: expect.stringMatching(/already been invited/) }] });

    // The organization's invitation list carries workspace invitations, and their grants.
    const listed = (await as(people.admin, 'GET', `${ORG()}/invitations?search=fresh`)).body.data[0];
    expect(listed).toMatchObject({ kind: 'workspace', membershipIntent: 'internal', role: 'member' });
    const grants = await as(people.admin, 'GET', `${ORG()}/invitations/${listed.id}/workspaces`);
    expect(grants.body).toEqual({ data: [{ id: s.workspaceId, name: 'My workspace', permission: 'write', archivedAt: null }], nextCursor: null });
    expect((await as(people.member, 'GET', `${ORG()}/invitations/${listed.id}/workspaces`)).status).toBe(403);

    // Inviting the same address to a second workspace of the organization adds a grant to the one pending invitation.
    const second = await s.newWorkspace('Second space');
    await s.services.store.transaction((tx) => attachWorkspace(tx, orgId, second));
    const updated = (await as(s.key, 'POST', `/api/v2/workspaces/${second}/invitations`, { emails: ['fresh@example.com'], permission: 'read' })).body.data;
    expect(updated).toMatchObject({ success: true, invitations: [{ id: listed.id, outcome: 'updated', workspaceIds: expect.arrayContaining([s.workspaceId, second]) }] });
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/${listed.id}/workspaces?sortBy=name`)).body.data.map((g: any) => [g.name, g.permission])).toEqual([
      ['My workspace', 'write'],
      ['Second space', 'read'],
    ]);
    expect((await as(people.admin, 'GET', `${ORG()}/invitations/${listed.id}/workspaces?search=SECOND`)).body.data.map((g: any) => g.name)).toEqual(['Second space']);

    // Accepting joins the organization and grants both workspaces.
    const fresh = await person('fresh@example.com');
    const browser = new FakeBrowser(s.url);
    await browser.signIn(fresh.email, PASSWORD);
    const page = await browser.get(`/invitations/accept?token=${lastMail('fresh@example.com').token}`);
    expect((await browser.post('/invitations/accept', FakeBrowser.fields(page.text, '/invitations/accept'))).status).toBe(200);
    expect((await as(fresh, 'GET', '/api/v2/organizations')).body.data).toMatchObject([{ id: orgId, role: 'member' }]);
    expect((await as(fresh, 'GET', `/api/v2/workspaces/${second}`)).status).toBe(200);
    const roster = (await as(s.key, 'GET', `/api/v2/workspaces/${s.workspaceId}/members`)).body.data;
    expect(roster.find((m: any) => m.email === 'fresh@example.com').role).toBe('write');
  });

  it('refuses what cannot be offered: non-admins, org-admin membership by a non-org-admin, external on a personal workspace, bad input', async () => {
    const wsAdmin = await person('ws-admin@example.com');
    await s.services.store.transaction((tx) => tx.members.upsert(s.workspaceId, wsAdmin.userId, 'admin', new Date().toISOString()));
    const r = await as(people.member, 'POST', WS(), { emails: ['x@example.com'] });
    expect(r.status).toBe(404); // not in the workspace at all
    await s.services.store.transaction((tx) => tx.members.upsert(s.workspaceId, people.member.userId, 'read', new Date().toISOString()));
    const reader = await as(people.member, 'POST', WS(), { emails: ['x@example.com'] });
    expect(reader.status).toBe(403);
    expect(reader.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
    expect((await as(wsAdmin, 'POST', WS(), { emails: ['x@example.com'], membership: 'admin' })).status).toBe(403);
    const personal = await s.newWorkspace('Personal space');
    const ext = await as(s.key, 'POST', `/api/v2/workspaces/${personal}/invitations`, { emails: ['x@example.com'], membership: 'external' });
    expect(ext.status).toBe(400);
    for (const bad of [{ emails: [] }, {}, { emails: ['x@example.com'], permission: 'owner' }, { emails: Array.from({ length: 101 }, (_, i) => `p${i}@example.com`) }]) {
      expect((await as(s.key, 'POST', WS(), bad)).status).toBe(400);
    }
    // A personal workspace takes ordinary invitations; they belong to no organization.
    const ok = (await as(s.key, 'POST', `/api/v2/workspaces/${personal}/invitations`, { emails: ['solo@example.com'] })).body.data;
    expect(ok).toMatchObject({ success: true, failed: [], invitations: [{ email: 'solo@example.com', membershipIntent: 'internal', outcome: 'added' }] });
  });
});

describe('when the e-mail cannot be sent', () => {
  let broken: TestServer;
  beforeAll(async () => {
    broken = await startTestServer({ MAIL_TRANSPORT: 'smtp', SMTP_URL: 'smtp://127.0.0.1:9' });
  });
  afterAll(() => broken.stop());

  it('answers 503 for an organization invitation and writes nothing; a workspace batch lists the address as failed', async () => {
    const store = broken.services.store;
    const org = await store.transaction((tx) => createOrganization(tx, { name: 'Offline', ownerId: broken.userId }));
    const r = await broken.call('POST', `/api/v2/organizations/${org.id}/invitations`, { email: 'nobody@example.com' });
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect((await broken.call('GET', `/api/v2/organizations/${org.id}/invitations`)).body.data).toEqual([]);
    const batch = await broken.call('POST', `/api/v2/workspaces/${broken.workspaceId}/invitations`, { emails: ['nobody@example.com'] });
    expect(batch.status).toBe(200);
    expect(batch.body.data).toMatchObject({ success: false, successful: [], failed: [{ email: 'nobody@example.com', error: expect.stringMatching(/could not be sent/) }] });
    expect(await store.invitations.pendingForWorkspace(broken.workspaceId, 'nobody@example.com', new Date().toISOString())).toBeUndefined();
  });
});

describe('member credit limits are enforced', () => {
  it('a person at their cap in the organization cannot start a run in its workspaces; clearing the cap lets them', async () => {
    const { apiBlock, buildWorkflow, link } = await import('./support/api-workflow.ts');
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Fn', { code: 'return 1' });
    const wf = (await buildWorkflow(s, 'Capped', [start, fn], [link(start, fn)])).id;
    const runner = await person('runner@example.com');
    await s.services.store.transaction(async (tx) => {
      await addOrganizationMember(tx, orgId, runner.userId, 'member', new Date().toISOString());
      await tx.members.upsert(s.workspaceId, runner.userId, 'write', new Date().toISOString());
    });
    const limitUrl = `${ORG()}/members/${runner.userId}/usage-limit`;
    expect((await as(s.key, 'PATCH', limitUrl, { creditLimit: 0 })).status).toBe(200);
    const blocked = await as(runner, 'POST', `/api/v2/workflows/${wf}/execute`, {});
    expect(JSON.stringify(blocked.body)).toMatch(/USAGE_LIMIT_EXCEEDED/);
    expect(JSON.stringify(blocked.body)).toMatch(/credit limit in the organization Acme/);
    // Someone else in the organization is not held by that cap.
    const other = await as(s.key, 'POST', `/api/v2/workflows/${wf}/execute`, {});
    expect(JSON.stringify(other.body)).not.toMatch(/USAGE_LIMIT_EXCEEDED/);
    expect((await as(s.key, 'PATCH', limitUrl, { creditLimit: null })).status).toBe(200);
    const allowed = await as(runner, 'POST', `/api/v2/workflows/${wf}/execute`, {});
    expect(JSON.stringify(allowed.body)).not.toMatch(/USAGE_LIMIT_EXCEEDED/);
  });
});

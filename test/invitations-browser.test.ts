// The invitation e-mail's link in a real browser (Debian's Chromium through playwright-core): sign in as the
// invited address, accept, and the invitee is in the organization and its workspace; the wrong account is told so.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { axeViolations, CHROMIUM_PATH, launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { createApiKey, createUser } from '../src/identity/admin.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { attachWorkspace, createOrganization } from '../src/organizations/organizations.ts';

const OUTPUT = path.resolve(import.meta.dirname, '../test-output');
const PASSWORD = 'password for the invitee';
const haveChromium = fs.existsSync(CHROMIUM_PATH);

let s: TestServer;
let browser: Browser;
let orgId: string;

async function person(email: string) {
  const user = await createUser(s.services.store, { email, name: email.split('@')[0] });
  await setUserPassword(s.services.store, user.id, PASSWORD);
  return { ...user, key: (await createApiKey(s.services.store, { kind: 'personal', userId: user.id })).key };
}

/** The accept link of the newest invitation e-mail to `to`, from the outbox. */
function acceptLink(to: string): string {
  const dir = path.join(s.dataDir, 'outbox');
  const mails = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
  const text: string = mails.filter((m) => m.to === to).at(-1).text;
  return /(http:\/\/\S+\/invitations\/accept\?token=[A-Za-z0-9_-]+)/.exec(text)![1]!;
}

async function signIn(page: Page, email: string) {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

beforeAll(async () => {
  if (!haveChromium) return;
  s = await startTestServer();
  orgId = (await s.services.store.transaction((tx) => createOrganization(tx, { name: 'Acme Robotics', ownerId: s.userId }))).id;
  await s.services.store.transaction((tx) => attachWorkspace(tx, orgId, s.workspaceId));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

describe.skipIf(!haveChromium)('invitation accept page in Chromium', () => {
  it('signs the invitee in, shows the offer, and accepting joins the organization and the workspace', async () => {
    const invitee = await person('grace@example.com');
    const invited = await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/invitations`, { emails: ['grace@example.com'], permission: 'write', membership: 'admin' });
    expect(invited.body.data.success).toBe(true);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(acceptLink('grace@example.com'));
    // Not signed in: the sign-in page, which comes back to the invitation.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signIn(page, invitee.email);
    await page.getByRole('heading', { name: 'You are invited' }).waitFor();
    expect(await page.getByText('My workspace: write access').count()).toBe(1);
    expect(await page.locator('main').innerText()).toContain('You join Acme Robotics as admin.');
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'invitation-accept.png') });
    await page.getByRole('button', { name: 'Accept invitation' }).click();
    await page.getByRole('status').getByText('Invitation accepted').waitFor();
    expect(await page.locator('main').innerText()).toContain('You are a member of Acme Robotics.');

    const orgs = await s.call('GET', '/api/v2/organizations', undefined, invitee.key);
    expect(orgs.body.data).toMatchObject([{ id: orgId, role: 'admin' }]);
    const members = await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/members`);
    expect(members.body.data.find((m: any) => m.email === 'grace@example.com').role).toBe('write');
    await context.close();
  });

  it('tells someone signed in as another address that the invitation is not theirs, and changes nothing', async () => {
    await person('linus@example.com');
    const other = await person('other@example.com');
    await s.call('POST', `/api/v2/organizations/${orgId}/invitations`, { email: 'linus@example.com' });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${s.url}/login`);
    await signIn(page, other.email);
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    await page.goto(acceptLink('linus@example.com'));
    await page.getByRole('heading', { name: 'This invitation is for someone else' }).waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('linus@example.com');
    expect(await page.getByRole('button', { name: 'Accept invitation' }).count()).toBe(0);
    const pending = await s.call('GET', `/api/v2/organizations/${orgId}/invitations?search=linus`);
    expect(pending.body.data[0].status).toBe('pending');
    await context.close();
  });

  it('has no accessibility violations (axe-core) on the offer', async () => {
    const invitee = await person('ada@example.com');
    await s.call('POST', `/api/v2/organizations/${orgId}/invitations`, { email: 'ada@example.com' });
    // CSP is bypassed only so the test can inject axe-core; the page itself is unchanged.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    await page.goto(acceptLink('ada@example.com'));
    await signIn(page, invitee.email);
    await page.getByRole('heading', { name: 'You are invited' }).waitFor();
    expect((await axeViolations(page)).map((v) => `${v.id} [${v.impact}] (${v.help})`)).toEqual([]);
    await page.getByRole('button', { name: 'Decline' }).click();
    await page.getByRole('heading', { name: 'Invitation declined' }).waitFor();
    await context.close();
  });
});

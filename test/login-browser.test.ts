// `sim login` with its browser step done by a real browser (Debian's Chromium through playwright-core): the
// OAuth consent redirects to the CLI's loopback callback, the pairing approval page, and revoking a CLI login on
// the Authorized apps page the CLI's advice points to.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser } from 'playwright-core';
import { CHROMIUM_PATH, launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { createOAuthClient, issueTokens } from '../src/identity/oauth.ts';
import { PATIENCE_MS } from './support/wait.ts';
import { endsWithFile } from './support/children.ts';

const OUTPUT = path.resolve(import.meta.dirname, '../test-output');
const CLI = path.resolve(import.meta.dirname, '../node_modules/sim/dist/index.js');
const PASSWORD = 'password for the browser login';
const haveChromium = fs.existsSync(CHROMIUM_PATH);

let s: TestServer;
let browser: Browser;
let email: string;

beforeAll(async () => {
  if (!haveChromium) return;
  s = await startTestServer();
  email = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

function login(args: string[]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-blogin-'));
  const child = endsWithFile(spawn(process.execPath, [CLI, 'login', '--no-browser', ...args], {
    env: { PATH: process.env.PATH, HOME: dir, SIM_CONFIG_DIR: dir, SIM_ENDPOINT: s.url, SIM_NO_UPDATE_CHECK: '1', SIM_TELEMETRY_DISABLED: '1', NO_COLOR: '1' },
  }));
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const done = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL in: ${out}`)), PATIENCE_MS);
    child.stdout.on('data', () => {
      const line = out.split('\n').find((l) => /^http/.test(l.trim()));
      if (line) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    });
  });
  return { url, done, output: () => out, dir };
}

describe.skipIf(!haveChromium)('sim login in Chromium', () => {
  it('OAuth: sign in, allow, and the browser lands on the done page while the CLI stores the login', async () => {
    const cli = login(['--method', 'oauth']);
    const page = await (await browser.newContext()).newPage();
    await page.goto(await cli.url);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /Allow Sim CLI/ }).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${s.url}/cli/auth/done`);
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
    expect(await cli.done, cli.output()).toBe(0);
    expect(fs.readFileSync(path.join(cli.dir, 'credentials'), 'utf8')).toMatch(/access_token\s*=\s*owa_at_/);
  });

  it('pairing: the approval page shows the code the terminal shows', async () => {
    const cli = login(['--method', 'api-key']);
    const page = await (await browser.newContext()).newPage();
    await page.goto(await cli.url);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const code = /Pairing code:\s*([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(cli.output())![1]!;
    await page.getByLabel('Pairing code').getByText(code).waitFor();
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'pairing.png') });
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Approved' }).waitFor();
    expect(await cli.done, cli.output()).toBe(0);
    expect(fs.readFileSync(path.join(cli.dir, 'credentials'), 'utf8')).toMatch(/api_key\s*=\s*sk-owa-/);
  });

  it('Authorized apps: a CLI login is listed and revoked there, and its tokens stop working at once', async () => {
    // Another application's grant, which must survive revoking the CLI's.
    const other = await issueTokens(s.services.store, { clientId: (await createOAuthClient(s.services.store, 'Reporting bot')).id, userId: s.userId, scopes: ['api:read'] });
    const cli = login(['--method', 'oauth']);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await cli.url);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
    expect(await cli.done, cli.output()).toBe(0);
    const credentials = fs.readFileSync(path.join(cli.dir, 'credentials'), 'utf8');
    const accessToken = /access_token\s*=\s*"?(owa_at_[\w-]+)/.exec(credentials)![1]!;
    const refreshToken = /refresh_token\s*=\s*"?(owa_rt_[\w-]+)/.exec(credentials)![1]!;
    const meta = (token: string) => fetch(`${s.url}/api/v2/meta`, { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.status);
    expect(await meta(accessToken)).toBe(200);

    // The signed-in page links to it; it lists the CLI's login and the other application.
    await page.goto(`${s.url}/login`);
    await page.getByRole('link', { name: 'Authorized apps' }).click();
    await page.getByRole('heading', { name: 'Authorized apps' }).waitFor();
    // Newest first: this login, then the other application (and the CLI logins of the tests before).
    const apps = page.locator('li.authorized-app');
    const cliLogins = apps.filter({ hasText: 'Sim CLI' });
    const texts = await apps.allInnerTexts();
    expect(texts.slice(0, 2)).toEqual([expect.stringContaining('Sim CLI'), expect.stringContaining('Reporting bot')]);
    expect(texts[0]).toContain('Can read and change your workspaces and run workflows; renews itself until revoked.');
    const before = await cliLogins.count();
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'authorized-apps.png') });

    // A revoke without the form's CSRF token (the session cookie alone) is refused and changes nothing.
    const forged = await context.request.post(`${s.url}/settings/authorized-apps/revoke`, { form: { grant: other.grantId }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect(await meta(other.accessToken)).toBe(200);

    await cliLogins.first().getByRole('button', { name: /^Revoke Sim CLI/ }).click();
    await page.getByRole('status').getByText('Revoked').waitFor();
    expect(await cliLogins.count()).toBe(before - 1);
    expect(await apps.filter({ hasText: 'Reporting bot' }).count()).toBe(1);
    expect(await meta(accessToken)).toBe(401);
    const refreshed = await fetch(`${s.url}/api/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'sim-cli' }),
    });
    expect(refreshed.status).toBe(400);
    expect(await meta(other.accessToken)).toBe(200);
  });
});

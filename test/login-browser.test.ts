// `sim login` with its browser step done by a real browser (Debian's Chromium through playwright-core): the
// OAuth consent redirects to the CLI's loopback callback, and the pairing approval page.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from './support/server.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { PATIENCE_MS } from './support/wait.ts';
import { endsWithFile } from './support/children.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUTPUT = path.resolve(import.meta.dirname, '../test-output');
const CLI = path.resolve(import.meta.dirname, '../node_modules/sim/dist/index.js');
const PASSWORD = 'password for the browser login';
const haveChromium = fs.existsSync(CHROMIUM);

let s: TestServer;
let browser: Browser;
let email: string;

beforeAll(async () => {
  if (!haveChromium) return;
  s = await startTestServer();
  email = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
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
});

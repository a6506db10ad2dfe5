// The real `sim login` (both methods) against this server, with the browser step played by the test, then
// `sim whoami`, a write refused for a read-only login, and `sim logout` revoking the login.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { FakeBrowser } from './support/browser-session.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { PATIENCE_MS } from './support/wait.ts';
import { endsWithFile } from './support/children.ts';

const CLI = path.resolve(import.meta.dirname, '../node_modules/sim/dist/index.js');
const PASSWORD = 'the cli login password';
let s: TestServer;
let email: string;

beforeAll(async () => {
  s = await startTestServer();
  email = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
});
afterAll(() => s.stop());

interface Cli {
  child: ChildProcessWithoutNullStreams;
  out: () => string;
  /** Resolves with the first stdout line matching `re`. */
  line(re: RegExp, timeoutMs?: number): Promise<string>;
  done: Promise<{ code: number; stdout: string; stderr: string }>;
}

function cli(configDir: string, args: string[], stdin = '', extraEnv: Record<string, string> = {}): Cli {
  const child = endsWithFile(spawn(process.execPath, [CLI, ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: configDir,
      SIM_CONFIG_DIR: configDir,
      SIM_ENDPOINT: s.url,
      SIM_WORKSPACE: s.workspaceId,
      SIM_NO_UPDATE_CHECK: '1',
      SIM_TELEMETRY_DISABLED: '1',
      NO_COLOR: '1',
      ...extraEnv,
    },
  }));
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout.on('data', (c) => {
    stdout += c;
    waiters.splice(0).forEach((w) => w());
  });
  child.stderr.on('data', (c) => (stderr += c));
  child.stdin.end(stdin);
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })));
  return {
    child,
    out: () => stdout,
    done,
    line: (re, timeoutMs = PATIENCE_MS) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line matching ${re} in:\n${stdout}\n${stderr}`)), timeoutMs);
        const check = () => {
          const m = stdout.split('\n').find((l) => re.test(l.trim()));
          if (m) {
            clearTimeout(timer);
            resolve(m.trim());
          } else waiters.push(check);
        };
        check();
      }),
  };
}

const run = async (configDir: string, args: string[]) => cli(configDir, args).done;
const newConfigDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'owa-login-'));

function credentials(configDir: string): Record<string, string> {
  const text = fs.readFileSync(path.join(configDir, 'credentials'), 'utf8');
  return Object.fromEntries([...text.matchAll(/^([a-z_]+)\s*=\s*(.*)$/gm)].map((m) => [m[1]!, m[2]!.trim()]));
}

/** Plays the browser for an OAuth login: sign in, approve on the consent page, follow the loopback redirect. */
async function approveOAuth(authorizeUrl: string) {
  const b = new FakeBrowser(s.url);
  const first = await b.get(authorizeUrl);
  expect(first.status).toBe(303);
  const signIn = await b.signIn(email, PASSWORD, decodeURIComponent(first.location!.split('next=')[1]!));
  const consent = await b.get(signIn.location!);
  expect(consent.text).toContain('Allow Sim CLI');
  const approved = await b.post('/api/auth/oauth2/authorize', FakeBrowser.fields(consent.text, '/api/auth/oauth2/authorize', 'approve'));
  expect(approved.location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?code=/);
  const callback = await fetch(approved.location!, { redirect: 'manual' });
  expect(callback.status).toBe(302);
  expect(callback.headers.get('location')).toBe(`${s.url}/cli/auth/done`);
  expect((await b.get('/cli/auth/done')).text).toContain('You are signed in');
  return consent.text;
}

describe('sim login --method oauth', () => {
  it('signs in through the browser, works with whoami, and logout revokes the login', async () => {
    const dir = newConfigDir();
    const login = cli(dir, ['login', '--method', 'oauth', '--no-browser']);
    const url = await login.line(/^http.*\/api\/auth\/oauth2\/authorize\?/);
    expect(new URL(url).searchParams.get('scope')).toBe('offline_access api:read api:write');
    await approveOAuth(url);
    const result = await login.done;
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('Logged in');
    const creds = credentials(dir);
    expect(creds.access_token).toMatch(/^owa_at_/);
    expect(creds.refresh_token).toMatch(/^owa_rt_/);
    expect(creds.oauth_issuer).toBe(`${s.url}/api/auth`);

    const who = await run(dir, ['--output', 'json', 'whoami']);
    expect(who.code, who.stdout + who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ authenticated: true, verification: { status: 'verified', keyType: 'oauth_access_token' } });
    const created = await run(dir, ['--output', 'json', 'workflows', 'create', '--name', 'Made by an OAuth login']);
    expect(created.code, created.stderr).toBe(0);

    // Near expiry the CLI refreshes by itself: the refresh token rotates and the new tokens are stored.
    const file = path.join(dir, 'credentials');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace(/^(token_expires_at\s*=\s*).*$/m, `$1${Date.now() + 60_000}`), { mode: 0o600 });
    const refreshed = await run(dir, ['--output', 'json', 'whoami']);
    expect(JSON.parse(refreshed.stdout)).toMatchObject({ verification: { status: 'verified' } });
    const rotated = credentials(dir);
    expect(rotated.refresh_token).not.toBe(creds.refresh_token);
    expect(rotated.access_token).not.toBe(creds.access_token);
    Object.assign(creds, rotated);

    const logout = await run(dir, ['logout']);
    expect(logout.code, logout.stdout + logout.stderr).toBe(0);
    expect((await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${creds.access_token}` } })).status).toBe(401);
    const refresh = await fetch(`${s.url}/api/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'sim-cli', refresh_token: creds.refresh_token! }).toString(),
    });
    expect(refresh.status).toBe(400);
    const after = await run(dir, ['--output', 'json', 'whoami']);
    expect(JSON.parse(after.stdout).authenticated).toBe(false);
  });

  it('a --read-only login reads but is refused writes', async () => {
    const dir = newConfigDir();
    const login = cli(dir, ['login', '--method', 'oauth', '--no-browser', '--read-only']);
    const url = await login.line(/^http.*\/api\/auth\/oauth2\/authorize\?/);
    expect(new URL(url).searchParams.get('scope')).toBe('offline_access api:read');
    const consent = await approveOAuth(url);
    expect(consent).toContain('read-only');
    const result = await login.done;
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('Read-only login');
    const list = await run(dir, ['--output', 'json', 'workflows', 'list']);
    expect(list.code, list.stderr).toBe(0);
    const write = await run(dir, ['--output', 'json', 'workflows', 'create', '--name', 'Not allowed']);
    expect(write.code).not.toBe(0);
    expect(write.stderr + write.stdout).toMatch(/403|scope|api:write|permission/i);
    expect((await run(dir, ['logout'])).code).toBe(0);
  });

  it('gives up cleanly when the user denies', async () => {
    const dir = newConfigDir();
    const login = cli(dir, ['login', '--method', 'oauth', '--no-browser']);
    const url = await login.line(/^http.*\/api\/auth\/oauth2\/authorize\?/);
    const b = new FakeBrowser(s.url);
    await b.signIn(email, PASSWORD);
    const consent = await b.get(url);
    const denied = await b.post('/api/auth/oauth2/authorize', FakeBrowser.fields(consent.text, '/api/auth/oauth2/authorize', 'deny'));
    const callback = await fetch(denied.location!, { redirect: 'manual' });
    expect(callback.headers.get('location')).toBe(`${s.url}/cli/auth/done?status=cancelled`);
    const result = await login.done;
    expect(result.code).not.toBe(0);
    expect(result.stderr + result.stdout).toContain('declined');
    expect(fs.existsSync(path.join(dir, 'credentials')) ? credentials(dir).access_token : undefined).toBeUndefined();
  });
});

describe('sim login without --method', () => {
  it('finds the OAuth server through its metadata on a desktop session, and pairs on a remote one', async () => {
    const desktop = cli(newConfigDir(), ['login', '--no-browser'], '', { DISPLAY: ':0' });
    const url = await desktop.line(/^http/);
    expect(url).toContain('/api/auth/oauth2/authorize?');
    desktop.child.kill();
    await desktop.done;
    const remote = cli(newConfigDir(), ['login', '--no-browser']);
    expect(await remote.line(/^http/)).toContain('/cli/auth?');
    remote.child.kill();
    await remote.done;
  });

  it('falls back to pairing when the server has OAuth turned off', async () => {
    const off = await startTestServer({ OAUTH_ENABLED: 'false' });
    try {
      const desktop = cli(newConfigDir(), ['login', '--no-browser'], '', { DISPLAY: ':0', SIM_ENDPOINT: off.url });
      expect(await desktop.line(/^http.*\/cli\/auth\?/)).toContain(`${off.url}/cli/auth?`);
      expect(desktop.out()).toContain('does not offer OAuth sign-in');
      desktop.child.kill();
      await desktop.done;
    } finally {
      await off.stop();
    }
  });
});

describe('sim login --method api-key (pairing)', () => {
  it('approves the pairing code in the browser and stores a personal key named as the CLI expects', async () => {
    const dir = newConfigDir();
    const login = cli(dir, ['login', '--method', 'api-key', '--no-browser']);
    const pairingLine = await login.line(/^Pairing code:/);
    const code = pairingLine.replace('Pairing code:', '').trim();
    const url = await login.line(/^http.*\/cli\/auth\?/);
    const b = new FakeBrowser(s.url);
    const first = await b.get(url);
    expect(first.status).toBe(303);
    const signIn = await b.signIn(email, PASSWORD, decodeURIComponent(first.location!.split('next=')[1]!));
    const approval = await b.get(signIn.location!);
    expect(approval.status).toBe(200);
    expect(approval.text).toContain(code);
    const approved = await b.post('/api/cli/auth/approve', FakeBrowser.fields(approval.text, '/api/cli/auth/approve', 'approve'));
    expect(approved.status).toBe(200);
    const result = await login.done;
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('Key stored');
    const key = credentials(dir).api_key!;
    expect(key).toMatch(/^sk-owa-/);
    const who = await run(dir, ['--output', 'json', 'whoami']);
    expect(JSON.parse(who.stdout)).toMatchObject({ authenticated: true, verification: { status: 'verified', keyType: 'personal' } });
    const stored = (await s.services.store.apiKeys.listForUser(s.userId)).find((k) => k.displaySuffix === key.slice(-4))!;
    expect(stored.name).toMatch(/^CLI \(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z\)$/);
    expect(stored.kind).toBe('personal');
    const meta = (await (await fetch(`${s.url}/api/v2/meta`, { headers: { 'x-api-key': key } })).json()) as any;
    expect(meta.data.keyType).toBe('personal');
  });

  it('fails the CLI when the pairing is denied', async () => {
    const dir = newConfigDir();
    const login = cli(dir, ['login', '--method', 'api-key', '--no-browser']);
    const url = await login.line(/^http.*\/cli\/auth\?/);
    const b = new FakeBrowser(s.url);
    await b.signIn(email, PASSWORD);
    const approval = await b.get(url);
    await b.post('/api/cli/auth/approve', FakeBrowser.fields(approval.text, '/api/cli/auth/approve', 'deny'));
    const result = await login.done;
    expect(result.code).not.toBe(0);
    expect(result.stderr + result.stdout).toContain('declined');
  });
});

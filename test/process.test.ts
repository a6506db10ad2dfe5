// The server and admin command as real processes: first-start bootstrap, persistence across restarts,
// graceful shutdown, and revocation by another process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PATIENCE_MS } from './support/wait.ts';
import { endsWithFile, firstStartLine } from './support/children.ts';

const root = path.resolve(import.meta.dirname, '..');
let dataDir: string;
const BOOT_KEY = 'sk-owa-ci-bootstrap-key-0123456789';

function startServer(extraEnv: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; stdout: () => string }> {
  const child = endsWithFile(spawn(process.execPath, [path.join(root, 'bin', 'start.js')], {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), PATIENCE_MS);
    child.stdout!.on('data', (c) => {
      out += c;
      const m = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, stdout: () => out });
      }
    });
    child.stderr!.on('data', (c) => (out += c));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

function admin(args: string[]) {
  const r = spawnSync(process.execPath, [path.join(root, 'bin', 'admin.js'), ...args], { env: { PATH: process.env.PATH, DATA_DIR: dataDir }, encoding: 'utf8' });
  return { code: r.status, json: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
}

beforeAll(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-proc-'));
});
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('server process', () => {
  it('bootstraps once with BOOTSTRAP_API_KEY, keeps data across restarts, and stops cleanly on SIGTERM', async () => {
    const first = await startServer({ BOOTSTRAP_API_KEY: BOOT_KEY });
    expect(firstStartLine(first.stdout())?.apiKey).toBe('the key set in BOOTSTRAP_API_KEY');
    expect(first.stdout()).not.toContain(BOOT_KEY);
    const meta = await fetch(`${first.url}/api/v2/meta`, { headers: { 'X-API-Key': BOOT_KEY } });
    expect(meta.status).toBe(200);
    expect(await stop(first.child)).toBe(0);

    const second = await startServer({ BOOTSTRAP_API_KEY: 'sk-owa-a-different-key-999999999' });
    expect(second.stdout()).not.toContain('First start');
    const list: any = await (await fetch(`${second.url}/api/v2/workspaces`, { headers: { 'X-API-Key': BOOT_KEY } })).json();
    expect(list.data).toHaveLength(1);
    expect(second.stdout()).not.toContain(BOOT_KEY); // keys never reach the logs
    expect(await stop(second.child)).toBe(0);
  });

  it('refuses bad configuration with a clear message', () => {
    const r = spawnSync(process.execPath, [path.join(root, 'bin', 'start.js')], { env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: 'eighty' }, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('PORT must be a whole number');
  });
});

describe('admin command', () => {
  it('creates users, workspaces, memberships and keys, and a revocation reaches a running server', async () => {
    const user = admin(['user', 'create', '--email', 'ops@example.com', '--name', 'Ops']);
    expect(user.code).toBe(0);
    expect(user.json).toMatchObject({ email: 'ops@example.com', name: 'Ops' });
    const ws = admin(['workspace', 'create', '--name', 'Ops', '--owner', user.json.id]);
    expect(ws.json).toMatchObject({ name: 'Ops', memberCount: 1 });
    const key = admin(['key', 'create', '--user', user.json.id]);
    expect(key.json.key).toMatch(/^sk-owa-/);
    expect(key.json).not.toHaveProperty('keyHash');
    const wsKey = admin(['key', 'create', '--user', user.json.id, '--workspace', ws.json.id]);
    expect(wsKey.json).toMatchObject({ kind: 'workspace', workspaceId: ws.json.id });

    const other = admin(['user', 'create', '--email', 'reader@example.com']);
    expect(admin(['member', 'set', '--workspace', ws.json.id, '--user', other.json.id, '--role', 'read']).code).toBe(0);
    const denied = admin(['key', 'create', '--user', other.json.id, '--workspace', ws.json.id]);
    expect(denied.code).toBe(1);
    expect(JSON.parse(denied.stderr).error).toContain('Only an admin');

    const server = await startServer();
    try {
      const headers = { 'X-API-Key': key.json.key };
      expect((await fetch(`${server.url}/api/v2/workspaces/${ws.json.id}`, { headers })).status).toBe(200);
      expect(admin(['key', 'revoke', '--id', key.json.id]).code).toBe(0);
      await new Promise((r) => setTimeout(r, 400));
      expect((await fetch(`${server.url}/api/v2/workspaces/${ws.json.id}`, { headers })).status).toBe(401);
    } finally {
      await stop(server.child);
    }
  });

  it('reports bad input on stderr as JSON with exit code 1', () => {
    for (const args of [
      ['user', 'create', '--email', 'not-an-email'],
      ['user', 'create'],
      ['member', 'set', '--workspace', 'x', '--user', 'y', '--role', 'owner'],
      ['frobnicate'],
      ['user', 'create', '--bogus', 'x'],
    ]) {
      const r = admin(args);
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stderr)).toHaveProperty('error');
    }
  });
});

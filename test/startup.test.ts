// `npm start` and `npm run admin` as real processes: one server per DATA_DIR, one-line configuration errors
// before anything is written, the bootstrap key kept off stdout logs, a missing handler stopping the start,
// and the admin command's list commands.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FakeBrowser } from './support/browser-session.ts';
import { apiBlock, apiCaller, deployHeldWorkflow, link } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { PATIENCE_MS, waitUntil } from './support/wait.ts';
import { endsWithFile, firstStartLine, logLines } from './support/children.ts';
import { DatabaseSync } from 'node:sqlite';
import { openSqliteStore } from '../src/store/index.ts';
import { loadMigrations } from '../src/store/migrations.ts';

const root = path.resolve(import.meta.dirname, '..');
const start = path.join(root, 'bin', 'start.js');
const KEY = 'sk-owa-startup-test-key-0123456789abc';
const dirs: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-startup-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const baseEnv = (dataDir: string, extra: Record<string, string> = {}): Record<string, string> => ({ PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extra });

function startServer(env: Record<string, string>, args: string[] = []): Promise<{ child: ChildProcess; url: string; port: number; out: () => string }> {
  const child = endsWithFile(spawn(process.execPath, [...args, start], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), PATIENCE_MS);
    child.stdout!.on('data', (c) => {
      out += c;
      const m = /Listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, port: Number(m[2]), out: () => out });
      }
    });
    child.stderr!.on('data', (c) => (out += c));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/** A start that is expected to fail: exit code, stderr and stdout. */
function failedStart(env: Record<string, string>, args: string[] = []) {
  const r = spawnSync(process.execPath, [...args, start], { env, encoding: 'utf8', timeout: PATIENCE_MS });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

function expectOneLine(text: string, prefix: string): void {
  const lines = text.trim().split('\n');
  expect(lines, text).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^${prefix}: `));
  expect(text).not.toMatch(/\n\s+at /);
}

describe('one server per DATA_DIR', () => {
  it('a second server on another port refuses, naming the holder; the first one\'s running run is untouched', async () => {
    const dataDir = tempDir();
    // The run waits at a gate this test holds shut, so it is `running` for as long as the test needs, however busy the machine.
    const gate = await new GateServer().start();
    const first = await startServer(baseEnv(dataDir, { BOOTSTRAP_API_KEY: KEY, RATE_LIMIT_FREE_ASYNC: '1000', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' }));
    try {
      const call = apiCaller(first.url, KEY);
      const wf = { id: (await deployHeldWorkflow(call, gate, 'Long', 'long-run')).workflowId };
      const { runId } = await call('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true });
      const status = async () => (await call('GET', `/api/v2/workflows/${wf.id}/runs/${runId}`)).status as string;
      await waitUntil('the run to reach the gate', () => gate.holding('long-run'));
      expect(await status()).toBe('running');

      const second = failedStart(baseEnv(dataDir));
      expect(second.code).toBe(1);
      expectOneLine(second.stderr, 'Cannot start');
      expect(second.stderr).toContain(`pid ${first.child.pid}`);
      expect(second.stderr).toContain(`port ${first.port}`);
      expect(second.stdout).toBe('');

      expect(await status()).toBe('running');
      gate.release('long-run');
      expect(await waitUntil('the run to finish', async () => ((s) => (s === 'running' ? null : s))(await status()))).toBe('completed');
    } finally {
      expect(await stop(first.child)).toBe(0);
      await gate.stop();
    }
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(false);
    // A server killed without a chance to clean up leaves a stale lock; the next start takes it over.
    const killed = await startServer(baseEnv(dataDir));
    killed.child.kill('SIGKILL');
    await new Promise((r) => killed.child.once('exit', r));
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(true);
    const next = await startServer(baseEnv(dataDir));
    expect(await stop(next.child)).toBe(0);
  });
});

describe('an upload killed with SIGKILL during complete', () => {
  it('is completable again after the restart, with its bytes intact', async () => {
    const dataDir = tempDir();
    const env = baseEnv(dataDir, { BOOTSTRAP_API_KEY: KEY, UPLOAD_PART_SIZE: '4mb', LOG_LEVEL: 'warn', LEASE_TTL_MS: '1000' });
    const size = 96 * 1024 * 1024;
    const bytes = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4096) bytes.writeUInt32LE((i * 2654435761) >>> 0, i);
    let server = await startServer(env);
    const api = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
      const r = await fetch(server.url + p, { method, headers: { 'X-API-Key': KEY, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as any };
    };
    try {
      const workspaceId = (await api('GET', '/api/v2/workspaces')).body.data[0].id;
      const up = (await api('POST', '/api/v2/files/uploads', { workspaceId, name: 'big.bin', contentType: 'application/octet-stream', size })).body.data;
      const token = { 'upload-token': up.uploadToken };
      const partCount = up.transfer.partCount as number;
      const numbers = Array.from({ length: partCount }, (_, i) => partCount - i); // last part first: the commit re-reads every byte
      const parts = (await api('POST', `/api/v2/files/uploads/${up.session.id}/parts?workspaceId=${workspaceId}`, { partNumbers: numbers }, token)).body.data.parts;
      for (const p of parts) {
        const chunk = bytes.subarray((p.partNumber - 1) * 4 * 1024 * 1024, p.partNumber * 4 * 1024 * 1024);
        expect((await fetch(p.url, { method: 'PUT', headers: p.headers, body: chunk })).status).toBe(200);
      }
      const sessionPath = `/api/v2/files/uploads/${up.session.id}?workspaceId=${workspaceId}`;
      const completing = fetch(`${server.url}/api/v2/files/uploads/${up.session.id}/complete?workspaceId=${workspaceId}`, { method: 'POST', headers: { 'X-API-Key': KEY, ...token } }).catch(() => null);
      let seen = '';
      for (let i = 0; i < 2000 && seen !== 'completing'; i++) seen = (await api('GET', sessionPath, undefined, token)).body.data.status;
      expect(seen).toBe('completing');
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      await completing;

      server = await startServer(env);
      // Still the dead process's until its lease runs out (LEASE_TTL_MS); then completing again hands the session
      // back (its bytes returned from the commit's temporary name) and completes it.
      const completeAgain = () => api('POST', `/api/v2/files/uploads/${up.session.id}/complete?workspaceId=${workspaceId}`, undefined, token);
      const done = await waitUntil('the dead completion to let go', async () => {
        const r = await completeAgain();
        return r.status === 409 && r.body.error.details?.status === 'completing' ? null : r;
      });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(fs.readdirSync(path.join(dataDir, 'files', 'tmp'))).toEqual([]);
      const content = Buffer.from(await (await fetch(`${server.url}/api/v2/files/${done.body.data.file.id}?workspaceId=${workspaceId}`, { headers: { 'X-API-Key': KEY } })).arrayBuffer());
      expect(content.equals(bytes)).toBe(true);
    } finally {
      await stop(server.child);
    }
  });
});

describe('configuration errors', () => {
  it('a taken port on a first start: one line, exit 2, nothing written (no user, no key lost)', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = path.join(tempDir(), 'fresh');
    try {
      const r = failedStart(baseEnv(dataDir, { PORT: String(port) }));
      expect(r.code).toBe(2);
      expectOneLine(r.stderr, 'Configuration error');
      expect(r.stderr).toContain(`PORT ${port} is already in use`);
      expect(r.stdout).not.toContain('First start');
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('LOG_LEVEL and SECRETS_KEY: one line, exit 2, before DATA_DIR is created', () => {
    for (const [env, needle] of [
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of'],
      [{ SECRETS_KEY: 'too-short' }, 'SECRETS_KEY must be 32 bytes'],
      [{ SECRETS_KEY: 'ab'.repeat(31) }, 'SECRETS_KEY must be 32 bytes'],
    ] as const) {
      const dataDir = path.join(tempDir(), 'fresh');
      const r = failedStart({ ...baseEnv(dataDir), ...env });
      expect(r.code).toBe(2);
      expectOneLine(r.stderr, 'Configuration error');
      expect(r.stderr).toContain(needle);
      expect(fs.existsSync(dataDir)).toBe(false);
    }
  });
});

describe('the bootstrap key', () => {
  it('goes to an owner-only file in DATA_DIR when stdout is not a terminal, never to stdout', async () => {
    const dataDir = tempDir();
    const server = await startServer(baseEnv(dataDir));
    try {
      const file = path.join(dataDir, 'bootstrap-api-key.txt');
      expect(firstStartLine(server.out())?.apiKey).toContain(`written to ${file} (mode 0600)`);
      expect(server.out()).not.toMatch(/sk-owa-/);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const key = fs.readFileSync(file, 'utf8').trim();
      expect((await fetch(`${server.url}/api/v2/meta`, { headers: { 'X-API-Key': key } })).status).toBe(200);
    } finally {
      await stop(server.child);
    }
  });
});

describe('the bootstrap admin\'s password', () => {
  it('is said to be unset on the first start, with the admin command that sets it; that command as printed enables /login', async () => {
    const dataDir = tempDir();
    const server = await startServer(baseEnv(dataDir));
    try {
      const line = firstStartLine(server.out())!;
      expect(line.password).toContain('none yet; signing in on /login (and `sim login`) needs one');
      const command = line.setPassword as string | undefined;
      expect(command).toBe('npm run -s admin -- user password --email admin@localhost.localdomain --password-stdin');
      const browser = new FakeBrowser(server.url);
      expect((await browser.signIn('admin@localhost.localdomain', 'a long enough password')).status).toBe(401); // no password yet
      // The printed command, run as printed (through npm, from the project), with the password on stdin.
      const [npm, ...args] = command!.split(' ');
      const r = spawnSync(npm!, args, { cwd: root, env: { PATH: process.env.PATH, DATA_DIR: dataDir }, input: 'a long enough password\n', encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ email: 'admin@localhost.localdomain', passwordSet: true });
      const signedIn = await browser.signIn('admin@localhost.localdomain', 'a long enough password');
      expect(signedIn.status).toBe(303);
    } finally {
      await stop(server.child);
    }
  });
});

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

describe('the bootstrap key on a terminal', () => {
  it.skipIf(!hasScript)('is printed once when stdout is a TTY, and no key file is written', async () => {
    const dataDir = tempDir();
    // util-linux `script` gives the server a pseudo-terminal as stdout.
    const child = spawn('script', ['-qec', `${process.execPath} ${start}`, '/dev/null'], { env: baseEnv(dataDir), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    try {
      await waitUntil('the server to listen', () => /Listening on/.test(out));
      const line = firstStartLine(out)!;
      expect(line.apiKey).toMatch(/^sk-owa-\S+$/);
      expect(line.msg).toContain('Keep the key now');
      expect(fs.existsSync(path.join(dataDir, 'bootstrap-api-key.txt'))).toBe(false);
    } finally {
      // Stop the server itself (its pid is in the lock), then the terminal wrapper ends with it.
      const holder = JSON.parse(fs.readFileSync(path.join(dataDir, 'server.lock'), 'utf8'));
      process.kill(holder.pid, 'SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    }
  });
});

describe('stdout', () => {
  it('is JSON lines only: each migration applied, the first start, where it listens, and a final summary of the runs it had', async () => {
    const dataDir = tempDir();
    const gate = await new GateServer().start();
    // A short grace: the async run held at the gate goes back to the queue when it runs out.
    const server = await startServer(baseEnv(dataDir, { EGRESS_ALLOW_CIDRS: '127.0.0.1/32', SHUTDOWN_TIMEOUT_MS: '500' }));
    const closed = new Promise((r) => server.child.once('close', r));
    try {
      const key = fs.readFileSync(path.join(dataDir, 'bootstrap-api-key.txt'), 'utf8').trim();
      const call = async (method: string, p: string, body?: unknown) => {
        const r = await fetch(server.url + p, { method, headers: { 'X-API-Key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        const parsed: any = await r.json();
        if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(parsed)}`);
        return parsed.data;
      };
      const workspaceId = (await call('GET', '/api/v2/workspaces'))[0].id;
      const wf = await call('POST', '/api/v2/workflows', { workspaceId, name: 'Held' });
      const startBlock = apiBlock('start_trigger', 'Start');
      const held = gate.block('Held', 'summary');
      await call('PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: { [startBlock.id]: startBlock, [held.id]: held }, edges: [link(startBlock, held)] });
      await call('POST', `/api/v2/workflows/${wf.id}/deploy`, {});
      await call('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true });
      await waitUntil('the run to reach the gate', () => gate.holding('summary'));
      expect(await stop(server.child)).toBe(0);
      await closed;
    } finally {
      await gate.stop();
    }
    const lines = logLines(server.out());
    const migrations = loadMigrations('sqlite');
    expect(lines.filter((l) => l.msg === 'migration applied').map((l) => [l.version, l.name])).toEqual(migrations.map((m) => [m.version, m.name]));
    expect(lines.find((l) => l.msg.startsWith('First start'))).toMatchObject({ level: 30, user: { email: 'admin@localhost.localdomain' }, workspace: { id: expect.any(String) } });
    expect(lines.find((l) => l.msg === `Listening on ${server.url}`)).toMatchObject({ level: 30, url: server.url });
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: 'stopped', runsFinished: 0, runsReturnedToQueue: 1, runsInterrupted: 0 });
  });
});

describe('a database written by a newer version', () => {
  it('is refused at start in one line naming both schema versions, exit 1, and left as it was', async () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, 'workspace.sqlite');
    await (await openSqliteStore(file)).close();
    const latest = loadMigrations('sqlite').at(-1)!.version;
    const newer = latest + 1000;
    const db = new DatabaseSync(file);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(newer, 'from the future', new Date().toISOString());
    db.close();

    const r = failedStart(baseEnv(dataDir));
    expect(r.code).toBe(1);
    expectOneLine(r.stderr, 'Cannot start');
    expect(r.stderr).toContain(`schema version ${newer}`);
    expect(r.stderr).toContain(`up to ${latest}`);
    const after = new DatabaseSync(file, { readOnly: true });
    expect(after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: newer });
    expect(after.prepare('SELECT COUNT(*) AS n FROM users').get()).toEqual({ n: 0 }); // no first start on it
    after.close();
  });
});

describe('a missing handler', () => {
  it('stops npm start at once, naming the operation', () => {
    const dataDir = path.join(tempDir(), 'fresh');
    // Loads the real server with getMeta's export removed from its handler module.
    const hook = path.join(tempDir(), 'drop-handler.mjs');
    fs.writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
registerHooks({
  load(url, context, next) {
    const loaded = next(url, context);
    if (url.endsWith('/src/handlers/meta.ts')) return { ...loaded, source: String(loaded.source).replace('export const getMeta', 'const getMeta') };
    return loaded;
  },
});
`,
    );
    const r = failedStart(baseEnv(dataDir), ['--import', hook]);
    expect(r.code).toBe(1);
    expectOneLine(r.stderr, 'Cannot start');
    expect(r.stderr).toContain('no handler for operation getMeta');
    expect(fs.existsSync(dataDir)).toBe(false);
  });
});

describe('admin command', () => {
  it('lists users and keys without any secret, next to a running server', async () => {
    const dataDir = tempDir();
    const server = await startServer(baseEnv(dataDir, { BOOTSTRAP_API_KEY: KEY }));
    const admin = (args: string[]) => {
      const r = spawnSync(process.execPath, [path.join(root, 'bin', 'admin.js'), ...args], { env: { PATH: process.env.PATH, DATA_DIR: dataDir }, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return { json: JSON.parse(r.stdout), raw: r.stdout };
    };
    try {
      const users = admin(['user', 'list']).json;
      expect(users).toHaveLength(1);
      expect(users[0]).toMatchObject({ email: 'admin@localhost.localdomain', name: 'Admin' });
      const created = admin(['key', 'create', '--user', users[0].id, '--name', 'ci']).json;
      admin(['key', 'revoke', '--id', created.id]);
      const keys = admin(['key', 'list']);
      expect(keys.json.map((k: any) => [k.name, k.active])).toEqual([['Bootstrap key', true], ['ci', false]]);
      expect(keys.raw).not.toContain(KEY);
      expect(keys.raw).not.toContain(created.key);
      expect(keys.raw).not.toMatch(/keyHash|sk-owa-/);
      expect(admin(['key', 'list', '--user', users[0].id]).json).toHaveLength(2);
      // The running server still serves (the admin command ran beside it).
      expect((await fetch(`${server.url}/api/v2/meta`, { headers: { 'X-API-Key': KEY } })).status).toBe(200);
    } finally {
      await stop(server.child);
    }
  });
});

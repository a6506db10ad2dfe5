// `npm run admin -- backup` against a live server under a steady write load, `restore` into a new data
// directory, and a server started on it: everything the snapshot holds reads back the same (workflows, file
// bytes by hash, a secret's value); and the refusals, each a one-line JSON error.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { exited, spawnServer, endsWithFile } from './support/children.ts';
import { PATIENCE_MS } from './support/wait.ts';

const ADMIN = path.resolve(import.meta.dirname, '..', 'bin', 'admin.js');
const KEY = 'sk-owa-backup-test-key-0123456789abcdef';
const dirs: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-backup-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const baseEnv = (dataDir: string, extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  DATA_DIR: dataDir,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  BOOTSTRAP_API_KEY: KEY,
  RATE_LIMIT_FREE_API: '10000000',
  ...extra,
});

/** Runs the admin command without blocking this process (the write load keeps going meanwhile). */
async function admin(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = endsWithFile(spawn(process.execPath, [ADMIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  const code = await exited(child);
  return { code: typeof code === 'number' ? code : null, stdout, stderr };
}

function client(url: string) {
  return async (method: string, p: string, body?: unknown): Promise<any> => {
    const r = await fetch(url + p, { method, headers: { 'X-API-Key': KEY, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const parsed: any = await r.json();
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(parsed)}`);
    return parsed.data;
  };
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function idsIn(databaseFile: string, table: 'workflows' | 'files'): string[] {
  const db = new DatabaseSync(databaseFile, { readOnly: true });
  try {
    return (db.prepare(`SELECT id FROM ${table}`).all() as { id: string }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

/** Asserts a refusal: exit 1 and exactly one line of JSON on stderr whose error matches `message`. */
function expectRefusal(r: { code: number | null; stdout: string; stderr: string }, message: RegExp): void {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!).error).toMatch(message);
}

describe('backup and restore', () => {
  it('backs up a server while it keeps writing; a server on the restore reads back everything the snapshot holds', { timeout: 4 * PATIENCE_MS }, async () => {
    const liveDir = tempDir();
    const live = await spawnServer(baseEnv(liveDir));
    const call = client(live.url);
    const workspaceId = (await call('GET', '/api/v2/workspaces'))[0].id;
    await call('PUT', '/api/v2/secrets/BACKUP_CHECK', { workspaceId, scope: 'workspace', value: 'kept-across-restore-42', unredacted: true });

    // What each created thing is, by id: workflows by name, files by the hash of the bytes sent.
    const workflows = new Map<string, string>();
    const files = new Map<string, string>();
    let writes = 0;
    let stop = false;
    const writeOne = async (i: number) => {
      const wf = await call('POST', '/api/v2/workflows', { workspaceId, name: `load-${i}` });
      workflows.set(wf.id, wf.name);
      const content = randomBytes(64 + (i % 200)).toString('base64');
      const file = await call('POST', '/api/v2/files', { workspaceId, name: `load-${i}.txt`, content });
      files.set(file.id, sha256(content));
      writes++;
    };
    for (let i = 0; i < 10; i++) await writeOne(i);
    const beforeBackup = { workflows: [...workflows.keys()], files: [...files.keys()] };
    const load = (async () => {
      for (let i = 10; !stop; i++) await writeOne(i);
    })();

    const backupDir = path.join(tempDir(), 'backup');
    const writesAtStart = writes;
    const backup = await admin(['backup', '--to', backupDir], baseEnv(liveDir));
    const writesDuringBackup = writes - writesAtStart;
    stop = true;
    await load;
    expect(backup.code, backup.stderr).toBe(0);
    expect(writesDuringBackup).toBeGreaterThan(0);
    const manifest = JSON.parse(backup.stdout);
    expect(manifest).toMatchObject({ secretsKey: 'included', database: { file: 'workspace.sqlite' } });
    expect(manifest.schemaVersion).toBeGreaterThan(0);
    expect(JSON.parse(fs.readFileSync(path.join(backupDir, 'manifest.json'), 'utf8'))).toMatchObject({ database: manifest.database, blobs: manifest.blobs });
    expect(fs.existsSync(path.join(backupDir, 'secrets.key'))).toBe(true);
    expect((fs.statSync(path.join(backupDir, 'secrets.key')).mode & 0o077)).toBe(0);

    // The snapshot holds everything written before the backup began, and only things that were written.
    const snapshotWorkflows = idsIn(path.join(backupDir, 'workspace.sqlite'), 'workflows');
    const snapshotFiles = idsIn(path.join(backupDir, 'workspace.sqlite'), 'files');
    expect(snapshotWorkflows).toEqual(expect.arrayContaining(beforeBackup.workflows));
    expect(snapshotFiles).toEqual(expect.arrayContaining(beforeBackup.files));
    for (const id of snapshotWorkflows) expect(workflows.has(id), id).toBe(true);
    for (const id of snapshotFiles) expect(files.has(id), id).toBe(true);
    expect(manifest.counts.workflows).toBe(snapshotWorkflows.length);
    expect(manifest.counts.files).toBe(snapshotFiles.length);

    const restoredDir = path.join(tempDir(), 'restored');
    const restore = await admin(['restore', '--from', backupDir], baseEnv(restoredDir));
    expect(restore.code, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ dataDir: restoredDir, blobs: manifest.blobs, schemaVersion: manifest.schemaVersion });

    live.child.kill('SIGTERM');
    await exited(live.child);
    const restored = await spawnServer(baseEnv(restoredDir));
    try {
      const read = client(restored.url);
      for (const id of snapshotWorkflows) expect((await read('GET', `/api/v2/workflows/${id}`)).name).toBe(workflows.get(id));
      for (const id of snapshotFiles) {
        const r = await fetch(`${restored.url}/api/v2/files/${id}?workspaceId=${workspaceId}`, { headers: { 'X-API-Key': KEY } });
        expect(r.status, id).toBe(200);
        expect(sha256(Buffer.from(await r.arrayBuffer())), id).toBe(files.get(id));
      }
      const secrets = await read('GET', `/api/v2/secrets?workspaceId=${workspaceId}`);
      expect((secrets as any[]).find((s) => s.name === 'BACKUP_CHECK')).toMatchObject({ value: 'kept-across-restore-42' });
    } finally {
      restored.child.kill('SIGTERM');
      await exited(restored.child);
    }
  });

  it('refuses a non-empty target, a non-empty data directory, a damaged backup and a missing SECRETS_KEY, each in one JSON line', { timeout: 2 * PATIENCE_MS }, async () => {
    const secretsKey = randomBytes(32).toString('base64');
    const dataDir = tempDir();
    const server = await spawnServer(baseEnv(dataDir, { SECRETS_KEY: secretsKey }));
    const call = client(server.url);
    const workspaceId = (await call('GET', '/api/v2/workspaces'))[0].id;
    await call('POST', '/api/v2/files', { workspaceId, name: 'a.txt', content: 'hello backup' });
    server.child.kill('SIGTERM');
    await exited(server.child);
    const env = baseEnv(dataDir, { SECRETS_KEY: secretsKey });

    expectRefusal(await admin(['backup'], env), /--to is required/);
    const occupied = tempDir();
    fs.writeFileSync(path.join(occupied, 'something'), 'x');
    expectRefusal(await admin(['backup', '--to', occupied], env), /is not an empty directory/);

    // SECRETS_KEY from the environment: the backup holds a note instead of the key, and a restore needs the key.
    const backupDir = path.join(tempDir(), 'b');
    const made = await admin(['backup', '--to', backupDir], env);
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout).secretsKey).toBe('external');
    expect(fs.existsSync(path.join(backupDir, 'secrets.key'))).toBe(false);
    expect(fs.readFileSync(path.join(backupDir, 'SECRETS_KEY-IS-EXTERNAL.txt'), 'utf8')).toMatch(/SECRETS_KEY/);
    const target = path.join(tempDir(), 'target');
    expectRefusal(await admin(['restore', '--from', backupDir], baseEnv(target)), /set the same SECRETS_KEY/);
    expect(fs.existsSync(target)).toBe(false);

    // A backup that fails part-way (here: run with a key that is not the server's) leaves its directory empty for a rerun.
    const keyless = path.join(tempDir(), 'k');
    const failed = await admin(['backup', '--to', keyless], baseEnv(dataDir, { SECRETS_KEY: randomBytes(32).toString('base64') }));
    expectRefusal(failed, /SECRETS_KEY\) does not open the secrets of this database; run the backup with the server's environment/);
    expect(fs.readdirSync(keyless)).toEqual([]);

    expectRefusal(await admin(['restore', '--from', backupDir], baseEnv(occupied, { SECRETS_KEY: secretsKey })), /is not empty; restore into a new or empty DATA_DIR/);

    const manifestFile = path.join(backupDir, 'manifest.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    fs.writeFileSync(manifestFile, JSON.stringify({ ...manifest, database: { ...manifest.database, sha256: '0'.repeat(64) } }));
    expectRefusal(await admin(['restore', '--from', backupDir], baseEnv(target, { SECRETS_KEY: secretsKey })), /does not match the SHA-256 in the manifest/);
    expect(fs.existsSync(target)).toBe(false);
    fs.writeFileSync(manifestFile, JSON.stringify(manifest));

    // Another key would leave every secret unreadable: the restore checks it opens them, and leaves nothing behind.
    expectRefusal(await admin(['restore', '--from', backupDir], baseEnv(target, { SECRETS_KEY: randomBytes(32).toString('base64') })), /SECRETS_KEY\) does not open the secrets of this database; nothing was restored/);
    expect(fs.readdirSync(target)).toEqual([]);

    const restored = await admin(['restore', '--from', backupDir], baseEnv(target, { SECRETS_KEY: secretsKey }));
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout).blobs.count).toBe(1);
  });
});

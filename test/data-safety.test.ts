// Data safety of one data directory: the exclusive lock (one server per DATA_DIR, recovery only under it),
// uploads a killed process left completing (handed back by the purge job once stale, never at start), owner-only
// files, and a missing handler stopping the start.
import { leaseUntil } from '../src/workers/lease.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createServices, startServer, type RunningServer } from '../src/server.ts';
import { createLogger } from '../src/http/logging.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { openSqliteStore } from '../src/store/index.ts';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../src/store/data-dir-lock.ts';
import { handlers } from '../generated/handler-registry.ts';
import { MissingHandlerError, missingHandlers } from '../src/app.ts';
import { type TestServer } from './support/server.ts';
import { purgeFiles } from '../src/files/purge.ts';

const KEY = 'sk-owa-data-safety-test-key-00000000000';
const dirs: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-safety-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

type Server = RunningServer & { request: TestServer['request']; workspaceId: string };

async function startOn(dataDir: string, env: Record<string, string> = {}): Promise<Server> {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test', UPLOAD_PART_SIZE: '1kb', ...env });
  const services = await createServices(config, createLogger('silent'));
  await bootstrapIfEmpty(services.store, { apiKey: KEY });
  const server = await startServer(services);
  const request: TestServer['request'] = (pathname, init = {}) => {
    const { key = KEY, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (key) headers.set('X-API-Key', key);
    return fetch(server.url + pathname, { ...rest, headers });
  };
  const workspaceId = ((await (await request('/api/v2/workspaces')).json()) as any).data[0].id;
  return { ...server, request, workspaceId };
}

const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function stagedUpload(s: Server, name: string, bytes: Buffer): Promise<{ id: string; token: string }> {
  const up = ((await (await s.request('/api/v2/files/uploads', json({ workspaceId: s.workspaceId, name, contentType: 'application/octet-stream', size: bytes.length }))).json()) as any).data;
  const put = await fetch(up.transfer.url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
  expect(put.status).toBe(200);
  return { id: up.session.id, token: up.uploadToken };
}

const complete = (s: Server, up: { id: string; token: string }) =>
  s.request(`/api/v2/files/uploads/${up.id}/complete?workspaceId=${s.workspaceId}`, { method: 'POST', headers: { 'upload-token': up.token } });

describe('the data directory lock', () => {
  it('refuses a second server on the same DATA_DIR in the same process, naming the holder; frees it on close', async () => {
    const dir = tempDir();
    const first = await startOn(dir);
    try {
      const holder = JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8'));
      expect(holder).toMatchObject({ pid: process.pid, host: os.hostname(), port: first.port });
      expect(fs.statSync(path.join(dir, LOCK_FILE)).mode & 0o777).toBe(0o600);
      const config = loadConfig({ PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent' });
      const err = await createServices(config, createLogger('silent')).catch((e) => e);
      expect(err).toBeInstanceOf(DataDirLockedError);
      expect(err.message).toContain(`pid ${process.pid}`);
      expect(err.message).toContain(`port ${first.port}`);
    } finally {
      await first.close();
    }
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    const again = await startOn(dir);
    await again.close();
  });

  it('takes over a stale lock of a dead process on this host, but never one of another host', async () => {
    const dir = tempDir();
    // A pid that surely ran and ended: a child that has exited.
    const { spawnSync } = await import('node:child_process');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(dead.stdout);
    const stale = { pid: deadPid, host: os.hostname(), port: 1234, startedAt: new Date(0).toISOString(), token: randomUUID() };
    fs.writeFileSync(path.join(dir, LOCK_FILE), JSON.stringify(stale));
    const lock = lockDataDir(dir);
    expect(lock.holder.pid).toBe(process.pid);
    lock.release();

    fs.writeFileSync(path.join(dir, LOCK_FILE), JSON.stringify({ ...stale, host: 'some-other-host' }));
    expect(() => lockDataDir(dir)).toThrow(/pid \d+ on some-other-host, port 1234/);
    fs.writeFileSync(path.join(dir, LOCK_FILE), 'garbage');
    expect(() => lockDataDir(dir)).toThrow(/unreadable/);
  });
});

/** The purge job as it runs once the leftovers are older than FILE_STALE_AFTER_SECONDS (run as if two hours later). */
const DEAD_OWNER = 'gone-host:1:00000000';

const purgeLater = (s: Server) =>
  purgeFiles(s.services.store, s.services.blobs, { now: Date.now() + 2 * 3600_000, archiveRetentionMs: 1e12, graceMs: s.services.config.files.staleAfterMs });

describe('uploads a killed process left completing', () => {
  it('go back to the client (bytes kept) or fail (bytes lost) once their lease ran out, not at a restart; orphaned temporary files are swept by age', async () => {
    const dir = tempDir();
    const first = await startOn(dir);
    const a = Buffer.from('crash after the bytes were moved for committing');
    const b = Buffer.alloc(3000, 9); // multipart, crash before the move
    const c = Buffer.from('bytes lost');
    const movedUp = await stagedUpload(first, 'moved.txt', a);
    const parts = ((await (await first.request('/api/v2/files/uploads', json({ workspaceId: first.workspaceId, name: 'staged.bin', contentType: 'application/octet-stream', size: b.length }))).json()) as any).data;
    const stagedUp = { id: parts.session.id, token: parts.uploadToken };
    const urls = ((await (await first.request(`/api/v2/files/uploads/${stagedUp.id}/parts?workspaceId=${first.workspaceId}`, { ...json({ partNumbers: [1, 2, 3] }), headers: { 'content-type': 'application/json', 'upload-token': stagedUp.token } })).json()) as any).data.parts;
    for (const p of urls) await fetch(p.url, { method: 'PUT', headers: p.headers, body: b.subarray((p.partNumber - 1) * 1024, p.partNumber * 1024) });
    const lostUp = await stagedUpload(first, 'lost.txt', c);
    await first.close();

    // What kill -9 during `complete` leaves: the session claimed (`completing`), its bytes either still staged,
    // moved to the commit name (and maybe already linked into the blob store), or gone; plus temporary files
    // of writes that never finished.
    const files = path.join(dir, 'files');
    const committed = path.join(files, 'tmp', `commit-${movedUp.id}`);
    fs.renameSync(path.join(files, 'uploads', movedUp.id), committed);
    fs.rmSync(path.join(files, 'uploads', lostUp.id));
    const orphan = path.join(files, 'tmp', randomUUID());
    fs.writeFileSync(orphan, 'half a blob');
    const store = await openSqliteStore(path.join(dir, 'workspace.sqlite'));
    await store.transaction(async (tx) => {
      // Claimed by a process that is gone, under a lease that has a minute to run.
      for (const id of [movedUp.id, stagedUp.id, lostUp.id]) await tx.fileUploads.claimCompletion(id, DEAD_OWNER, leaseUntil(60_000), new Date().toISOString());
    });
    expect((await store.fileUploads.get(movedUp.id))!.status).toBe('completing');
    await store.close();

    const second = await startOn(dir);
    try {
      // A restart alone changes nothing: another live process could still be completing these.
      expect((await second.services.store.fileUploads.get(movedUp.id))!.status).toBe('completing');
      expect(fs.existsSync(orphan)).toBe(true);
      expect(await purgeFiles(second.services.store, second.services.blobs, { archiveRetentionMs: 1e12, graceMs: second.services.config.files.staleAfterMs })).toMatchObject({
        abandonedCompletions: 0,
        temporaryFiles: 0,
      });
      // A client completing again before the lease runs out is refused: the session is still someone's.
      expect((await complete(second, movedUp)).status).toBe(409);
      expect((await purgeLater(second))).toMatchObject({ abandonedCompletions: 3, temporaryFiles: 1 });
      expect(fs.existsSync(orphan)).toBe(false);
      expect(fs.readdirSync(path.join(files, 'tmp'))).toEqual([]);
      for (const [up, bytes] of [[movedUp, a], [stagedUp, b]] as const) {
        const done = await complete(second, up);
        const body: any = await done.json();
        expect(done.status, JSON.stringify(body)).toBe(200);
        expect(body.data).toMatchObject({ status: 'completed', file: { size: bytes.length } });
        const content = Buffer.from(await (await second.request(`/api/v2/files/${body.data.file.id}?workspaceId=${second.workspaceId}`)).arrayBuffer());
        expect(content.equals(bytes)).toBe(true);
      }
      const lost: any = await (await second.request(`/api/v2/files/uploads/${lostUp.id}?workspaceId=${second.workspaceId}`, { headers: { 'upload-token': lostUp.token } })).json();
      expect(lost.data.status).toBe('failed');
      // Once recorded, the commit leaves nothing behind.
      expect(fs.readdirSync(path.join(files, 'tmp'))).toEqual([]);
      expect(fs.readdirSync(path.join(files, 'uploads'))).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('a restored upload linked into the blob store gets its own staging copy (a stored blob is never rewritten)', async () => {
    const dir = tempDir();
    const s = await startOn(dir);
    const bytes = Buffer.from('same content, stored twice');
    const first = await stagedUpload(s, 'one.txt', bytes);
    expect((await complete(s, first)).status).toBe(200);
    const again = await stagedUpload(s, 'two.txt', bytes);
    // Crash after the commit linked the bytes into place, before the file row: the commit name shares the blob's inode.
    const { createHash } = await import('node:crypto');
    const key = createHash('sha256').update(bytes).digest('hex');
    const blob = path.join(dir, 'files', 'blobs', key.slice(0, 2), key.slice(2, 4), key);
    const committed = path.join(dir, 'files', 'tmp', `commit-${again.id}`);
    fs.rmSync(path.join(dir, 'files', 'uploads', again.id));
    fs.linkSync(blob, committed);
    await s.services.store.transaction((tx) => tx.fileUploads.claimCompletion(again.id, DEAD_OWNER, leaseUntil(60_000), new Date().toISOString()));
    await s.close();
    const restarted = await startOn(dir);
    try {
      expect((await purgeLater(restarted)).abandonedCompletions).toBe(1);
      const staged = path.join(dir, 'files', 'uploads', again.id);
      expect(fs.statSync(staged).ino).not.toBe(fs.statSync(blob).ino);
      expect(fs.statSync(blob).nlink).toBe(1);
      expect((await complete(restarted, again)).status).toBe(200);
      expect(fs.readFileSync(blob).equals(bytes)).toBe(true);
    } finally {
      await restarted.close();
    }
  });
});

describe('files in DATA_DIR', () => {
  it('are owner-only: database, -wal, -shm, lock, secrets key, blobs, staged uploads; directories 0700', async () => {
    const dir = tempDir();
    const s = await startOn(dir);
    try {
      const pending = await stagedUpload(s, 'pending.bin', Buffer.alloc(10, 1));
      expect(pending.id).toBeTruthy();
      const done = await stagedUpload(s, 'done.txt', Buffer.from('hello'));
      expect((await complete(s, done)).status).toBe(200);
      const seen: string[] = [];
      const walk = (p: string) => {
        for (const entry of fs.readdirSync(p, { withFileTypes: true })) {
          const full = path.join(p, entry.name);
          const mode = fs.statSync(full).mode & 0o777;
          seen.push(path.relative(dir, full));
          if (entry.isDirectory()) {
            expect(mode, full).toBe(0o700);
            walk(full);
          } else expect(mode.toString(8), full).toBe('600');
        }
      };
      walk(dir);
      for (const expected of ['workspace.sqlite', 'workspace.sqlite-wal', 'workspace.sqlite-shm', LOCK_FILE, 'secrets.key', path.join('files', 'uploads', pending.id)]) {
        expect(seen).toContain(expected);
      }
      expect(seen.some((p) => p.startsWith(path.join('files', 'blobs')) && /[0-9a-f]{64}$/.test(p))).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('an existing database created world-readable is tightened on open', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'workspace.sqlite');
    const store = await openSqliteStore(file);
    await store.close();
    fs.chmodSync(file, 0o644);
    const again = await openSqliteStore(file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    await again.close();
  });
});

describe('a missing handler', () => {
  it('stops the start at once, naming the operation', async () => {
    expect(missingHandlers(handlers)).toEqual([]);
    const { getMeta: _dropped, ...incomplete } = handlers;
    expect(missingHandlers(incomplete)).toEqual(['getMeta']);
    const dir = tempDir();
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, LOG_LEVEL: 'silent' });
    const services = await createServices(config, createLogger('silent'));
    try {
      const err = await startServer(services, { handlers: incomplete as typeof handlers }).catch((e) => e);
      expect(err).toBeInstanceOf(MissingHandlerError);
      expect(err.message).toContain('getMeta');
    } finally {
      await services.store.close();
      services.dataDirLock?.release();
    }
  });
});

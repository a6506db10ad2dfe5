// One server process per data directory. The SQLite store, the run queue's recovery and the blob store's
// recovery all assume that no other server works on the same DATA_DIR, so a server takes an exclusive lock
// on it before it touches the database: `$DATA_DIR/server.lock`, a small JSON file naming the holder.
//
// The lock file appears atomically with its content (written to a private temporary name, then hard-linked
// to the lock name, which fails if the name exists), so a reader never sees a half-written holder. A lock
// whose holder was a process on this host that no longer runs is stale and is taken over; breaking it goes
// through a second exclusive file, so two starters cannot both break it and both believe they hold it.
// Locks held by another host (a shared volume) are never broken automatically: the operator removes them.
//
// The admin command does not take this lock: it runs short transactions next to a running server and never
// runs recovery. (The Postgres scale-out will replace this with leases.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';

export const LOCK_FILE = 'server.lock';

export interface LockHolder {
  pid: number;
  host: string;
  port: number | null;
  startedAt: string;
  /** Distinguishes two holders that happen to get the same pid (containers restart as pid 1). */
  token: string;
}

/** Another live process holds the data directory. */
export class DataDirLockedError extends Error {
  readonly holder: LockHolder | null;
  constructor(dataDir: string, holder: LockHolder | null) {
    super(
      holder
        ? `${dataDir} is in use by another server (pid ${holder.pid} on ${holder.host}, port ${holder.port ?? 'unknown'}, started ${holder.startedAt}); stop it first or use another DATA_DIR (if it no longer runs, delete ${path.join(dataDir, LOCK_FILE)})`
        : `${dataDir} is in use by another server (its lock file ${path.join(dataDir, LOCK_FILE)} is unreadable); stop it first, or remove the file if no server runs`,
    );
    this.name = 'DataDirLockedError';
    this.holder = holder;
  }
}

export interface DataDirLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** Records the port actually bound (the lock is taken before the port is known when PORT=0). */
  setPort(port: number): void;
  /** Removes the lock if it is still ours. Safe to call twice. */
  release(): void;
}

/** Data directories locked by this process (a second server in the same process must be refused too). */
const heldHere = new Map<string, () => void>();
let exitHookInstalled = false;

/** A process that exits without closing (an uncaught error) still leaves its directories free. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const release of [...heldHere.values()]) release();
  });
}

function readHolder(file: string): LockHolder | null | 'missing' {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw err;
  }
  try {
    const h = JSON.parse(text) as LockHolder;
    return typeof h.pid === 'number' && typeof h.host === 'string' ? h : null;
  } catch {
    return null;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when the holder is known to be gone: a process of this host that no longer runs (or is us, unknowingly). */
function isStale(dataDir: string, holder: LockHolder): boolean {
  if (holder.host !== os.hostname()) return false;
  if (holder.pid === process.pid) return !heldHere.has(dataDir);
  return !processAlive(holder.pid);
}

/** Writes `content` to `file` only if `file` does not exist; the content is complete the moment it appears. */
function createExclusive(file: string, content: string): boolean {
  const temp = `${file}.${process.pid}.${randomUUID()}.tmp`;
  fs.writeFileSync(temp, content, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

/** Removes a stale lock, unless someone else replaced it meanwhile. */
function breakStale(dataDir: string, file: string, seen: LockHolder): void {
  const breaker = `${file}.break`;
  // A breaker left by a process that died mid-break is old; anything younger belongs to a live starter.
  try {
    if (Date.now() - fs.statSync(breaker).mtimeMs > 10_000) fs.rmSync(breaker, { force: true });
  } catch {
    /* none */
  }
  if (!createExclusive(breaker, String(process.pid))) return; // someone else is breaking it; retry reading
  try {
    const now = readHolder(file);
    if (now !== 'missing' && now !== null && now.token === seen.token && isStale(dataDir, now)) fs.rmSync(file, { force: true });
  } finally {
    fs.rmSync(breaker, { force: true });
  }
}

/** Takes the lock on `dataDir` (created owner-only if missing) or throws DataDirLockedError naming the holder. */
export function lockDataDir(dataDir: string, options: { port?: number | null } = {}): DataDirLock {
  const dir = path.resolve(dataDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, LOCK_FILE);
  const holder: LockHolder = {
    pid: process.pid,
    host: os.hostname(),
    port: options.port ?? null,
    startedAt: new Date().toISOString(),
    token: randomUUID(),
  };
  for (let attempt = 0; ; attempt++) {
    if (!heldHere.has(dir) && createExclusive(file, JSON.stringify(holder) + '\n')) break;
    const current = readHolder(file);
    if (current === 'missing') {
      if (attempt >= 5) throw new DataDirLockedError(dir, null);
      continue;
    }
    if (current === null || !isStale(dir, current) || attempt >= 5) throw new DataDirLockedError(dir, current === null ? null : current);
    breakStale(dir, file, current);
  }
  let released = false;
  const lock: DataDirLock = {
    file,
    holder,
    setPort(port) {
      if (released) return;
      holder.port = port;
      const temp = `${file}.${process.pid}.${randomUUID()}.tmp`;
      fs.writeFileSync(temp, JSON.stringify(holder) + '\n', { mode: 0o600, flag: 'wx' });
      fs.renameSync(temp, file);
    },
    release() {
      if (released) return;
      released = true;
      heldHere.delete(dir);
      const current = readHolder(file);
      if (current !== 'missing' && current !== null && current.token === holder.token) fs.rmSync(file, { force: true });
    },
  };
  heldHere.set(dir, () => lock.release());
  installExitHook();
  return lock;
}

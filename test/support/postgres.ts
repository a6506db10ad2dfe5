// A throwaway Postgres cluster for the tests: started by the first test that asks for it (so a run that needs no
// Postgres pays nothing), shared by every test process of the run, stopped by PID when the run ends (the global
// teardown calls stopTestPostgres). Each caller gets a database of its own, cloned from a migrated template, so a
// fresh database costs one CREATE DATABASE instead of a migration run.
//
// Debian's postgresql-15 (binaries in /usr/lib/postgresql/15/bin; .ci/run installs it). initdb and postgres
// refuse to run as root: under root they run as the `postgres` system user (or nobody), which owns the cluster.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/index.ts';
import { waitUntil } from './wait.ts';

export const POSTGRES_BIN = process.env.POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';
/** Set by the global setup: the directory this run's cluster lives in (one per `vitest` run). */
const RUN_DIR_ENV = 'OWA_TEST_POSTGRES_DIR';
const TEMPLATE = 'owa_template';

interface Cluster {
  pid: number;
  port: number;
  /** The server's URL without a database name. */
  base: string;
}

export function postgresAvailable(): boolean {
  return fs.existsSync(path.join(POSTGRES_BIN, 'initdb'));
}

/** Whether startTestServer runs on Postgres (TEST_DATABASE=postgres). */
export function testDatabaseIsPostgres(): boolean {
  return process.env.TEST_DATABASE === 'postgres';
}

/** Creates the run directory the cluster will live in (the global setup, once per run). */
export function prepareTestPostgres(): string {
  const dir = process.env[RUN_DIR_ENV] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'owa-pg-'));
  process.env[RUN_DIR_ENV] = dir;
  return dir;
}

/** Stops this run's cluster (if one was started) by its PID and removes its files. */
export async function stopTestPostgres(): Promise<void> {
  const dir = process.env[RUN_DIR_ENV];
  if (!dir) return;
  const ready = readReady(dir);
  if (ready) {
    try {
      process.kill(ready.pid, 'SIGINT'); // fast shutdown
      await waitUntil('the test Postgres to stop', () => !alive(ready.pid), { timeoutMs: 30_000 });
    } catch {
      /* already gone */
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function readReady(dir: string): Cluster | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'ready.json'), 'utf8')) as Cluster;
  } catch {
    return null;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** The uid/gid the cluster runs as: ours, or a system user's when we are root (Postgres refuses root). */
function owner(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const user of ['postgres', 'nobody']) {
    try {
      const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
      return { uid, gid };
    } catch {
      /* no such user */
    }
  }
  throw new Error('Running as root and there is neither a postgres nor a nobody user to run the test Postgres as');
}

async function startCluster(dir: string): Promise<Cluster> {
  const data = path.join(dir, 'data');
  const as = owner();
  if (as) {
    fs.chmodSync(dir, 0o755);
    fs.chownSync(dir, as.uid, as.gid);
  }
  const spawnOptions = { ...(as ?? {}), cwd: dir };
  execFileSync(path.join(POSTGRES_BIN, 'initdb'), ['--no-sync', '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8', '-D', data], { ...spawnOptions, stdio: 'ignore' });
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'postgres.log'), 'a');
  if (as) fs.fchownSync(log, as.uid, as.gid);
  const child = spawn(
    path.join(POSTGRES_BIN, 'postgres'),
    ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300'],
    { ...spawnOptions, stdio: ['ignore', log, log], detached: true },
  );
  child.unref();
  const base = `postgres://postgres@127.0.0.1:${port}`;
  await waitUntil(
    'the test Postgres to accept connections',
    async () => {
      const c = new pg.Client({ connectionString: `${base}/postgres` });
      try {
        await c.connect();
        return true;
      } catch {
        return false;
      } finally {
        await c.end().catch(() => undefined);
      }
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  // The template every test database is cloned from: the whole schema, migrated once.
  await admin(base, `CREATE DATABASE ${TEMPLATE}`);
  const store = await openPostgresStore(`${base}/${TEMPLATE}`);
  await store.close();
  return { pid: child.pid!, port, base };
}

async function admin(base: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: `${base}/postgres` });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

let cluster: Promise<Cluster> | null = null;

/** This run's cluster, started by whichever test process asks first (the others wait for it). */
function testCluster(): Promise<Cluster> {
  return (cluster ??= (async () => {
    if (!postgresAvailable()) throw new Error(`No Postgres at ${POSTGRES_BIN} (apt-get install postgresql-15, or set POSTGRES_BIN)`);
    const dir = process.env[RUN_DIR_ENV] ?? prepareTestPostgres();
    const ready = readReady(dir);
    if (ready) return ready;
    // The first process to create the claim file starts the cluster.
    let mine = false;
    try {
      fs.writeFileSync(path.join(dir, 'starting'), String(process.pid), { flag: 'wx' });
      mine = true;
    } catch {
      /* another process starts it */
    }
    if (mine) {
      const started = await startCluster(dir);
      fs.writeFileSync(path.join(dir, 'ready.json.tmp'), JSON.stringify(started));
      fs.renameSync(path.join(dir, 'ready.json.tmp'), path.join(dir, 'ready.json'));
      return started;
    }
    await waitUntil('the test Postgres to be started by another test process', () => readReady(dir) !== null, { timeoutMs: 120_000, intervalMs: 100 });
    return readReady(dir)!;
  })());
}

/** A fresh, migrated database of its own (`empty`: not migrated), its URL, and how to drop it. */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const c = await testCluster();
  const name = `owa_test_${randomBytes(6).toString('hex')}`;
  await admin(c.base, `CREATE DATABASE ${name} TEMPLATE ${options.empty ? 'template0' : TEMPLATE}`);
  return {
    url: `${c.base}/${name}`,
    drop: () => admin(c.base, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

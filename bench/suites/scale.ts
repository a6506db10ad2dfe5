// Issue 20: how fast a queue of async runs drains with 1, 2 and 3 server processes on one Postgres, beside one
// server on SQLite measured in the same run. Each configuration gets a fresh database holding one deployed
// one-block workflow; RUNS runs are queued in one transaction (copies of a template run, as the API queues them)
// and the clock runs until the last one completed. Each server's CPU time over the drain is printed: on a 2-core
// machine (shared with the database) more processes cannot add throughput, so read the CPU split to see whether
// the servers or the database are the bottleneck.
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { apiCall, figure, fmt, root, startProcess, tempDir, type Proc } from '../lib.ts';
import { openPostgresStore, openSqliteStore, type Store } from '../../src/store/index.ts';
import { createTestDatabase, prepareTestPostgres, stopTestPostgres, postgresAvailable } from '../../test/support/postgres.ts';
import { queueCopiesOfRun } from '../../test/support/queued-runs.ts';
import { bulkLoad } from './bulk-load.ts';

const KEY = 'sk-owa-bench-scale-key-000000000000';
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');
const RUNS = 2000;

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

interface Drain {
  runsPerSecond: number;
  cpu: number[];
}

async function drain(label: string, servers: Proc[], open: () => Promise<Store>, completed: () => Promise<number>): Promise<Drain> {
  const first = servers[0]!;
  // What the servers write meanwhile (warnings and errors), for a drain that fails.
  const output = new Map<Proc, string>();
  for (const s of servers) for (const stream of [s.child.stdout!, s.child.stderr!]) stream.on('data', (c: Buffer) => output.set(s, ((output.get(s) ?? '') + c).slice(-4000)));
  const workspaceId = (await apiCall(first, KEY, 'GET', '/api/v2/workspaces')).data[0].id;
  const wf = (await apiCall(first, KEY, 'POST', '/api/v2/workflows', { workspaceId, name: 'Drained' })).data;
  const block = { id: 'b0000000-0000-4000-8000-000000000001', type: 'start_trigger', name: 'Start', position: { x: 0, y: 0 }, subBlocks: {}, outputs: {}, enabled: true };
  await apiCall(first, KEY, 'PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: { [block.id]: block }, edges: [] });
  await apiCall(first, KEY, 'POST', `/api/v2/workflows/${wf.id}/deploy`, {});
  const template = (await apiCall(first, KEY, 'POST', `/api/v2/workflows/${wf.id}/execute`, { async: true })).data;
  while ((await completed()) < 1) await new Promise((r) => setTimeout(r, 20));
  const store = await open();
  try {
    await queueCopiesOfRun(store, wf.id, template.runId, RUNS, 'bench');
  } finally {
    await store.close();
  }
  // From the commit of the queued runs (none can start before it) to the last one completed.
  const cpu0 = servers.map((s) => cpuSeconds(s.child.pid!));
  const t0 = performance.now();
  const deadline = Date.now() + 180_000;
  for (;;) {
    const done = await completed();
    if (done >= RUNS + 1) break;
    const dead = servers.find((s) => s.child.exitCode !== null || s.child.signalCode !== null);
    if (dead) throw new Error(`${label}: a server exited (${dead.child.exitCode ?? dead.child.signalCode}) during the drain:\n${output.get(dead) ?? ''}`);
    if (Date.now() > deadline) throw new Error(`${label}: ${done - 1} of ${RUNS} runs completed after 180 s:\n${[...output.values()].join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = servers.map((s, i) => cpuSeconds(s.child.pid!) - cpu0[i]!);
  const rate = RUNS / seconds;
  console.log(`  ${label.padEnd(26)} ${fmt(rate, 0).padStart(6)} runs/s   (${RUNS} runs in ${fmt(seconds, 2)} s; server CPU ${cpu.map((c) => `${fmt(c, 2)} s`).join(', ')} = ${fmt((cpu.reduce((a, b) => a + b, 0) / seconds) * 100, 0)} % of one core)`);
  return { runsPerSecond: rate, cpu };
}

export async function scale(options: { seconds: number; rounds: number }): Promise<void> {
  console.log(`\nscale: draining ${RUNS} queued async runs of a one-block workflow (RUN_WORKERS=8 per server)`);
  const serverEnv = { BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', RUN_WORKERS: '8', RUN_QUEUE_POLL_MS: '200', SECRETS_KEY };
  const start = path.join(root, 'bin', 'start.js');

  // SQLite, one server (the baseline).
  const sqliteDir = tempDir('owa-bench-scale-');
  const sqliteServer = await startProcess(start, { ...serverEnv, DATA_DIR: sqliteDir });
  let sqlite: Drain;
  const file = path.join(sqliteDir, 'workspace.sqlite');
  const reader = new DatabaseSync(file, { readOnly: true });
  try {
    sqlite = await drain('SQLite, 1 server', [sqliteServer], () => openSqliteStore(file), async () => Number((reader.prepare("SELECT COUNT(*) AS n FROM workflow_runs WHERE status = 'completed'").get() as { n: number }).n));
  } finally {
    reader.close();
    await sqliteServer.stop();
  }
  figure('scale', 'drain, SQLite, 1 server', sqlite.runsPerSecond, 'runs/s', 'higher');

  if (!postgresAvailable()) {
    console.log('  (no Postgres at /usr/lib/postgresql/15/bin or POSTGRES_BIN: the Postgres figures are skipped)');
    await bulkLoad(options.rounds, false);
    return;
  }
  process.env.OWA_TEST_POSTGRES_DIR ??= prepareTestPostgres();
  try {
    for (const n of [1, 2, 3]) {
      const db = await createTestDatabase();
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const blobDir = tempDir('owa-bench-blobs-');
      const servers: Proc[] = [];
      try {
        for (let i = 0; i < n; i++) servers.push(await startProcess(start, { ...serverEnv, DATA_DIR: tempDir('owa-bench-scale-'), DATABASE_URL: db.url, BLOB_DIR: blobDir }));
        const result = await drain(`Postgres, ${n} server${n > 1 ? 's' : ''}`, servers, () => openPostgresStore(db.url), async () => Number((await client.query("SELECT COUNT(*) AS n FROM workflow_runs WHERE status = 'completed'")).rows[0].n));
        figure('scale', `drain, Postgres, ${n} server${n > 1 ? 's' : ''}`, result.runsPerSecond, 'runs/s', 'higher');
        if (n === 1) figure('scale', 'drain, Postgres 1 server / SQLite', result.runsPerSecond / sqlite.runsPerSecond, 'ratio', 'higher');
      } finally {
        for (const s of servers) await s.stop();
        await client.end();
        await db.drop();
      }
    }
    await bulkLoad(options.rounds, true);
  } finally {
    await stopTestPostgres();
  }
}

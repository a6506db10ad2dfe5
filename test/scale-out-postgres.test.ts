// Several server processes (`npm start`) on one Postgres (issue 20): a plan's rate limit holds across them, and a
// run queued through one server is executed at once by another whose workers were idle, woken by NOTIFY rather
// than by its next poll.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exited, spawnServer, type SpawnedServer } from './support/children.ts';
import { apiBlock, apiCaller, link } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { createTestDatabase, postgresAvailable } from './support/postgres.ts';
import { waitUntil } from './support/wait.ts';

const KEY = 'sk-owa-scale-out-test-key-0123456789';
const SECRETS_KEY = randomBytes(32).toString('base64');
const dirs: string[] = [];
const drops: Array<() => Promise<void>> = [];
let gate: GateServer;
beforeAll(async () => {
  gate = await new GateServer().start();
});
afterAll(async () => {
  await gate?.stop();
  for (const drop of drops) await drop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function database(): Promise<string> {
  const db = await createTestDatabase();
  drops.push(db.drop);
  return db.url;
}

function start(url: string, extra: Record<string, string> = {}): Promise<SpawnedServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-scale-'));
  dirs.push(dataDir);
  return spawnServer({
    PATH: process.env.PATH ?? '', DATA_DIR: dataDir, DATABASE_URL: url, SECRETS_KEY, BOOTSTRAP_API_KEY: KEY,
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', NODE_ENV: 'test', EGRESS_ALLOW_CIDRS: '127.0.0.1/32', ...extra,
  });
}

async function stop(...servers: SpawnedServer[]): Promise<void> {
  for (const s of servers) s.child.kill('SIGTERM');
  await Promise.all(servers.map((s) => exited(s.child)));
}

describe.skipIf(!postgresAvailable())('several servers on one Postgres', () => {
  it('two servers hammered together allow the plan limit once, not once each (within 5 %)', async () => {
    const url = await database();
    const CAPACITY = 300;
    const limits = Object.fromEntries(['FREE', 'PRO', 'TEAM', 'MAX', 'ENTERPRISE'].map((p) => [`RATE_LIMIT_${p}_API`, String(CAPACITY)]));
    const a = await start(url, limits);
    const b = await start(url, limits);
    try {
      const statuses: number[] = [];
      const hammer = async (s: SpawnedServer, requests: number) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: 12 }, async () => {
            while (next++ < requests) {
              const r = await fetch(`${s.url}/api/v2/workspaces`, { headers: { 'X-API-Key': KEY } });
              await r.arrayBuffer();
              statuses.push(r.status);
            }
          }),
        );
      };
      const t0 = Date.now();
      await Promise.all([hammer(a, 450), hammer(b, 450)]);
      const elapsed = Date.now() - t0;
      const allowed = statuses.filter((s) => s === 200).length;
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      // The bucket starts full and refills evenly over a minute while the hammering lasts.
      const theoretical = CAPACITY + (elapsed * CAPACITY) / 60_000;
      expect(allowed, `allowed ${allowed} of ${statuses.length} in ${elapsed} ms; the shared bucket allows ${theoretical.toFixed(1)}`).toBeLessThanOrEqual(Math.ceil(theoretical * 1.05));
      expect(allowed).toBeGreaterThanOrEqual(Math.floor(theoretical * 0.95));
    } finally {
      await stop(a, b);
    }
  });

  it('a run queued through a server whose one worker is busy is executed by another at once, woken by NOTIFY, not by its poll', async () => {
    const url = await database();
    // Polls an hour apart: only a wake-up can make a server look at the queue in time.
    const slow = { RUN_QUEUE_POLL_MS: '600000', RUN_WORKERS: '1' };
    const a = await start(url, slow);
    const callA = apiCaller(a.url, KEY);
    const workspaceId = (await callA('GET', '/api/v2/workspaces'))[0].id as string;
    const deploy = async (name: string, blocks: ReturnType<typeof apiBlock>[]) => {
      const wf = await callA('POST', '/api/v2/workflows', { workspaceId, name });
      const edges = blocks.slice(1).map((b, i) => link(blocks[i]!, b));
      await callA('PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: Object.fromEntries(blocks.map((x) => [x.id, x])), edges });
      await callA('POST', `/api/v2/workflows/${wf.id}/deploy`, {});
      return wf.id as string;
    };
    const held = await deploy('Held', [apiBlock('start_trigger', 'Start'), gate.block('Wait', 'busy')]);
    const quick = await deploy('Quick', [apiBlock('start_trigger', 'Start')]);
    // A's only worker takes the held run (B is not running yet) and stays busy with it.
    const heldRun = await callA('POST', `/api/v2/workflows/${held}/execute`, { async: true });
    await waitUntil('server A executing the held run', () => gate.holding('busy'));
    const b = await start(url, slow);
    try {
      const queuedAt = Date.now();
      const run = await callA('POST', `/api/v2/workflows/${quick}/execute`, { async: true });
      let status = '';
      await waitUntil('the quick run completed by server B', async () => {
        status = (await callA('GET', `/api/v2/workflows/${quick}/runs/${run.runId}`)).status;
        return status === 'completed';
      }, { intervalMs: 20 });
      const took = Date.now() - queuedAt;
      // Far below the hour-long poll: B was woken. (A's worker is still held at the gate.)
      expect(took).toBeLessThan(10_000);
      expect(gate.holding('busy')).toBe(true);
      expect((await callA('GET', `/api/v2/workflows/${held}/runs/${heldRun.runId}`)).status).toBe('running');
      gate.release('busy');
    } finally {
      gate.release('busy');
      await stop(a, b);
    }
  });
});

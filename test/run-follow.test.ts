// Following a run as Server-Sent Events (GET …/runs/{runId}/events, what the console's run page reads) wherever
// it executes: on one server, a queued run's block events and its end; on two servers sharing one Postgres, a
// run executing on A followed through B, whose stream hears A's progress through the database's notifications.
// Both servers re-read a followed run only once an hour (RUN_FOLLOW_POLL_MS), so everything the follower sees
// came through the progress notes: block events have no other way to reach B at all.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exited, spawnServer, type SpawnedServer } from './support/children.ts';
import { apiBlock, apiCaller, link } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { createTestDatabase, postgresAvailable } from './support/postgres.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { waitUntil } from './support/wait.ts';

const NO_POLL = { RUN_FOLLOW_POLL_MS: '3600000' };

/** The frames of an SSE response as they arrive; `next(match)` waits for the first unread frame matching. */
function frames(res: Response) {
  const seen: any[] = [];
  let done = false;
  const reading = (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer.slice(0, cut).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
        buffer = buffer.slice(cut + 2);
        if (data) seen.push(JSON.parse(data));
      }
    }
    done = true;
  })();
  return {
    seen,
    ended: () => reading.then(() => seen),
    next: (what: string, match: (f: any) => boolean) => waitUntil(what, () => seen.find(match) ?? (done ? Promise.reject(new Error(`the stream ended: ${JSON.stringify(seen)}`)) : undefined)),
  };
}

function follow(url: string, key: string, workflowId: string, runId: string) {
  return fetch(`${url}/api/v2/workflows/${workflowId}/runs/${runId}/events`, { headers: { 'X-API-Key': key, accept: 'text/event-stream' } });
}

/** Start → Prepare → Held (at the gate `gateName`) → After, deployed in the key's first workspace. */
async function deployFourBlocks(call: ReturnType<typeof apiCaller>, gate: GateServer, gateName: string) {
  const workspaceId = (await call('GET', '/api/v2/workspaces'))[0].id as string;
  const wf = await call('POST', '/api/v2/workflows', { workspaceId, name: `Followed ${gateName}` });
  const blocks = [apiBlock('start_trigger', 'Start'), apiBlock('function', 'Prepare', { code: 'return 1' }), gate.block('Held', gateName), apiBlock('function', 'After', { code: 'return 2' })];
  const edges = blocks.slice(1).map((b, i) => link(blocks[i]!, b));
  await call('PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: Object.fromEntries(blocks.map((b) => [b.id, b])), edges });
  await call('POST', `/api/v2/workflows/${wf.id}/deploy`, {});
  return wf.id as string;
}

let gate: GateServer;
beforeAll(async () => {
  gate = await new GateServer().start();
});
afterAll(async () => {
  await gate?.stop();
});

describe('following a run on one server', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32', ...NO_POLL });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('streams a queued run\'s status, its block events as they happen and its end', async () => {
    const call = apiCaller(s.url, s.key);
    const workflowId = await deployFourBlocks(call, gate, 'one-server');
    const run = await call('POST', `/api/v2/workflows/${workflowId}/execute`, { async: true, input: {} });
    const res = await follow(s.url, s.key, workflowId, run.runId);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const f = frames(res);
    const first = await f.next('the first status frame', (x) => x.event === 'status');
    expect(first.data.runId).toBe(run.runId);
    await waitUntil('the run held at the gate', () => gate.holding('one-server'));
    // A follower coming while a block runs is shown that block first.
    const late = frames(await follow(s.url, s.key, workflowId, run.runId));
    await late.next('the running block replayed', (x) => x.event === 'block_started' && x.blockName === 'Held');
    expect(late.seen[0].event).toBe('status');
    gate.release('one-server');
    const done = await f.next('Held finished', (x) => x.event === 'block_completed' && x.blockName === 'Held');
    expect(done.output).toBeUndefined(); // outputs stay out of progress
    await f.next('After finished', (x) => x.event === 'block_completed' && x.blockName === 'After');
    const final = await f.next('the final frame', (x) => x.event === 'final');
    expect(final.data.status).toBe('completed');
    const all = await f.ended();
    expect(all.at(-1)).toBe('[DONE]');
    expect((await late.ended()).at(-1)).toBe('[DONE]');
  });

  it('answers a run that has ended with its final frame at once, and an unknown run with a 404', async () => {
    const call = apiCaller(s.url, s.key);
    const workspaceId = (await call('GET', '/api/v2/workspaces'))[0].id as string;
    const wf = await call('POST', '/api/v2/workflows', { workspaceId, name: 'Quick' });
    const start = apiBlock('start_trigger', 'Start');
    await call('PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: { [start.id]: start }, edges: [] });
    await call('POST', `/api/v2/workflows/${wf.id}/deploy`, {});
    const run = await call('POST', `/api/v2/workflows/${wf.id}/execute`, { input: {} });
    const all = await frames(await follow(s.url, s.key, wf.id, run.runId)).ended();
    expect(all.map((x) => x.event ?? x)).toEqual(['status', 'final', '[DONE]']);
    expect(all[1].data.status).toBe('completed');
    const missing = await follow(s.url, s.key, wf.id, 'no-such-run');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('NOT_FOUND');
  });
});

describe.skipIf(!postgresAvailable())('following a run executing on another server sharing one Postgres', () => {
  const KEY = 'sk-owa-run-follow-test-key-0123456789';
  const SECRETS_KEY = randomBytes(32).toString('base64');
  const dirs: string[] = [];
  let drop: (() => Promise<void>) | null = null;
  afterAll(async () => {
    await drop?.();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  const start = (url: string) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-follow-'));
    dirs.push(dataDir);
    return spawnServer({
      PATH: process.env.PATH ?? '', DATA_DIR: dataDir, DATABASE_URL: url, SECRETS_KEY, BOOTSTRAP_API_KEY: KEY, PORT: '0', HOST: '127.0.0.1',
      LOG_LEVEL: 'warn', NODE_ENV: 'test', EGRESS_ALLOW_CIDRS: '127.0.0.1/32', RUN_QUEUE_POLL_MS: '600000', RUN_WORKERS: '1', ...NO_POLL,
    });
  };

  it('server B\'s stream shows the block events and the end of a run server A executes, through the notifications, not a poll', { timeout: 120_000 }, async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    const servers: SpawnedServer[] = [];
    try {
      const a = await start(db.url);
      servers.push(a);
      const callA = apiCaller(a.url, KEY);
      const workflowId = await deployFourBlocks(callA, gate, 'two-servers');
      // A (alone so far) takes the run and holds it at the gate; B starts only then, so B executes nothing.
      const run = await callA('POST', `/api/v2/workflows/${workflowId}/execute`, { async: true, input: {} });
      await waitUntil('server A executing the run', () => gate.holding('two-servers'));
      const b = await start(db.url);
      servers.push(b);
      const f = frames(await follow(b.url, KEY, workflowId, run.runId));
      const first = await f.next('B\'s first status frame', (x) => x.event === 'status');
      expect(first.data.status).toBe('running');
      gate.release('two-servers');
      await f.next('Held finished, heard on B', (x) => x.event === 'block_completed' && x.blockName === 'Held');
      await f.next('After started, heard on B', (x) => x.event === 'block_started' && x.blockName === 'After');
      await f.next('After finished, heard on B', (x) => x.event === 'block_completed' && x.blockName === 'After');
      const final = await f.next('the final frame on B', (x) => x.event === 'final');
      expect(final.data.status).toBe('completed');
      expect((await f.ended()).at(-1)).toBe('[DONE]');
      // The run was executed by A: B's only worker never had it (its lease owner is A's process).
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const owner = (await client.query('SELECT lease_owner FROM workflow_runs WHERE workflow_id = $1', [workflowId])).rows[0]?.lease_owner as string | null;
        if (owner) expect(owner).toContain(`:${a.child.pid}:`);
      } finally {
        await client.end();
      }
    } finally {
      gate.release('two-servers');
      for (const s of servers) s.child.kill('SIGTERM');
      await Promise.all(servers.map((s) => exited(s.child)));
    }
  });
});

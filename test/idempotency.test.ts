// Idempotency-Key over HTTP: retry storms on execute (one run), replays of sync, async, streamed and create
// answers, key reuse with another body or X-Run-Id (422), requests in flight (409), keys per caller, errors
// that release the key, expiry, and the X-Run-Id rules kept.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer, callWithHeaders } from './support/server.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { waitUntil } from './support/wait.ts';
import { createApiKey } from '../src/identity/admin.ts';

const FAST_LIMITS = { RATE_LIMIT_FREE_SYNC: '50000', RATE_LIMIT_FREE_ASYNC: '60000', RATE_LIMIT_FREE_API: '100000' };

let s: TestServer;
let echo: BuiltWorkflow;
let slow: BuiltWorkflow;
let gate: GateServer;
let keyCounter = 0;
const freshKey = () => `key-${process.pid}-${Date.now()}-${keyCounter++}`;

function call(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}, key?: string, server: TestServer = s) {
  return callWithHeaders(server, method, pathname, body, headers, key);
}

const execute = (id: string, body: unknown, headers: Record<string, string> = {}, key?: string, server: TestServer = s) =>
  call('POST', `/api/v2/workflows/${id}/execute`, body, headers, key, server);
const runIds = async (wf: string, server: TestServer = s) => (await call('GET', `/api/v2/workflows/${wf}/runs?limit=100`, undefined, {}, undefined, server)).body.data.map((r: any) => r.runId) as string[];

async function echoWorkflow(server: TestServer, name: string, options: { deploy?: boolean } = {}): Promise<BuiltWorkflow> {
  const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] });
  const out = apiBlock('response', 'Out', { data: '{"v": <start.n>}' });
  return buildWorkflow(server, name, [start, out], [link(start, out)], options);
}

beforeAll(async () => {
  s = await startTestServer({ ...FAST_LIMITS, EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  echo = await echoWorkflow(s, 'Echo');
  const start = apiBlock('start_trigger', 'Start', {});
  // Runs until the test opens its gate: a repeat is sent while the first is certainly still running.
  gate = await new GateServer().start();
  const held = gate.block('Held', 'slow');
  slow = await buildWorkflow(s, 'Slow', [start, held], [link(start, held)]);
});
afterAll(async () => {
  await s?.stop();
  await gate?.stop();
});

describe('Idempotency-Key on execute', () => {
  it('a retry storm of 20 parallel async executes with one key makes exactly one run', async () => {
    const wf = await echoWorkflow(s, 'Storm');
    const key = freshKey();
    const answers = await Promise.all(Array.from({ length: 20 }, () => execute(wf.id, { async: true, input: { n: 1 } }, { 'Idempotency-Key': key })));
    const accepted = answers.filter((a) => a.status === 202);
    const busy = answers.filter((a) => a.status === 409);
    expect(accepted.length + busy.length).toBe(20);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    const ids = new Set(accepted.map((a) => a.body.data.runId));
    expect(ids.size).toBe(1);
    // Exactly one of them did the work; the other 202s are replays of it.
    expect(accepted.filter((a) => a.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    for (const b of busy) {
      expect(b.body.error.details.code).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
      expect(b.headers.get('retry-after')).toBe('1');
    }
    expect(await runIds(wf.id)).toEqual([...ids]);
    // Once settled, every repeat replays the same receipt.
    const again = await execute(wf.id, { async: true, input: { n: 1 } }, { 'Idempotency-Key': key });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(accepted.find((a) => a.headers.get('idempotent-replayed') !== 'true')!.body);
    expect(await runIds(wf.id)).toHaveLength(1);
  });

  it('a sync repeat replays status, body and headers without running again', async () => {
    const key = freshKey();
    const before = (await runIds(echo.id)).length;
    const first = await execute(echo.id, { input: { n: 21 } }, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    expect(first.body.data.output).toEqual({ v: 21 });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Key order in the body does not matter: the fingerprint hashes a canonical form.
    const replay = await s.request(`/api/v2/workflows/${echo.id}/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
      body: '{ "input": { "n": 21 } }',
    });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(await replay.json()).toEqual(first.body);
    expect((await runIds(echo.id)).length).toBe(before + 1);
  });

  it('the same key with another body or X-Run-Id is a 422 naming the conflict', async () => {
    const key = freshKey();
    expect((await execute(echo.id, { input: { n: 1 } }, { 'Idempotency-Key': key })).status).toBe(200);
    const otherBody = await execute(echo.id, { input: { n: 2 } }, { 'Idempotency-Key': key });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(otherBody.body.error.details.conflicts).toEqual(['body']);
    expect(otherBody.body.error.message).toMatch(/body differs/);
    const otherRunId = await execute(echo.id, { input: { n: 1 } }, { 'Idempotency-Key': key, 'X-Run-Id': `r-${key}` });
    expect(otherRunId.status).toBe(422);
    expect(otherRunId.body.error.details.conflicts).toEqual(['header x-run-id']);
    // Nothing was run for either refusal.
    expect((await runIds(echo.id)).includes(`r-${key}`)).toBe(false);
  });

  it('a repeat while the first is still running is a 409 in progress, then replays the result', async () => {
    const key = freshKey();
    const first = execute(slow.id, {}, { 'Idempotency-Key': key });
    await waitUntil('the first run to reach the gate', () => gate.holding('slow'));
    const during = await execute(slow.id, {}, { 'Idempotency-Key': key });
    expect(during.status).toBe(409);
    expect(during.body.error.details.code).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(during.headers.get('retry-after')).toBe('1');
    gate.release('slow');
    const done = await first;
    expect(done.status).toBe(200);
    const after = await execute(slow.id, {}, { 'Idempotency-Key': key });
    expect(after.status).toBe(200);
    expect(after.body).toEqual(done.body);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
  });

  it('a streamed execute is answered on repeat by the finished run as one JSON document', async () => {
    const key = freshKey();
    const before = (await runIds(echo.id)).length;
    const streamed = await execute(echo.id, { stream: true, input: { n: 5 } }, { 'Idempotency-Key': key, Accept: 'application/x-ndjson' });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/ndjson/);
    const runId = streamed.headers.get('x-run-id')!;
    const final = streamed.text.trim().split('\n').map((l) => JSON.parse(l)).find((f) => f.type === 'final');
    const repeat = await execute(echo.id, { stream: true, input: { n: 5 } }, { 'Idempotency-Key': key, Accept: 'application/x-ndjson' });
    expect(repeat.status).toBe(200);
    expect(repeat.headers.get('content-type')).toMatch(/application\/json/);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.headers.get('x-run-id')).toBe(runId);
    expect(repeat.body.data.runId).toBe(runId);
    expect(repeat.body.data.status).toBe('completed');
    expect(repeat.body.data.output).toEqual(final.data.output);
    // The same as a synchronous answer reads (the JSON form of the stream).
    const asJson = await execute(echo.id, { stream: true, input: { n: 5 } }, { Accept: 'application/json' });
    expect(Object.keys(repeat.body.data).sort()).toEqual(Object.keys(asJson.body.data).sort());
    expect((await runIds(echo.id)).length).toBe(before + 2);
  });

  it('keys are per caller: two users of one workspace with the same key never collide', async () => {
    const other = await s.newUser(`idem-${Date.now()}@example.com`, { [s.workspaceId]: 'write' });
    const key = freshKey();
    const mine = await execute(echo.id, { async: true, input: { n: 3 } }, { 'Idempotency-Key': key });
    const theirs = await execute(echo.id, { async: true, input: { n: 3 } }, { 'Idempotency-Key': key }, other.key);
    expect(mine.status).toBe(202);
    expect(theirs.status).toBe(202);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.data.runId).not.toBe(mine.body.data.runId);
    // Each one's repeat replays their own.
    const theirsAgain = await execute(echo.id, { async: true, input: { n: 3 } }, { 'Idempotency-Key': key }, other.key);
    expect(theirsAgain.body.data.runId).toBe(theirs.body.data.runId);
    expect(theirsAgain.headers.get('idempotent-replayed')).toBe('true');
  });

  it('a workspace key is its own caller: its keys never meet those of the user who made it', async () => {
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
    const key = freshKey();
    const personal = await execute(echo.id, { async: true, input: { n: 6 } }, { 'Idempotency-Key': key });
    const workspace = await execute(echo.id, { async: true, input: { n: 6 } }, { 'Idempotency-Key': key }, wsKey);
    expect(workspace.status).toBe(202);
    expect(workspace.headers.get('idempotent-replayed')).toBeNull();
    expect(workspace.body.data.runId).not.toBe(personal.body.data.runId);
    const again = await execute(echo.id, { async: true, input: { n: 6 } }, { 'Idempotency-Key': key }, wsKey);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(workspace.body);
  });

  it('an error answer that changed nothing releases the key, so the retry is processed', async () => {
    const wf = await echoWorkflow(s, 'Not yet deployed', { deploy: false });
    const key = freshKey();
    const refused = await execute(wf.id, { input: { n: 1 } }, { 'Idempotency-Key': key });
    expect(refused.status).toBe(400);
    expect((await call('POST', `/api/v2/workflows/${wf.id}/deploy`, {})).status).toBe(200);
    const ran = await execute(wf.id, { input: { n: 1 } }, { 'Idempotency-Key': key });
    expect(ran.status).toBe(200);
    expect(ran.headers.get('idempotent-replayed')).toBeNull();
    expect(await runIds(wf.id)).toHaveLength(1);
  });

  it('X-Run-Id keeps its 409 for another key or none; the same key replays', async () => {
    const key = freshKey();
    const runId = `rid-${key}`;
    const first = await execute(echo.id, { input: { n: 4 } }, { 'Idempotency-Key': key, 'X-Run-Id': runId });
    expect(first.status).toBe(200);
    expect(first.body.data.runId).toBe(runId);
    const otherKey = await execute(echo.id, { input: { n: 4 } }, { 'Idempotency-Key': freshKey(), 'X-Run-Id': runId });
    expect(otherKey.status).toBe(409);
    expect(otherKey.body.error.details.code).toBe('RUN_ID_CONFLICT');
    const noKey = await execute(echo.id, { input: { n: 4 } }, { 'X-Run-Id': runId });
    expect(noKey.status).toBe(409);
    expect(noKey.body.error.details.code).toBe('RUN_ID_CONFLICT');
    const same = await execute(echo.id, { input: { n: 4 } }, { 'Idempotency-Key': key, 'X-Run-Id': runId });
    expect(same.status).toBe(200);
    expect(same.headers.get('idempotent-replayed')).toBe('true');
    expect(same.body).toEqual(first.body);
  });

  it('a malformed key is a 400 and nothing runs', async () => {
    const before = (await runIds(echo.id)).length;
    for (const bad of ['has space', 'x'.repeat(256)]) {
      const r = await execute(echo.id, { input: { n: 1 } }, { 'Idempotency-Key': bad });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
    }
    expect((await runIds(echo.id)).length).toBe(before);
  });

  it('requests without a key behave as before (no replay header, a run each)', async () => {
    const before = (await runIds(echo.id)).length;
    const a = await execute(echo.id, { input: { n: 9 } });
    const b = await execute(echo.id, { input: { n: 9 } });
    expect(a.headers.get('idempotent-replayed')).toBeNull();
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(a.body.data.runId).not.toBe(b.body.data.runId);
    expect((await runIds(echo.id)).length).toBe(before + 2);
  });
});

describe('Idempotency-Key on create operations', () => {
  it('createWorkflow replays the same workflow and creates it once', async () => {
    const key = freshKey();
    const name = `Idem ${key}`;
    const first = await call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name }, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    const again = await call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name }, { 'Idempotency-Key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.body).toEqual(first.body);
    const list = await call('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}&limit=100`);
    expect(list.body.data.filter((w: any) => w.name === name)).toHaveLength(1);
    // Without the key, the same create is the usual name conflict.
    expect((await call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name })).status).toBe(409);
  });

  it('createTable replays the same table id; another body under the key is a 422', async () => {
    const key = freshKey();
    const body = { workspaceId: s.workspaceId, name: `idem_${keyCounter}`, schema: { columns: [{ name: 'title', type: 'string' }] } };
    const first = await call('POST', '/api/v2/tables', body, { 'Idempotency-Key': key });
    expect(first.status, first.text).toBe(201);
    const again = await call('POST', '/api/v2/tables', body, { 'Idempotency-Key': key });
    expect(again.status).toBe(201);
    expect(again.body.data.id ?? again.body.data.table?.id).toBe(first.body.data.id ?? first.body.data.table?.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const reused = await call('POST', '/api/v2/tables', { ...body, name: 'other_name' }, { 'Idempotency-Key': key });
    expect(reused.status).toBe(422);
    expect(reused.body.error.details.conflicts).toEqual(['body']);
  });
});

describe('Idempotency-Key on create operations, in parallel', () => {
  it('10 parallel createWorkflow calls with one key create one workflow', async () => {
    const key = freshKey();
    const name = `Parallel ${key}`;
    const answers = await Promise.all(Array.from({ length: 10 }, () => call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name }, { 'Idempotency-Key': key })));
    const created = answers.filter((a) => a.status === 201);
    expect(created.length + answers.filter((a) => a.status === 409 && a.body.error.details?.code === 'IDEMPOTENCY_REQUEST_IN_PROGRESS').length).toBe(10);
    expect(new Set(created.map((a) => a.body.data.id)).size).toBe(1);
    const list = await call('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}&limit=100`);
    expect(list.body.data.filter((w: any) => w.name === name)).toHaveLength(1);
  });
});

describe('key expiry', () => {
  it('a key past IDEMPOTENCY_TTL_SECONDS is forgotten: the repeat runs again, and expired keys are purged', async () => {
    const t = await startTestServer({ ...FAST_LIMITS, IDEMPOTENCY_TTL_SECONDS: '2' });
    // The server runs in this process: its clock (Date only; timers stay real) is the test's to move, so the
    // replay comes within the key's lifetime and the repeat after it however long each request takes.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const wf = await echoWorkflow(t, 'Short-lived keys');
      // The first run of a server starts the engine; keep that out of the key's lifetime.
      await execute(wf.id, { input: { n: 0 } }, {}, undefined, t);
      const key = freshKey();
      const first = await execute(wf.id, { input: { n: 1 } }, { 'Idempotency-Key': key }, undefined, t);
      const replay = await execute(wf.id, { input: { n: 1 } }, { 'Idempotency-Key': key }, undefined, t);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      vi.setSystemTime(Date.now() + 2100);
      const after = await execute(wf.id, { input: { n: 1 } }, { 'Idempotency-Key': key }, undefined, t);
      expect(after.status).toBe(200);
      expect(after.headers.get('idempotent-replayed')).toBeNull();
      expect(after.body.data.runId).not.toBe(first.body.data.runId);
      expect(await runIds(wf.id, t)).toHaveLength(3);
      // An answer stored later purges the expired key.
      vi.setSystemTime(Date.now() + 2100);
      await execute(wf.id, { input: { n: 2 } }, { 'Idempotency-Key': freshKey() }, undefined, t);
      // The answer goes out while it (and the purge) is written, so the purge is waited for, not assumed.
      const scope = { subject: `user:${t.userId}`, scope: `path:/api/v2/workflows/${wf.id}/execute`, operationId: 'executeWorkflow', key };
      await waitUntil('the expired key to be purged', async () => (await t.services.store.idempotencyKeys.get(scope)) === undefined);
    } finally {
      vi.useRealTimers();
      await t.stop();
    }
  });
});

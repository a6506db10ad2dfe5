// Completion callbacks of async runs, through HTTP: a local receiver verifies signatures with the secret read
// once from a rotation, sees retries after 500s and exactly one success in the delivery log; failed, cancelled
// and paused runs report too; the workflow default and a run's own URL; the egress policy at execute time;
// rotation; a retry window that runs out; and a delivery left in flight by a dead server, sent once its lease ran out.
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createServices, startServer, type RunningServer } from '../src/server.ts';
import { createLogger } from '../src/http/logging.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { startTestServer, testDatabaseEnv, type TestServer } from './support/server.ts';
import { withTestDatabase } from './support/database.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { waitUntil } from './support/wait.ts';

// Quick retries, but an attempt timeout and a delivery window far beyond what any answer of the local
// receiver takes on a busy machine: the tests that are about the timeout and the window (which must be short
// to be seen) run on servers of their own.
const FAST = {
  EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
  CALLBACK_RETRY_BASE_MS: '40',
  CALLBACK_RETRY_MAX_MS: '150',
  CALLBACK_POLL_MS: '20',
  CALLBACK_ATTEMPT_TIMEOUT_MS: '30000',
  CALLBACK_MAX_DELIVERY_SECONDS: '600',
  RATE_LIMIT_FREE_ASYNC: '50000',
  RATE_LIMIT_FREE_SYNC: '50000',
  RATE_LIMIT_FREE_API: '100000',
};

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
}

/** A callback receiver on 127.0.0.1: records every request; answers from a per-path script, then 200. */
class Receiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, number[]>();
  private server!: http.Server;
  url = '';

  async start(port = 0): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const p = req.url ?? '/';
        this.received.push({ path: p, headers: req.headers, raw });
        const status = this.scripts.get(p)?.shift() ?? 200;
        // 0: never answer (the attempt times out).
        if (status === 0) return;
        res.writeHead(status, { 'content-type': 'text/plain', ...(status >= 300 && status < 400 ? { location: '/elsewhere' } : {}) });
        res.end(status < 300 ? 'ok' : 'nope');
      });
    });
    await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  script(p: string, statuses: number[]): string {
    this.scripts.set(p, [...statuses]);
    return this.url + p;
  }

  at(p: string): Received[] {
    return this.received.filter((r) => r.path === p);
  }

  async waitFor(p: string, n: number): Promise<Received[]> {
    await waitUntil(`${n} requests at ${p}`, () => this.at(p).length >= n, { intervalMs: 10 });
    return this.at(p);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** The receiver's check: some v1 of the header is the HMAC of `<t>.<raw body>` under this secret. */
function verifies(secret: string, header: string | string[] | undefined, raw: string): boolean {
  const parts = String(header).split(',');
  const t = parts.find((p) => p.startsWith('t='))?.slice(2);
  if (!t) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex'));
  return parts
    .filter((p) => p.startsWith('v1='))
    .some((p) => {
      const got = Buffer.from(p.slice(3));
      return got.length === expected.length && timingSafeEqual(got, expected);
    });
}

let s: TestServer;
let receiver: Receiver;
let secret = '';
let simple: BuiltWorkflow;
let failing: BuiltWorkflow;
let slow: BuiltWorkflow;
let approval: BuiltWorkflow;

const execute = (wf: string, body: unknown, key?: string) => s.call('POST', `/api/v2/workflows/${wf}/execute`, body, key);
const deliveries = async (wf: string, run: string) => (await s.call('GET', `/api/v2/workflows/${wf}/runs/${run}/callbacks`)).body.data as any[];

/** Waits until the delivery log of a run passes `check`. A delivery that is `delivered` or `failed` is never sent again. */
async function waitForDeliveries(wf: string, run: string, check: (d: any[]) => boolean, server: TestServer = s): Promise<any[]> {
  return waitUntil(`deliveries of ${run}`, async () => {
    const d = (await server.call('GET', `/api/v2/workflows/${wf}/runs/${run}/callbacks`)).body.data as any[];
    return check(d) ? d : null;
  });
}

async function waitForStatus(wf: string, run: string, statuses: string[]): Promise<any> {
  return waitUntil(`run ${run} to be ${statuses.join(' or ')}`, async () => {
    const data = (await s.call('GET', `/api/v2/workflows/${wf}/runs/${run}?includeOutput=true`)).body.data;
    return statuses.includes(data.status) ? data : null;
  });
}

/** A server of its own for a test about one setting, with a signing secret and a deployed one-block workflow. */
async function serverWith(env: Record<string, string>): Promise<{ server: TestServer; wf: string }> {
  const server = await startTestServer({ ...FAST, ...env });
  expect((await server.call('POST', `/api/v2/workspaces/${server.workspaceId}/callback-signing-secret/rotate`, {})).status).toBe(200);
  const wf = await buildWorkflow(server, 'Own', [apiBlock('start_trigger', 'Start')], []);
  return { server, wf: wf.id };
}

beforeAll(async () => {
  receiver = await new Receiver().start();
  s = await startTestServer(FAST);
  {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] });
    const out = apiBlock('response', 'Out', { data: '{"twice": <start.n>}' });
    simple = await buildWorkflow(s, 'Simple', [start, out], [link(start, out)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const boom = apiBlock('function', 'Boom', { code: 'throw new Error("boom")' });
    failing = await buildWorkflow(s, 'Fails', [start, boom], [link(start, boom)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const nap = apiBlock('wait', 'Nap', { timeValue: '10', timeUnit: 'seconds' });
    slow = await buildWorkflow(s, 'Slow', [start, nap], [link(start, nap)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const ask = apiBlock('human_in_the_loop', 'Ask', { message: 'ok?', inputFormat: [{ name: 'note', type: 'string', required: true }] });
    const reply = apiBlock('response', 'Reply', { data: '{"note": <ask.note>}' });
    approval = await buildWorkflow(s, 'Approval', [start, ask, reply], [link(start, ask), link(ask, reply)]);
  }
});

afterAll(async () => {
  await s?.stop();
  await receiver?.stop();
});

describe('before a signing secret exists, and input checks', () => {
  it('callbackUrl needs async: true (400 naming the field)', async () => {
    const r = await execute(simple.id, { input: { n: 1 }, callbackUrl: receiver.url + '/sync' });
    expect(r.status).toBe(400);
    expect(r.body.error.details[0].path).toEqual(['body', 'callbackUrl']);
    expect(r.body.error.message).toMatch(/callbackUrl requires async/);
  });

  it('no secret yet: execute and setting a default answer 409 CALLBACK_SECRET_MISSING, and nothing is queued', async () => {
    const before = (await s.call('GET', `/api/v2/workflows/${simple.id}/runs`)).body.data.length;
    const r = await execute(simple.id, { async: true, callbackUrl: receiver.url + '/x' });
    expect(r.status).toBe(409);
    expect(r.body.error.details).toMatchObject({ code: 'CALLBACK_SECRET_MISSING' });
    expect((await s.call('GET', `/api/v2/workflows/${simple.id}/runs`)).body.data.length).toBe(before);
    const d = await s.call('PUT', `/api/v2/workflows/${simple.id}/callback`, { url: receiver.url + '/x' });
    expect(d.status).toBe(409);
    const meta = await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret`);
    expect(meta.body.data).toEqual({ current: null, previous: null });
  });

  it('a URL that is not http(s), or not a URL, is a 400', async () => {
    expect((await execute(simple.id, { async: true, callbackUrl: 'ftp://127.0.0.1/x' })).body.error.details[0]).toMatchObject({ path: ['body', 'callbackUrl'], code: 'invalid_url' });
    expect((await execute(simple.id, { async: true, callbackUrl: 'not a url' })).status).toBe(400);
    expect((await s.call('PUT', `/api/v2/workflows/${simple.id}/callback`, { url: 'mailto:a@b.c' })).status).toBe(400);
  });

  it('rotating and reading the secret need the admin role', async () => {
    const writer = await s.newUser('writer@example.com', { [s.workspaceId]: 'write' });
    expect((await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret/rotate`, {}, writer.key)).status).toBe(403);
    expect((await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret`, undefined, writer.key)).status).toBe(403);
    // A bad grace period is a 400 and rotates nothing.
    const bad = await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret/rotate`, { previousSecretGraceSeconds: -1 });
    expect(bad.status).toBe(400);
    expect((await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret`)).body.data.current).toBeNull();
  });
});

describe('deliveries', () => {
  beforeAll(async () => {
    const r = await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret/rotate`, {});
    expect(r.status).toBe(200);
    secret = r.body.data.secret;
    expect(secret).toMatch(/^whsec_/);
    expect(r.body.data).toMatchObject({ current: { prefix: 'whsec_', lastFour: secret.slice(-4), expiresAt: null }, previous: null });
    // Read once: the metadata never carries it, and it is not stored in plain.
    const meta = await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret`);
    expect(meta.body.data.current).toMatchObject({ lastFour: secret.slice(-4) });
    expect(meta.text).not.toContain(secret);
    const stored = await withTestDatabase(s, (db) => db.read.all('SELECT * FROM callback_signing_secrets'));
    expect(stored.length).toBeGreaterThan(0);
    expect(JSON.stringify(stored, (_, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('latin1') : v))).not.toContain(secret.slice(6));
  });

  it('a completed run is POSTed, signed, retried after two 500s, and exactly one success is logged', async () => {
    const url = receiver.script('/done', [500, 500]);
    const r = await execute(simple.id, { async: true, input: { n: 21 }, callbackUrl: url });
    expect(r.status).toBe(202);
    const runId = r.body.data.runId;
    const got = await receiver.waitFor('/done', 3);
    // Once the log says delivered, nothing more is sent: the count is final.
    const log = await waitForDeliveries(simple.id, runId, (d) => d[0]?.status === 'delivered');
    expect(receiver.at('/done')).toHaveLength(3);
    const ids = new Set(got.map((g) => g.headers['x-sim-delivery']));
    expect(ids.size).toBe(1);
    expect(got.map((g) => g.headers['x-sim-delivery-attempt'])).toEqual(['1', '2', '3']);
    for (const g of got) {
      expect(g.headers['x-sim-event']).toBe('run.completed');
      expect(g.headers['content-type']).toBe('application/json');
      expect(g.headers['x-sim-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifies(secret, g.headers['x-sim-signature'], g.raw)).toBe(true);
      expect(verifies('whsec_wrong', g.headers['x-sim-signature'], g.raw)).toBe(false);
      // A changed body no longer verifies.
      expect(verifies(secret, g.headers['x-sim-signature'], g.raw.replace('21', '22'))).toBe(false);
    }
    // The body is the run as Get a workflow run shows it, output included.
    const read = (await s.call('GET', `/api/v2/workflows/${simple.id}/runs/${runId}?includeOutput=true`)).body;
    expect(JSON.parse(got[2]!.raw)).toEqual(read);
    expect(read.data).toMatchObject({ status: 'completed', output: { twice: 21 } });

    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ deliveryId: [...ids][0], event: 'run.completed', url, status: 'delivered', attempts: 3, nextAttemptAt: null, lastError: null });
    expect(log[0].attemptLog.map((a: any) => [a.attempt, a.statusCode, a.outcome])).toEqual([
      [1, 500, 'retry'],
      [2, 500, 'retry'],
      [3, 200, 'delivered'],
    ]);
    expect(log[0].attemptLog.filter((a: any) => a.outcome === 'delivered')).toHaveLength(1);
    expect(log[0].attemptLog[0].nextAttemptAt).not.toBeNull();
    expect(log[0].deliveredAt).not.toBeNull();
  });

  it('reads mask the credentials of a callback URL (the delivery log and the workflow default)', async () => {
    const url = receiver.script('/creds', []).replace('http://', 'http://hook:s3cret@');
    const r = await execute(simple.id, { async: true, input: { n: 1 }, callbackUrl: url });
    expect(r.status).toBe(202);
    const log = await waitForDeliveries(simple.id, r.body.data.runId, (d) => d.length > 0);
    expect(log[0].url).toBe(url.replace('hook:s3cret@', '***@'));
    expect(JSON.stringify(log)).not.toContain('s3cret');
    expect((await s.call('PUT', `/api/v2/workflows/${simple.id}/callback`, { url })).body.data.url).toBe(url.replace('hook:s3cret@', '***@'));
    const read = (await s.call('GET', `/api/v2/workflows/${simple.id}/callback`)).body.data;
    expect(read.url).toBe(url.replace('hook:s3cret@', '***@'));
    expect((await s.call('PUT', `/api/v2/workflows/${simple.id}/callback`, { url: null })).status).toBe(200);
  });

  it('a redirect and an attempt that gets no answer within the timeout are retried (the redirect is not followed)', async () => {
    const own = await serverWith({ CALLBACK_ATTEMPT_TIMEOUT_MS: '1000' });
    try {
      const url = receiver.script('/slow', [302, 0]);
      const runId = (await own.server.call('POST', `/api/v2/workflows/${own.wf}/execute`, { async: true, callbackUrl: url })).body.data.runId;
      const [log] = await waitForDeliveries(own.wf, runId, (d) => d[0]?.status === 'delivered', own.server);
      expect(log.attemptLog.map((a: any) => [a.attempt, a.statusCode, a.outcome])).toEqual([
        [1, 302, 'retry'],
        [2, null, 'retry'],
        [3, 200, 'delivered'],
      ]);
      expect(log.attemptLog[1].error).toMatch(/within 1000 ms/);
      expect(log.attemptLog[1].durationMs).toBeGreaterThanOrEqual(950);
      expect(receiver.at('/elsewhere')).toEqual([]);
    } finally {
      await own.server.stop();
    }
  });

  it('failed and cancelled runs report too', async () => {
    const failUrl = receiver.script('/failed', []);
    const f = (await execute(failing.id, { async: true, callbackUrl: failUrl })).body.data.runId;
    const [fg] = await receiver.waitFor('/failed', 1);
    expect(fg!.headers['x-sim-event']).toBe('run.failed');
    expect(JSON.parse(fg!.raw).data).toMatchObject({ runId: f, status: 'failed', error: { message: expect.stringMatching(/boom/) } });

    const cancelUrl = receiver.script('/cancelled', []);
    const c = (await execute(slow.id, { async: true, callbackUrl: cancelUrl })).body.data.runId;
    await waitForStatus(slow.id, c, ['running']);
    expect((await s.call('POST', `/api/v2/workflows/${slow.id}/runs/${c}/cancel`)).body.data.success).toBe(true);
    const [cg] = await receiver.waitFor('/cancelled', 1);
    expect(cg!.headers['x-sim-event']).toBe('run.cancelled');
    expect(JSON.parse(cg!.raw).data).toMatchObject({ runId: c, status: 'cancelled' });
    expect(verifies(secret, cg!.headers['x-sim-signature'], cg!.raw)).toBe(true);
  });

  it('a paused run reports the pause, and again when the resumed run completes', async () => {
    const url = receiver.script('/paused', []);
    const runId = (await execute(approval.id, { async: true, callbackUrl: url })).body.data.runId;
    const [p] = await receiver.waitFor('/paused', 1);
    expect(p!.headers['x-sim-event']).toBe('run.paused');
    expect(JSON.parse(p!.raw).data).toMatchObject({ runId, status: 'paused', paused: { blockedOnBlockId: approval.ids.Ask } });
    const resumed = await s.call('POST', `/api/v2/workflows/${approval.id}/runs/${runId}/resume`, { contextId: approval.ids.Ask, input: { note: 'fine' } });
    expect(resumed.status).toBe(202);
    const both = await receiver.waitFor('/paused', 2);
    expect(both[1]!.headers['x-sim-event']).toBe('run.completed');
    expect(JSON.parse(both[1]!.raw).data).toMatchObject({ status: 'completed', output: { note: 'fine' } });
    expect(both[0]!.headers['x-sim-delivery']).not.toBe(both[1]!.headers['x-sim-delivery']);
    const log = await waitForDeliveries(approval.id, runId, (d) => d.length === 2 && d.every((x) => x.status === 'delivered'));
    expect(log.map((d) => d.event)).toEqual(['run.paused', 'run.completed']);
  });

  it("the workflow's default URL is used when a run names none; a run's own URL wins; null clears it", async () => {
    const def = receiver.script('/default', []);
    expect((await s.call('GET', `/api/v2/workflows/${simple.id}/callback`)).body.data).toEqual({ workflowId: simple.id, url: null, updatedAt: null });
    const set = await s.call('PUT', `/api/v2/workflows/${simple.id}/callback`, { url: def });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ workflowId: simple.id, url: def });
    expect((await s.call('GET', `/api/v2/workflows/${simple.id}/callback`)).body.data.url).toBe(def);

    const a = (await execute(simple.id, { async: true, input: { n: 1 } })).body.data.runId;
    const own = receiver.script('/own', []);
    const b = (await execute(simple.id, { async: true, input: { n: 2 }, callbackUrl: own })).body.data.runId;
    // A synchronous run never reports, default or not.
    const sync = (await execute(simple.id, { input: { n: 3 } })).body.data.runId;
    const [d] = await receiver.waitFor('/default', 1);
    expect(JSON.parse(d!.raw).data.runId).toBe(a);
    const [o] = await receiver.waitFor('/own', 1);
    expect(JSON.parse(o!.raw).data.runId).toBe(b);
    await waitForDeliveries(simple.id, a, (x) => x[0]?.status === 'delivered');
    expect(receiver.at('/default')).toHaveLength(1);
    // A delivery is written in the transaction that settles its run: none now means none ever.
    expect(await deliveries(simple.id, sync)).toEqual([]);

    expect((await s.call('PUT', `/api/v2/workflows/${simple.id}/callback`, { url: null })).body.data).toMatchObject({ url: null, updatedAt: null });
    const c = (await execute(simple.id, { async: true, input: { n: 4 } })).body.data.runId;
    await waitForStatus(simple.id, c, ['completed']);
    expect(await deliveries(simple.id, c)).toEqual([]);
    expect(receiver.at('/default')).toHaveLength(1);
  });

  it('a receiver that never answers 2xx gets retries until the window ends, then the delivery is failed', async () => {
    const own = await serverWith({ CALLBACK_MAX_DELIVERY_SECONDS: '3' });
    try {
      const url = receiver.script('/down', Array(1000).fill(503));
      const runId = (await own.server.call('POST', `/api/v2/workflows/${own.wf}/execute`, { async: true, callbackUrl: url })).body.data.runId;
      const [log] = await waitForDeliveries(own.wf, runId, (d) => d[0]?.status === 'failed', own.server);
      expect(log.attempts).toBeGreaterThan(3);
      expect(log.attemptLog.at(-1)).toMatchObject({ outcome: 'failed', statusCode: 503, nextAttemptAt: null });
      expect(log.attemptLog.slice(0, -1).every((a: any) => a.outcome === 'retry')).toBe(true);
      expect(log).toMatchObject({ nextAttemptAt: null, deliveredAt: null, lastError: 'HTTP 503' });
      // A failed delivery is never sent again: every request the receiver saw is one of the logged attempts.
      expect(receiver.at('/down')).toHaveLength(log.attempts);
    } finally {
      await own.server.stop();
    }
  });

  it('rotation: with a grace period both secrets sign; with none, the old secret no longer verifies', async () => {
    const old = secret;
    const graced = await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret/rotate`, { previousSecretGraceSeconds: 3600 });
    const mid = graced.body.data.secret as string;
    expect(graced.body.data.previous).toMatchObject({ lastFour: old.slice(-4), expiresAt: expect.any(String) });
    const url1 = receiver.script('/rot1', []);
    await execute(simple.id, { async: true, input: { n: 6 }, callbackUrl: url1 });
    const [g1] = await receiver.waitFor('/rot1', 1);
    expect(g1!.headers['x-sim-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifies(mid, g1!.headers['x-sim-signature'], g1!.raw)).toBe(true);
    expect(verifies(old, g1!.headers['x-sim-signature'], g1!.raw)).toBe(true);

    const now = await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret/rotate`, { previousSecretGraceSeconds: 0 });
    secret = now.body.data.secret;
    expect(now.body.data.previous).toBeNull();
    expect((await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret`)).body.data).toMatchObject({ current: { lastFour: secret.slice(-4) }, previous: null });
    const url2 = receiver.script('/rot2', []);
    await execute(simple.id, { async: true, input: { n: 7 }, callbackUrl: url2 });
    const [g2] = await receiver.waitFor('/rot2', 1);
    expect(g2!.headers['x-sim-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifies(secret, g2!.headers['x-sim-signature'], g2!.raw)).toBe(true);
    expect(verifies(mid, g2!.headers['x-sim-signature'], g2!.raw)).toBe(false);
    expect(verifies(old, g2!.headers['x-sim-signature'], g2!.raw)).toBe(false);
  });

  it('with an Idempotency-Key, a repeated async execute replays its receipt: one run, one delivery', async () => {
    const url = receiver.script('/idem', []);
    const send = () =>
      s.request(`/api/v2/workflows/${simple.id}/execute`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'callback-once' },
        body: JSON.stringify({ async: true, input: { n: 10 }, callbackUrl: url }),
      });
    const first = (await (await send()).json()) as any;
    const again = await send();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as any).data.runId).toBe(first.data.runId);
    await receiver.waitFor('/idem', 1);
    const log = await waitForDeliveries(simple.id, first.data.runId, (d) => d.length > 0 && d.every((x) => x.status === 'delivered'));
    expect(log).toHaveLength(1);
    expect(receiver.at('/idem')).toHaveLength(1);
  });

  it('the delivery log of a run is 404 for a caller outside the workspace', async () => {
    const outsider = await s.newUser('outsider@example.com');
    const runId = (await execute(simple.id, { async: true, input: { n: 8 } })).body.data.runId;
    expect((await s.call('GET', `/api/v2/workflows/${simple.id}/runs/${runId}/callbacks`, undefined, outsider.key)).status).toBe(404);
    expect((await s.call('GET', `/api/v2/workflows/${simple.id}/runs/nope/callbacks`)).status).toBe(404);
    expect((await s.call('GET', `/api/v2/workflows/${simple.id}/callback`, undefined, outsider.key)).status).toBe(404);
  });
});

describe('the egress policy', () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ CALLBACK_POLL_MS: '20' });
    expect((await strict.call('POST', `/api/v2/workspaces/${strict.workspaceId}/callback-signing-secret/rotate`, {})).status).toBe(200);
  });
  afterAll(async () => {
    await strict?.stop();
  });

  it('refuses a callback URL on a loopback or private address unless the policy allows it', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const wf = await buildWorkflow(strict, 'Strict', [start], []);
    for (const url of [receiver.url + '/private', 'http://10.1.2.3/hook', 'http://[::1]:9/hook', 'http://localhost:9/hook']) {
      const r = await strict.call('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true, callbackUrl: url });
      expect(r.status, url).toBe(400);
      expect(r.body.error.details[0]).toMatchObject({ path: ['body', 'callbackUrl'], code: 'egress_blocked' });
      const d = await strict.call('PUT', `/api/v2/workflows/${wf.id}/callback`, { url });
      expect(d.status).toBe(400);
      expect(d.body.error.details[0]).toMatchObject({ path: ['body', 'url'], code: 'egress_blocked' });
    }
    expect((await strict.call('GET', `/api/v2/workflows/${wf.id}/runs`)).body.data).toEqual([]);
    expect(receiver.at('/private')).toEqual([]);
  });
});

describe('restart', () => {
  const dirs: string[] = [];
  const drops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    for (const drop of drops) await drop();
  });

  /** A data directory and (with TEST_DATABASE=postgres) a database, kept across the restarts of one test. */
  async function place(): Promise<{ dataDir: string; databaseEnv: Record<string, string> }> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-callbacks-'));
    dirs.push(dataDir);
    const database = await testDatabaseEnv();
    drops.push(database.drop);
    return { dataDir, databaseEnv: database.env };
  }

  async function startOn(where: { dataDir: string; databaseEnv: Record<string, string> }, env: Record<string, string> = {}): Promise<RunningServer & { request: TestServer['request'] }> {
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: where.dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test', BOOTSTRAP_API_KEY: 'sk-owa-callbacks-test-key-0000000000000', ...FAST, CALLBACK_MAX_DELIVERY_SECONDS: '600', CALLBACK_RETRY_BASE_MS: '100000', CALLBACK_RETRY_MAX_MS: '100000', ...where.databaseEnv, ...env });
    const services = await createServices(config, createLogger('silent'));
    await bootstrapIfEmpty(services.store, { apiKey: config.bootstrapApiKey });
    const server = await startServer(services);
    return {
      ...server,
      request: (pathname, init = {}) => {
        const headers = new Headers(init.headers);
        headers.set('X-API-Key', config.bootstrapApiKey!);
        return fetch(server.url + pathname, { ...init, headers });
      },
    };
  }

  it('a delivery a dead server left in flight is sent once its lease ran out, and the log says what happened', async () => {
    const dir = await place();
    const first = await startOn(dir);
    const asTest = first as unknown as TestServer;
    const json = async (method: string, p: string, body?: unknown) => {
      const r = await first.request(p, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return (await r.json()) as any;
    };
    const workspaceId = (await json('GET', '/api/v2/workspaces')).data[0].id;
    const key = (await json('POST', `/api/v2/workspaces/${workspaceId}/callback-signing-secret/rotate`, {})).data.secret as string;
    const start = apiBlock('start_trigger', 'Start');
    const wf = await buildWorkflow(asTest, 'Restart', [start], [], { workspaceId });
    // The receiver is down at first: the attempt fails and the next one is far away (100 s backoff).
    const url = receiver.script('/restart', [500]);
    const runId = (await json('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true, callbackUrl: url })).data.runId;
    await receiver.waitFor('/restart', 1);
    await waitUntil('the first attempt to be logged', async () => (await json('GET', `/api/v2/workflows/${wf.id}/runs/${runId}/callbacks`)).data[0]?.attemptLog.length === 1);
    await first.close();

    // What a process killed in the middle of the second attempt leaves once its lease ran out: the attempt
    // claimed by a process that is gone. Whoever polls next takes it over (nothing is given back at start).
    const past = new Date(Date.now() - 1000).toISOString();
    await withTestDatabase(dir, (db) =>
      db.transaction((tx) =>
        tx.run("UPDATE run_callback_deliveries SET attempts = 2, attempt_started_at = ?, lease_owner = 'a-dead-process', lease_until = ?, next_attempt_at = ?", [new Date().toISOString(), past, new Date().toISOString()]),
      ),
    );

    const second = await startOn(dir);
    try {
      const got = await receiver.waitFor('/restart', 2);
      expect(got[1]!.headers['x-sim-delivery']).toBe(got[0]!.headers['x-sim-delivery']);
      expect(got[1]!.headers['x-sim-delivery-attempt']).toBe('3');
      expect(verifies(key, got[1]!.headers['x-sim-signature'], got[1]!.raw)).toBe(true);
      const log = await waitUntil('the delivery to end', async () => ((d) => (d.status === 'pending' ? null : d))(((await (await second.request(`/api/v2/workflows/${wf.id}/runs/${runId}/callbacks`)).json()) as any).data[0]));
      expect(log.status).toBe('delivered');
      expect(log.attemptLog.map((a: any) => [a.attempt, a.statusCode, a.outcome])).toEqual([
        [1, 500, 'retry'],
        [2, null, 'retry'],
        [3, 200, 'delivered'],
      ]);
      expect(log.attemptLog[1].error).toMatch(/server stopped/);
    } finally {
      await second.close();
    }
  });

  it('every attempt is checked against the egress policy again: a URL allowed when given is refused at send time once the policy refuses it', async () => {
    const dir = await place();
    const first = await startOn(dir);
    const json = async (server: typeof first, method: string, p: string, body?: unknown) => {
      const r = await server.request(p, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return (await r.json()) as any;
    };
    const workspaceId = (await json(first, 'GET', '/api/v2/workspaces')).data[0].id;
    await json(first, 'POST', `/api/v2/workspaces/${workspaceId}/callback-signing-secret/rotate`, {});
    const start = apiBlock('start_trigger', 'Start');
    const wf = await buildWorkflow(first as unknown as TestServer, 'Rebind', [start], [], { workspaceId });
    // Accepted while loopback is allowed; the receiver fails it so the delivery is still pending at the restart
    // (its next attempt 100 s away, so none is sent before the stop).
    const url = receiver.script('/rebind', [500]);
    const runId = (await json(first, 'POST', `/api/v2/workflows/${wf.id}/execute`, { async: true, callbackUrl: url })).data.runId;
    await waitUntil('the first attempt to be logged', async () => (await json(first, 'GET', `/api/v2/workflows/${wf.id}/runs/${runId}/callbacks`)).data[0]?.attemptLog.length === 1);
    await first.close();
    // The next attempt is due now.
    await withTestDatabase(dir, (db) => db.transaction((tx) => tx.run('UPDATE run_callback_deliveries SET next_attempt_at = ?', [new Date().toISOString()])));

    const second = await startOn(dir, { EGRESS_ALLOW_CIDRS: '', CALLBACK_RETRY_BASE_MS: '50', CALLBACK_RETRY_MAX_MS: '50' });
    try {
      const log = await waitUntil('an attempt refused by the policy', async () => {
        const d = (await json(second, 'GET', `/api/v2/workflows/${wf.id}/runs/${runId}/callbacks`)).data[0];
        return d.attemptLog.some((a: any) => /not allowed/.test(a.error ?? '')) ? d : null;
      });
      expect(log.attemptLog.find((a: any) => a.error !== null)).toMatchObject({ statusCode: null, outcome: 'retry', error: expect.stringMatching(/Egress to 127\.0\.0\.1 is not allowed/) });
      expect(receiver.at('/rebind')).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});

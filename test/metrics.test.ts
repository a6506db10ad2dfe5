// Prometheus metrics, scraped as Prometheus would: on their own listener (METRICS_PORT), never on the API port,
// with bounded labels (operation ids, not paths or ids).
import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { waitUntil } from './support/wait.ts';
import { GateServer } from './support/gate-server.ts';
import { createBase, uploadDocument } from './support/knowledge.ts';

/** A loopback port nothing listens on right now (METRICS_PORT=0 means "off", so the test picks one). */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

async function scrape(s: TestServer): Promise<{ status: number; type: string | null; text: string }> {
  const r = await fetch(s.metricsUrl!);
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

/** The sample lines of one metric (name followed by labels or a space). */
const samples = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

/** The value of the sample `name{labels}` whose labels include all of `labels`; undefined when there is none. */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const line = samples(text, name).find((l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics on their own port', () => {
  let s: TestServer;
  let workflowId: string;

  beforeAll(async () => {
    s = await startTestServer({ METRICS_PORT: String(await freePort()), RATE_LIMIT_FREE_SYNC: '1' });
    const start = apiBlock('start_trigger', 'Start');
    const out = apiBlock('response', 'Out', { data: '{"ok": true}' });
    workflowId = (await buildWorkflow(s, 'Answers ok', [start, out], [link(start, out)])).id;
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('answers Prometheus text with request, run, queue, store and process metrics', async () => {
    expect((await s.call('GET', `/api/v2/workflows/${workflowId}`)).status).toBe(200);
    const run = await s.call('POST', `/api/v2/workflows/${workflowId}/execute`, {});
    expect(run.status).toBe(200);
    // The sync bucket holds one execution a minute: the next is refused by the rate limit.
    expect((await s.call('POST', `/api/v2/workflows/${workflowId}/execute`, {})).status).toBe(429);

    // A request is counted when its response closes, which may come just after the client has read it.
    const m = await waitUntil('the run outcome and the rejection to be counted', async () => {
      const r = await scrape(s);
      return valueOf(r.text, 'owa_runs_settled_total', { trigger: 'api', status: 'completed' }) === 1 && valueOf(r.text, 'owa_rate_limit_rejections_total', { bucket: 'sync' }) === 1 ? r : null;
    });
    expect(m.status).toBe(200);
    expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(valueOf(m.text, 'owa_http_requests_total', { operation: 'getWorkflow', method: 'GET', status: '200' })).toBe(1);
    expect(valueOf(m.text, 'owa_http_request_duration_seconds_count', { operation: 'getWorkflow', method: 'GET', status_class: '2xx' })).toBe(1);
    expect(valueOf(m.text, 'owa_http_requests_total', { operation: 'executeWorkflow', method: 'POST', status: '429' })).toBe(1);
    expect(valueOf(m.text, 'owa_rate_limit_rejections_total', { operation: 'executeWorkflow', bucket: 'sync' })).toBe(1);
    expect(valueOf(m.text, 'owa_run_duration_seconds_count', { trigger: 'api', status: 'completed' })).toBe(1);
    expect(valueOf(m.text, 'owa_run_queue_depth')).toBe(0);
    expect(valueOf(m.text, 'owa_run_queue_oldest_age_seconds')).toBe(0);
    expect(valueOf(m.text, 'owa_runs_executing')).toBe(0);
    expect(valueOf(m.text, 'owa_knowledge_documents', { state: 'pending' })).toBe(0);
    expect(valueOf(m.text, 'owa_callback_deliveries_pending')).toBe(0);
    expect(m.text).toContain('# TYPE owa_table_jobs gauge');
    expect(m.text).toContain('# TYPE owa_callback_attempts_total counter');
    expect(valueOf(m.text, 'owa_database_size_bytes')).toBeGreaterThan(0);
    for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'process_resident_memory_bytes']) expect(samples(m.text, name).length).toBeGreaterThan(0);
  });

  it('labels requests by operation, never by the ids in their paths', async () => {
    const ids = Array.from({ length: 50 }, () => `wf_${randomUUID()}`);
    for (const id of ids) expect((await s.call('GET', `/api/v2/workflows/${id}/state`)).status).toBe(404);
    for (const id of ids.slice(0, 5)) expect((await s.call('GET', `/no/such/route/${id}`)).status).toBe(404);
    const m = await waitUntil('every request to be counted', async () => {
      const r = await scrape(s);
      return valueOf(r.text, 'owa_http_requests_total', { operation: 'getWorkflowState', status: '404' }) === 50 && valueOf(r.text, 'owa_http_requests_total', { operation: 'unmatched', status: '404' }) === 5 ? r : null;
    });
    const stateSeries = samples(m.text, 'owa_http_requests_total').filter((l) => l.includes('operation="getWorkflowState"'));
    expect(stateSeries).toHaveLength(1);
    expect(valueOf(m.text, 'owa_http_requests_total', { operation: 'getWorkflowState', status: '404' })).toBe(50);
    expect(valueOf(m.text, 'owa_http_requests_total', { operation: 'unmatched', method: 'GET', status: '404' })).toBe(5);
    for (const id of ids) expect(m.text).not.toContain(id);
  });

  it('serves nothing but GET /metrics on the metrics port, and nothing of it on the API port', async () => {
    const other = await fetch(s.metricsUrl!.replace(/\/metrics$/, '/api/v2/workflows'));
    expect(other.status).toBe(404);
    await other.text();
    const onApi = await s.request('/metrics');
    expect(onApi.status).toBe(404);
    expect(await onApi.text()).not.toContain('owa_http_requests_total');
  });
});

describe('queue metrics', () => {
  it('show the runs executing, the queued ones and how long the oldest has waited', async () => {
    const gate = await new GateServer().start();
    // One worker: the first async run holds it at the gate, the second waits in the queue.
    const s = await startTestServer({ METRICS_PORT: String(await freePort()), RUN_WORKERS: '1', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
    try {
      const start = apiBlock('start_trigger', 'Start');
      const held = gate.block('Held', 'queue');
      const { id } = await buildWorkflow(s, 'Held at the gate', [start, held], [link(start, held)]);
      expect((await s.call('POST', `/api/v2/workflows/${id}/execute`, { async: true })).status).toBe(202);
      await waitUntil('the first run to reach the gate', () => gate.holding('queue'));
      expect((await s.call('POST', `/api/v2/workflows/${id}/execute`, { async: true })).status).toBe(202);
      const busy = (await scrape(s)).text;
      expect(valueOf(busy, 'owa_runs_executing')).toBe(1);
      expect(valueOf(busy, 'owa_run_queue_depth')).toBe(1);
      expect(valueOf(busy, 'owa_run_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(0);
      // A queued run cancelled through the API is counted as settled, without a duration (it never executed).
      const third = await s.call('POST', `/api/v2/workflows/${id}/execute`, { async: true });
      expect((await s.call('POST', `/api/v2/workflows/${id}/runs/${third.body.data.runId}/cancel`)).status).toBe(200);
      const cancelled = (await scrape(s)).text;
      expect(valueOf(cancelled, 'owa_runs_settled_total', { trigger: 'api', status: 'cancelled' })).toBe(1);
      expect(valueOf(cancelled, 'owa_run_duration_seconds_count', { status: 'cancelled' })).toBeUndefined();
      expect(valueOf(cancelled, 'owa_run_queue_depth')).toBe(1);
      gate.release('queue');
      const done = await waitUntil('both runs to be counted', async () => {
        const text = (await scrape(s)).text;
        return valueOf(text, 'owa_runs_settled_total', { trigger: 'api', status: 'completed' }) === 2 ? text : null;
      });
      expect(valueOf(done, 'owa_run_queue_depth')).toBe(0);
      expect(valueOf(done, 'owa_run_duration_seconds_count', { trigger: 'api', status: 'completed' })).toBe(2);
    } finally {
      await s.stop();
      await gate.stop();
    }
  });
});

describe('callback metrics', () => {
  it('count delivery attempts by outcome', async () => {
    // The receiver refuses the first delivery and takes the second: one retry, then delivered.
    let received = 0;
    const receiver = http.createServer((req, res) => {
      req.resume();
      res.writeHead(++received === 1 ? 500 : 204).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`;
    const s = await startTestServer({ METRICS_PORT: String(await freePort()), EGRESS_ALLOW_CIDRS: '127.0.0.1/32', CALLBACK_POLL_MS: '20', CALLBACK_RETRY_BASE_MS: '40', CALLBACK_RETRY_MAX_MS: '150' });
    try {
      expect((await s.call('POST', `/api/v2/workspaces/${s.workspaceId}/callback-signing-secret/rotate`, {})).status).toBe(200);
      const start = apiBlock('start_trigger', 'Start');
      const out = apiBlock('response', 'Out', { data: '{"ok": true}' });
      const { id } = await buildWorkflow(s, 'Calls back', [start, out], [link(start, out)]);
      expect((await s.call('POST', `/api/v2/workflows/${id}/execute`, { async: true, callbackUrl: receiverUrl })).status).toBe(202);
      const text = await waitUntil('the delivery to be counted', async () => {
        const t = (await scrape(s)).text;
        return valueOf(t, 'owa_callback_attempts_total', { outcome: 'delivered' }) === 1 ? t : null;
      });
      expect(valueOf(text, 'owa_callback_attempts_total', { outcome: 'retry' })).toBe(1);
      expect(valueOf(text, 'owa_callback_deliveries_pending')).toBe(0);
    } finally {
      await s.stop();
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });
});

describe('metrics without METRICS_PORT', () => {
  it('are off: no metrics listener, and /metrics on the API port is not found', async () => {
    const s = await startTestServer();
    try {
      expect(s.metricsUrl).toBeNull();
      const r = await s.request('/metrics', { key: null });
      expect(r.status).toBe(404);
      expect(await r.text()).not.toContain('# TYPE');
    } finally {
      await s.stop();
    }
  });
});

describe('sandbox pool metrics', () => {
  it('show the function-block processes busy, idle and in all, and calls waiting for one', async () => {
    const gate = await new GateServer().start();
    const s = await startTestServer({ METRICS_PORT: String(await freePort()), SANDBOX_POOL_SIZE: '1', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
    try {
      // Before the first run no sandbox process exists (the pool starts with the first run).
      expect(valueOf((await scrape(s)).text, 'owa_sandbox_workers', { pool: 'default', state: 'total' })).toBe(0);
      const start = apiBlock('start_trigger', 'Start');
      // The function block waits at the gate inside its sandbox process (its fetch goes out through the egress policy).
      const fn = apiBlock('function', 'Fn', { code: `const r = await fetch(${JSON.stringify(`${gate.url}/sandbox`)}); return r.status` });
      const { id } = await buildWorkflow(s, 'Holds a sandbox process', [start, fn], [link(start, fn)]);
      expect((await s.call('POST', `/api/v2/workflows/${id}/execute`, { async: true })).status).toBe(202);
      await waitUntil('the function block to reach the gate', () => gate.holding('sandbox'));
      // A second run's function call has no free process: it waits.
      expect((await s.call('POST', `/api/v2/workflows/${id}/execute`, { async: true })).status).toBe(202);
      const busy = await waitUntil('one busy process and one call waiting', async () => {
        const t = (await scrape(s)).text;
        return valueOf(t, 'owa_sandbox_calls_waiting', { pool: 'default' }) === 1 ? t : null;
      });
      expect(valueOf(busy, 'owa_sandbox_workers', { pool: 'default', state: 'busy' })).toBe(1);
      expect(valueOf(busy, 'owa_sandbox_workers', { pool: 'default', state: 'idle' })).toBe(0);
      expect(valueOf(busy, 'owa_sandbox_workers', { pool: 'default', state: 'total' })).toBe(1);
      expect(valueOf(busy, 'owa_sandbox_workers', { pool: 'sandbox', state: 'total' })).toBe(0);
      gate.release('sandbox');
      const idle = await waitUntil('both runs done and the process idle again', async () => {
        const t = (await scrape(s)).text;
        return valueOf(t, 'owa_runs_settled_total', { trigger: 'api', status: 'completed' }) === 2 && valueOf(t, 'owa_sandbox_workers', { pool: 'default', state: 'idle' }) === 1 ? t : null;
      });
      expect(valueOf(idle, 'owa_sandbox_workers', { pool: 'default', state: 'busy' })).toBe(0);
      expect(valueOf(idle, 'owa_sandbox_calls_waiting', { pool: 'default' })).toBe(0);
    } finally {
      await s.stop();
      await gate.stop();
    }
  });
});

describe('knowledge document metrics', () => {
  it('count documents in every processing state', async () => {
    const s = await startTestServer({ METRICS_PORT: String(await freePort()) });
    try {
      const kb = await createBase(s, { name: 'Counted' });
      const before = (await scrape(s)).text;
      for (const state of ['pending', 'processing', 'completed', 'failed']) expect(valueOf(before, 'owa_knowledge_documents', { state })).toBe(0);
      await uploadDocument(s, kb.id, 'note.txt', 'Metrics count this document once it is processed.', 'text/plain');
      const done = await waitUntil('the document to be counted as completed', async () => {
        const t = (await scrape(s)).text;
        return valueOf(t, 'owa_knowledge_documents', { state: 'completed' }) === 1 ? t : null;
      });
      expect(valueOf(done, 'owa_knowledge_documents', { state: 'pending' })).toBe(0);
      expect(valueOf(done, 'owa_knowledge_documents', { state: 'failed' })).toBe(0);
    } finally {
      await s.stop();
    }
  });
});

describe('runs reclaimed from an expired lease', () => {
  it('are counted by trigger and status when this process settles them', async () => {
    const s = await startTestServer({ METRICS_PORT: String(await freePort()), RUN_QUEUE_POLL_MS: '20' });
    try {
      const start = apiBlock('start_trigger', 'Start');
      const { id } = await buildWorkflow(s, 'Left behind', [start], []);
      const runId = (await s.ok('POST', `/api/v2/workflows/${id}/execute`, {})).runId as string;
      // A sync run another process was executing when it died: running, its lease long expired.
      const store = s.services.store;
      const base = (await store.workflowRuns.getByKey(id, runId))!;
      const baseLog = (await store.executionLogs.get(base.id))!;
      const at = new Date(Date.now() - 60_000).toISOString();
      const orphan = `orphan-${randomUUID()}`;
      await store.transaction(async (tx) => {
        await tx.workflowRuns.insert({ ...base, id: orphan, key: orphan, status: 'running', output: null, blockOutputs: null, error: null, costTotal: null, endedAt: null, durationMs: null, queuedAt: at, startedAt: at, updatedAt: at, leaseOwner: 'a-process-that-died', leaseUntil: at, attempts: 1 });
        await tx.executionLogs.insert({ ...baseLog, runId: orphan, runKey: orphan, status: 'running', startedAt: at, endedAt: null, createdAt: at });
      });
      const text = await waitUntil('the reclaimed run to be counted', async () => {
        const t = (await scrape(s)).text;
        return valueOf(t, 'owa_runs_settled_total', { trigger: 'api', status: 'failed' }) === 1 ? t : null;
      });
      expect((await store.workflowRuns.get(orphan))?.status).toBe('failed');
      // Settled without executing here: no duration observed.
      expect(valueOf(text, 'owa_run_duration_seconds_count', { trigger: 'api', status: 'failed' })).toBeUndefined();
    } finally {
      await s.stop();
    }
  });
});

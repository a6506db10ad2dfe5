// OpenTelemetry traces: off by default (nothing traced, no traceparent sent), and with an exporter a span per
// request (named by operation id, parented on the caller's traceparent), per run (run and workspace ids), per
// block and per outgoing call, whose traceparent the callee receives. A queued run continues the trace of the
// request that queued it. Last, a server process exports its spans to an OTLP/HTTP endpoint.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, apiCaller, buildWorkflow, link } from './support/api-workflow.ts';
import { waitUntil } from './support/wait.ts';
import { exited, spawnServer } from './support/children.ts';
import { startTracing, type Tracing } from '../src/ops/tracing.ts';
import { createBase } from './support/knowledge.ts';

/** A local HTTP server that answers 200 and keeps the headers of each request, by path. */
class EchoServer {
  readonly seen: { path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  private server!: http.Server;
  url = '';
  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.seen.push({ path: req.url ?? '/', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

/** A workflow whose API block GETs `url`. */
async function callingWorkflow(s: TestServer, url: string) {
  const start = apiBlock('start_trigger', 'Start');
  const call = apiBlock('api', 'Call', { url, method: 'GET' });
  const wf = await buildWorkflow(s, `Calls ${url}`, [start, call], [link(start, call)]);
  return { id: wf.id, callBlockId: call.id };
}

const echo = new EchoServer();
beforeAll(async () => {
  await echo.start();
});
afterAll(async () => {
  await echo.stop();
});

describe('without an OTLP endpoint', () => {
  it('traces nothing: an outgoing HTTP call carries no traceparent, even when the caller sent one', async () => {
    const s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
    try {
      const { id } = await callingWorkflow(s, `${echo.url}/untraced`);
      const r = await s.request(`/api/v2/workflows/${id}/execute`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', traceparent: `00-${hex(16)}-${hex(8)}-01` } });
      expect(r.status).toBe(200);
      await r.text();
      const seen = echo.seen.find((x) => x.path === '/untraced');
      expect(seen).toBeDefined();
      expect(seen!.headers.traceparent).toBeUndefined();
    } finally {
      await s.stop();
    }
  });
});

describe('with an exporter', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing | null;
  let s: TestServer;
  beforeAll(async () => {
    tracing = await startTracing({ tracesUrl: null, serviceName: 'tracing-test' }, { exporter });
    s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await s?.stop();
    await tracing?.shutdown();
  });

  const spans = () => exporter.getFinishedSpans();

  it('makes the caller\'s traceparent the parent of the request span, named by operation id', async () => {
    const { id } = await callingWorkflow(s, `${echo.url}/unused`);
    const traceId = hex(16);
    const callerSpan = hex(8);
    const r = await s.request(`/api/v2/workflows/${id}`, { headers: { traceparent: `00-${traceId}-${callerSpan}-01` } });
    expect(r.status).toBe(200);
    await r.text();
    const span = await waitUntil('the request span', () => spans().find((x) => x.name === 'getWorkflow' && x.spanContext().traceId === traceId));
    expect(parentOf(span)).toBe(callerSpan);
    expect(span.kind).toBe(1); // SERVER
    expect(span.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/api/v2/workflows/{workflowId}', 'http.response.status_code': 200, 'owa.operation_id': 'getWorkflow' });
    // Bounded: the id in the path is not a span name or attribute value.
    expect(JSON.stringify(span.attributes)).not.toContain(id);
    expect(span.resource.attributes['service.name']).toBe('tracing-test');
  });

  it('traces a sync run, its blocks and the HTTP call, which carries a traceparent of the block\'s call span', async () => {
    const { id, callBlockId } = await callingWorkflow(s, `${echo.url}/traced-sync`);
    const traceId = hex(16);
    const r = await s.request(`/api/v2/workflows/${id}/execute`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${hex(8)}-01` } });
    expect(r.status).toBe(200);
    const runId = ((await r.json()) as any).runId ?? r.headers.get('x-run-id');
    const received = echo.seen.find((x) => x.path === '/traced-sync')!;
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(received.headers.traceparent));
    expect(m, `traceparent ${received.headers.traceparent}`).not.toBeNull();
    expect(m![1]).toBe(traceId);
    const request = await waitUntil('the request span', () => spans().find((x) => x.name === 'executeWorkflow' && x.spanContext().traceId === traceId));
    const inTrace = spans().filter((x) => x.spanContext().traceId === traceId);
    const client = inTrace.find((x) => x.spanContext().spanId === m![2])!;
    expect(client).toMatchObject({ name: 'GET', kind: 2 }); // CLIENT
    expect(client.attributes).toMatchObject({ 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'http.response.status_code': 200 });
    const block = inTrace.find((x) => x.spanContext().spanId === parentOf(client))!;
    expect(block.name).toBe('block api');
    expect(block.attributes).toMatchObject({ 'owa.block.id': callBlockId, 'owa.block.type': 'api' });
    const run = inTrace.find((x) => x.spanContext().spanId === parentOf(block))!;
    expect(run.name).toBe('workflow.run');
    expect(run.attributes).toMatchObject({ 'owa.workspace.id': s.workspaceId, 'owa.workflow.id': id, 'owa.run.mode': 'sync', 'owa.run.status': 'completed' });
    if (runId) expect(run.attributes['owa.run.id']).toBe(runId);
    expect(parentOf(run)).toBe(request.spanContext().spanId);
    // The start block has its span too, under the run.
    expect(inTrace.some((x) => x.name === 'block start_trigger' && parentOf(x) === run.spanContext().spanId)).toBe(true);
  });

  it('traces a call to the embedding endpoint under the search request, and passes the traceparent on', async () => {
    const embeddings = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        echo.seen.push({ path: `/embeddings-endpoint${req.url}`, headers: req.headers, body });
        const input = (JSON.parse(body) as { input: string[] }).input;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: [1, 0, 0, 0, 0, 0, 0, index] })) }));
      });
    });
    await new Promise<void>((r) => embeddings.listen(0, '127.0.0.1', () => r()));
    const k = await startTestServer({ KB_EMBEDDING_BASE_URL: `http://127.0.0.1:${(embeddings.address() as AddressInfo).port}/v1`, KB_EMBEDDING_MODEL: 'fake-embed', KB_EMBEDDING_DIMENSIONS: '8' });
    try {
      const kb = await createBase(k, { name: 'Traced KB' });
      const traceId = hex(16);
      const r = await k.request('/api/v2/knowledge/search', {
        method: 'POST',
        body: JSON.stringify({ workspaceId: k.workspaceId, knowledgeBaseIds: [kb.id], query: 'refund policy' }),
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${hex(8)}-01` },
      });
      expect(r.status, await r.text()).toBe(200);
      const received = echo.seen.find((x) => x.path.startsWith('/embeddings-endpoint') && String(x.headers.traceparent).includes(traceId));
      expect(received, 'the embedding endpoint got the trace').toBeDefined();
      const spanId = String(received!.headers.traceparent).split('-')[2];
      const call = await waitUntil('the embeddings span', () => spans().find((x) => x.spanContext().spanId === spanId));
      expect(call).toMatchObject({ name: 'embeddings fake-embed', kind: 2 });
      expect(call.attributes).toMatchObject({ 'gen_ai.request.model': 'fake-embed', 'http.response.status_code': 200 });
      expect(call.spanContext().traceId).toBe(traceId);
    } finally {
      await k.stop();
      embeddings.closeAllConnections();
      await new Promise((r) => embeddings.close(r));
    }
  });

  it('continues the trace of the request that queued an async run when the queue executes it later', async () => {
    const { id } = await callingWorkflow(s, `${echo.url}/traced-async`);
    const traceId = hex(16);
    const r = await s.request(`/api/v2/workflows/${id}/execute`, { method: 'POST', body: JSON.stringify({ async: true }), headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${hex(8)}-01` } });
    expect(r.status).toBe(202);
    const runId = ((await r.json()) as any).data.runId as string;
    const run = await waitUntil('the run span', () => spans().find((x) => x.name === 'workflow.run' && x.attributes['owa.run.id'] === runId));
    expect(run.spanContext().traceId).toBe(traceId);
    expect(run.attributes).toMatchObject({ 'owa.workspace.id': s.workspaceId, 'owa.run.mode': 'async', 'owa.run.trigger': 'api', 'owa.run.status': 'completed' });
    const request = await waitUntil('the request span', () => spans().find((x) => x.name === 'executeWorkflow' && x.spanContext().traceId === traceId));
    expect(parentOf(run)).toBe(request.spanContext().spanId);
    const received = echo.seen.find((x) => x.path === '/traced-async')!;
    expect(String(received.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-`));
  });
});

describe('a server process with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('exports its spans to the OTLP/HTTP endpoint (at the latest when it stops)', async () => {
    const received: { path: string; type: string; body: string }[] = [];
    const collector = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: String(req.headers['content-type']), body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    const collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-otlp-'));
    const key = 'sk-owa-otlp-test-key-0123456789abcdef';
    try {
      const server = await spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', BOOTSTRAP_API_KEY: key, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'owa-under-test' });
      const traceId = hex(16);
      const r = await fetch(`${server.url}/api/v2/workspaces`, { headers: { 'X-API-Key': key, traceparent: `00-${traceId}-${hex(8)}-01` } });
      expect(r.status).toBe(200);
      await r.text();
      await apiCaller(server.url, key)('GET', '/api/v2/workspaces');
      const done = exited(server.child);
      server.child.kill('SIGTERM');
      expect(await done).toBe(0);
      const exports = received.filter((x) => x.path === '/v1/traces');
      expect(exports.length).toBeGreaterThan(0);
      const all = exports.map((x) => x.body).join('\n');
      expect(all).toContain('owa-under-test');
      expect(all).toContain('listWorkspaces');
      expect(all).toContain(traceId);
    } finally {
      collector.closeAllConnections();
      await new Promise<void>((r) => collector.close(() => r()));
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

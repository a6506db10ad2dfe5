// The platform's Python SDK (simstudio-sdk 0.2.x) with `stream=True`, reproduced without Python: the exact request
// it makes (requests' default headers, its JSON body) and the way it reads the answer (`response.json()` on the
// whole body, then `data.runId`, `data.status`, ...). Beside it, the other forms of a streamed run stay as they were.
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { parseAccept, runStreamFormat } from '../src/http/negotiate.ts';

let s: TestServer;
let double: BuiltWorkflow;

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '10000' });
  const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] });
  const fn = apiBlock('function', 'Double', { code: 'return <start.n> * 2' });
  const out = apiBlock('response', 'Out', { data: '{"v": <double.result>}' });
  double = await buildWorkflow(s, 'Python stream', [start, fn, out], [link(start, fn), link(fn, out)]);
});
afterAll(() => s.stop());

/** Python's json.dumps with its default separators, as requests serializes `json=`. */
function pythonJsonDumps(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (typeof value === 'object') return `{${Object.entries(value as object).map(([k, v]) => `${JSON.stringify(k)}: ${pythonJsonDumps(v)}`).join(', ')}}`;
  return JSON.stringify(value);
}

/** What `SimStudioClient.execute_workflow(workflow_id, input, stream=True, selected_outputs=...)` puts on the wire. */
function sdkExecute(workflowId: string, input: Record<string, unknown>, selectedOutputs?: string[]) {
  const body: Record<string, unknown> = { input, stream: true };
  if (selectedOutputs) body.selectedOutputs = selectedOutputs;
  const payload = pythonJsonDumps(body);
  const url = new URL(`/api/v2/workflows/${workflowId}/execute`, s.url);
  return new Promise<{ status: number; reason: string; headers: http.IncomingHttpHeaders; content: Buffer }>((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        // requests.Session defaults (User-Agent, Accept-Encoding, Accept, Connection), then the SDK's own headers.
        headers: {
          'User-Agent': 'python-requests/2.32.3',
          'Accept-Encoding': 'gzip, deflate',
          Accept: '*/*',
          Connection: 'keep-alive',
          'X-API-Key': s.key,
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(payload)),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? '', headers: res.headers, content: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

class SimStudioError extends Error {
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

/** The SDK's reading of the answer: errors by status, then one JSON document with `data`. */
function sdkRead(r: Awaited<ReturnType<typeof sdkExecute>>) {
  const raw = r.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(r.content) : r.headers['content-encoding'] === 'deflate' ? zlib.inflateSync(r.content) : r.content;
  const text = raw.toString('utf8');
  if (r.status === 429) throw new SimStudioError('Rate limit exceeded', 'RATE_LIMIT_EXCEEDED');
  if (r.status < 200 || r.status >= 400) {
    const error = (JSON.parse(text) as { error?: { message?: string; code?: string } }).error ?? {};
    throw new SimStudioError(error.message ?? `HTTP ${r.status}: ${r.reason}`, error.code);
  }
  // requests' response.json(): the whole body must be one JSON value (surrounding whitespace allowed).
  const result = JSON.parse(text) as Record<string, any>;
  if (!('data' in result)) throw new SimStudioError('Invalid v2 workflow execution response', 'EXECUTION_ERROR');
  const data = result.data;
  if (r.status === 202) return { async: true, runId: data.runId as string, statusUrl: data.statusUrl as string };
  return {
    success: ['completed', 'paused'].includes(data.status),
    output: data.output,
    error: data.error ? (data.error.message as string) : null,
    metadata: { duration: data.durationMs, runId: data.runId as string, startTime: data.startedAt, endTime: data.endedAt },
    status: data.status as string,
    blockOutputs: data.blockOutputs,
  };
}

describe('the Python SDK with stream=True', () => {
  it('gets one JSON document it reads, with the run result and the selected outputs', async () => {
    const r = await sdkExecute(double.id, { n: 21 }, ['double.result']);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('application/json');
    expect(String(r.headers.vary)).toMatch(/Accept/);
    const result = sdkRead(r);
    expect(result).toMatchObject({ success: true, status: 'completed', output: { v: 42 }, error: null, blockOutputs: { 'double.result': 42 } });
    expect((result as { metadata: { runId: string } }).metadata.runId).toMatch(/.+/);
  });

  it('get_workflow_run(include_output=True, selected_outputs=[...]) reads block outputs by name', async () => {
    const runId = (sdkRead(await sdkExecute(double.id, { n: 4 })) as { metadata: { runId: string } }).metadata.runId;
    // requests encodes params with quote_plus: the comma joining the selectors becomes %2C.
    const query = 'includeOutput=true&selectedOutputs=' + ['double.result', 'Out.data.v'].join(',').replace(/,/g, '%2C');
    const r = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(new URL(`/api/v2/workflows/${double.id}/runs/${runId}?${query}`, s.url), {
        headers: { 'User-Agent': 'python-requests/2.32.3', 'Accept-Encoding': 'gzip, deflate', Accept: '*/*', Connection: 'keep-alive', 'X-API-Key': s.key, 'Content-Type': 'application/json' },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(r.status, r.text).toBe(200);
    const data = JSON.parse(r.text).data;
    expect(data).toMatchObject({ status: 'completed', output: { v: 8 }, blockOutputs: { 'double.result': 8, 'Out.data.v': 8 } });
  });

  it('reads a refused request as an error, not a parse failure', async () => {
    const r = await sdkExecute(double.id, { n: 1 }, ['ghost.value']);
    expect(r.status).toBe(400);
    expect(() => sdkRead(r)).toThrow(/ghost\.value/);
  });
});

describe('the other forms of a streamed run are unchanged', () => {
  const post = (accept: string | null, body: unknown) =>
    s.request(`/api/v2/workflows/${double.id}/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(accept === null ? {} : { accept }) },
      body: JSON.stringify(body),
    });

  it('SSE when text/event-stream is accepted (sim workflows run --follow)', async () => {
    const r = await post('text/event-stream', { input: { n: 2 }, stream: true });
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const frames = (await r.text()).split('\n\n').filter(Boolean).map((f) => JSON.parse(f.replace(/^data: /, '')));
    expect(frames.at(-1)).toBe('[DONE]');
    expect(frames.at(-2)).toMatchObject({ event: 'final', data: { success: true, output: { v: 4 } } });
  });

  it('NDJSON by default (fetch sends */*) and when asked for', async () => {
    for (const accept of [null, '*/*', 'application/x-ndjson']) {
      const r = await post(accept, { input: { n: 3 }, stream: true });
      expect(r.headers.get('content-type'), String(accept)).toContain('application/x-ndjson');
      const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l));
      expect(lines.length).toBeGreaterThan(2);
      expect(lines.at(-1)).toMatchObject({ type: 'final', data: { success: true, output: { v: 6 } } });
    }
  });

  it('one JSON document for any client that asks for application/json', async () => {
    const r = await post('application/json', { input: { n: 4 }, stream: true });
    expect(r.headers.get('content-type')).toContain('application/json');
    expect(((await r.json()) as any).data).toMatchObject({ status: 'completed', output: { v: 8 } });
  });
});

describe('runStreamFormat', () => {
  it('follows explicit media types and q-values, then the default', () => {
    expect(runStreamFormat('text/event-stream', undefined)).toBe('sse');
    expect(runStreamFormat('application/json, text/event-stream;q=0.5', undefined)).toBe('json');
    expect(runStreamFormat('text/event-stream;q=0, */*', undefined)).toBe('ndjson');
    expect(runStreamFormat('application/x-ndjson', 'python-requests/2.32.3')).toBe('ndjson');
    expect(runStreamFormat('*/*', 'python-requests/2.32.3')).toBe('json');
    expect(runStreamFormat(undefined, 'node')).toBe('ndjson');
    expect(parseAccept('text/html;level=1;q=0.7, bogus, */*')).toEqual([
      { type: 'text/html', q: 0.7 },
      { type: '*/*', q: 1 },
    ]);
  });
});

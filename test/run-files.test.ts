// Files a run produces: a function returning {name, type, base64} and an API response with a binary body are
// stored with the run, listed under `files`, downloadable (downloadRunFile), and inlined on request.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';

let s: TestServer;
let target: http.Server;
let targetUrl: string;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3, 250, 251]);

beforeAll(async () => {
  target = http.createServer((_req, res) => {
    res.setHeader('content-type', 'image/png');
    res.setHeader('content-disposition', 'attachment; filename="pixel.png"');
    res.end(PNG);
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1000', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
});
afterAll(async () => {
  await s.stop();
  await new Promise((r) => target.close(r));
});

describe('run files', () => {
  it('a function returning a file and a binary API response become downloadable run files', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Make', { code: 'return { report: { name: "hello.txt", type: "text/plain", base64: "aGVsbG8sIGZpbGVz" }, n: 1 }' });
    const api = apiBlock('api', 'Fetch', { url: `${targetUrl}/img`, method: 'GET' });
    const wf = await buildWorkflow(s, 'Produces files', [start, fn, api], [link(start, fn), link(fn, api)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.body.data.status, r.text).toBe('completed');
    const runId = r.body.data.runId;
    const run = await s.call('GET', `/api/v2/workflows/${wf.id}/runs/${runId}`);
    expect(run.status, run.text).toBe(200);
    const files = run.body.data.files;
    expect(files.map((f: any) => [f.name, f.type, f.size])).toEqual([
      ['hello.txt', 'text/plain', 12],
      ['pixel.png', 'image/png', PNG.length],
    ]);
    expect(files[0].base64).toBeNull();
    const text = await s.request(files[0].downloadPath);
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toContain('text/plain');
    expect(await text.text()).toBe('hello, files');
    const img = await s.request(files[1].downloadPath);
    expect(img.headers.get('content-disposition')).toContain('pixel.png');
    expect(Buffer.from(await img.arrayBuffer()).equals(PNG)).toBe(true);
    const part = await s.request(files[1].downloadPath, { headers: { range: 'bytes=0-3' } });
    expect(part.status).toBe(206);
    // the block outputs carry references, not bytes
    const log = await s.call('GET', `/api/v2/logs/${runId}`);
    const spans = JSON.stringify(log.body.data.traceSpans ?? log.body.data.executionData?.traceSpans ?? log.body.data);
    expect(spans).toContain('"downloadPath"');
    const made = (function find(list: any[]): any {
      for (const sp of list ?? []) {
        if (sp.name === 'Make' || sp.blockName === 'Make') return sp;
        const inner = find(sp.children);
        if (inner) return inner;
      }
      return undefined;
    })(log.body.data.traceSpans ?? []);
    if (made) expect(JSON.stringify(made.output)).not.toContain(btoa('hello, files'));
    // inlined on request, with a ceiling
    const inlined = await s.call('GET', `/api/v2/workflows/${wf.id}/runs/${runId}?includeOutput=true&includeFileBase64=true`);
    expect(Buffer.from(inlined.body.data.files[1].base64, 'base64').equals(PNG)).toBe(true);
    const over = await s.call('GET', `/api/v2/workflows/${wf.id}/runs/${runId}?includeOutput=true&includeFileBase64=true&base64MaxBytes=5`);
    expect(over.status).toBe(413);
    expect(over.body.error.details.downloadPath).toContain(`/runs/${runId}/files/`);
    // unknown file, someone else's run
    expect((await s.call('GET', `/api/v2/workflows/${wf.id}/runs/${runId}/files/rf_nope`)).status).toBe(404);
    const outsider = await s.newUser('runfiles-outsider@example.com');
    expect((await s.request(files[0].downloadPath, { key: outsider.key })).status).toBe(404);
    // the CLI shows the files with their bytes
    const cli = await runCli(['--output', 'json', 'workflows', 'runs', 'get', runId, '--workflow', wf.id, '--include-output', '--include-file-base64'], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });
    expect(cli.code, cli.stderr + cli.stdout).toBe(0);
    expect(cli.stdout).toContain('hello.txt');
    expect(cli.stdout).toContain(btoa('hello, files'));
  });

  it('runs without files report files: null', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Plain', { code: 'return { name: "not a file" }' });
    const wf = await buildWorkflow(s, 'No files', [start, fn], [link(start, fn)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    const run = await s.call('GET', `/api/v2/workflows/${wf.id}/runs/${r.body.data.runId}`);
    expect(run.body.data.files).toBeNull();
  });
});

// The probes an operator's supervisor or load balancer polls: GET /healthz (the process answers) and GET /readyz
// (it can serve), without a key, saying nothing beyond a status word, not in the access log; /readyz is 503
// while the server starts and from the moment it begins to shut down.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { bindListener } from '../src/server.ts';
import { apiCaller, deployHeldWorkflow } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { exited, spawnServer } from './support/children.ts';
import { waitUntil } from './support/wait.ts';

const KEY = 'sk-owa-health-test-key-0123456789abcd';
const dirs: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-health-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function probe(url: string, method = 'GET') {
  const r = await fetch(url, { method });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

describe('while the server is starting', () => {
  it('/healthz answers 200 and /readyz 503; everything else is 503 "starting"', async () => {
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: tempDir(), NODE_ENV: 'test' });
    const listener = await bindListener(config);
    try {
      const url = `http://127.0.0.1:${(listener.address() as net.AddressInfo).port}`;
      expect(await probe(`${url}/healthz`)).toEqual({ status: 200, type: 'application/json', text: '{"status":"ok"}' });
      expect(await probe(`${url}/readyz`)).toEqual({ status: 503, type: 'application/json', text: '{"status":"unavailable"}' });
      expect((await probe(`${url}/api/v2/meta`)).status).toBe(503);
    } finally {
      listener.closeAllConnections();
      await new Promise((r) => listener.close(r));
    }
  });
});

describe('a running server', () => {
  it('answers both probes without a key, with no access-log line; /readyz turns 503 as shutdown begins', async () => {
    const dataDir = tempDir();
    const gate = await new GateServer().start();
    const server = await spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'debug', BOOTSTRAP_API_KEY: KEY, EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
    let out = '';
    server.child.stdout!.on('data', (c) => (out += c));
    try {
      for (const p of ['/healthz', '/readyz', '/readyz?verbose=1']) {
        const r = await probe(server.url + p);
        expect(r, p).toEqual({ status: 200, type: 'application/json', text: '{"status":"ok"}' });
      }
      expect(await probe(`${server.url}/readyz`, 'HEAD')).toEqual({ status: 200, type: 'application/json', text: '' });
      // Polled often: no rate limit ever answers them.
      for (let i = 0; i < 50; i++) expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

      // A sync run held at the gate keeps its request, and so the server, in shutdown for as long as the test needs.
      const call = apiCaller(server.url, KEY);
      const wf = { id: (await deployHeldWorkflow(call, gate, 'Held', 'shutdown')).workflowId };

      // One connection: the sync run's request, then (once shutdown has begun) a /readyz on the same connection,
      // which a shutting-down server still reads while the first request is in flight.
      const port = Number(new URL(server.url).port);
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      socket.setEncoding('utf8').on('data', (c) => (received += c));
      const ended = new Promise((r) => socket.once('close', r));
      const body = JSON.stringify({});
      socket.write(`POST /api/v2/workflows/${wf.id}/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      await waitUntil('the run to reach the gate', () => gate.holding('shutdown'));

      server.child.kill('SIGTERM');
      await waitUntil('shutdown to begin', () => out.includes('"msg":"shutting down"'));
      socket.write('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      // The probe's answer queues behind the run's; the run finishes once the gate opens.
      await waitUntil('the server to answer the probe', () => /"path":"\/readyz","status":503,"msg":"probe"/.test(out));
      gate.release('shutdown');
      await ended;
      const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      expect(statuses, received).toEqual([200, 503]);
      expect(received).toContain('{"status":"unavailable"}');
      expect(await exited(server.child)).toBe(0);
      // No access-log line for a probe (polling every second would flood the log): only a debug line.
      expect(out).not.toMatch(/"path":"\/(healthz|readyz)"[^\n]*"msg":"request/);
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGTERM');
      await gate.stop();
    }
  });
});

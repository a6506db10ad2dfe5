// Access logging when the client goes away: a download closed early, a JSON body or a raw upload part cut off
// mid-way. Each request gets exactly one access line (marked aborted, info level) and nothing at error level.
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createServices, startServer, type RunningServer } from '../src/server.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { waitUntil } from './support/wait.ts';

const lines: any[] = [];
let server: RunningServer;
let key: string;
let workspaceId: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-logging-'));
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const logger = pino({ level: 'debug', base: undefined }, sink);
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, NODE_ENV: 'test', BODY_LIMIT: '64mb', UPLOAD_PART_SIZE: '1mb' });
  const services = await createServices(config, logger);
  const boot = (await bootstrapIfEmpty(services.store, { apiKey: null }))!;
  key = boot.key.key;
  workspaceId = boot.workspace.id;
  server = await startServer(services);
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const forPath = (p: string) => lines.filter((l) => l.path === p);
let barriers = 0;
/**
 * Waits for the access line of `pathname`, then for that of a later request: the server handles its events in
 * order, so whatever the first request still had to log is logged by then.
 */
async function settle(pathname: string): Promise<void> {
  await waitUntil(`the access line of ${pathname}`, () => forPath(pathname).length > 0);
  const barrier = `/barrier-${++barriers}`;
  await (await fetch(server.url + barrier)).arrayBuffer();
  await waitUntil(`the access line of ${barrier}`, () => forPath(barrier).length > 0);
}
const errors = () => lines.filter((l) => l.level >= 50);

/** Sends the head of a request and `partial` of its declared body, then drops the connection. */
async function cutBody(method: string, pathname: string, headers: Record<string, string>, declared: number, partial: string): Promise<void> {
  const url = new URL(server.url + pathname);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise((r) => socket.once('connect', r));
  const head = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, `Content-Length: ${declared}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  // Handed to the kernel before the close, so the server reads the head and the partial body, then the end.
  await new Promise((r) => socket.write(head.join('\r\n') + '\r\n\r\n' + partial, r));
  socket.destroy();
  await settle(url.pathname);
}

describe('a client that goes away', () => {
  it('closing a streamed download early: one access line marked aborted, no error', async () => {
    const content = 'x'.repeat(24 * 1024 * 1024);
    const res = await fetch(`${server.url}/api/v2/files`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ workspaceId, name: 'big.txt', content }),
    });
    expect(res.status).toBe(200);
    const fileId = ((await res.json()) as any).data.id;
    const pathname = `/api/v2/files/${fileId}`;
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${server.url}${pathname}?workspaceId=${workspaceId}`, { headers: { 'X-API-Key': key } }, (r) => {
        r.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (e) => (e.message === 'socket hang up' || (e as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(e)));
    });
    await settle(pathname);
    expect(errors()).toEqual([]);
    expect(lines.filter((l) => /request failed/.test(l.msg))).toEqual([]);
    const access = forPath(pathname);
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ level: 30, method: 'GET', status: 200, aborted: true });
  });

  it('dropping the connection mid-body (JSON and a raw upload part): one access line each, no error', async () => {
    await cutBody('POST', '/api/v2/workflows', { 'X-API-Key': key, 'Content-Type': 'application/json' }, 5000, '{"workspaceId":"');
    expect(errors()).toEqual([]);
    const json = forPath('/api/v2/workflows');
    expect(json).toHaveLength(1);
    expect(json[0]).toMatchObject({ level: 30, method: 'POST', aborted: true });

    const up = await fetch(`${server.url}/api/v2/files/uploads`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ workspaceId, name: 'part.bin', contentType: 'application/octet-stream', size: 5000 }),
    });
    const transfer = ((await up.json()) as any).data.transfer;
    const url = new URL(transfer.url);
    await cutBody('PUT', url.pathname + url.search, { 'Content-Type': 'application/octet-stream' }, 5000, 'abc');
    expect(errors()).toEqual([]);
    const part = forPath(url.pathname);
    expect(part).toHaveLength(1);
    expect(part[0]).toMatchObject({ level: 30, method: 'PUT', aborted: true });
  });

  it('a completed request still logs its ordinary access line once', async () => {
    const r = await fetch(`${server.url}/api/v2/meta`, { headers: { 'X-API-Key': key } });
    expect(r.status).toBe(200);
    await settle('/api/v2/meta');
    const access = forPath('/api/v2/meta');
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ level: 30, status: 200, msg: 'request' });
    expect(access[0]).not.toHaveProperty('aborted');
  });
});

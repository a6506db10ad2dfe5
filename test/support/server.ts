// Starts a real server on an ephemeral loopback port with its own temporary database.
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { createServices, startServer, type RunningServer } from '../../src/server.ts';
import { createLogger } from '../../src/http/logging.ts';
import { bootstrapIfEmpty, createApiKey, createUser, createWorkspace, setMember } from '../../src/identity/admin.ts';
import type { WorkspaceRole } from '../../src/store/workspaces.ts';
import { createTestDatabase, testDatabaseIsPostgres } from './postgres.ts';
import { randomBytes } from 'node:crypto';

export interface TestServer extends RunningServer {
  /** The bootstrap admin's personal key. */
  key: string;
  userId: string;
  workspaceId: string;
  dataDir: string;
  /** The environment naming this server's database (DATABASE_URL and SECRETS_KEY on Postgres; empty on SQLite): spread it into a child's env beside DATA_DIR. */
  databaseEnv: Record<string, string>;
  request(pathname: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  /** A JSON call: sends `body` as JSON when given, parses the answer; `key` null sends no key. */
  call(method: string, pathname: string, body?: unknown, key?: string | null): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  /** `call` that expects success: the answer's `data`, or an error naming the status and body. */
  ok(method: string, pathname: string, body?: unknown): Promise<any>;
  /** A new user with a personal key, optionally a member of some workspaces. */
  newUser(email: string, memberships?: Record<string, WorkspaceRole>): Promise<{ userId: string; key: string }>;
  newWorkspace(name: string, ownerId?: string): Promise<string>;
  stop(): Promise<void>;
}

/**
/**
 * TEST_BLOB_STORE=s3 runs any test file's servers with their file bytes in a local S3-compatible server of
 * their own (test/support/s3.ts), e.g. `TEST_BLOB_STORE=s3 npx vitest run test/files-http.test.ts`.
 */
async function blobStoreForTests(env: Record<string, string>): Promise<{ env: Record<string, string>; stop: () => Promise<void> }> {
  if (process.env.TEST_BLOB_STORE !== 's3' || env.BLOB_STORE || env.BLOB_DIR) return { env, stop: async () => {} };
  const { startLocalS3 } = await import('./s3.ts');
  const s3 = await startLocalS3();
  return { env: { ...s3.env, ...env }, stop: () => s3.stop() };
}

/**
 * Environment for a test server's database: with TEST_DATABASE=postgres, a fresh database of the run's test
 * Postgres (and a secrets key, which Postgres mode requires); otherwise nothing (SQLite in DATA_DIR).
 */
export async function testDatabaseEnv(env: Record<string, string> = {}): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (!testDatabaseIsPostgres() || env.DATABASE_URL !== undefined) return { env: {}, drop: async () => undefined };
  const db = await createTestDatabase();
  return { env: { DATABASE_URL: db.url, SECRETS_KEY: env.SECRETS_KEY ?? randomBytes(32).toString('base64') }, drop: db.drop };
}

export async function startTestServer(wanted: Record<string, string> = {}): Promise<TestServer> {
  const { env, stop: stopBlobStore } = await blobStoreForTests(wanted);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-test-'));
  const database = await testDatabaseEnv(env);
  let services: Awaited<ReturnType<typeof createServices>>;
  try {
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test', ...database.env, ...env });
    services = await createServices(config, createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'));
  } catch (err) {
    // A start that is meant to fail (a bad setting, a missing bucket) leaves nothing behind.
    await stopBlobStore();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const boot = (await bootstrapIfEmpty(services.store, { apiKey: null }))!;
  const server = await startServer(services);
  const store = services.store;
  const request = (pathname: string, init: RequestInit & { key?: string | null } = {}) => {
    const { key = boot.key.key, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (key) headers.set('X-API-Key', key);
    return fetch(server.url + pathname, { ...rest, headers });
  };
  const testServer: TestServer = {
    ...server,
    key: boot.key.key,
    userId: boot.user.id,
    workspaceId: boot.workspace.id,
    dataDir,
    databaseEnv: database.env,
    request,
    async call(method, pathname, body, key) {
      const init: RequestInit & { key?: string | null } = { method };
      if (key !== undefined) init.key = key;
      if (body !== undefined) {
        init.body = JSON.stringify(body);
        init.headers = { 'content-type': 'application/json' };
      }
      const res = await request(pathname, init);
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
    },
    async ok(method, pathname, body) {
      const r = await testServer.call(method, pathname, body);
      if (r.status >= 300) throw new Error(`${method} ${pathname} → ${r.status} ${r.text}`);
      return r.body.data;
    },
    async newUser(email, memberships = {}) {
      const user = await createUser(store, { email });
      for (const [workspaceId, role] of Object.entries(memberships)) await setMember(store, { workspaceId, userId: user.id, role });
      const issued = await createApiKey(store, { kind: 'personal', userId: user.id });
      return { userId: user.id, key: issued.key };
    },
    async newWorkspace(name, ownerId = boot.user.id) {
      return (await createWorkspace(store, { name, ownerId })).id;
    },
    async stop() {
      await server.close();
      await stopBlobStore();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return testServer;
}

/**
 * `npm run admin -- …` against a test server's database, without blocking this process: the server runs here, and
 * on Postgres a write of the admin command may wait for a transaction this process has open (spawnSync would
 * stop it from ever committing).
 */
export function runAdmin(server: TestServer, args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.resolve(import.meta.dirname, '../../bin/admin.js'), ...args], {
      env: { PATH: process.env.PATH, DATA_DIR: server.dataDir, ...server.databaseEnv, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * A JSON call with extra headers and an optional other key (`TestServer.call` takes neither headers nor a
 * non-JSON answer): the status, the parsed body (undefined when it is not JSON), the text and the headers.
 */
export async function callWithHeaders(server: TestServer, method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}, key?: string) {
  const r = await server.request(pathname, {
    method,
    key,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, body: json, text, headers: r.headers };
}

/** A raw HTTP request, for what fetch refuses to send (a body on GET). */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, ...(options.body !== undefined ? { 'Content-Length': String(Buffer.byteLength(options.body)) } : {}) };
    const req = http.request(url, { method: options.method ?? 'GET', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let body: any = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

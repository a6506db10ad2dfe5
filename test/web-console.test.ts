// The web console over HTTP: every webUrl the API returns answers an HTML page (after the sign-in page for a
// signed-out browser), a non-member gets a 404 page, and the API accepts the sign-in session cookie: reads as
// the user, changes only with the page's CSRF token, from our own origin, and only as far as the user's role.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { FakeBrowser } from './support/browser-session.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { createUser, setMember } from '../src/identity/admin.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';

const PASSWORD = 'console password 123';
let s: TestServer;
let gate: GateServer;
let email: string;

beforeAll(async () => {
  gate = await new GateServer().start();
  // One worker, so a second run waits in the queue while the first is held at the gate.
  s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32', RUN_WORKERS: '1' });
  email = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
});
afterAll(async () => {
  gate?.release('queue');
  await s?.stop();
  await gate?.stop();
});

async function signedIn(who = email): Promise<FakeBrowser> {
  const b = new FakeBrowser(s.url);
  const r = await b.signIn(who, PASSWORD);
  expect(r.status).toBe(303);
  return b;
}
const csrfOf = (html: string) => /data-csrf="([^"]+)"/.exec(html)![1]!;

describe('web console pages', () => {
  it('every webUrl answers the console page; signed out it is the sign-in page first', async () => {
    const wf = await s.ok('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'Linked' });
    const table = await s.ok('POST', '/api/v2/tables', { workspaceId: s.workspaceId, name: 'linked', schema: { columns: [{ name: 'a', type: 'string' }] } });
    const kb = await s.ok('POST', '/api/v2/knowledge', { workspaceId: s.workspaceId, name: 'Linked KB' });
    const urls = [wf.webUrl, table.webUrl, kb.webUrl].map((u: string) => new URL(u).pathname);
    const anonymous = new FakeBrowser(s.url);
    for (const path of urls) {
      const r = await anonymous.get(path);
      expect(r.status).toBe(303);
      expect(r.location).toBe(`/login?next=${encodeURIComponent(path)}`);
    }
    const b = await signedIn();
    for (const path of [...urls, `/workspace/${s.workspaceId}`, `/workspace/${s.workspaceId}/operations`, '/workspace']) {
      const r = await b.get(path);
      expect(r.status, path).toBe(200);
      expect(r.res.headers.get('content-type')).toMatch(/text\/html/);
      expect(r.text).toContain('/_web/console/main.js');
    }
  });

  it('a signed-in user who is not a member gets a 404 page, not the workspace', async () => {
    const other = await createUser(s.services.store, { email: 'outsider@console.test' });
    await setUserPassword(s.services.store, other.id, PASSWORD);
    const b = await signedIn('outsider@console.test');
    const r = await b.get(`/workspace/${s.workspaceId}`);
    expect(r.status).toBe(404);
    expect(r.text).toContain('not a member');
  });
});

describe('the API with the sign-in session', () => {
  it('reads as the user, and changes only with the page\'s CSRF token from our own origin', async () => {
    const b = await signedIn();
    const page = await b.get(`/workspace/${s.workspaceId}`);
    const csrf = csrfOf(page.text);
    const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const meta = await fetch(`${s.url}/api/v2/meta`, { headers: { cookie } });
    expect(((await meta.json()) as any).data.keyType).toBe('web_session');
    const body = JSON.stringify({ workspaceId: s.workspaceId, name: 'From the console' });
    const post = (headers: Record<string, string>) => fetch(`${s.url}/api/v2/workflows`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body });
    const without = await post({});
    expect(without.status).toBe(403);
    expect(((await without.json()) as any).error.code).toBe('FORBIDDEN');
    expect((await post({ 'x-csrf-token': 'forged' })).status).toBe(403);
    expect((await post({ 'x-csrf-token': csrf, origin: 'https://evil.example' })).status).toBe(403);
    const made = await post({ 'x-csrf-token': csrf, origin: s.url });
    expect(made.status).toBe(201);
    // Without any cookie the API still asks for a key.
    expect((await fetch(`${s.url}/api/v2/meta`)).status).toBe(401);
  });

  it('a reader\'s session reads but the policy refuses its writes', async () => {
    const reader = await createUser(s.services.store, { email: 'reader@console.test' });
    await setMember(s.services.store, { workspaceId: s.workspaceId, userId: reader.id, role: 'read' });
    await setUserPassword(s.services.store, reader.id, PASSWORD);
    const b = await signedIn('reader@console.test');
    const page = await b.get(`/workspace/${s.workspaceId}`);
    expect(page.text).toContain('data-can-write="false"');
    const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const list = await fetch(`${s.url}/api/v2/workflows?workspaceId=${s.workspaceId}`, { headers: { cookie } });
    expect(list.status).toBe(200);
    const write = await fetch(`${s.url}/api/v2/workflows`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', 'x-csrf-token': csrfOf(page.text) },
      body: JSON.stringify({ workspaceId: s.workspaceId, name: 'Not allowed' }),
    });
    expect(write.status).toBe(403);
  });
});

/** Waits for `check` to hold, polling the server (never a fixed sleep). */
async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe('lint findings for readers (GET /workflows/{id}/lint, an extension)', () => {
  it('answers what a dry-run state write of the unchanged draft answers, to a reader too; 404 for unknown and foreign workflows', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const orphan = apiBlock('function', 'Orphan', { code: 'return <nowhere.result>' });
    const wf = await buildWorkflow(s, 'Lint me', [start, orphan], [], { deploy: false });
    const state = await s.ok('GET', `/api/v2/workflows/${wf.id}/state`);
    const dry = await s.ok('PUT', `/api/v2/workflows/${wf.id}/state?dryRun=true`, { blocks: state.blocks, edges: state.edges });
    const lint = await s.ok('GET', `/api/v2/workflows/${wf.id}/lint`);
    expect(lint).toEqual({ id: wf.id, needsRedeployment: dry.needsRedeployment, lint: dry.lint });
    expect(lint.lint.orphanBlocks.map((b: any) => b.blockName)).toContain('Orphan');
    expect(lint.lint.unresolvedReferences.length).toBeGreaterThan(0);

    const reader = await s.newUser('lint-reader@console.test', { [s.workspaceId]: 'read' });
    const asReader = await s.call('GET', `/api/v2/workflows/${wf.id}/lint`, undefined, reader.key);
    expect(asReader.status).toBe(200);
    expect(asReader.body.data).toEqual(lint);
    // The dry run it replaces needs the write role.
    expect((await s.call('PUT', `/api/v2/workflows/${wf.id}/state?dryRun=true`, { blocks: state.blocks, edges: state.edges }, reader.key)).status).toBe(403);

    const missing = await s.call('GET', '/api/v2/workflows/no-such-workflow/lint');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
    const stranger = await s.newUser('lint-stranger@console.test');
    expect((await s.call('GET', `/api/v2/workflows/${wf.id}/lint`, undefined, stranger.key)).status).toBe(404);
  });
});

describe('queue depth (GET /workspaces/{id}/queue, an extension)', () => {
  it('counts the workspace\'s queued and running runs and ages its oldest queued run; readers may read it, strangers get 404', async () => {
    const empty = await s.ok('GET', `/api/v2/workspaces/${s.workspaceId}/queue`);
    expect(empty).toMatchObject({ workspaceId: s.workspaceId, queued: 0, running: 0, oldestQueuedAt: null, oldestQueuedAgeMs: null });
    const start = apiBlock('start_trigger', 'Start');
    const held = gate.block('Held', 'queue');
    const wf = await buildWorkflow(s, 'Queued behind the gate', [start, held], [link(start, held)]);
    const first = await s.ok('POST', `/api/v2/workflows/${wf.id}/execute`, { input: {}, async: true });
    await until(async () => gate.holding('queue'), Boolean, 'the first run at the gate');
    const second = await s.ok('POST', `/api/v2/workflows/${wf.id}/execute`, { input: {}, async: true });
    const q = await s.ok('GET', `/api/v2/workspaces/${s.workspaceId}/queue`);
    expect(q).toMatchObject({ queued: 1, running: 1 });
    const queuedRun = await s.ok('GET', `/api/v2/workflows/${wf.id}/runs/${second.runId}`);
    expect(queuedRun.status).toBe('queued');
    expect(q.oldestQueuedAt).toBe((await s.services.store.workflowRuns.getByKey(wf.id, second.runId))!.queuedAt);
    expect(q.oldestQueuedAgeMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(q.measuredAt) - Date.parse(q.oldestQueuedAt)).toBe(q.oldestQueuedAgeMs);

    const reader = await s.newUser('queue-reader@console.test', { [s.workspaceId]: 'read' });
    expect((await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/queue`, undefined, reader.key)).body.data).toMatchObject({ queued: 1, running: 1 });
    const stranger = await s.newUser('queue-stranger@console.test');
    expect((await s.call('GET', `/api/v2/workspaces/${s.workspaceId}/queue`, undefined, stranger.key)).status).toBe(404);
    expect((await s.call('GET', '/api/v2/workspaces/no-such-workspace/queue')).status).toBe(404);

    gate.release('queue');
    await until(() => s.ok('GET', `/api/v2/workspaces/${s.workspaceId}/queue`), (v: any) => v.queued === 0 && v.running === 0, 'the queue to drain');
    expect((await s.ok('GET', `/api/v2/workflows/${wf.id}/runs/${first.runId}`)).status).toBe('completed');
  });
});

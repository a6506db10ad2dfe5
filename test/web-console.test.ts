// The web console over HTTP: every webUrl the API returns answers an HTML page (after the sign-in page for a
// signed-out browser), a non-member gets a 404 page, and the API accepts the sign-in session cookie: reads as
// the user, changes only with the page's CSRF token, from our own origin, and only as far as the user's role.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { FakeBrowser } from './support/browser-session.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { createUser, setMember } from '../src/identity/admin.ts';

const PASSWORD = 'console password 123';
let s: TestServer;
let email: string;

beforeAll(async () => {
  s = await startTestServer();
  email = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
});
afterAll(async () => {
  await s?.stop();
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

// The hosted chat as a browser-less client sees it: the page, the gates (password, e-mail code, sso), the
// streamed answer limited to the allowed outputs, and the refusals.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { codeHash } from '../src/chat/visitor.ts';
import { signToken } from '../src/identity/signed-tokens.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { FakeBrowser } from './support/browser-session.ts';

let s: TestServer;
let wf: { id: string; ids: Record<string, string> };
const PASSWORD = 'open sesame, please and thanks';

beforeAll(async () => {
  s = await startTestServer();
  const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'conversationId', type: 'string' }] });
  const secret = apiBlock('function', 'Internal', { code: 'return "INTERNAL NOTE: do not show"' });
  const answer = apiBlock('function', 'Answer', { code: 'return "You said: " + <start.input> + " (" + <start.conversationId> + ")"' });
  wf = await buildWorkflow(s, 'Echo bot', [start, secret, answer], [link(start, secret), link(secret, answer)]);
});
afterAll(() => s.stop());

const chatPath = (id: string) => `/api/v2/workflows/${id}/deployments/chat`;
const visitor = (pathname: string, init: RequestInit = {}) => fetch(s.url + pathname, init);
const postJson = (pathname: string, body: unknown, cookie?: string) =>
  visitor(pathname, { method: 'POST', headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) }, body: JSON.stringify(body) });
const cookieOf = (res: Response) => res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');

function frames(text: string): any[] {
  return text
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => JSON.parse(b.slice(6)));
}

async function configure(body: Record<string, unknown>) {
  const r = await s.call('PUT', chatPath(wf.id), { identifier: 'echo', title: 'Echo', outputConfigs: [{ blockId: wf.ids.Answer!, path: 'result' }], ...body });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

describe('public chat', () => {
  it('serves the page with title and colour, and streams only the allowed block outputs', async () => {
    await configure({ customizations: { primaryColor: '#0a7cff', welcomeMessage: 'Hello!' }, description: 'Says it back' });
    const page = await visitor('/chat/echo');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('<title>Echo</title>');
    expect(html).toContain('data-accent="#0a7cff"');
    expect(html).toContain('Says it back');
    expect((await visitor('/_web/chat.js')).status).toBe(200);

    const config = await visitor('/api/chat/echo');
    expect(config.status).toBe(200);
    expect(await config.json()).toMatchObject({ title: 'Echo', authType: 'public', customizations: { welcomeMessage: 'Hello!' } });

    const reply = await postJson('/api/chat/echo', { input: 'hi there', conversationId: 'conv-1' });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await reply.text();
    expect(text).not.toContain('INTERNAL NOTE');
    const f = frames(text);
    expect(f[0]).toEqual({ blockId: wf.ids.Answer, chunk: 'You said: hi there (conv-1)' });
    expect(f.at(-2)).toMatchObject({ event: 'final', data: { success: true, conversationId: 'conv-1' } });
    expect(f.at(-1)).toBe('[DONE]');
    const runId = f.at(-2).data.runId;
    const log = await s.call('GET', `/api/v2/logs/${runId}`);
    expect(log.status).toBe(200);
    expect(JSON.stringify(log.body)).toContain('"chat"');
    // The audit trail is the same for every trigger: one workflow_run.started event, the chat as its actor.
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'), { readOnly: true });
    try {
      const events = db.prepare("SELECT action, actor_name AS actor, metadata FROM audit_events WHERE resource_type = 'workflow_run' AND resource_id = ?").all(runId) as { action: string; actor: string; metadata: string }[];
      expect(events.map((e) => e.action)).toEqual(['workflow_run.started']);
      expect(events[0]!.actor).toBe('Hosted chat echo');
      expect(JSON.parse(events[0]!.metadata)).toMatchObject({ trigger: 'chat', mode: 'stream' });
    } finally {
      db.close();
    }
  });

  it('shows nothing when no outputs are configured', async () => {
    await s.call('PUT', chatPath(wf.id), { identifier: 'echo', title: 'Echo' });
    const f = frames(await (await postJson('/api/chat/echo', { input: 'x' })).text());
    expect(f.filter((x) => x.chunk)).toEqual([]);
    expect(f.at(-2)).toMatchObject({ event: 'final', data: { success: true, output: {} } });
  });

  it('refuses bad messages clearly', async () => {
    await configure({});
    expect((await postJson('/api/chat/echo', { input: '' })).status).toBe(400);
    expect((await postJson('/api/chat/echo', { input: 'x', conversationId: 'c'.repeat(257) })).status).toBe(400);
    expect((await postJson('/api/chat/echo', { input: 'x', extra: 1 })).status).toBe(400);
    expect((await postJson('/api/chat/echo', { input: 'x', files: [{ name: 'a.txt', type: 'text/plain', size: 1, data: 'YQ==' }] })).status).toBe(400);
    expect((await postJson('/api/chat/echo', { password: 'x' })).status).toBe(400);
    expect((await visitor('/api/chat/echo', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' })).status).toBe(415);
    const malformed = await visitor('/api/chat/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as any).error.code).toBe('BAD_REQUEST');
  });
});

describe('password chat', () => {
  it('gates the chat until the password, then sets a signed http-only cookie', async () => {
    await configure({ authType: 'password', password: PASSWORD });
    const gated = await visitor('/api/chat/echo');
    expect(gated.status).toBe(401);
    expect(((await gated.json()) as any).error.details.reason).toBe('auth_required_password');
    expect((await postJson('/api/chat/echo', { input: 'hi' })).status).toBe(401);

    const wrong = await postJson('/api/chat/echo', { password: 'not the password at all' });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).error.details.reason).toBe('invalid_password');
    expect(wrong.headers.getSetCookie()).toEqual([]);

    const right = await postJson('/api/chat/echo', { password: PASSWORD });
    expect(right.status).toBe(200);
    const setCookie = right.headers.getSetCookie()[0]!;
    expect(setCookie).toMatch(/^chat_auth_[0-9a-f-]+=/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    const cookie = cookieOf(right);
    expect((await visitor('/api/chat/echo', { headers: { cookie } })).status).toBe(200);
    const reply = frames(await (await postJson('/api/chat/echo', { input: 'secret hi', conversationId: 'c2' }, cookie)).text());
    expect(reply[0].chunk).toBe('You said: secret hi (c2)');
  });

  it('refuses forged and tampered cookies, and cookies of an old password', async () => {
    const chat = await configure({ authType: 'password', password: PASSWORD });
    const name = `chat_auth_${chat.id}`;
    const forgedKey = signToken(Buffer.alloc(32, 7), 'chat-auth', { c: chat.id, v: 'x', m: null }, Date.now() + 60_000);
    expect((await visitor('/api/chat/echo', { headers: { cookie: `${name}=${forgedKey}` } })).status).toBe(401);
    const good = cookieOf(await postJson('/api/chat/echo', { password: PASSWORD }));
    const value = good.split('=')[1]!;
    const [payload, mac] = value.split('.');
    const tampered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), exp: Date.now() + 1e9 })).toString('base64url');
    expect((await visitor('/api/chat/echo', { headers: { cookie: `${name}=${tampered}.${mac}` } })).status).toBe(401);
    expect((await visitor('/api/chat/echo', { headers: { cookie: good } })).status).toBe(200);
    await configure({ authType: 'password', password: 'a brand new password here' });
    expect((await visitor('/api/chat/echo', { headers: { cookie: good } })).status).toBe(401);
  });

  it('rate-limits password attempts', async () => {
    await configure({ authType: 'password', password: PASSWORD });
    let limited: Response | null = null;
    for (let i = 0; i < 15 && !limited; i++) {
      const r = await postJson('/api/chat/echo', { password: `wrong password number ${i}` });
      if (r.status === 429) limited = r;
    }
    expect(limited).not.toBeNull();
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await limited!.json()) as any).error.code).toBe('RATE_LIMITED');
  });
});

describe('e-mail chat', () => {
  const outbox = () => path.join(s.dataDir, 'outbox');
  const lastCode = (to: string) => {
    const mails = fs.readdirSync(outbox()).filter((f) => f.endsWith('.json')).sort().map((f) => JSON.parse(fs.readFileSync(path.join(outbox(), f), 'utf8')));
    const mail = mails.filter((m) => m.to === to).at(-1);
    return /\b(\d{6})\b/.exec(mail.text)![1]!;
  };

  it('sends a one-time code to an allowed address and lets the visitor in with it', async () => {
    await configure({ authType: 'email', allowedEmails: ['ada@example.com', '@team.example'] });
    expect(((await (await visitor('/api/chat/echo')).json()) as any).error.details.reason).toBe('auth_required_email');
    expect(await (await postJson('/api/chat/echo', { email: 'bob@team.example' })).json()).toEqual({ status: 'otp_required' });
    const refused = await postJson('/api/chat/echo/otp', { email: 'eve@evil.example' });
    expect(refused.status).toBe(403);
    expect((await postJson('/api/chat/echo/otp', { email: 'bob@team.example' })).status).toBe(200);
    const code = lastCode('bob@team.example');
    const wrong = await postJson('/api/chat/echo/otp', { email: 'bob@team.example', otp: code === '000000' ? '111111' : '000000' });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).error.details.reason).toBe('invalid_otp');
    const ok = await postJson('/api/chat/echo/otp', { email: 'bob@team.example', otp: code });
    expect(ok.status).toBe(200);
    const cookie = cookieOf(ok);
    expect((await visitor('/api/chat/echo', { headers: { cookie } })).status).toBe(200);
    // A code works once.
    expect((await postJson('/api/chat/echo/otp', { email: 'bob@team.example', otp: code })).status).toBe(401);
    // Taking the domain off the list ends the access.
    await configure({ authType: 'email', allowedEmails: ['ada@example.com'] });
    expect((await visitor('/api/chat/echo', { headers: { cookie } })).status).toBe(401);
  });

  it('gives up on a code after five wrong tries', async () => {
    await configure({ authType: 'email', allowedEmails: ['tries@example.com'] });
    expect((await postJson('/api/chat/echo/otp', { email: 'tries@example.com' })).status).toBe(200);
    const code = lastCode('tries@example.com');
    const wrongCode = code === '999999' ? '888888' : '999999';
    for (let i = 0; i < 5; i++) expect((await postJson('/api/chat/echo/otp', { email: 'tries@example.com', otp: wrongCode })).status).toBe(401);
    const exhausted = await postJson('/api/chat/echo/otp', { email: 'tries@example.com', otp: code });
    expect(exhausted.status).toBe(401);
    expect(((await exhausted.json()) as any).error.details.reason).toBe('otp_exhausted');
  });

  it('refuses an expired code', async () => {
    const chat = await configure({ authType: 'email', allowedEmails: ['ada@example.com'] });
    await s.services.store.transaction((tx) => tx.chatDeployments.putCode(chat.id, 'ada@example.com', codeHash(chat.id, 'ada@example.com', '123456'), new Date(Date.now() - 1000).toISOString()));
    const r = await postJson('/api/chat/echo/otp', { email: 'ada@example.com', otp: '123456' });
    expect(r.status).toBe(401);
    expect(((await r.json()) as any).error.details.reason).toBe('otp_expired');
  });
});

describe('sso chat', () => {
  it('admits a signed-in user of this server on the allowed list, and no one else', async () => {
    await configure({ authType: 'sso', allowedEmails: ['@sso.example'] });
    const member = await s.newUser('member@sso.example');
    const other = await s.newUser('other@elsewhere.example');
    await setUserPassword(s.services.store, member.userId, 'member password 123');
    await setUserPassword(s.services.store, other.userId, 'other password 123');
    const anonymous = await visitor('/api/chat/echo');
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as any).error.details.reason).toBe('auth_required_sso');
    expect(await (await postJson('/api/chat/echo/sso', { email: 'member@sso.example' })).json()).toEqual({ eligible: true });
    expect(await (await postJson('/api/chat/echo/sso', { email: 'other@elsewhere.example' })).json()).toEqual({ eligible: false });

    const b = new FakeBrowser(s.url);
    const signed = await b.signIn('member@sso.example', 'member password 123', '/chat/echo');
    expect(signed.location).toBe('/chat/echo');
    expect((await b.get('/api/chat/echo')).status).toBe(200);
    const outsider = new FakeBrowser(s.url);
    await outsider.signIn('other@elsewhere.example', 'other password 123');
    expect((await outsider.get('/api/chat/echo')).status).toBe(401);
    // A forged session is no session.
    const forged = new FakeBrowser(s.url);
    forged.cookies.set('owa_session', signToken(Buffer.alloc(32, 3), 'session', { u: member.userId, pv: 'x' }, Date.now() + 60_000));
    expect((await forged.get('/api/chat/echo')).status).toBe(401);
  });
});

describe('chat availability', () => {
  it('answers clearly for an inactive, an undeployed and a deleted chat', async () => {
    const chat = await configure({});
    await s.services.store.transaction((tx) => tx.chatDeployments.setActive(chat.id, false, new Date().toISOString()));
    const inactive = await visitor('/api/chat/echo');
    expect(inactive.status).toBe(403);
    expect(((await inactive.json()) as any).error.details.reason).toBe('chat_inactive');
    const inactivePage = await visitor('/chat/echo');
    expect(inactivePage.status).toBe(403);
    expect(await inactivePage.text()).toContain('inactive');
    await configure({});

    const start = apiBlock('start_trigger', 'Start');
    const draft = await buildWorkflow(s, 'Draft only', [start], [], { deploy: false });
    const settings = await s.call('PUT', chatPath(draft.id), { identifier: 'draft', title: 'Draft' });
    expect(settings.body.data.isActive).toBe(false);
    const undeployed = await postJson('/api/chat/draft', { input: 'hello' });
    expect(undeployed.status).toBe(403);
    expect(((await undeployed.json()) as any).error.details.reason).toBe('chat_inactive');
    const inactiveList = await s.call('GET', `/api/v2/chat-deployments?workspaceId=${s.workspaceId}&isActive=false`);
    expect(inactiveList.body.data.map((c: any) => c.identifier)).toEqual(['draft']);
    // Deploying the workflow brings its chat online.
    expect((await s.call('POST', `/api/v2/workflows/${draft.id}/deploy`, {})).status).toBeLessThan(300);
    expect((await s.call('GET', chatPath(draft.id))).body.data.isActive).toBe(true);
    expect((await postJson('/api/chat/draft', { input: 'hello' })).status).toBe(200);

    expect((await s.call('DELETE', chatPath(wf.id))).status).toBe(200);
    const gone = await visitor('/api/chat/echo');
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as any).error.details.reason).toBe('chat_not_found');
    const gonePage = await visitor('/chat/echo');
    expect(gonePage.status).toBe(404);
    expect(await gonePage.text()).toContain('does not exist or has been deleted');
  });
});

describe('chat runs are rate-limited like the creator\'s runs', () => {
  it('answers 429 with Retry-After past the plan\'s synchronous limit', async () => {
    const t = await startTestServer({ RATE_LIMIT_FREE_SYNC: '2' });
    try {
      const start = apiBlock('start_trigger', 'Start');
      const w = await buildWorkflow(t, 'Limited', [start], []);
      expect((await t.call('PUT', `/api/v2/workflows/${w.id}/deployments/chat`, { identifier: 'limited', title: 'Limited' })).status).toBe(200);
      const send = () => fetch(`${t.url}/api/chat/limited`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'hi' }) });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await send();
        statuses.push(r.status);
        if (r.status === 429) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
        await r.text();
      }
      expect(statuses.slice(0, 2)).toEqual([200, 200]);
      expect(statuses).toContain(429);
      const logs = await t.call('GET', `/api/v2/logs?workspaceId=${t.workspaceId}`);
      expect(logs.body.data.filter((l: any) => l.trigger === 'chat')).toHaveLength(2);
    } finally {
      await t.stop();
    }
  });
});

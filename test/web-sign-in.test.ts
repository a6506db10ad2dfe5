// Browser sign-in and the OAuth 2.0 authorization server, through HTTP as a browser and the CLI would use them,
// with every refusal the issue names: wrong password, forged session, CSRF, PKCE mismatch, wrong redirect URI,
// replayed code, refresh-token reuse.
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { FakeBrowser } from './support/browser-session.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { issueTokens } from '../src/identity/oauth.ts';
import { signToken } from '../src/identity/signed-tokens.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';

const PASSWORD = 'a long sign-in password';
let s: TestServer;
let email: string;

beforeAll(async () => {
  s = await startTestServer({ AUTH_ATTEMPTS_PER_MINUTE: '5' });
  email = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
});
afterAll(() => s.stop());

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};
const REDIRECT = 'http://127.0.0.1:45678/callback';

function authorizeUrl(challenge: string, o: { redirect?: string; scope?: string; state?: string } = {}) {
  const q = new URLSearchParams({
    client_id: 'sim-cli',
    response_type: 'code',
    redirect_uri: o.redirect ?? REDIRECT,
    scope: o.scope ?? 'offline_access api:read api:write',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: o.state ?? 'st4te',
  });
  return `/api/auth/oauth2/authorize?${q}`;
}

async function signedInBrowser() {
  const b = new FakeBrowser(s.url);
  const r = await b.signIn(email, PASSWORD);
  expect(r.status).toBe(303);
  return b;
}

/** Runs authorize + consent in a signed-in browser; returns the code the redirect carries. */
async function authorize(b: FakeBrowser, challenge: string, o: { scope?: string } = {}) {
  const consent = await b.get(authorizeUrl(challenge, o));
  expect(consent.status, consent.text).toBe(200);
  const approve = await b.post('/api/auth/oauth2/authorize', FakeBrowser.fields(consent.text, '/api/auth/oauth2/authorize', 'approve'));
  expect(approve.status).toBe(303);
  const back = new URL(approve.location!);
  expect(back.origin + back.pathname).toBe(REDIRECT);
  expect(back.searchParams.get('state')).toBe('st4te');
  return back.searchParams.get('code')!;
}

const token = (form: Record<string, string>) =>
  fetch(`${s.url}/api/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });

describe('sign-in page', () => {
  it('signs in with e-mail and password into a signed http-only session cookie', async () => {
    const b = new FakeBrowser(s.url);
    const form = await b.get('/login');
    expect(form.status).toBe(200);
    expect(form.text).toContain('type="password"');
    const wrong = await b.post('/login', { ...FakeBrowser.fields(form.text, '/login'), email, password: 'not my password at all' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('not correct');
    expect(b.cookies.has('owa_session')).toBe(false);
    const ok = await b.post('/login', { ...FakeBrowser.fields(wrong.text, '/login'), email, password: PASSWORD, next: '/cli/auth/done' });
    expect(ok.status).toBe(303);
    expect(ok.location).toBe('/cli/auth/done');
    expect(ok.res.headers.getSetCookie().find((c) => c.startsWith('owa_session='))).toMatch(/HttpOnly; SameSite=Lax/);
    expect((await b.get('/login')).text).toContain(`signed in as <strong>${email}</strong>`);
  });

  it('refuses a form without a valid CSRF token, or from another origin', async () => {
    const b = new FakeBrowser(s.url);
    const form = await b.get('/login');
    const fields = FakeBrowser.fields(form.text, '/login');
    expect((await b.post('/login', { email, password: PASSWORD })).status).toBe(403);
    expect((await b.post('/login', { csrf: 'forged.token', email, password: PASSWORD })).status).toBe(403);
    expect((await b.post('/login', { ...fields, email, password: PASSWORD }, { origin: 'https://evil.example' })).status).toBe(403);
    const other = new FakeBrowser(s.url);
    expect((await other.post('/login', { ...fields, email, password: PASSWORD })).status).toBe(403);
    expect(b.cookies.has('owa_session')).toBe(false);
  });

  it('refuses forged sessions and ends sessions when the password changes', async () => {
    const b = await signedInBrowser();
    const forged = new FakeBrowser(s.url);
    forged.cookies.set('owa_session', signToken(Buffer.alloc(32, 1), 'session', { u: s.userId, pv: 'x' }, Date.now() + 60_000));
    expect((await forged.get('/login')).text).toContain('type="password"');
    const u = await s.newUser('reset@example.com');
    await setUserPassword(s.services.store, u.userId, 'first password here');
    const r = new FakeBrowser(s.url);
    await r.signIn('reset@example.com', 'first password here');
    expect((await r.get('/login')).text).toContain('signed in as');
    await setUserPassword(s.services.store, u.userId, 'second password here');
    expect((await r.get('/login')).text).toContain('type="password"');
    expect((await b.get('/login')).text).toContain('signed in as');
  });

  it('rate-limits sign-in attempts', async () => {
    const b = new FakeBrowser(s.url);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await b.signIn('nobody@example.com', `guess number ${i}`)).status);
    expect(statuses).toContain(429);
  });

  it('sets passwords with the admin command', async () => {
    const u = await s.newUser('admin-cmd@example.com');
    const { stdout } = await promisify(execFile)('npm', ['run', '-s', 'admin', '--', 'user', 'password', '--email', 'admin-cmd@example.com', '--password', 'set by the admin command'], {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: s.dataDir, ...s.databaseEnv },
    });
    expect(JSON.parse(stdout)).toMatchObject({ userId: u.userId, passwordSet: true });
    const b = new FakeBrowser(s.url);
    expect((await b.signIn('admin-cmd@example.com', 'set by the admin command')).status).toBe(303);
    const short = await promisify(execFile)('npm', ['run', '-s', 'admin', '--', 'user', 'password', '--user', u.userId, '--password', 'short'], {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: s.dataDir, ...s.databaseEnv },
    }).catch((e) => e);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('12 to 1024');
  });
});

describe('OAuth authorization server', () => {
  it('publishes the metadata the CLI checks', async () => {
    const r = await fetch(`${s.url}/.well-known/oauth-authorization-server`);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({
      issuer: `${s.url}/api/auth`,
      token_endpoint: `${s.url}/api/auth/oauth2/token`,
      authorization_endpoint: `${s.url}/api/auth/oauth2/authorize`,
      revocation_endpoint: `${s.url}/api/auth/oauth2/revoke`,
      code_challenge_methods_supported: ['S256'],
    });
  });

  it('sends a signed-out browser to the sign-in page and back', async () => {
    const b = new FakeBrowser(s.url);
    const { challenge } = pkce();
    const r = await b.get(authorizeUrl(challenge));
    expect(r.status).toBe(303);
    expect(r.location).toMatch(/^\/login\?next=/);
    const signed = await b.signIn(email, PASSWORD, decodeURIComponent(r.location!.split('next=')[1]!));
    expect(signed.location).toBe(authorizeUrl(challenge));
    expect((await b.get(signed.location!)).text).toContain('Allow Sim CLI to use your account?');
  });

  it('issues tokens the API accepts, rotates refresh tokens and ends the login on reuse', async () => {
    const b = await signedInBrowser();
    const { verifier, challenge } = pkce();
    const code = await authorize(b, challenge);
    const r = await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const t = (await r.json()) as any;
    expect(t).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'offline_access api:read api:write' });
    const meta = await s.call('GET', '/api/v2/meta', undefined, null).then(() =>
      fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${t.access_token}` } }).then((x) => x.json()),
    );
    expect((meta as any).data.keyType).toBe('oauth_access_token');

    const r2 = (await (await token({ grant_type: 'refresh_token', client_id: 'sim-cli', refresh_token: t.refresh_token })).json()) as any;
    expect(r2.refresh_token).not.toBe(t.refresh_token);
    const reuse = await token({ grant_type: 'refresh_token', client_id: 'sim-cli', refresh_token: t.refresh_token });
    expect(reuse.status).toBe(400);
    expect(((await reuse.json()) as any).error).toBe('invalid_grant');
    // The reuse ended the whole login: the newest tokens are dead too.
    expect((await token({ grant_type: 'refresh_token', client_id: 'sim-cli', refresh_token: r2.refresh_token })).status).toBe(400);
    const dead = await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${r2.access_token}` } });
    expect(dead.status).toBe(401);
    expect(dead.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('refuses a PKCE verifier that does not match', async () => {
    const b = await signedInBrowser();
    const { challenge } = pkce();
    const code = await authorize(b, challenge);
    const r = await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: REDIRECT, code_verifier: pkce().verifier });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('PKCE') });
  });

  it('refuses a redirect URI that is not loopback (shown, never redirected to) or differs at the token endpoint', async () => {
    const b = await signedInBrowser();
    const { verifier, challenge } = pkce();
    for (const bad of ['https://evil.example/callback', 'http://attacker.example:8080/callback', 'http://127.0.0.1.evil.example/callback']) {
      const r = await b.get(authorizeUrl(challenge, { redirect: bad }));
      expect(r.status, bad).toBe(400);
      expect(r.location).toBeNull();
      expect(r.text).toContain('not valid');
    }
    const unknownClient = await b.get(authorizeUrl(challenge).replace('client_id=sim-cli', 'client_id=other'));
    expect(unknownClient.status).toBe(400);
    const code = await authorize(b, challenge);
    const r = await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: 'http://127.0.0.1:45679/callback', code_verifier: verifier });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('redirect_uri') });
  });

  it('refuses a replayed code and revokes the login it created', async () => {
    const b = await signedInBrowser();
    const { verifier, challenge } = pkce();
    const code = await authorize(b, challenge);
    const form = { grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: REDIRECT, code_verifier: verifier };
    const first = (await (await token(form)).json()) as any;
    expect(first.access_token).toBeTruthy();
    const replay = await token(form);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as any).error).toBe('invalid_grant');
    expect((await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${first.access_token}` } })).status).toBe(401);
  });

  it('sends bad requests back to the client, and a denial as access_denied', async () => {
    const b = await signedInBrowser();
    const { challenge } = pkce();
    const badScope = await b.get(authorizeUrl(challenge, { scope: 'openid api:read' }));
    expect(badScope.status).toBe(303);
    expect(new URL(badScope.location!).searchParams.get('error')).toBe('invalid_scope');
    const noPkce = await b.get(authorizeUrl(challenge).replace('code_challenge_method=S256', 'code_challenge_method=plain'));
    expect(new URL(noPkce.location!).searchParams.get('error')).toBe('invalid_request');
    const consent = await b.get(authorizeUrl(challenge));
    const deny = await b.post('/api/auth/oauth2/authorize', FakeBrowser.fields(consent.text, '/api/auth/oauth2/authorize', 'deny'));
    expect(new URL(deny.location!).searchParams.get('error')).toBe('access_denied');
    const noCsrf = { ...FakeBrowser.fields(consent.text, '/api/auth/oauth2/authorize', 'approve'), csrf: 'x' };
    expect((await b.post('/api/auth/oauth2/authorize', noCsrf)).status).toBe(403);
    expect((await token({ grant_type: 'password', client_id: 'sim-cli' })).status).toBe(400);
    expect((await token({ grant_type: 'authorization_code', client_id: 'someone-else', code: 'x', redirect_uri: REDIRECT, code_verifier: 'y' })).status).toBe(401);
    expect(((await (await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code: 'owa_ac_nope', redirect_uri: REDIRECT, code_verifier: pkce().verifier })).json()) as any).error).toBe(
      'invalid_grant',
    );
  });

  it('gives a read-only login only api:read, and revocation ends it', async () => {
    const b = await signedInBrowser();
    const { verifier, challenge } = pkce();
    const code = await authorize(b, challenge, { scope: 'offline_access api:read' });
    const t = (await (await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: REDIRECT, code_verifier: verifier })).json()) as any;
    expect(t.scope).toBe('offline_access api:read');
    const bearer = { authorization: `Bearer ${t.access_token}`, 'content-type': 'application/json' };
    expect((await fetch(`${s.url}/api/v2/workspaces`, { headers: bearer })).status).toBe(200);
    const write = await fetch(`${s.url}/api/v2/workflows`, { method: 'POST', headers: bearer, body: JSON.stringify({ workspaceId: s.workspaceId, name: 'nope' }) });
    expect(write.status).toBe(403);
    const revoke = await fetch(`${s.url}/api/auth/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: t.refresh_token, token_type_hint: 'refresh_token', client_id: 'sim-cli' }).toString(),
    });
    expect(revoke.status).toBe(200);
    expect((await fetch(`${s.url}/api/v2/workspaces`, { headers: bearer })).status).toBe(401);
    expect((await token({ grant_type: 'refresh_token', client_id: 'sim-cli', refresh_token: t.refresh_token })).status).toBe(400);
  });
});

describe('OAuth turned off', () => {
  it('answers 404 for the metadata, so the CLI falls back to pairing', async () => {
    const off = await startTestServer({ OAUTH_ENABLED: 'false' });
    try {
      expect((await fetch(`${off.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});

void apiBlock;
void buildWorkflow;

describe('pairing handoff over HTTP', () => {
  const token = () => randomBytes(32).toString('base64url');
  const poll = (body: unknown) => fetch(`${s.url}/api/cli/auth/poll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const link = (request: string, secret: string, pairing = 'ABCD-EFGH') =>
    `/cli/auth?${new URLSearchParams({ request, challenge: createHash('sha256').update(secret).digest('base64url'), pairing, scope: 'platform' })}`;

  it('stays pending until approved, gives the key once and only to the holder of the poll secret', async () => {
    const request = token();
    const secret = token();
    expect(await (await poll({ request, verifier: secret })).json()).toEqual({ status: 'pending' });
    const b = await signedInBrowser();
    const page = await b.get(link(request, secret));
    expect(page.status).toBe(200);
    expect(page.text).toContain('ABCD-EFGH');
    expect(await (await poll({ request, verifier: secret })).json()).toEqual({ status: 'pending' });
    const fields = FakeBrowser.fields(page.text, '/api/cli/auth/approve', 'approve');
    expect((await b.post('/api/cli/auth/approve', { ...fields, csrf: 'forged' })).status).toBe(403);
    expect((await new FakeBrowser(s.url).post('/api/cli/auth/approve', fields)).status).toBe(403);
    expect((await b.post('/api/cli/auth/approve', fields)).status).toBe(200);
    const wrong = await poll({ request, verifier: token() });
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as any).error.details.reason).toBe('verifier_mismatch');
    const done = (await (await poll({ request, verifier: secret })).json()) as any;
    expect(done).toMatchObject({ status: 'complete', scope: 'platform', workspaceBound: false, key: { apiKey: expect.stringMatching(/^sk-owa-/) } });
    const again = await poll({ request, verifier: secret });
    expect(again.status).toBe(403);
    expect(((await again.json()) as any).error.details.reason).toBe('answered');
    expect((await b.post('/api/cli/auth/approve', fields)).status).toBe(409);
  });

  it('refuses malformed links and polls, and a request reopened with other details', async () => {
    const b = await signedInBrowser();
    expect((await b.get('/cli/auth?request=short&challenge=x&pairing=ABCD-EFGH')).status).toBe(400);
    expect((await b.get(link(token(), token(), 'abcd-0000'))).status).toBe(400);
    expect((await b.get(link(token(), token()).replace('scope=platform', 'scope=copilot'))).status).toBe(400);
    const request = token();
    expect((await b.get(link(request, token()))).status).toBe(200);
    expect((await b.get(link(request, token()))).status).toBe(409);
    expect((await poll({ request: 'x' })).status).toBe(400);
    expect((await poll({ request, verifier: token(), extra: 1 })).status).toBe(400);
  });
});

describe('more OAuth refusals', () => {
  it('refuses an expired authorization code', async () => {
    const { verifier, challenge } = pkce();
    const code = 'owa_ac_' + randomBytes(32).toString('base64url');
    const { hashApiKey } = await import('../src/identity/keys.ts');
    await s.services.store.transaction((tx) =>
      tx.webAuth.insertCode({
        codeHash: hashApiKey(code),
        clientId: 'sim-cli',
        userId: s.userId,
        redirectUri: REDIRECT,
        scopes: ['api:read'],
        codeChallenge: challenge,
        createdAt: new Date(Date.now() - 300_000).toISOString(),
        expiresAt: new Date(Date.now() - 1000).toISOString(),
        usedAt: null,
        grantId: null,
      }),
    );
    const r = await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
  });

  it('signs out of the browser session', async () => {
    const b = await signedInBrowser();
    const page = await b.get('/login');
    const out = await b.post('/logout', FakeBrowser.fields(page.text, '/logout'));
    expect(out.status).toBe(303);
    expect(b.cookies.has('owa_session')).toBe(false);
    expect((await b.get('/login')).text).toContain('type="password"');
  });
});

describe('operator revocation', () => {
  it('ends every CLI login of a user with the admin command', async () => {
    const { revokeApplication } = await import('../src/identity/oauth.ts');
    const b = await signedInBrowser();
    const { verifier, challenge } = pkce();
    const code = await authorize(b, challenge);
    const t = (await (await token({ grant_type: 'authorization_code', client_id: 'sim-cli', code, redirect_uri: REDIRECT, code_verifier: verifier })).json()) as any;
    expect((await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${t.access_token}` } })).status).toBe(200);
    expect(await revokeApplication(s.services.store, 'sim-cli', s.userId)).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${t.access_token}` } })).status).toBe(401);
    expect((await token({ grant_type: 'refresh_token', client_id: 'sim-cli', refresh_token: t.refresh_token })).status).toBe(400);
  });
});

describe('authorized apps page', () => {
  it('sends a signed-out browser to sign in, and lets a user revoke only their own grants', async () => {
    const signedOut = await new FakeBrowser(s.url).get('/settings/authorized-apps');
    expect(signedOut.status).toBe(303);
    expect(signedOut.location).toBe(`/login?next=${encodeURIComponent('/settings/authorized-apps')}`);
    // Ada signs in and opens the page; the admin's grant is not hers to list or revoke.
    const ada = await s.newUser('ada-apps@example.com');
    await setUserPassword(s.services.store, ada.userId, PASSWORD);
    const theirs = await issueTokens(s.services.store, { clientId: 'sim-cli', userId: s.userId, scopes: ['api:read'] });
    const b = new FakeBrowser(s.url);
    expect((await b.signIn('ada-apps@example.com', PASSWORD)).status).toBe(303);
    const page = await b.get('/settings/authorized-apps');
    expect(page.status).toBe(200);
    expect(page.text).toContain('No application can act for you right now.');
    const fields = { csrf: FakeBrowser.fields((await b.get('/login')).text, '/logout').csrf! };
    const refused = await b.post('/settings/authorized-apps/revoke', { ...fields, grant: theirs.grantId });
    expect(refused.status).toBe(404);
    expect((await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${theirs.accessToken}` } })).status).toBe(200);
    // From another origin, even with the token: refused.
    const mine = await issueTokens(s.services.store, { clientId: 'sim-cli', userId: ada.userId, scopes: ['api:read'] });
    expect((await b.post('/settings/authorized-apps/revoke', { ...fields, grant: mine.grantId }, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await b.get('/settings/authorized-apps')).text).toContain(`value="${mine.grantId}"`);
    const revoked = await b.post('/settings/authorized-apps/revoke', { ...fields, grant: mine.grantId });
    expect(revoked.status).toBe(303);
    expect(revoked.location).toBe('/settings/authorized-apps?revoked=1');
    expect((await fetch(`${s.url}/api/v2/meta`, { headers: { authorization: `Bearer ${mine.accessToken}` } })).status).toBe(401);
    expect((await b.get('/settings/authorized-apps')).text).not.toContain(mine.grantId);
  });
});

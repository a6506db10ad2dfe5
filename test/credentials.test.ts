// Credentials: the whole OAuth connection flow against a local OAuth provider started here (authorization URL
// with PKCE and state, the redirect handled by this server, code exchange, sealed tokens, refresh before expiry,
// a fresh token reaching a tool), reconnects, bad states, unconfigured providers, and sealed service-account keys,
// through HTTP and the real `sim credentials` commands.
import { createHash } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';

let s: TestServer;
let provider: http.Server;
let providerUrl: string;
let env: { endpoint: string; apiKey: string; workspace: string };
const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
const ws = () => s.workspaceId;

/** What the fake provider saw and issued. */
const seen = { authorize: [] as URLSearchParams[], token: [] as URLSearchParams[], api: [] as string[] };
const codes = new Map<string, { challenge: string; redirectUri: string }>();
let issued = 0;

beforeAll(async () => {
  provider = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/authorize') {
      // The user approves at once: back to the client with a code bound to the PKCE challenge.
      seen.authorize.push(url.searchParams);
      const code = `code-${seen.authorize.length}`;
      codes.set(code, { challenge: url.searchParams.get('code_challenge')!, redirectUri: url.searchParams.get('redirect_uri')! });
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (url.pathname === '/token') {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const form = new URLSearchParams(raw);
        seen.token.push(form);
        res.setHeader('content-type', 'application/json');
        if (form.get('client_id') !== 'test-client' || form.get('client_secret') !== 'test-secret') return res.writeHead(401).end(JSON.stringify({ error: 'invalid_client' }));
        if (form.get('grant_type') === 'authorization_code') {
          const pending = codes.get(form.get('code')!);
          const challenge = createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url');
          if (!pending || pending.challenge !== challenge || pending.redirectUri !== form.get('redirect_uri')) {
            return res.writeHead(400).end(JSON.stringify({ error: 'invalid_grant', error_description: 'bad code or verifier' }));
          }
          codes.delete(form.get('code')!);
          issued++;
          return res.end(JSON.stringify({ access_token: `access-${issued}`, refresh_token: `refresh-${issued}`, expires_in: 1, token_type: 'bearer', account_id: 'octocat' }));
        }
        if (form.get('grant_type') === 'refresh_token') {
          issued++;
          return res.end(JSON.stringify({ access_token: `access-${issued}`, expires_in: 3600, token_type: 'bearer' }));
        }
        res.writeHead(400).end(JSON.stringify({ error: 'unsupported_grant_type' }));
      });
      return;
    }
    if (url.pathname === '/api/me') {
      seen.api.push(String(req.headers.authorization));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ login: 'octocat', auth: req.headers.authorization }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', () => r()));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  s = await startTestServer({
    OAUTH_GITHUB_REPOSITORIES_CLIENT_ID: 'test-client',
    OAUTH_GITHUB_REPOSITORIES_CLIENT_SECRET: 'test-secret',
    OAUTH_GITHUB_REPOSITORIES_AUTHORIZATION_URL: `${providerUrl}/authorize`,
    OAUTH_GITHUB_REPOSITORIES_TOKEN_URL: `${providerUrl}/token`,
    EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
  });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(async () => {
  await s.stop();
  await new Promise((r) => provider.close(r));
});

/** Plays the user's browser: visits the authorization URL, follows the provider's redirect to this server. */
async function authorize(authorizationUrl: string): Promise<{ callbackUrl: string; status: number; body: any }> {
  const atProvider = await fetch(authorizationUrl, { redirect: 'manual' });
  const callbackUrl = atProvider.headers.get('location')!;
  const back = await fetch(callbackUrl);
  return { callbackUrl, status: back.status, body: await back.json() };
}

const dbText = (sql: string) => {
  const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
  try {
    return JSON.stringify(db.prepare(sql).all());
  } finally {
    db.close();
  }
};

let oauthId: string;

describe('OAuth connections', () => {
  it('providers: configured ones are available, the rest are not', async () => {
    const r = await s.call('GET', `/api/v2/credentials/providers?workspaceId=${ws()}`);
    expect(r.status, r.text).toBe(200);
    const byId = Object.fromEntries(r.body.data.map((p: any) => [p.serviceId, p]));
    expect(byId['github-repositories']).toMatchObject({ type: 'oauth', available: true });
    expect(byId.slack).toMatchObject({ type: 'oauth', available: false });
    expect(byId['google-service-account']).toMatchObject({ type: 'service_account', available: true });
    const viaCli = await cli('credentials', 'providers', 'list');
    expect(viaCli.code, viaCli.stderr).toBe(0);
    expect(viaCli.stdout).toContain('github-repositories');
  });

  it('connect (CLI) → authorization URL with PKCE and state → callback → tokens stored sealed', async () => {
    const started = await cli('credentials', 'connect', 'github-repositories', '--name', 'My GitHub');
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const { authorizationUrl, expiresAt } = started.json.data ?? started.json;
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());
    const url = new URL(authorizationUrl);
    expect(url.origin + url.pathname).toBe(`${providerUrl}/authorize`);
    expect(url.searchParams.get('client_id')).toBe('test-client');
    expect(url.searchParams.get('response_type')).toBe('code');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('state')!.length).toBeGreaterThanOrEqual(32);
    expect(url.searchParams.get('redirect_uri')).toBe(`${s.url}/api/v2/credentials/oauth/callback`);
    const done = await authorize(authorizationUrl);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data).toMatchObject({ providerId: 'github-repositories', displayName: 'My GitHub', status: 'connected' });
    oauthId = done.body.data.credentialId;
    // the code was exchanged with the verifier
    expect(seen.token[0]!.get('grant_type')).toBe('authorization_code');
    expect(seen.token[0]!.get('code_verifier')).toBeTruthy();
    // a replayed callback is refused
    const replay = await fetch(done.callbackUrl);
    expect(replay.status).toBe(400);
    expect(JSON.stringify(await replay.json())).toContain('STATE_USED');
    const listed = await cli('credentials', 'list');
    expect(listed.stdout).toContain('My GitHub');
    const item = (await s.call('GET', `/api/v2/credentials?workspaceId=${ws()}&type=oauth`)).body.data[0];
    expect(item).toMatchObject({ id: oauthId, type: 'oauth', providerId: 'github-repositories', accountId: 'octocat', hasServiceAccountKey: false, role: 'admin' });
    expect(dbText('SELECT * FROM credentials')).not.toContain('access-1');
    expect(dbText('SELECT * FROM credentials')).not.toContain('refresh-1');
  });

  it('tools get a fresh access token: an expiring one is refreshed first', async () => {
    const call = () =>
      s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: ws(), input: { url: `${providerUrl}/api/me` }, credentialId: oauthId });
    const first = await call();
    expect(first.body.data.status, first.text).toBe('succeeded');
    // access-1 expired within a second (less than the refresh margin): refreshed with the refresh token
    expect(seen.token.at(-1)!.get('grant_type')).toBe('refresh_token');
    expect(seen.token.at(-1)!.get('refresh_token')).toBe('refresh-1');
    expect(first.body.data.output.data.auth).toBe('Bearer access-2');
    const second = await call();
    expect(second.body.data.output.data.auth).toBe('Bearer access-2');
    const refreshes = seen.token.filter((f) => f.get('grant_type') === 'refresh_token').length;
    expect(refreshes).toBe(1);
    const unknown = await s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: ws(), input: { url: `${providerUrl}/api/me` }, credentialId: 'nope' });
    expect(unknown.body.data.status).toBe('failed');
    expect(unknown.body.data.error.message).toContain('No credential nope');
  });

  it('an API block naming the credential sends its fresh token, never traced', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const api = apiBlock('api', 'Call', { url: `${providerUrl}/api/me`, method: 'GET', credentialId: oauthId });
    const wf = await buildWorkflow(s, 'Uses a credential', [start, api], [link(start, api)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.body.data.status, r.text).toBe('completed');
    expect(r.body.data.output.data.auth).toMatch(/^Bearer access-\d+$/);
    const log = await s.call('GET', `/api/v2/logs/${r.body.data.runId}`);
    expect(JSON.stringify(log.body.data.traceSpans ?? [])).not.toContain('"Authorization"');
    const start2 = apiBlock('start_trigger', 'Start');
    const missing = apiBlock('api', 'Call', { url: `${providerUrl}/api/me`, method: 'GET', credentialId: 'nope' });
    const wf2 = await buildWorkflow(s, 'Missing credential', [start2, missing], [link(start2, missing)]);
    const failed = await s.call('POST', `/api/v2/workflows/${wf2.id}/execute`, {});
    expect(failed.body.data.status).toBe('failed');
    expect(failed.body.data.error.message).toContain('No credential nope');
  });

  it('reconnect replaces the tokens of the same credential', async () => {
    const started = await cli('credentials', 'reconnect', oauthId);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const done = await authorize((started.json.data ?? started.json).authorizationUrl);
    expect(done.body.data.credentialId).toBe(oauthId);
    expect((await s.call('GET', `/api/v2/credentials?workspaceId=${ws()}&type=oauth`)).body.data).toHaveLength(1);
  });

  it('bad states, denied authorization and unconfigured providers are clear errors', async () => {
    const bad = await fetch(`${s.url}/api/v2/credentials/oauth/callback?state=forged&code=x`);
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('STATE_INVALID');
    expect((await fetch(`${s.url}/api/v2/credentials/oauth/callback?code=x`)).status).toBe(400);
    const started = await s.call('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'github-repositories', displayName: 'Denied' });
    const state = new URL(started.body.data.authorizationUrl).searchParams.get('state')!;
    const denied = await fetch(`${s.url}/api/v2/credentials/oauth/callback?state=${encodeURIComponent(state)}&error=access_denied`);
    expect(denied.status).toBe(400);
    expect(JSON.stringify(await denied.json())).toContain('AUTHORIZATION_DENIED');
    const slack = await s.call('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'slack', displayName: 'Slack' });
    expect(slack.status).toBe(400);
    expect(JSON.stringify(slack.body)).toContain('PROVIDER_NOT_CONFIGURED');
    // The answer names the settings an operator sets; a provider of a family also names the family's.
    expect(slack.body.error.message).toContain('set OAUTH_SLACK_CLIENT_ID and OAUTH_SLACK_CLIENT_SECRET');
    const drive = await s.call('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'google-drive', displayName: 'Drive' });
    expect(drive.status).toBe(400);
    expect(drive.body.error.message).toContain('set OAUTH_GOOGLE_DRIVE_CLIENT_ID and OAUTH_GOOGLE_DRIVE_CLIENT_SECRET (or OAUTH_GOOGLE_CLIENT_ID and OAUTH_GOOGLE_CLIENT_SECRET for every google provider)');
    const viaCli = await cli('credentials', 'connect', 'slack', '--name', 'Slack');
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stdout + viaCli.stderr).toContain('OAUTH_SLACK_CLIENT_ID and OAUTH_SLACK_CLIENT_SECRET');
    expect((await s.call('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'not-a-provider', displayName: 'x' })).status).toBe(400);
    expect((await s.call('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'github-repositories' })).status).toBe(400);
  });
});

describe('service-account credentials', () => {
  const key = JSON.stringify({ type: 'service_account', client_email: 'bot@project.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nSEALEDKEYMATERIAL\n-----END PRIVATE KEY-----\n' });

  it('created (CLI), checked against the provider fields, sealed at rest, updated and deleted', async () => {
    const made = await cli('credentials', 'create', 'google-service-account', '--name', 'GCP bot', '--credentials', JSON.stringify({ serviceAccountJson: key }));
    expect(made.code, made.stderr + made.stdout).toBe(0);
    const created = made.json.data ?? made.json;
    expect(created).toMatchObject({ type: 'service_account', providerId: 'google-service-account', accountId: 'bot@project.iam.gserviceaccount.com', hasServiceAccountKey: true });
    expect(made.stdout).not.toContain('SEALEDKEYMATERIAL');
    expect(dbText('SELECT * FROM credentials')).not.toContain('SEALEDKEYMATERIAL');
    const upd = await s.call('PATCH', `/api/v2/credentials/${created.id}?workspaceId=${ws()}`, { displayName: 'Renamed', serviceAccountJson: key.replace('bot@', 'bot2@') });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body.data).toMatchObject({ displayName: 'Renamed', accountId: 'bot2@project.iam.gserviceaccount.com' });
    expect((await s.call('PATCH', `/api/v2/credentials/${created.id}?workspaceId=${ws()}`, { botToken: 'x' })).status).toBe(400);
    const del = await cli('credentials', 'delete', created.id, '--yes');
    expect(del.code, del.stderr + del.stdout).toBe(0);
    expect((await s.call('DELETE', `/api/v2/credentials/${created.id}?workspaceId=${ws()}`)).status).toBe(404);
  });

  it('refuses unknown providers, malformed JSON and missing fields', async () => {
    const post = (body: Record<string, unknown>) => s.call('POST', '/api/v2/credentials', { workspaceId: ws(), type: 'service_account', ...body });
    expect((await post({ providerId: 'nope', credentials: '{}' })).status).toBe(400);
    expect((await post({ providerId: 'google-service-account', credentials: 'not json' })).status).toBe(400);
    expect((await post({ providerId: 'google-service-account', credentials: '{}' })).status).toBe(400);
    expect((await post({ providerId: 'google-service-account', credentials: JSON.stringify({ serviceAccountJson: '{"a":1}' }) })).status).toBe(400);
    expect((await post({ providerId: 'slack-custom-bot', credentials: JSON.stringify({ botToken: 'xoxb-1', signingSecret: 's', extra: 'x' }) })).status).toBe(400);
    expect((await post({ providerId: 'slack-custom-bot', credentials: JSON.stringify({ botToken: 'xoxb-1', signingSecret: 's' }) })).status).toBe(200);
  });

  it('workspace keys may list but not write; only creators and admins may change a credential', async () => {
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws() });
    expect((await s.call('GET', `/api/v2/credentials?workspaceId=${ws()}`, undefined, wsKey.key)).status).toBe(200);
    expect((await s.call('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'github-repositories', displayName: 'x' }, wsKey.key)).status).toBe(403);
    const writer = await s.newUser('cred-writer@example.com', { [ws()]: 'write' });
    const list = await s.call('GET', `/api/v2/credentials?workspaceId=${ws()}&type=oauth`, undefined, writer.key);
    expect(list.body.data[0].role).toBe('member');
    expect((await s.call('DELETE', `/api/v2/credentials/${oauthId}?workspaceId=${ws()}`, undefined, writer.key)).status).toBe(403);
  });
});

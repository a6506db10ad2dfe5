// Selectors: option lists from the workspace's own data (table columns, workflows, KB documents, secret names) and
// from Slack through an OAuth credential (a local fake of Slack's OAuth and Web API started here), paged through the
// body, resolved one by one; errors for missing context, unknown resources, wrong credentials, unsupported keys and
// workspace keys; and the real `sim selectors` commands.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';

let s: TestServer;
let slack: http.Server;
let slackUrl: string;
const ws = () => s.workspaceId;
const cli = (...args: string[]) => runCli(['--output', 'json', ...args], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });
const list = (body: Record<string, unknown>, key?: string) => s.call('POST', '/api/v2/selectors/list', { workspaceId: ws(), ...body }, key);
const get = (body: Record<string, unknown>, key?: string) => s.call('POST', '/api/v2/selectors/get', { workspaceId: ws(), ...body }, key);

/** Slack's channels as the fake serves them, 3 per page. */
const CHANNELS = Array.from({ length: 7 }, (_, i) => ({ id: `C${i}`, name: `chan-${i}`, is_private: i === 3 }));
const seenTokens: string[] = [];

beforeAll(async () => {
  slack = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const json = (body: unknown, status = 200) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/oauth/authorize') {
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', 'slack-code');
      back.searchParams.set('state', url.searchParams.get('state')!);
      return res.writeHead(302, { location: back.href }).end();
    }
    if (url.pathname === '/oauth/token') return json({ access_token: 'xoxp-good', token_type: 'bearer' });
    seenTokens.push(String(req.headers.authorization));
    if (req.headers.authorization !== 'Bearer xoxp-good') return json({ ok: false, error: 'invalid_auth' });
    if (url.pathname === '/api/conversations.list') {
      const start = Number(url.searchParams.get('cursor') ?? 0);
      const size = Math.min(3, Number(url.searchParams.get('limit')));
      const next = start + size < CHANNELS.length ? String(start + size) : '';
      return json({ ok: true, channels: CHANNELS.slice(start, start + size), response_metadata: { next_cursor: next } });
    }
    if (url.pathname === '/api/conversations.info') {
      const c = CHANNELS.find((x) => x.id === url.searchParams.get('channel'));
      return json(c ? { ok: true, channel: c } : { ok: false, error: 'channel_not_found' });
    }
    if (url.pathname === '/api/users.list') return json({ ok: true, members: [{ id: 'U1', name: 'ada', real_name: 'Ada Lovelace' }, { id: 'U2', name: 'gone', deleted: true }], response_metadata: { next_cursor: '' } });
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => slack.listen(0, '127.0.0.1', () => r()));
  slackUrl = `http://127.0.0.1:${(slack.address() as AddressInfo).port}`;
  s = await startTestServer({
    OAUTH_SLACK_CLIENT_ID: 'slack-client',
    OAUTH_SLACK_CLIENT_SECRET: 'slack-secret',
    OAUTH_SLACK_AUTHORIZATION_URL: `${slackUrl}/oauth/authorize`,
    OAUTH_SLACK_TOKEN_URL: `${slackUrl}/oauth/token`,
    OAUTH_SLACK_API_BASE_URL: `${slackUrl}/api`,
    EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
  });
});
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => slack.close(r));
});

describe('internal selectors', () => {
  let tableId: string;
  let columns: Record<string, string>;

  beforeAll(async () => {
    const t = await s.ok('POST', '/api/v2/tables', {
      workspaceId: ws(),
      name: 'leads',
      schema: { columns: [{ name: 'email', type: 'string', unique: true }, { name: 'handle', type: 'string', unique: true }, { name: 'score', type: 'number' }, { name: 'code', type: 'string', unique: true }] },
    });
    tableId = t.id;
    columns = Object.fromEntries(t.schema.columns.map((c: { id: string; name: string }) => [c.name, c.id]));
  });

  it('table.columns: the unique columns, paged through the body with a signed cursor, searchable, resolvable', async () => {
    const all = await list({ selectorKey: 'table.columns', context: { tableId } });
    expect(all.status, all.text).toBe(200);
    expect(all.body).toEqual({
      data: [
        { id: columns.email, label: 'email', meta: { type: 'string' } },
        { id: columns.handle, label: 'handle', meta: { type: 'string' } },
        { id: columns.code, label: 'code', meta: { type: 'string' } },
      ],
      nextCursor: null,
      truncated: false,
    });
    const first = await list({ selectorKey: 'table.columns', context: { tableId }, limit: 2 });
    expect(first.body.data.map((o: any) => o.label)).toEqual(['email', 'handle']);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await list({ selectorKey: 'table.columns', context: { tableId }, limit: 2, cursor: first.body.nextCursor });
    expect(second.body.data.map((o: any) => o.label)).toEqual(['code']);
    expect(second.body.nextCursor).toBeNull();
    // The cursor belongs to this selector and context; only limit may change.
    const moved = await list({ selectorKey: 'table.outputColumns', context: { tableId }, limit: 2, cursor: first.body.nextCursor });
    expect(moved.status).toBe(400);
    expect((await list({ selectorKey: 'table.columns', context: { tableId }, search: 'HAN' })).body.data.map((o: any) => o.label)).toEqual(['handle']);
    expect((await get({ selectorKey: 'table.columns', context: { tableId }, id: columns.code })).body).toEqual({ data: { id: columns.code, label: 'code', meta: { type: 'string' } } });
    expect((await get({ selectorKey: 'table.columns', context: { tableId }, id: 'col_nope' })).body).toEqual({ data: null });
    const outputs = await list({ selectorKey: 'table.outputColumns', context: { tableId } });
    expect(outputs.body.data.map((o: any) => o.label)).toEqual(['email', 'handle', 'score', 'code']);
  });

  it('sim.workflows (minus excludeWorkflowId), workspace.secretNames, knowledge.documents', async () => {
    const a = await buildWorkflow(s, 'Alpha', [apiBlock('start_trigger', 'Start')], [], { deploy: false });
    const b = await buildWorkflow(s, 'Beta', [apiBlock('start_trigger', 'Start')], [], { deploy: false });
    const wfs = await list({ selectorKey: 'sim.workflows', context: { excludeWorkflowId: a.id } });
    expect(wfs.status, wfs.text).toBe(200);
    expect(wfs.body.data.map((o: any) => o.id)).toContain(b.id);
    expect(wfs.body.data.map((o: any) => o.id)).not.toContain(a.id);
    expect(wfs.body.data.find((o: any) => o.id === b.id)).toMatchObject({ label: 'Beta', meta: { deployed: false } });

    for (const name of ['ZED_KEY', 'API_TOKEN']) expect((await s.call('PUT', `/api/v2/secrets/${name}`, { workspaceId: ws(), scope: 'workspace', value: 'v' })).status).toBeLessThan(300);
    const secrets = await list({ selectorKey: 'workspace.secretNames' });
    expect(secrets.body.data).toEqual([
      { id: 'API_TOKEN', label: 'API_TOKEN' },
      { id: 'ZED_KEY', label: 'ZED_KEY' },
    ]);

    const kb = await s.ok('POST', '/api/v2/knowledge', { workspaceId: ws(), name: 'Handbook' });
    const file = await s.ok('POST', '/api/v2/files', { workspaceId: ws(), name: 'faq.md', content: '# FAQ\n\nRefunds take five days.', contentType: 'text/markdown' });
    const added = await s.ok('POST', `/api/v2/knowledge/${kb.id}/documents/from-workspace-files`, { workspaceId: ws(), fileReferences: [file.id] });
    const docs = await list({ selectorKey: 'knowledge.documents', context: { knowledgeBaseId: kb.id } });
    expect(docs.status, docs.text).toBe(200);
    expect(docs.body.data).toEqual([{ id: added.added[0].documentId, label: 'faq.md', meta: expect.objectContaining({ enabled: true }) }]);
  });

  it('errors: missing context, unknown resources, keys this server does not answer, bad input, workspace keys', async () => {
    const missing = await list({ selectorKey: 'table.columns' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain('needs context.tableId');
    expect(missing.body.error.details[0].path).toEqual(['body', 'context', 'tableId']);
    const unknownTable = await list({ selectorKey: 'table.columns', context: { tableId: 'tbl_missing' } });
    expect(unknownTable.status).toBe(404);
    expect(unknownTable.body.error.message).toBe('Table not found.');
    expect((await list({ selectorKey: 'knowledge.documents', context: { knowledgeBaseId: 'kb_missing' } })).status).toBe(404);
    const unsupported = await list({ selectorKey: 'snowflake.databases', context: { oauthCredential: 'x' } });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.message).toContain('snowflake.databases is not available on this server: Snowflake');
    expect((await list({ selectorKey: 'no.such.selector' })).status).toBe(400);
    expect((await list({ selectorKey: 'table.columns', context: { tableId: 1 } })).status).toBe(400);
    expect((await list({ selectorKey: 'table.columns', context: { tableId: 'x' }, limit: 101 })).status).toBe(400);
    expect((await get({ selectorKey: 'table.columns', context: { tableId: 'x' } })).status).toBe(400);
    expect((await list({ selectorKey: 'table.columns', context: { tableId: 'x' }, cursor: 'forged.cursor' })).status).toBe(400);
    // Workspace keys are refused; a non-member cannot see the workspace.
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws() });
    expect((await list({ selectorKey: 'workspace.secretNames' }, wsKey.key)).status).toBe(403);
    expect((await get({ selectorKey: 'workspace.secretNames', id: 'API_TOKEN' }, wsKey.key)).status).toBe(403);
    const stranger = await s.newUser('stranger@example.com');
    expect([403, 404]).toContain((await list({ selectorKey: 'workspace.secretNames' }, stranger.key)).status);
  });

  it('the real CLI: sim selectors list (draining every page) and get', async () => {
    const listed = await cli('selectors', 'list', '--selector-key', 'table.columns', '--context', JSON.stringify({ tableId }), '--limit', '0');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.stringify(listed.json)).toContain('handle');
    const one = await cli('selectors', 'get', '--selector-key', 'table.columns', '--context', JSON.stringify({ tableId }), '--id', columns.email!);
    expect(one.code, one.stderr).toBe(0);
    expect(one.json).toMatchObject({ id: columns.email, label: 'email' });
    const bad = await cli('selectors', 'list', '--selector-key', 'table.columns');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('context.tableId');
  });
});

describe('Slack selectors through an OAuth credential', () => {
  let credentialId: string;

  beforeAll(async () => {
    const started = await s.ok('POST', '/api/v2/credentials/connections', { workspaceId: ws(), providerId: 'slack', displayName: 'Team Slack' });
    const atProvider = await fetch(started.authorizationUrl, { redirect: 'manual' });
    const back = await fetch(atProvider.headers.get('location')!);
    expect(back.status).toBe(200);
    const creds = await s.ok('GET', `/api/v2/credentials?workspaceId=${ws()}`);
    credentialId = creds.find((c: any) => c.displayName === 'Team Slack').id;
  });

  it('slack.channels pages through Slack with its cursor, with the credential token', async () => {
    const context = { oauthCredential: credentialId };
    const first = await list({ selectorKey: 'slack.channels', context, limit: 3 });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toEqual([
      { id: 'C0', label: '#chan-0', meta: { private: false, archived: false } },
      { id: 'C1', label: '#chan-1', meta: { private: false, archived: false } },
      { id: 'C2', label: '#chan-2', meta: { private: false, archived: false } },
    ]);
    expect(first.body.truncated).toBe(false);
    const ids: string[] = first.body.data.map((o: any) => o.id);
    let cursor = first.body.nextCursor;
    while (cursor) {
      const page = await list({ selectorKey: 'slack.channels', context, limit: 3, cursor });
      ids.push(...page.body.data.map((o: any) => o.id));
      cursor = page.body.nextCursor;
    }
    expect(ids).toEqual(CHANNELS.map((c) => c.id));
    expect(seenTokens.every((t) => t === 'Bearer xoxp-good')).toBe(true);
    expect((await get({ selectorKey: 'slack.channels', context, id: 'C3' })).body.data).toEqual({ id: 'C3', label: '#chan-3', meta: { private: true, archived: false } });
    expect((await get({ selectorKey: 'slack.channels', context, id: 'C404' })).body).toEqual({ data: null });
    const users = await list({ selectorKey: 'slack.users', context });
    expect(users.body.data).toEqual([{ id: 'U1', label: 'Ada Lovelace', meta: { handle: 'ada', bot: false } }]);
    const viaCli = await cli('selectors', 'list', '--selector-key', 'slack.channels', '--context', JSON.stringify(context), '--limit', '0');
    expect(viaCli.code, viaCli.stderr).toBe(0);
    expect(JSON.stringify(viaCli.json)).toContain('#chan-6');
  });

  it('refuses a missing credential, an unknown one, and one of another provider', async () => {
    const missing = await list({ selectorKey: 'slack.channels' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain('context.oauthCredential');
    expect((await list({ selectorKey: 'slack.channels', context: { oauthCredential: 'cred_missing' } })).status).toBe(404);
    const sa = await s.ok('POST', '/api/v2/credentials', {
      workspaceId: ws(),
      type: 'service_account',
      providerId: 'atlassian-api-token',
      displayName: 'Jira bot',
      credentials: JSON.stringify({ domain: 'x.atlassian.net', username: 'bot@example.com', apiToken: 't', atlassianProduct: 'jira' }),
    });
    const wrong = await list({ selectorKey: 'slack.channels', context: { oauthCredential: sa.id } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain('needs an OAuth connection to Slack');
  });
});

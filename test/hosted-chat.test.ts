// Hosted chat settings through HTTP: create/replace, read, list, delete, and their refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { createApiKey } from '../src/identity/admin.ts';

let s: TestServer;
let wf: { id: string; ids: Record<string, string> };
let wf2: { id: string; ids: Record<string, string> };

beforeAll(async () => {
  s = await startTestServer();
  const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'input', type: 'string' }] });
  const fn = apiBlock('function', 'Echo', { code: 'return "You said: " + <start.input>' });
  wf = await buildWorkflow(s, 'Chat bot', [start, fn], [link(start, fn)]);
  const start2 = apiBlock('start_trigger', 'Start');
  wf2 = await buildWorkflow(s, 'Other', [start2], []);
});
afterAll(() => s.stop());

const chatPath = (id: string) => `/api/v2/workflows/${id}/deployments/chat`;

describe('hosted chat settings', () => {
  it('404s before a chat exists, then creates, reads and replaces one without ever returning the password', async () => {
    expect((await s.call('GET', chatPath(wf.id))).status).toBe(404);
    const created = await s.call('PUT', chatPath(wf.id), {
      identifier: 'support-bot',
      title: 'Support',
      description: 'Ask us anything',
      customizations: { primaryColor: '#802FFF', welcomeMessage: 'Hi there!' },
      authType: 'password',
      password: 'correct horse battery staple',
      outputConfigs: [{ blockId: wf.ids.Echo!, path: 'result' }],
    });
    expect(created.status).toBe(200);
    const chat = created.body.data;
    expect(chat).toMatchObject({
      workflowId: wf.id,
      workspaceId: s.workspaceId,
      identifier: 'support-bot',
      authType: 'password',
      hasPassword: true,
      isActive: true,
      includeThinking: false,
      allowedEmails: [],
    });
    expect(chat.url).toBe(`${s.url}/chat/support-bot`);
    expect(created.text).not.toContain('correct horse');
    const read = await s.call('GET', chatPath(wf.id));
    expect(read.body.data).toEqual(chat);
    const replaced = await s.call('PUT', chatPath(wf.id), { identifier: 'support-bot', title: 'Support 2', authType: 'public' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id: chat.id, title: 'Support 2', hasPassword: false, outputConfigs: [], createdAt: chat.createdAt });
  });

  it('refuses an identifier another chat uses with 409 and writes nothing', async () => {
    const r = await s.call('PUT', chatPath(wf2.id), { identifier: 'support-bot', title: 'Copy' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('CONFLICT');
    expect((await s.call('GET', chatPath(wf2.id))).status).toBe(404);
  });

  it('checks the password, e-mail and output rules', async () => {
    const bad = async (body: Record<string, unknown>) => {
      const r = await s.call('PUT', chatPath(wf2.id), { identifier: 'other-bot', title: 'Other', ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
      return r.body.error;
    };
    await bad({ authType: 'password' });
    await bad({ authType: 'password', password: 'short' });
    await bad({ authType: 'password', password: ' '.repeat(20) });
    await bad({ authType: 'public', password: 'a long enough password' });
    await bad({ authType: 'email' });
    await bad({ authType: 'sso', allowedEmails: ['not-an-address'] });
    await bad({ outputConfigs: [{ blockId: 'nope', path: 'result' }] });
    await bad({ identifier: 'Upper Case' });
    await bad({ customizations: { primaryColor: 'red; background: url(x)' } });
    await bad({ unknown: true });
    expect((await s.call('GET', chatPath(wf2.id))).status).toBe(404);
  });

  it('checks each output path against the block\'s outputs, naming the valid ones', async () => {
    const r = await s.call('PUT', chatPath(wf.id), { identifier: 'support-bot', title: 'Support', outputConfigs: [{ blockId: wf.ids.Echo!, path: 'reslt' }] });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'BAD_REQUEST',
      message: 'Output path "reslt": Block "Echo" has no output "reslt"; its outputs are result, stdout.',
      details: [expect.objectContaining({ path: ['body', 'outputConfigs', '0', 'path'] })],
    });
    const scalar = await s.call('PUT', chatPath(wf.id), { identifier: 'support-bot', title: 'Support', outputConfigs: [{ blockId: wf.ids.Echo!, path: 'stdout.text' }] });
    expect(scalar.status).toBe(400);
    expect(scalar.body.error.message).toMatch(/"stdout" of block "Echo" is a string/);
    // Below an open-ended output (a function's result is any JSON) any path is accepted.
    const ok = await s.call('PUT', chatPath(wf.id), {
      identifier: 'support-bot',
      title: 'Support',
      outputConfigs: [
        { blockId: wf.ids.Echo!, path: 'result' },
        { blockId: wf.ids.Echo!, path: 'result.reply.text' },
        { blockId: wf.ids.Start!, path: 'input' },
      ],
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it('lists the workspace chats with filters and pages', async () => {
    expect((await s.call('PUT', chatPath(wf2.id), { identifier: 'a-bot', title: 'A', authType: 'email', allowedEmails: ['@example.com'] })).status).toBe(200);
    const all = await s.call('GET', `/api/v2/chat-deployments?workspaceId=${s.workspaceId}&sortBy=identifier&sortOrder=asc`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((c: any) => c.identifier)).toEqual(['a-bot', 'support-bot']);
    expect(all.body.data[0]).not.toHaveProperty('hasPassword');
    const page1 = await s.call('GET', `/api/v2/chat-deployments?workspaceId=${s.workspaceId}&sortBy=identifier&sortOrder=asc&limit=1`);
    expect(page1.body.data).toHaveLength(1);
    const page2 = await s.call('GET', `/api/v2/chat-deployments?workspaceId=${s.workspaceId}&sortBy=identifier&sortOrder=asc&limit=1&cursor=${page1.body.nextCursor}`);
    expect(page2.body.data[0].identifier).toBe('support-bot');
    expect(page2.body.nextCursor).toBeNull();
    const one = await s.call('GET', `/api/v2/chat-deployments?workspaceId=${s.workspaceId}&workflowId=${wf2.id}&isActive=true`);
    expect(one.body.data.map((c: any) => c.identifier)).toEqual(['a-bot']);
  });

  it('needs workspace admin access: workspace keys, writers and outsiders are refused', async () => {
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
    for (const [method, path] of [
      ['GET', chatPath(wf.id)],
      ['DELETE', chatPath(wf.id)],
      ['GET', `/api/v2/chat-deployments?workspaceId=${s.workspaceId}`],
    ] as const) {
      expect((await s.call(method, path, undefined, wsKey)).status, `${method} ${path}`).toBe(403);
    }
    expect((await s.call('PUT', chatPath(wf.id), { identifier: 'x-bot', title: 'X' }, wsKey)).status).toBe(403);
    const writer = await s.newUser('writer@example.com', { [s.workspaceId]: 'write' });
    const r = await s.call('GET', chatPath(wf.id), undefined, writer.key);
    expect(r.status).toBe(403);
    expect(r.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
    const outsider = await s.newUser('outsider@example.com');
    expect((await s.call('GET', chatPath(wf.id), undefined, outsider.key)).status).toBe(404);
  });

  it('deletes the chat and frees its identifier', async () => {
    const d = await s.call('DELETE', chatPath(wf2.id));
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ deleted: true });
    expect((await s.call('DELETE', chatPath(wf2.id))).status).toBe(404);
    expect((await s.call('PUT', chatPath(wf.id), { identifier: 'a-bot', title: 'Reuse' })).status).toBe(200);
  });
});

describe('hosted chat through the sim CLI', () => {
  it('publishes, shows, lists and unpublishes a chat', async () => {
    const { runCli } = await import('./support/cli.ts');
    const env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
    const published = await runCli(
      [
        '--output', 'json', 'workflows', 'chat', 'publish', wf2.id, '--yes',
        '--identifier', 'cli-bot', '--title', 'From the CLI', '--auth-type', 'password', '--password', 'a password from the cli',
        '--customizations', JSON.stringify({ primaryColor: '#123456', welcomeMessage: 'Hi from the CLI' }),
        '--output-configs', JSON.stringify([{ blockId: wf2.ids.Start, path: 'input' }]),
      ],
      env,
    );
    expect(published.code, published.stderr).toBe(0);
    expect(published.json.data ?? published.json).toMatchObject({ identifier: 'cli-bot', hasPassword: true, authType: 'password' });
    const status = await runCli(['--output', 'json', 'workflows', 'chat', 'status', wf2.id], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.stringify(status.json)).toContain('cli-bot');
    expect(status.stdout).not.toContain('a password from the cli');
    const listed = await runCli(['--output', 'json', 'chat-deployments', 'list', '--sort-by', 'identifier'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.stringify(listed.json)).toContain('cli-bot');
    const taken = await runCli(['--output', 'json', 'workflows', 'chat', 'publish', wf.id, '--yes', '--identifier', 'cli-bot', '--title', 'Clash'], env);
    expect(taken.code).not.toBe(0);
    expect(taken.stderr + taken.stdout).toMatch(/already used|409|conflict/i);
    const unpublished = await runCli(['--output', 'json', 'workflows', 'chat', 'unpublish', wf2.id, '--yes'], env);
    expect(unpublished.code, unpublished.stderr).toBe(0);
    expect((await s.call('GET', chatPath(wf2.id))).status).toBe(404);
  });
});

// The Secrets API: workspace and personal scope on the vault runs already use; values write-only except an
// unredacted workspace secret's; the real `sim secrets` commands with the value on stdin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { DatabaseSync } from 'node:sqlite';
import path from 'node:path';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
const cli = (args: string[], stdin?: string) => runCli(['--output', 'json', ...args], env, stdin);

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1000' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(() => s.stop());

const put = (name: string, body: Record<string, unknown>, key?: string) => s.call('PUT', `/api/v2/secrets/${name}`, { workspaceId: s.workspaceId, ...body }, key);
const list = async (qs = '', key?: string) => s.call('GET', `/api/v2/secrets?workspaceId=${s.workspaceId}${qs}`, undefined, key);

async function runEcho(name: string, key?: string, workspaceId?: string) {
  const start = apiBlock('start_trigger', 'Start');
  const fn = apiBlock('function', 'Use', { code: `const t = "{{${name}}}"; return { length: t.length, echo: t }` });
  const wf = await buildWorkflow(s, `echo ${name} ${Math.random()}`, [start, fn], [link(start, fn)], { key, workspaceId });
  const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {}, key);
  expect(r.status, r.text).toBe(200);
  return r;
}

describe('sim secrets (CLI)', () => {
  it('sets a workspace secret with the value on stdin, lists it without the value, a run resolves it, deletes it', async () => {
    const value = 'cli-stdin-value-123\n';
    const set = await cli(['secrets', 'set', 'CLI_TOKEN', '--scope', 'workspace', '--value', '@-', '--description', 'from the CLI'], value);
    expect(set.code, set.stderr + set.stdout).toBe(0);
    expect(set.stdout).not.toContain('cli-stdin-value');
    const listed = await cli(['secrets', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('CLI_TOKEN');
    expect(listed.stdout).not.toContain('cli-stdin-value');
    const run = await runEcho('CLI_TOKEN');
    expect(run.body.data.output.result.length).toBe(value.length);
    expect(run.body.data.output.result.echo).toBe('[REDACTED]');
    const del = await cli(['secrets', 'delete', 'CLI_TOKEN', '--scope', 'workspace', '--yes']);
    expect(del.code, del.stderr).toBe(0);
    expect((await list()).body.data.map((x: any) => x.name)).not.toContain('CLI_TOKEN');
  });
});

describe('secrets over HTTP', () => {
  it('a workspace secret: metadata only, description kept when only the flag changes', async () => {
    const r = await put('WS_ONE', { scope: 'workspace', value: 'value-one-xyz', description: 'first' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ name: 'WS_ONE', scope: 'workspace', description: 'first', unredacted: false, role: 'admin' });
    expect(r.text).not.toContain('value-one-xyz');
    const again = await put('WS_ONE', { scope: 'workspace', unredacted: false });
    expect(again.status).toBe(200);
    expect(again.body.data.description).toBe('first');
    expect(again.body.data.createdAt).toBe(r.body.data.createdAt);
    const l = await list('&scope=workspace');
    const item = l.body.data.find((x: any) => x.name === 'WS_ONE');
    expect(item).toBeDefined();
    expect(item.value).toBeUndefined();
    expect(l.text).not.toContain('value-one-xyz');
    // clearing the description
    expect((await put('WS_ONE', { scope: 'workspace', description: null })).body.data.description).toBeNull();
  });

  it('an unredacted workspace secret shows its value in the list and in run output', async () => {
    expect((await put('PLAIN_ID', { scope: 'workspace', value: 'public-id-777', unredacted: true })).status).toBe(200);
    const item = (await list('&search=plain')).body.data.find((x: any) => x.name === 'PLAIN_ID');
    expect(item).toMatchObject({ unredacted: true, value: 'public-id-777' });
    const run = await runEcho('PLAIN_ID');
    expect(run.body.data.output.result.echo).toBe('public-id-777');
  });

  it('a personal secret follows its owner into every workspace and shadows the workspace secret', async () => {
    await put('SHADOWED', { scope: 'workspace', value: 'workspace-value' });
    const mine = await put('SHADOWED', { scope: 'personal', value: 'mine' });
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.data).toMatchObject({ scope: 'personal', description: null, unredacted: false, role: 'admin' });
    expect((await runEcho('SHADOWED')).body.data.output.result.length).toBe(4);
    // another workspace of the same user sees the personal secret too
    const other = await s.newWorkspace('Second');
    const listed = await s.call('GET', `/api/v2/secrets?workspaceId=${other}&scope=personal`);
    expect(listed.body.data.map((x: any) => x.name)).toContain('SHADOWED');
    expect((await runEcho('SHADOWED', undefined, other)).body.data.output.result.length).toBe(4);
    // and another member does not
    const member = await s.newUser('secrets-member@example.com', { [s.workspaceId]: 'write' });
    expect((await runEcho('SHADOWED', member.key)).body.data.output.result.length).toBe('workspace-value'.length);
    expect((await list('&scope=personal', member.key)).body.data).toEqual([]);
    // deleting the personal one uncovers the workspace one again
    expect((await s.call('DELETE', `/api/v2/secrets/SHADOWED?workspaceId=${other}&scope=personal`)).status).toBe(200);
    expect((await runEcho('SHADOWED')).body.data.output.result.length).toBe('workspace-value'.length);
  });

  it('lists with sort and cursor pagination', async () => {
    for (const n of ['PAGE_A', 'PAGE_B', 'PAGE_C']) await put(n, { scope: 'workspace', value: 'v-' + n });
    const first = await list('&search=page_&limit=2&sortOrder=desc');
    expect(first.body.data.map((x: any) => x.name)).toEqual(['PAGE_C', 'PAGE_B']);
    const second = await list(`&search=page_&limit=2&sortOrder=desc&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.data.map((x: any) => x.name)).toEqual(['PAGE_A']);
    expect(second.body.nextCursor).toBeNull();
  });
});

describe('secrets: bad input and access', () => {
  it('a name that is not an identifier is a 400', async () => {
    const r = await put('not-an-identifier', { scope: 'workspace', value: 'x' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
    expect((await put('1ABC', { scope: 'workspace', value: 'x' })).status).toBe(400);
  });

  it('description or unredacted on a personal secret, or a personal secret without value, is a 400', async () => {
    expect((await put('P_X', { scope: 'personal', value: 'x', description: 'no' })).status).toBe(400);
    expect((await put('P_X', { scope: 'personal', value: 'x', unredacted: true })).status).toBe(400);
    const r = await put('P_X', { scope: 'personal' });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/value/);
  });

  it('changing a workspace secret that does not exist without a value is a 404; deleting a missing one too', async () => {
    expect((await put('NOPE_NOT_THERE', { scope: 'workspace', description: 'x' })).status).toBe(404);
    expect((await s.call('DELETE', `/api/v2/secrets/NOPE_NOT_THERE?workspaceId=${s.workspaceId}&scope=workspace`)).status).toBe(404);
  });

  it('a read member may keep personal secrets but not change workspace ones', async () => {
    const reader = await s.newUser('secrets-reader@example.com', { [s.workspaceId]: 'read' });
    const denied = await put('READER_WS', { scope: 'workspace', value: 'x' }, reader.key);
    expect(denied.status).toBe(403);
    expect(denied.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
    expect((await put('READER_MINE', { scope: 'personal', value: 'x' }, reader.key)).status).toBe(200);
    const l = await list('', reader.key);
    expect(l.body.data.find((x: any) => x.name === 'WS_ONE')?.role).toBe('member');
    expect(l.body.data.find((x: any) => x.name === 'READER_MINE')?.role).toBe('admin');
  });

  it('workspace keys are refused; an unreachable workspace is a 404', async () => {
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    expect((await list('', wsKey.key)).status).toBe(403);
    expect((await put('WSKEY', { scope: 'workspace', value: 'x' }, wsKey.key)).status).toBe(403);
    const outsider = await s.newUser('secrets-outsider@example.com');
    expect((await list('', outsider.key)).status).toBe(404);
  });

  it('every change is audited without its value, and the value is sealed at rest', async () => {
    await put('AUDITED', { scope: 'workspace', value: 'audit-secret-value' });
    const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
    try {
      const events = db.prepare("SELECT * FROM audit_events WHERE resource_type = 'secret' AND resource_name = 'AUDITED'").all();
      expect(events.map((e: any) => e.action)).toContain('secret.created');
      expect(JSON.stringify(events)).not.toContain('audit-secret-value');
      expect(JSON.stringify(db.prepare('SELECT * FROM secrets').all())).not.toContain('audit-secret-value');
    } finally {
      db.close();
    }
  });
});

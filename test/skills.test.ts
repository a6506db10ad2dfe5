// Skills: workspace skills next to the read-only built-ins, editors by member e-mail, the real `sim skills`
// commands, and an agent block whose skills reach the model's instructions (checked at a fake provider).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { startFakeLlm, type FakeLlm } from './support/fake-llm.ts';
import { createApiKey } from '../src/identity/admin.ts';

let s: TestServer;
let llm: FakeLlm;
let env: { endpoint: string; apiKey: string; workspace: string };
const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
const ws = () => s.workspaceId;

beforeAll(async () => {
  llm = await startFakeLlm();
  s = await startTestServer({ AGENT_API_BASE_URL: llm.url, RATE_LIMIT_FREE_SYNC: '1000' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(async () => {
  await s.stop();
  await llm.close();
});

const create = (body: Record<string, unknown>, key?: string) => s.call('POST', '/api/v2/skills', { workspaceId: ws(), ...body }, key);

describe('sim skills (CLI)', () => {
  it('creates, lists, gets, updates and deletes a skill', async () => {
    const made = await cli('skills', 'create', '--name', 'cli-skill', '--description', 'From the CLI', '--content', 'Always answer in haiku.');
    expect(made.code, made.stderr + made.stdout).toBe(0);
    const id = made.json.data?.id ?? made.json.id;
    expect(id).toBeTruthy();
    const listed = await cli('skills', 'list');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('cli-skill');
    expect(listed.stdout).toContain('builtin-research');
    const got = await cli('skills', 'get', id);
    expect(got.stdout).toContain('Always answer in haiku.');
    const upd = await cli('skills', 'update', id, '--description', 'Changed');
    expect(upd.code, upd.stderr + upd.stdout).toBe(0);
    expect((await s.call('GET', `/api/v2/skills/${id}?workspaceId=${ws()}`)).body.data.description).toBe('Changed');
    const del = await cli('skills', 'delete', id, '--yes');
    expect(del.code, del.stderr + del.stdout).toBe(0);
    expect((await s.call('GET', `/api/v2/skills/${id}?workspaceId=${ws()}`)).status).toBe(404);
  });

  it('grants, lists and revokes an editor by e-mail', async () => {
    const member = await s.newUser('cli-editor@example.com', { [ws()]: 'write' });
    void member;
    const id = (await create({ name: 'editable', description: 'd', content: 'c' })).body.data.id;
    const grant = await cli('skills', 'editors', 'create', id, '--email', 'cli-editor@example.com');
    expect(grant.code, grant.stderr + grant.stdout).toBe(0);
    const listed = await cli('skills', 'editors', 'list', id);
    expect(listed.stdout).toContain('cli-editor@example.com');
    const revoke = await cli('skills', 'editors', 'delete', id, '--email', 'cli-editor@example.com', '--yes');
    expect(revoke.code, revoke.stderr + revoke.stdout).toBe(0);
    expect((await s.call('GET', `/api/v2/skills/${id}/editors?workspaceId=${ws()}`)).body.data).toEqual([]);
  });
});

describe('skills over HTTP', () => {
  it('built-in skills are listed, readable and read-only', async () => {
    const list = await s.call('GET', `/api/v2/skills?workspaceId=${ws()}&sortBy=name&sortOrder=asc&limit=100`);
    const builtins = list.body.data.filter((x: any) => x.readOnly);
    expect(builtins.map((x: any) => x.id)).toEqual(expect.arrayContaining(['builtin-connect-integration', 'builtin-research', 'builtin-create-table', 'builtin-deploy-workflow']));
    expect(list.body.data[0].content).toBeUndefined();
    const one = await s.call('GET', `/api/v2/skills/builtin-research?workspaceId=${ws()}`);
    expect(one.body.data).toMatchObject({ id: 'builtin-research', name: 'research', readOnly: true });
    expect(one.body.data.content.length).toBeGreaterThan(20);
    const upd = await s.call('PATCH', '/api/v2/skills/builtin-research', { workspaceId: ws(), description: 'mine now' });
    expect(upd.status).toBe(403);
    expect(upd.body.error.details.code).toBe('SKILL_READ_ONLY');
    expect((await s.call('DELETE', `/api/v2/skills/builtin-research?workspaceId=${ws()}`)).status).toBe(403);
    expect((await s.call('GET', `/api/v2/skills/builtin-nope?workspaceId=${ws()}`)).status).toBe(404);
  });

  it('names are kebab-case, unique per workspace and not built-in (409)', async () => {
    expect((await create({ name: 'Not Kebab', description: 'd', content: 'c' })).status).toBe(400);
    expect((await create({ name: 'x'.repeat(65), description: 'd', content: 'c' })).status).toBe(400);
    expect((await create({ name: 'ok-name', description: '', content: 'c' })).status).toBe(400);
    expect((await create({ name: 'ok-name', description: 'd', content: 'c'.repeat(50_001) })).status).toBe(400);
    expect((await create({ name: 'unique-one', description: 'd', content: 'c' })).status).toBe(200);
    const dup = await create({ name: 'unique-one', description: 'd2', content: 'c2' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('CONFLICT');
    expect((await create({ name: 'research', description: 'd', content: 'c' })).status).toBe(409);
    // the same name in another workspace is fine
    const other = await s.newWorkspace('Skills two');
    expect((await s.call('POST', '/api/v2/skills', { workspaceId: other, name: 'unique-one', description: 'd', content: 'c' })).status).toBe(200);
    // renaming onto a taken name is a 409; an update with nothing to change a 400
    const second = (await create({ name: 'second-one', description: 'd', content: 'c' })).body.data.id;
    expect((await s.call('PATCH', `/api/v2/skills/${second}`, { workspaceId: ws(), name: 'unique-one' })).status).toBe(409);
    expect((await s.call('PATCH', `/api/v2/skills/${second}`, { workspaceId: ws() })).status).toBe(400);
  });

  it('a name that is not kebab-case is refused with what to do, not the regular expression', async () => {
    for (const r of [
      await create({ name: 'My Skill', description: 'd', content: 'c' }),
      await s.call('PATCH', `/api/v2/skills/${(await create({ name: 'rename-me', description: 'd', content: 'c' })).body.data.id}`, { workspaceId: ws(), name: 'Rename_Me' }),
    ]) {
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
      expect(r.body.error.message).toContain('use kebab-case, for example `my-skill`');
      expect(r.body.error.message).not.toContain('^[a-z0-9]');
      expect(r.body.error.details).toEqual([expect.objectContaining({ code: 'invalid_string', path: ['body', 'name'] })]);
    }
    const viaCli = await cli('skills', 'create', '--name', 'My Skill', '--description', 'd', '--content', 'c');
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stdout + viaCli.stderr).toContain('use kebab-case, for example `my-skill`');
  });

  it('lists with search and cursor pages', async () => {
    for (const n of ['page-a', 'page-b', 'page-c']) await create({ name: n, description: 'd', content: 'c' });
    const first = await s.call('GET', `/api/v2/skills?workspaceId=${ws()}&search=page-&sortBy=name&sortOrder=asc&limit=2`);
    expect(first.body.data.map((x: any) => x.name)).toEqual(['page-a', 'page-b']);
    const next = await s.call('GET', `/api/v2/skills?workspaceId=${ws()}&search=page-&sortBy=name&sortOrder=asc&limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(next.body.data.map((x: any) => x.name)).toEqual(['page-c']);
    expect(next.body.nextCursor).toBeNull();
  });

  it('editors: only members by e-mail; editors may edit, other writers may not', async () => {
    const owner = await s.newUser('skill-owner@example.com', { [ws()]: 'write' });
    const editor = await s.newUser('skill-editor@example.com', { [ws()]: 'write' });
    const other = await s.newUser('skill-other@example.com', { [ws()]: 'write' });
    await s.newUser('not-a-member@example.com');
    const id = (await create({ name: 'owned', description: 'd', content: 'c' }, owner.key)).body.data.id;
    expect((await s.call('PATCH', `/api/v2/skills/${id}`, { workspaceId: ws(), content: 'x' }, other.key)).status).toBe(403);
    expect((await s.call('POST', `/api/v2/skills/${id}/editors`, { workspaceId: ws(), email: 'not-a-member@example.com' }, owner.key)).status).toBe(404);
    expect((await s.call('POST', `/api/v2/skills/${id}/editors`, { workspaceId: ws(), email: 'skill-editor@example.com' }, other.key)).status).toBe(403);
    const granted = await s.call('POST', `/api/v2/skills/${id}/editors`, { workspaceId: ws(), email: 'skill-editor@example.com' }, owner.key);
    expect(granted.status).toBe(200);
    expect(granted.body.data).toMatchObject({ email: 'skill-editor@example.com', isWorkspaceAdmin: false });
    expect((await s.call('PATCH', `/api/v2/skills/${id}`, { workspaceId: ws(), content: 'edited' }, editor.key)).status).toBe(200);
    // the workspace admin may always
    expect((await s.call('PATCH', `/api/v2/skills/${id}`, { workspaceId: ws(), content: 'by admin' })).status).toBe(200);
    const revoked = await s.call('DELETE', `/api/v2/skills/${id}/editors?workspaceId=${ws()}&email=skill-editor%40example.com`, undefined, owner.key);
    expect(revoked.status, revoked.text).toBe(200);
    expect((await s.call('DELETE', `/api/v2/skills/${id}/editors?workspaceId=${ws()}&email=skill-editor%40example.com`, undefined, owner.key)).status).toBe(404);
    expect((await s.call('PATCH', `/api/v2/skills/${id}`, { workspaceId: ws(), content: 'again' }, editor.key)).status).toBe(403);
  });

  it('workspace keys may read but not write; readers may not create', async () => {
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws() });
    expect((await s.call('GET', `/api/v2/skills?workspaceId=${ws()}`, undefined, wsKey.key)).status).toBe(200);
    expect((await create({ name: 'by-ws-key', description: 'd', content: 'c' }, wsKey.key)).status).toBe(403);
    const reader = await s.newUser('skill-reader@example.com', { [ws()]: 'read' });
    expect((await create({ name: 'by-reader', description: 'd', content: 'c' }, reader.key)).status).toBe(403);
    const outsider = await s.newUser('skill-outsider@example.com');
    expect((await s.call('GET', `/api/v2/skills?workspaceId=${ws()}`, undefined, outsider.key)).status).toBe(404);
  });
});

describe('agent blocks with skills', () => {
  it('the skills\' content reaches the model\'s system instructions', async () => {
    const id = (await create({ name: 'pirate-voice', description: 'Use for every answer.', content: 'Speak like a pirate, matey.' })).body.data.id;
    const start = apiBlock('start_trigger', 'Start');
    const agent = apiBlock('agent', 'Agent', { systemPrompt: 'You are helpful.', userPrompt: 'Hello', skills: [{ skillId: id, name: 'pirate-voice' }, 'builtin-research'] });
    const wf = await buildWorkflow(s, 'Skilled agent', [start, agent], [link(start, agent)]);
    llm.requests.length = 0;
    llm.reply = () => ({ content: 'Arr' });
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.body.data.status, r.text).toBe('completed');
    expect(r.body.data.output.content).toBe('Arr');
    const system = llm.requests[0].messages.find((m: any) => m.role === 'system').content;
    expect(system).toContain('You are helpful.');
    expect(system).toContain('Speak like a pirate, matey.');
    expect(system).toContain('<skill name="research">');
  });

  it('an unknown skill fails the block clearly', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const agent = apiBlock('agent', 'Agent', { userPrompt: 'Hello', skills: ['no-such-skill'] });
    const wf = await buildWorkflow(s, 'Missing skill agent', [start, agent], [link(start, agent)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.body.data?.status ?? r.body.error, r.text).toBeDefined();
    expect(r.text).toContain('Unknown skill: no-such-skill');
  });
});

// Access Control is enforced where it applies, not only stored: a governed member cannot save or deploy a
// workflow with a block type their group does not allow, cannot run a denied tool or model (through the API or
// an agent block), and the disabled features refuse their operations. People no group restricts are unaffected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { newOrganization, type TestOrganization } from './support/organizations.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { startFakeLlm, type FakeLlm } from './support/fake-llm.ts';
import { setMember } from '../src/identity/admin.ts';

let s: TestServer;
let llm: FakeLlm;
let org: TestOrganization;
let governed: { userId: string; key: string };
let ws: string;

beforeAll(async () => {
  llm = await startFakeLlm();
  s = await startTestServer({ AGENT_API_BASE_URL: llm.url, AGENT_MODEL: 'gpt-4o-mini', RATE_LIMIT_FREE_SYNC: '1000' });
  governed = await s.newUser('governed@example.com');
  org = await newOrganization(s, { name: 'Locked Co', workspaces: ['Locked'], members: [{ userId: governed.userId }] });
  ws = org.workspaces[0]!;
  await setMember(s.services.store, { workspaceId: ws, userId: governed.userId, role: 'write' });
  const group = await s.ok('POST', `/api/v2/organizations/${org.id}/permission-groups`, {
    name: 'Locked down',
    workspaceIds: [ws],
    config: {
      allowedIntegrations: ['api', 'agent', 'function'],
      allowedModelProviders: ['openai'],
      deniedModels: ['gpt-4o'],
      deniedTools: ['http_request'],
      disableSkills: true,
      disableTableCreation: true,
      disableCustomTools: true,
      disablePublicApi: true,
    },
  });
  // An explicit-members group: only the governed member; the owner (no default group) stays unrestricted.
  await s.ok('POST', `/api/v2/organizations/${org.id}/permission-groups/${group.id}/members`, { userId: governed.userId });
});
afterAll(async () => {
  await s.stop();
  await llm.close();
});

const graph = (...blocks: ReturnType<typeof apiBlock>[]) => ({
  blocks: Object.fromEntries(blocks.map((b) => [b.id, b])),
  edges: blocks.slice(1).map((b, i) => link(blocks[i]!, b)),
});

describe('saving and deploying', () => {
  it('refuses a draft with a disallowed block type, naming the block, for a replace, a dry run and block operations', async () => {
    const wf = await s.ok('POST', '/api/v2/workflows', { workspaceId: ws, name: 'Governed draft' });
    const start = apiBlock('start_trigger', 'Start');
    const reply = apiBlock('response', 'Reply', { data: '{"ok": true}' });
    const refused = await s.call('PUT', `/api/v2/workflows/${wf.id}/state`, graph(start, reply), governed.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toBe('The block "Reply" uses the block type "response", which is not allowed by the permission group "Locked down".');
    expect((await s.call('PUT', `/api/v2/workflows/${wf.id}/state?dryRun=true`, graph(start, reply), governed.key)).status).toBe(403);
    const ops = await s.call('POST', `/api/v2/workflows/${wf.id}/operations`, { operations: [{ operation_type: 'add', block_id: 'c1', params: { type: 'condition', name: 'Check' } }] }, governed.key);
    expect(ops.status, ops.text).toBe(403);
    expect(ops.body.error.message).toMatch(/"condition"/);
    // Allowed types (and the start trigger) save; nothing was written by the refusals.
    const fn = apiBlock('function', 'Compute', { code: 'return 1' });
    expect((await s.call('PUT', `/api/v2/workflows/${wf.id}/state`, graph(start, fn), governed.key)).status).toBe(200);
    // The owner is governed by no group.
    expect((await s.call('PUT', `/api/v2/workflows/${wf.id}/state`, graph(start, reply))).status).toBe(200);
  });

  it('refuses deploying (and running) a workflow with a disallowed block; the unrestricted owner deploys it', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const reply = apiBlock('response', 'Reply', { data: '{"ok": true}' });
    const wf = await buildWorkflow(s, 'Owner made', [start, reply], [link(start, reply)], { workspaceId: ws, deploy: false });
    const refused = await s.call('POST', `/api/v2/workflows/${wf.id}/deploy`, {}, governed.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/The block "Reply" uses the block type "response"/);
    expect((await s.call('GET', `/api/v2/workflows/${wf.id}/deployment`)).body.data.isDeployed).toBe(false);
    expect((await s.call('POST', `/api/v2/workflows/${wf.id}/deploy`, {})).status).toBe(200);
    const run = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {}, governed.key);
    expect(run.body.data.error.message).toMatch(/not allowed by the permission group "Locked down"/);
    const ownerRun = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(ownerRun.body.data.status, ownerRun.text).toBe('completed');
  });
});

describe('running tools and models', () => {
  it('refuses a denied tool through executeTool, for the governed member only', async () => {
    const r = await s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: ws, input: { url: 'http://127.0.0.1:9/' } }, governed.key);
    expect(r.status).toBe(403);
    expect(r.body.error.message).toBe('The tool "http_request" is denied by the permission group "Locked down".');
    const owner = await s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: ws, input: { url: 'http://127.0.0.1:9/' } });
    expect(owner.status).toBe(200);
  });

  it('an agent block offering a denied tool, or using a denied model or provider, fails with the reason', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const withTool = apiBlock('agent', 'Agent', { userPrompt: 'fetch it', tools: [{ toolId: 'http_request' }] });
    const toolWf = await buildWorkflow(s, 'Tool agent', [start, withTool], [link(start, withTool)], { workspaceId: ws });
    llm.requests.length = 0;
    const toolRun = await s.call('POST', `/api/v2/workflows/${toolWf.id}/execute`, {}, governed.key);
    expect(toolRun.text).toContain('The tool \\"http_request\\" is denied by the permission group');
    expect(llm.requests).toHaveLength(0);

    const start2 = apiBlock('start_trigger', 'Start');
    const denied = apiBlock('agent', 'Agent', { userPrompt: 'hi', model: 'gpt-4o' });
    const deniedWf = await buildWorkflow(s, 'Denied model', [start2, denied], [link(start2, denied)], { workspaceId: ws });
    expect((await s.call('POST', `/api/v2/workflows/${deniedWf.id}/execute`, {}, governed.key)).text).toContain('The model \\"gpt-4o\\" is denied');

    const start3 = apiBlock('start_trigger', 'Start');
    const claude = apiBlock('agent', 'Agent', { userPrompt: 'hi', model: 'claude-sonnet-4' });
    const claudeWf = await buildWorkflow(s, 'Other provider', [start3, claude], [link(start3, claude)], { workspaceId: ws });
    expect((await s.call('POST', `/api/v2/workflows/${claudeWf.id}/execute`, {}, governed.key)).text).toContain('provider \\"anthropic\\", which is not allowed');
    expect(llm.requests).toHaveLength(0);

    // The configured default model (gpt-4o-mini, provider openai) is allowed.
    const start4 = apiBlock('start_trigger', 'Start');
    const plain = apiBlock('agent', 'Agent', { userPrompt: 'hi' });
    const plainWf = await buildWorkflow(s, 'Allowed model', [start4, plain], [link(start4, plain)], { workspaceId: ws });
    const ok = await s.call('POST', `/api/v2/workflows/${plainWf.id}/execute`, {}, governed.key);
    expect(ok.body.data.status, ok.text).toBe('completed');
  });
});

describe('disabled features refuse their operations', () => {
  it('tables, skills, custom tools and the public API switch', async () => {
    const table = await s.call('POST', '/api/v2/tables', { workspaceId: ws, name: 'leads', schema: { columns: [{ name: 'email', type: 'string' }] } }, governed.key);
    expect(table.status).toBe(403);
    expect(table.body.error.message).toBe('Creating tables is disabled by the permission group "Locked down" (disableTableCreation).');
    expect((await s.call('POST', '/api/v2/skills', { workspaceId: ws, name: 'nope', description: 'd', content: 'c' }, governed.key)).status).toBe(403);
    const tool = await s.call(
      'POST',
      '/api/v2/custom-tools',
      { workspaceId: ws, title: 'Adder', schema: { type: 'function', function: { name: 'add', parameters: { type: 'object', properties: {} } } }, code: 'return 1' },
      governed.key,
    );
    expect(tool.status).toBe(403);
    const wf = await s.ok('POST', '/api/v2/workflows', { workspaceId: ws, name: 'Public API' });
    expect((await s.call('PATCH', `/api/v2/workflows/${wf.id}/deployment`, { isPublicApi: true }, governed.key)).status).toBe(403);
    expect((await s.call('PATCH', `/api/v2/workflows/${wf.id}/deployment`, { isPublicApi: false }, governed.key)).status).toBe(200);
    // The owner is not restricted.
    expect((await s.call('POST', '/api/v2/tables', { workspaceId: ws, name: 'leads', schema: { columns: [{ name: 'email', type: 'string' }] } })).status).toBe(201);
  });
});

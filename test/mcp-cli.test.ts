// `sim workflow-mcp-servers` and `sim mcp-servers` through the real CLI (npm package `sim`) against a test server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { startUpstream, type Upstream } from './support/mcp-upstream.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';

let s: TestServer;
let up: Upstream;
let wf: BuiltWorkflow;

const sim = async (...args: string[]) => {
  const r = await runCli(['--output', 'json', ...args], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });
  if (r.code !== 0) throw new Error(`sim ${args.join(' ')} exited ${r.code}: ${r.stderr || r.stdout}`);
  return r.json;
};

beforeAll(async () => {
  up = await startUpstream();
  s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'q', type: 'string' }] });
  const out = apiBlock('response', 'Out', { data: '{"echo": <start.q>}' });
  wf = await buildWorkflow(s, 'Echo Query', [start, out], [link(start, out)]);
});

afterAll(async () => {
  await s?.stop();
  await up?.close();
});

describe('sim workflow-mcp-servers', () => {
  it('creates, lists, publishes, lists tools, unpublishes, updates and deletes', async () => {
    const created = await sim('workflow-mcp-servers', 'create', '--name', 'CLI tools', '--description', 'From the CLI', '--workflow', wf.id);
    const server = created.data ?? created;
    expect(server).toMatchObject({ name: 'CLI tools', description: 'From the CLI', isPublic: false });
    const list = await sim('workflow-mcp-servers', 'list');
    const items = list.data ?? list;
    expect(items.find((x: any) => x.id === server.id)).toMatchObject({ toolCount: 1, toolNames: ['echo_query'] });
    const got = await sim('workflow-mcp-servers', 'get', server.id);
    expect((got.data ?? got).mcpServerUrl).toBe(`${s.url}/api/mcp/serve/${server.id}`);
    const tools = await sim('workflow-mcp-servers', 'tools', 'list', server.id);
    expect((tools.data ?? tools)[0]).toMatchObject({ workflowId: wf.id, toolName: 'echo_query', status: 'active' });
    const renamed = await sim('workflow-mcp-servers', 'tools', 'create', server.id, '--workflow-id', wf.id, '--tool-name', 'echo');
    expect((renamed.data ?? renamed)).toMatchObject({ toolName: 'echo', updated: true });
    const removed = await sim('workflow-mcp-servers', 'tools', 'delete', server.id, wf.id, '--yes');
    expect((removed.data ?? removed)).toMatchObject({ workflowId: wf.id, deleted: true });
    const patched = await sim('workflow-mcp-servers', 'update', server.id, '--is-public');
    expect((patched.data ?? patched).isPublic).toBe(true);
    const deleted = await sim('workflow-mcp-servers', 'delete', server.id, '--yes');
    expect((deleted.data ?? deleted)).toMatchObject({ id: server.id, deleted: true });
  });

  it('reports a refused publication (undeployed workflow) as a failure', async () => {
    const draft = await buildWorkflow(s, 'Draft only', [apiBlock('start_trigger', 'Start')], [], { deploy: false });
    const r = await runCli(['--output', 'json', 'workflow-mcp-servers', 'create', '--name', 'x', '--workflow', draft.id], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/not deployed/);
  });
});

describe('sim mcp-servers', () => {
  it('registers, gets, lists tools, updates and deletes an external server', async () => {
    const created = await sim('mcp-servers', 'create', '--name', 'Upstream', '--url', up.secureUrl, '--headers', JSON.stringify({ 'x-token': up.token }), '--timeout', '5000');
    const server = created.data ?? created;
    expect(server).toMatchObject({ name: 'Upstream', authType: 'headers', connectionStatus: 'connected', toolCount: 3, timeout: 5000, headerNames: ['x-token'] });
    expect(JSON.stringify(created)).not.toContain(up.token);
    const got = await sim('mcp-servers', 'get', server.id);
    expect((got.data ?? got).hasHeaders).toBe(true);
    const tools = await sim('mcp-servers', 'tools', 'list', server.id, '--refresh');
    expect((tools.data ?? tools).map((t: any) => t.name)).toEqual(['add', 'fail', 'whoami']);
    const list = await sim('mcp-servers', 'list');
    expect((list.data ?? list).map((x: any) => x.id)).toContain(server.id);
    const updated = await sim('mcp-servers', 'update', server.id, '--name', 'Renamed', '--no-enabled');
    expect((updated.data ?? updated)).toMatchObject({ name: 'Renamed', enabled: false });
    const deleted = await sim('mcp-servers', 'delete', server.id, '--yes');
    expect((deleted.data ?? deleted)).toMatchObject({ id: server.id, deleted: true });
  });

  it('reports a private address as refused', async () => {
    const r = await runCli(['--output', 'json', 'mcp-servers', 'create', '--name', 'x', '--url', 'http://10.0.0.7/mcp'], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/private|egress/i);
  });
});

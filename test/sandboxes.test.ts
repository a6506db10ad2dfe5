// Sandboxes: real npm builds into content-addressed directories (pending → building → ready | failed), function
// blocks that require the built packages inside the permission-model sandbox and nothing else, the refusals
// (bad specifiers, unknown packages, Python without its index, managed CLIs), deletion rules, and `sim sandboxes`.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { setWorkspacePlan } from '../src/identity/admin.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
const ws = () => s.workspaceId;

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1000', RATE_LIMIT_MAX_SYNC: '1000' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(() => s.stop());

const create = (body: Record<string, unknown>) => s.call('POST', '/api/v2/sandboxes', { workspaceId: ws(), ...body });
async function settled(id: string, timeoutMs = 120_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await s.call('GET', `/api/v2/sandboxes/${id}?workspaceId=${ws()}`);
    if (r.body.data.buildStatus === 'ready' || r.body.data.buildStatus === 'failed') return r.body.data;
    if (Date.now() > until) throw new Error(`sandbox ${id} still ${r.body.data.buildStatus}`);
    await new Promise((res) => setTimeout(res, 200));
  }
}
async function runFn(code: string, sandboxId: string) {
  const start = apiBlock('start_trigger', 'Start');
  const fn = apiBlock('function', 'Fn', { code, sandboxId });
  const wf = await buildWorkflow(s, `sbx ${Math.random()}`, [start, fn], [link(start, fn)]);
  return s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
}

let readyId: string;

describe('JavaScript sandboxes', () => {
  it('builds from the npm registry (CLI), then a function block requires the package', async () => {
    const made = await runCli(['--output', 'json', 'sandboxes', 'create', '--name', 'odd', '--language', 'javascript', '--dependencies', 'is-odd@3.0.1'], env);
    expect(made.code, made.stderr + made.stdout).toBe(0);
    const created = made.json.data ?? made.json;
    expect(['pending', 'building']).toContain(created.buildStatus);
    readyId = created.id;
    const done = await settled(readyId);
    expect(done, JSON.stringify(done)).toMatchObject({ buildStatus: 'ready', errorCode: null });
    expect(done.builtAt).toBeTruthy();
    const r = await runFn('const isOdd = require("is-odd"); return { three: isOdd(3), four: isOdd(4) }', readyId);
    expect(r.body.data.status, r.text).toBe('completed');
    expect(r.body.data.output.result).toEqual({ three: true, four: false });
    // by name too
    expect((await runFn('return require("is-odd")(1)', 'odd')).body.data.output.result).toBe(true);
    const listed = await runCli(['--output', 'json', 'sandboxes', 'list'], env);
    expect(listed.stdout).toContain('odd');
  }, 150_000);

  it('the code reaches nothing outside the sandbox directory', async () => {
    const attempts = {
      builtin: 'return require("fs").readFileSync("/etc/passwd", "utf8")',
      child: 'return require("child_process")',
      relative: 'return require("../../../../etc/passwd")',
      absolute: 'return require("/etc/passwd")',
      missing: 'return require("left-pad")',
      escape: 'return require("is-odd").constructor.constructor("return process")().pid',
    };
    for (const [what, code] of Object.entries(attempts)) {
      const r = await runFn(code, readyId);
      expect(r.body.data.status, `${what}: ${r.text}`).toBe('failed');
    }
    const missing = await runFn('return require("left-pad")', readyId);
    expect(missing.body.data.error.message).toContain('not installed in this sandbox');
    // a function without a sandbox has no require at all
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Fn', { code: 'return typeof require' });
    const wf = await buildWorkflow(s, 'no sandbox', [start, fn], [link(start, fn)]);
    expect((await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {})).body.data.output.result).toBe('undefined');
  });

  it('the build is content-addressed: the same dependency set is ready at once', async () => {
    const dirs = fs.readdirSync(path.join(s.dataDir, 'sandboxes')).filter((d) => !d.startsWith('.'));
    expect(dirs).toHaveLength(1);
    const again = await create({ name: 'odd-again', language: 'javascript', dependencies: ['is-odd@3.0.1'] });
    expect(again.body.data.buildStatus).toBe('ready');
  });

  it('a dependency that does not exist fails the build with a readable error', async () => {
    const r = await create({ name: 'missing-dep', language: 'javascript', dependencies: ['owa-no-such-package-4f9c2e1a@1.0.0'] });
    expect(r.status).toBe(200);
    const done = await settled(r.body.data.id);
    expect(done.buildStatus).toBe('failed');
    expect(done.errorCode).toBe('DEPENDENCY_NOT_FOUND');
    expect(done.errorMessage).toContain('owa-no-such-package-4f9c2e1a');
    const used = await runFn('return 1', r.body.data.id);
    expect(used.body.data.status).toBe('failed');
    expect(used.body.data.error.message).toMatch(/not ready.*DEPENDENCY_NOT_FOUND/);
  });
});

describe('what cannot be built here fails clearly', () => {
  it('Python without a reachable index, managed CLIs and system packages', async () => {
    const py = await create({ name: 'py', language: 'python', dependencies: ['requests==2.32.3'] });
    const pyDone = await settled(py.body.data.id, 30_000);
    expect(pyDone.buildStatus).toBe('failed');
    expect(['PYTHON_UNAVAILABLE', 'PACKAGE_INDEX_UNREACHABLE']).toContain(pyDone.errorCode);
    const cli = await create({ name: 'with-cli', language: 'javascript', cliTools: ['kubectl@1.36.3-r1'] });
    expect((await settled(cli.body.data.id)).errorCode).toBe('CLI_TOOLS_UNSUPPORTED');
    const sys = await create({ name: 'with-apt', language: 'javascript', systemPackages: ['ffmpeg'] });
    expect((await settled(sys.body.data.id)).errorCode).toBe('SYSTEM_PACKAGES_UNSUPPORTED');
  });

  it('bad specifiers, bad CLI ids and duplicate names are refused up front', async () => {
    for (const dependencies of [['git+https://example.com/x.git'], ['file:../../etc'], ['./local'], ['https://example.com/a.tgz'], ['a', 'a@1']]) {
      const r = await create({ name: `bad-${Math.random()}`, language: 'javascript', dependencies });
      expect(r.status, JSON.stringify(dependencies)).toBe(400);
    }
    expect((await create({ name: 'bad-py', language: 'python', dependencies: ['requests @ https://x'] })).status).toBe(400);
    expect((await create({ name: 'bad-cli', language: 'javascript', cliTools: ['curl@1'] })).status).toBe(400);
    expect((await create({ name: 'odd', language: 'javascript' })).status).toBe(409);
    expect((await create({ name: '', language: 'javascript' })).status).toBe(400);
  });

  it('updating lists re-validates them against the language and rebuilds', async () => {
    const r = await create({ name: 'switch', language: 'javascript', dependencies: [] });
    expect((await settled(r.body.data.id)).buildStatus).toBe('ready');
    const bad = await s.call('PATCH', `/api/v2/sandboxes/${r.body.data.id}`, { workspaceId: ws(), language: 'python', dependencies: ['not valid!'] });
    expect(bad.status).toBe(400);
    const renamed = await s.call('PATCH', `/api/v2/sandboxes/${r.body.data.id}`, { workspaceId: ws(), name: 'switched' });
    expect(renamed.body.data).toMatchObject({ name: 'switched', buildStatus: 'ready' });
  });
});

describe('deleting sandboxes', () => {
  it('needs the admin role on Max or Enterprise; blocks using a deleted sandbox fail clearly', async () => {
    const onFree = await s.call('DELETE', `/api/v2/sandboxes/${readyId}?workspaceId=${ws()}`);
    expect(onFree.status).toBe(403);
    expect(onFree.body.error.details.code).toBe('PLAN_UPGRADE_REQUIRED');
    await setWorkspacePlan(s.services.store, ws(), 'max');
    const writer = await s.newUser('sandbox-writer@example.com', { [ws()]: 'write' });
    expect((await s.call('DELETE', `/api/v2/sandboxes/${readyId}?workspaceId=${ws()}`, undefined, writer.key)).status).toBe(403);
    const del = await runCli(['--output', 'json', 'sandboxes', 'delete', readyId, '--yes'], env);
    expect(del.code, del.stderr + del.stdout).toBe(0);
    expect((await s.call('GET', `/api/v2/sandboxes/${readyId}?workspaceId=${ws()}`)).status).toBe(404);
    const r = await runFn('return require("is-odd")(3)', readyId);
    expect(r.body.data.status).toBe('failed');
    expect(r.body.data.error.message).toContain('does not exist');
     // the build stays while another sandbox (odd-again) uses it, and goes with the last one
    const builds = () => fs.readdirSync(path.join(s.dataDir, 'sandboxes')).filter((d) => !d.startsWith('.'));
    const shared = builds().length;
    const again = (await s.call('GET', `/api/v2/sandboxes?workspaceId=${ws()}&search=odd-again`)).body.data[0];
    expect((await s.call('DELETE', `/api/v2/sandboxes/${again.id}?workspaceId=${ws()}`)).status).toBe(200);
    expect(builds().length).toBe(shared - 1);
  });
});

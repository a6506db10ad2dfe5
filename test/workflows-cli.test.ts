// The official CLI, unchanged, driving the workflow and block catalog operations.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
let tmp: string;
beforeAll(async () => {
  s = await startTestServer({ BASE_URL: 'https://automation.example.com' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-wf-cli-'));
});
afterAll(async () => {
  fs.rmSync(tmp, { recursive: true, force: true });
  await s.stop();
});

async function sim(...args: string[]) {
  const r = await runCli(['--output', 'json', ...args], env);
  expect(r.code, `sim ${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(0);
  return r.json;
}
const rows = (json: any) => (Array.isArray(json) ? json : json.data);

describe('sim workflows', () => {
  let id: string;

  it('create, get, update, list', async () => {
    const created = await sim('workflows', 'create', '--name', 'CLI flow', '--description', 'made by the CLI', '--folder', 'Team space/ops');
    id = created.id;
    expect(created).toMatchObject({ name: 'CLI flow', folderPath: '/Team%20space/ops', webUrl: `https://automation.example.com/workspace/${s.workspaceId}/w/${id}` });
    expect(created.blocks).toEqual([expect.objectContaining({ type: 'start_trigger' })]);
    expect(await sim('workflows', 'get', id)).toMatchObject({ id, description: 'made by the CLI', inputs: [], variables: {} });
    expect(await sim('workflows', 'update', id, '--name', 'CLI flow 2')).toMatchObject({ id, name: 'CLI flow 2' });
    const listed = rows(await sim('workflows', 'list', '--folder', 'Team space/ops', '--sort-by', 'name'));
    expect(listed.map((w: any) => w.id)).toEqual([id]);
  });

  it('mkdir, ls, mv, move, folders list/mv/delete', async () => {
    await sim('workflows', 'mkdir', '/Archive box/2024');
    const other = await sim('workflows', 'create', '--name', 'Second');
    await sim('workflows', 'mv', id, 'Archive box');
    expect((await sim('workflows', 'get', id)).folderPath).toBe('/Archive%20box');
    const ls = await runCli(['--output', 'json', 'workflows', 'ls', 'Archive box'], env);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toContain('CLI flow 2');
    expect(ls.stdout).toContain('2024');
    const moved = await sim('workflows', 'move', '--workflow', id, other.id, '--to', '/');
    expect(moved).toMatchObject({ moved: [id, other.id], failed: [], folderPath: '/' });
    const folders = rows(await sim('workflows', 'folders', 'list', '--parent', '/'));
    expect(folders.map((f: any) => f.path)).toEqual(expect.arrayContaining(['/Archive%20box', '/Team%20space']));
    expect(await sim('workflows', 'folders', 'mv', '/Archive box', '/Boxes')).toMatchObject({ path: '/Boxes' });
    expect(await sim('workflows', 'folders', 'delete', '/Boxes', '--recursive', '-y')).toMatchObject({ deleted: true, deletedItems: { folders: 2, workflows: 0 } });
  });

  it('deploy shows the references a run cannot resolve; two workflows may use the same block ids', async () => {
    const blocks = {
      b1: { id: 'b1', type: 'start_trigger', name: 'Start', position: { x: 0, y: 0 }, subBlocks: {}, outputs: {}, enabled: true },
      b2: { id: 'b2', type: 'function', name: 'double', position: { x: 1, y: 0 }, subBlocks: { code: { id: 'code', type: 'code', value: 'return <calc.result> * 2' } }, outputs: {}, enabled: true },
    };
    const edges = [{ id: 'e1', source: 'b1', target: 'b2' }];
    const first = (await s.call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'CLI refs one' })).body.data;
    expect((await s.call('PUT', `/api/v2/workflows/${first.id}/state`, { blocks, edges })).status).toBe(200);
    const second = (await s.call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'CLI refs two' })).body.data;
    const put = await sim('workflows', 'state', 'replace', second.id, '--blocks', JSON.stringify(blocks), '--edges', JSON.stringify(edges), '--yes');
    expect(put.lint.unresolvedReferences).toEqual([expect.objectContaining({ blockId: 'b2', value: '<calc.result>' })]);
    const deployed = await sim('workflows', 'deploy', second.id);
    expect(deployed.warnings).toEqual(['Block "double" (code) references <calc.result>: No block named "calc" in this workflow.']);
  });

  it('state get/replace (with dry run), deploy, versions, rollback, undeploy', async () => {
    const state = await sim('workflows', 'state', 'get', id);
    const startId = Object.keys(state.blocks)[0]!;
    const fnId = crypto.randomUUID();
    const blocks = {
      ...state.blocks,
      [fnId]: { id: fnId, type: 'function', name: 'Fn', position: { x: 1, y: 2 }, subBlocks: { code: { id: 'code', type: 'code', value: 'return 1' } }, outputs: {}, enabled: true },
    };
    const edges = [{ id: crypto.randomUUID(), source: startId, target: fnId }];
    fs.writeFileSync(path.join(tmp, 'blocks.json'), JSON.stringify(blocks));
    const dry = await sim('workflows', 'state', 'replace', id, '--blocks', `@${path.join(tmp, 'blocks.json')}`, '--edges', JSON.stringify(edges), '--dry-run');
    expect(dry).toMatchObject({ id, dryRun: true, needsRedeployment: false });
    expect(Object.keys((await sim('workflows', 'state', 'get', id)).blocks)).toHaveLength(1);
    const put = await sim('workflows', 'state', 'replace', id, '--blocks', `@${path.join(tmp, 'blocks.json')}`, '--edges', JSON.stringify(edges), '--yes');
    expect(put.dryRun).toBe(false);
    expect(Object.keys((await sim('workflows', 'state', 'get', id)).blocks)).toHaveLength(2);

    expect(await sim('workflows', 'deploy', id, '--name', 'v-one')).toMatchObject({ isDeployed: true, version: 1 });
    expect(await sim('workflows', 'deploy', id)).toMatchObject({ version: 2 });
    const versions = rows(await sim('workflows', 'versions', 'list', id));
    expect(versions.map((v: any) => [v.version, v.isActive])).toEqual([
      [2, true],
      [1, false],
    ]);
    expect(await sim('workflows', 'versions', 'get', id, '1')).toMatchObject({ version: 1, name: 'v-one' });
    expect(await sim('workflows', 'versions', 'update', id, '2', '--name', 'second')).toEqual({ version: 2, name: 'second', description: null });
    expect(await sim('workflows', 'rollback', id, '-y')).toMatchObject({ version: 1, activeDeployment: { version: 1 } });
    expect(await sim('workflows', 'deployment', 'status', id)).toMatchObject({ isDeployed: true, needsRedeployment: false });
    expect(await sim('workflows', 'undeploy', id, '-y')).toMatchObject({ isDeployed: false, deployedAt: null, activeDeployment: null, latestDeploymentAttempt: null, warnings: [] });
  });

  it('export, import-preview, import, duplicate, delete, restore', async () => {
    const exported = await sim('workflows', 'export', id);
    const doc = exported.state ? exported : exported.data;
    expect(doc.version).toBe('1.0');
    const file = path.join(tmp, 'export.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const preview = await sim('workflows', 'import-preview', '--workflow', `@${file}`);
    expect(preview).toMatchObject({ ready: true });
    const imported = await sim('workflows', 'import', '--workflow', `@${file}`, '--folder', 'Imports', '--name', 'Imported copy');
    expect(imported).toMatchObject({ name: 'Imported copy', folderPath: '/Imports' });
    const importedState = await sim('workflows', 'state', 'get', imported.id);
    expect(Object.keys(importedState.blocks)).toHaveLength(2);
    expect(importedState.edges).toHaveLength(1);

    const dup = await sim('workflows', 'duplicate', 'create', id, '--name', 'Dup');
    expect(dup).toMatchObject({ name: 'Dup', isDeployed: false });
    expect(await sim('workflows', 'delete', dup.id, '-y')).toEqual({ id: dup.id, deleted: true, archived: true });
    const archived = rows(await sim('workflows', 'list', '--scope', 'archived'));
    expect(archived.map((w: any) => w.id)).toContain(dup.id);
    expect(await sim('workflows', 'restore', dup.id)).toMatchObject({ id: dup.id });
  });

  it('an import of something that is not a workflow fails with the reason', async () => {
    const r = await runCli(['--output', 'json', 'workflows', 'import', '--workflow', '{"hello":"world"}'], env);
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toMatch(/not a workflow document/);
  });
});

describe('sim workflows operations apply', () => {
  it('previews with --dry-run, applies from a file with --layout and --set-block-enabled, refuses an atomic batch', async () => {
    const w = await sim('workflows', 'create', '--name', 'CLI ops');
    const startId = w.blocks[0].id;
    const operations = [
      { operation_type: 'add', block_id: 'my-fn', params: { type: 'function', name: 'My Fn', inputs: { code: 'return {ok:true}' } } },
      { operation_type: 'edit', block_id: startId, params: { connections: { success: 'my-fn' } } },
    ];
    const dry = await sim('workflows', 'operations', 'apply', w.id, '--operations', JSON.stringify(operations), '--dry-run');
    expect(dry).toMatchObject({ id: w.id, dryRun: true, applied: 2, skipped: [], mintedBlockIds: {} });
    expect(Object.keys(dry.previewBlockIds)).toEqual(['my-fn']);
    expect(Object.keys((await sim('workflows', 'state', 'get', w.id)).blocks)).toEqual([startId]);

    const file = path.join(tmp, 'operations.json');
    fs.writeFileSync(file, JSON.stringify(operations));
    const done = await sim('workflows', 'operations', 'apply', w.id, '--operations', `@${file}`, '--layout', 'none', '--set-block-enabled', '[{"block_id":"my-fn","enabled":false}]', '--yes');
    expect(done).toMatchObject({ dryRun: false, applied: 3, skipped: [], inputValidationErrors: [] });
    const fnId = done.mintedBlockIds['my-fn'];
    const state = await sim('workflows', 'state', 'get', w.id);
    expect(state.blocks[fnId]).toMatchObject({ name: 'My Fn', enabled: false, position: { x: 0, y: 0 } });
    expect(state.edges).toEqual([expect.objectContaining({ source: startId, target: fnId })]);

    const refused = await runCli(
      ['--output', 'json', 'workflows', 'operations', 'apply', w.id, '--operations', '[{"operation_type":"add","block_id":"x","params":{"type":"teleporter","name":"X"}}]', '--atomic', '--yes'],
      env,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr + refused.stdout).toMatch(/atomic batch was refused/);
    expect(Object.keys((await sim('workflows', 'state', 'get', w.id)).blocks)).toHaveLength(2);
  });
});

describe('sim blocks', () => {
  it('lists and describes block types', async () => {
    const list = rows(await sim('blocks', 'list'));
    expect(list.map((b: any) => b.id)).toEqual(expect.arrayContaining(['agent', 'function', 'loop', 'parallel', 'start_trigger']));
    const agent = await sim('blocks', 'get', 'agent');
    expect(agent).toMatchObject({ id: 'agent', name: 'Agent' });
    expect(agent.inputSchema.map((i: any) => i.id)).toContain('userPrompt');
  });
});

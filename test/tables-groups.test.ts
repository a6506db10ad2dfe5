// Workflow groups: a deployed workflow fills table columns row by row through the durable run queue, with
// runState per row and group, failures reported per block, dispatch limits and modes, cancellation, deletion of
// the group's columns, and the CLI's groups and dispatches commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { PATIENCE_MS } from './support/wait.ts';

let s: TestServer;
let ws: string;
let greet: BuiltWorkflow;
let boom: BuiltWorkflow;
let sleepy: BuiltWorkflow;
beforeAll(async () => {
  s = await startTestServer({ TABLES_LIMIT_FREE: '100', RATE_LIMIT_FREE_ASYNC: '1000', RATE_LIMIT_FREE_API: '100000' });
  ws = s.workspaceId;
  {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'name', type: 'string' }] });
    const fn = apiBlock('function', 'Greet', { code: 'return { text: "Hi " + <start.name>, size: <start.name>.length }' });
    greet = await buildWorkflow(s, 'Greet', [start, fn], [link(start, fn)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Boom', { code: 'throw new Error("no luck")' });
    boom = await buildWorkflow(s, 'Boom', [start, fn], [link(start, fn)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    // Cancelled by the test, never waited out: long enough to still be running however slow the machine.
    const nap = apiBlock('wait', 'Nap', { timeValue: '10', timeUnit: 'minutes' });
    sleepy = await buildWorkflow(s, 'Sleepy', [start, nap], [link(start, nap)]);
  }
});
afterAll(async () => {
  await s.stop();
});

async function ok(method: string, p: string, body?: unknown) {
  const r = await s.call(method, p, body);
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${r.text}`);
  return r.body.data;
}

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = PATIENCE_MS): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('workflow groups', () => {
  it('fill output columns from a deployed workflow, row by row, with runState', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'people', schema: { columns: [{ name: 'name', type: 'string' }] } });
    const base = `/api/v2/tables/${t.id}`;
    const added = await ok('POST', `${base}/groups`, {
      workspaceId: ws,
      group: {
        workflowId: greet.id, name: 'Greeting', deploymentMode: 'deployed', autoRun: false,
        dependencies: { columns: ['name'] },
        inputMappings: [{ inputName: 'name', columnName: 'name' }],
        outputs: [{ blockId: greet.ids.Greet, path: 'result.text', columnName: 'greeting' }, { blockId: greet.ids.Greet, path: 'result.size', columnName: 'size' }],
      },
      outputColumns: [{ name: 'greeting', type: 'string' }, { name: 'size', type: 'number' }],
    });
    expect(added.columns.map((c: any) => [c.name, c.workflowGroupId ?? null])).toEqual([['name', null], ['greeting', added.group.id], ['size', added.group.id]]);
    expect(added.group).toMatchObject({ workflowId: greet.id, deploymentMode: 'deployed', autoRun: false, dependencies: { columns: ['name'] } });
    expect((await ok('GET', `${base}/groups?workspaceId=${ws}`)).map((g: any) => g.id)).toEqual([added.group.id]);

    const { rows } = await ok('POST', `${base}/rows`, { workspaceId: ws, rows: [{ name: 'Ada' }, { name: 'Bo' }, { name: null }] });
    const { dispatchId } = await ok('POST', `${base}/dispatches`, { workspaceId: ws, groupIds: [added.group.id] });
    expect(dispatchId).toMatch(/^dsp_/);
    const done = await until(
      () => ok('GET', `${base}/rows?workspaceId=${ws}&includeRunState=true`),
      (page: any[]) => page.slice(0, 2).every((r) => r.runState?.[added.group.id]?.status === 'completed'),
    );
    expect(done.map((r: any) => r.data)).toEqual([{ name: 'Ada', greeting: 'Hi Ada', size: 3 }, { name: 'Bo', greeting: 'Hi Bo', size: 2 }, { name: null, greeting: null, size: null }]);
    expect(done[0].runState[added.group.id]).toMatchObject({ status: 'completed', workflowId: greet.id, error: null, blockErrors: {} });
    expect(done[2].runState).toEqual({});
    const d = await ok('GET', `${base}/dispatches/${dispatchId}?workspaceId=${ws}`);
    expect(d).toMatchObject({ status: 'complete', mode: 'all', processedCount: 2, isManualRun: true, scope: { groupIds: [added.group.id] } });
    expect((await ok('GET', `${base}/dispatches?workspaceId=${ws}`)).map((x: any) => x.id)).toContain(dispatchId);
    // The run is an ordinary run of the workflow, in its log.
    const run = await ok('GET', `/api/v2/workflows/${greet.id}/runs/${done[0].runState[added.group.id].executionId}`);
    expect(run.status).toBe('completed');

    // incomplete skips completed cells; one row's run and its outputs.
    await ok('PATCH', `${base}/rows/${rows[2].id}`, { workspaceId: ws, data: { name: 'Cy' } });
    const again = await ok('POST', `${base}/dispatches`, { workspaceId: ws, groupIds: [added.group.id], runMode: 'incomplete' });
    const d2 = await until(() => ok('GET', `${base}/dispatches/${again.dispatchId}?workspaceId=${ws}`), (x: any) => x.status === 'complete');
    expect(d2.processedCount).toBe(1);
    const one = await until(() => ok('GET', `${base}/rows/${rows[2].id}/enrichment/${added.group.id}?workspaceId=${ws}`), (x: any) => x.runState?.status === 'completed');
    expect(one).toMatchObject({ groupId: added.group.id, outputs: { greeting: 'Hi Cy', size: 2 }, cascade: null });
    const single = await ok('POST', `${base}/rows/${rows[0].id}/enrichment/${added.group.id}`, { workspaceId: ws });
    expect(single.dispatchId).toMatch(/^dsp_/);

    // Deleting the group removes the columns it fills.
    const del = await ok('DELETE', `${base}/groups`, { workspaceId: ws, groupId: added.group.id });
    expect(del.columns.map((c: any) => c.name)).toEqual(['name']);
  });

  it('reports a failing block per cell, honours limits, and refuses bad groups', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'fails', schema: { columns: [{ name: 'x', type: 'string' }, { name: 'out', type: 'string' }] } });
    const base = `/api/v2/tables/${t.id}`;
    const bad = (group: unknown, extra: object = {}) => s.call('POST', `${base}/groups`, { workspaceId: ws, group, ...extra });
    expect((await bad({ workflowId: 'nope', outputs: [] })).status).toBe(404);
    expect((await bad({ type: 'enrichment', enrichmentId: 'no-such-enrichment', outputs: [] })).status).toBe(400);
    expect((await bad({ workflowId: boom.id, outputs: [{ blockId: 'b', path: 'result', columnName: 'missing' }] })).status).toBe(400);
    expect((await bad({ workflowId: boom.id, outputs: [{ blockId: 'b', columnName: 'out' }] }, { outputColumns: [{ name: 'out', type: 'number' }] })).status).toBe(409);
    const g = (await ok('POST', `${base}/groups`, { workspaceId: ws, group: { workflowId: boom.id, autoRun: false, outputs: [{ blockId: boom.ids.Boom, path: 'result', columnName: 'out' }] } })).group;
    await ok('POST', `${base}/rows`, { workspaceId: ws, rows: [{ x: '1' }, { x: '2' }, { x: '3' }] });
    const { dispatchId } = await ok('POST', `${base}/dispatches`, { workspaceId: ws, groupIds: [g.id], limit: { type: 'rows', max: 2 } });
    const rows = await until(
      () => ok('GET', `${base}/rows?workspaceId=${ws}&includeRunState=true`),
      (page: any[]) => page.slice(0, 2).every((r) => r.runState?.[g.id]?.status === 'error'),
    );
    expect(rows[0].runState[g.id].error).toMatch(/no luck/);
    expect(rows[0].runState[g.id].blockErrors[boom.ids.Boom!]).toMatch(/no luck/);
    expect(rows[2].runState).toEqual({});
    expect((await ok('GET', `${base}/dispatches/${dispatchId}?workspaceId=${ws}`)).processedCount).toBe(2);
    expect((await s.call('POST', `${base}/dispatches`, { workspaceId: ws, groupIds: ['grp_missing'] })).status).toBe(400);
    expect((await s.call('POST', `${base}/dispatches`, { workspaceId: ws, groupIds: [g.id], rowIds: ['r'], filter: { field: 'x', op: 'eq', value: '1' } })).status).toBe(400);
  });

  it('autoRun fires when a row is inserted or its dependency columns fill', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'auto', schema: { columns: [{ name: 'name', type: 'string' }] } });
    const base = `/api/v2/tables/${t.id}`;
    const g = (await ok('POST', `${base}/groups`, {
      workspaceId: ws,
      group: { workflowId: greet.id, deploymentMode: 'deployed', dependencies: { columns: ['name'] }, inputMappings: [{ inputName: 'name', columnName: 'name' }], outputs: [{ blockId: greet.ids.Greet, path: 'result.text', columnName: 'hi' }] },
      outputColumns: [{ name: 'hi', type: 'string' }],
    })).group;
    expect(g.autoRun).toBe(true);
    const { rows } = await ok('POST', `${base}/rows`, { workspaceId: ws, rows: [{ name: 'Ann' }, { name: null }] });
    await ok('PATCH', `${base}/rows/${rows[1].id}`, { workspaceId: ws, data: { name: 'Ben' } });
    const page = await until(() => ok('GET', `${base}/rows?workspaceId=${ws}`), (p: any[]) => p.every((r) => r.data.hi !== null));
    expect(page.map((r: any) => r.data.hi)).toEqual(['Hi Ann', 'Hi Ben']);
    const modes = (await ok('GET', `${base}/dispatches?workspaceId=${ws}`)).map((d: any) => [d.mode, d.isManualRun]);
    expect(modes).toContainEqual(['new', false]);
    // Rows a CSV import appends run too.
    const file = await ok('POST', '/api/v2/files', { workspaceId: ws, name: 'more-names.csv', content: 'name\nCleo\n' });
    const imp = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'workspace_file', fileId: file.id }, target: { type: 'existing', tableId: t.id, mode: 'append' } });
    await until(() => ok('GET', `/api/v2/tables/imports/${imp.session.id}?workspaceId=${ws}`), (x: any) => x.status === 'completed');
    const after = await until(() => ok('GET', `${base}/rows?workspaceId=${ws}`), (p: any[]) => p.length === 3 && p[2].data.hi !== null);
    expect(after[2].data).toEqual({ name: 'Cleo', hi: 'Hi Cleo' });
  });

  it('cancels running and queued cells', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'slow', schema: { columns: [{ name: 'x', type: 'string' }, { name: 'out', type: 'json' }] } });
    const base = `/api/v2/tables/${t.id}`;
    const g = (await ok('POST', `${base}/groups`, { workspaceId: ws, group: { workflowId: sleepy.id, autoRun: false, outputs: [{ blockId: sleepy.ids.Nap, path: '', columnName: 'out' }] } })).group;
    const { rows } = await ok('POST', `${base}/rows`, { workspaceId: ws, rows: [{ x: '1' }, { x: '2' }] });
    await ok('POST', `${base}/dispatches`, { workspaceId: ws, groupIds: [g.id] });
    await until(() => ok('GET', `${base}/rows?workspaceId=${ws}&includeRunState=true`), (page: any[]) => page.every((r) => r.runState?.[g.id]));
    // A running cell names the block executing now (the wait block); the row read and the query say the same.
    const running = await until(
      () => ok('GET', `${base}/rows/${rows[0].id}?workspaceId=${ws}&includeRunState=true`),
      (r: any) => r.runState[g.id].status === 'running' && r.runState[g.id].runningBlockIds.length > 0,
    );
    expect(running.runState[g.id].runningBlockIds).toEqual([sleepy.ids.Nap]);
    const queried = await ok('POST', `${base}/query`, { workspaceId: ws, includeRunState: true, limit: 1 });
    expect(queried[0].runState[g.id].runningBlockIds).toEqual([sleepy.ids.Nap]);
    const one = await ok('POST', `${base}/cancel-runs`, { workspaceId: ws, scope: 'row', rowId: rows[0].id });
    expect(one.cancelled).toBe(1);
    const all = await ok('POST', `${base}/cancel-runs`, { workspaceId: ws, scope: 'all' });
    expect(all.cancelled).toBe(1);
    const page = await ok('GET', `${base}/rows?workspaceId=${ws}&includeRunState=true`);
    expect(page.map((r: any) => r.runState[g.id].status)).toEqual(['cancelled', 'cancelled']);
    expect(page[0].runState[g.id].canceledAt).toEqual(expect.any(String));
    expect(page.map((r: any) => r.runState[g.id].runningBlockIds)).toEqual([[], []]);
    expect((await s.call('POST', `${base}/cancel-runs`, { workspaceId: ws, scope: 'row' })).status).toBe(400);
  });

  it('through the CLI: groups create/list/update/delete and dispatches create/get/list/cancel', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = async (...args: string[]) => {
      const r = await runCli(['--output', 'json', ...args], env);
      if (r.code !== 0) throw new Error(`${args.join(' ')}: ${r.stdout} ${r.stderr}`);
      return r.json;
    };
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'cli_groups', schema: { columns: [{ name: 'name', type: 'string' }] } });
    const created = await cli('tables', 'groups', 'create', t.id, '--group', JSON.stringify({ workflowId: greet.id, deploymentMode: 'deployed', inputMappings: [{ inputName: 'name', columnName: 'name' }], outputs: [{ blockId: greet.ids.Greet, path: 'result.text', columnName: 'hello' }] }), '--output-columns', JSON.stringify([{ name: 'hello', type: 'string' }]), '--no-auto-run');
    const gid = created.group.id;
    expect(JSON.stringify(await cli('tables', 'groups', 'list', t.id))).toContain(gid);
    expect((await cli('tables', 'groups', 'update', t.id, '--group-id', gid, '--name', 'Hello')).group.name).toBe('Hello');
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: [{ name: 'Zed' }] });
    const d = await cli('tables', 'dispatches', 'create', t.id, '--group-ids', gid);
    expect(d.dispatchId).toMatch(/^dsp_/);
    expect(await cli('tables', 'dispatches', 'get', t.id, d.dispatchId)).toMatchObject({ id: d.dispatchId });
    expect(JSON.stringify(await cli('tables', 'dispatches', 'list', t.id))).toContain(d.dispatchId);
    const rows = await until(() => ok('GET', `/api/v2/tables/${t.id}/rows?workspaceId=${ws}`), (p: any[]) => p[0].data.hello === 'Hi Zed');
    expect(rows[0].data.hello).toBe('Hi Zed');
    expect(await cli('tables', 'dispatches', 'cancel', t.id, d.dispatchId, '--yes')).toMatchObject({ id: d.dispatchId });
    expect((await cli('tables', 'groups', 'delete', t.id, '--group-id', gid, '--yes')).deleted).toBe(true);
  });
});

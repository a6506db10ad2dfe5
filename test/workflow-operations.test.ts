// POST /api/v2/workflows/{id}/operations through HTTP: each operation type, each reason an operation is
// declined, atomic batches, dry runs, layout, locks and access.
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { openSqliteStore } from '../src/store/index.ts';
import { createApiKey } from '../src/identity/admin.ts';

let s: TestServer;
let db: DatabaseSync;
beforeAll(async () => {
  s = await startTestServer();
  db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
});
afterAll(async () => {
  db.close();
  await s.stop();
});

const call = (method: string, pathname: string, body?: unknown, key?: string | null) => s.call(method, pathname, body, key);

const auditCount = () => (db.prepare('SELECT COUNT(*) AS n FROM audit_events').get() as { n: number }).n;
const auditEvents = (resourceId: string) =>
  (db.prepare('SELECT action, metadata FROM audit_events WHERE resource_id = ? ORDER BY created_at, rowid').all(resourceId) as { action: string; metadata: string }[]).map((r) => ({
    action: r.action,
    metadata: JSON.parse(r.metadata),
  }));
const uuid = () => crypto.randomUUID();

async function newWorkflow(name: string): Promise<{ id: string; startId: string }> {
  const r = await call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name });
  expect(r.status, r.text).toBe(201);
  return { id: r.body.data.id, startId: r.body.data.blocks[0].id };
}
const getState = async (id: string) => (await call('GET', `/api/v2/workflows/${id}/state`)).body.data;
const apply = (id: string, body: unknown, query = '') => call('POST', `/api/v2/workflows/${id}/operations${query}`, body);
const ops = (...operations: unknown[]) => ({ operations });
const add = (block_id: string, type: string, name: string, extra: Record<string, unknown> = {}) => ({ operation_type: 'add', block_id, params: { type, name, ...extra } });

/** A workflow with a start block, a loop holding a function, and a wait block after the loop. */
async function withLoop(name: string) {
  const w = await newWorkflow(name);
  const r = await apply(
    w.id,
    ops(
      add('loop', 'loop', 'Loop 1', { inputs: { iterations: 3 } }),
      { operation_type: 'insert_into_subflow', block_id: 'fn', params: { subflowId: 'loop', type: 'function', name: 'Inner', inputs: { code: 'return 1' } } },
      add('wait', 'wait', 'Pause', { inputs: { timeValue: '5' } }),
      { operation_type: 'edit', block_id: w.startId, params: { connections: { success: 'loop' } } },
      { operation_type: 'edit', block_id: 'loop', params: { connections: { start: 'fn', end: 'wait' } } },
    ),
  );
  expect(r.status, r.text).toBe(200);
  expect(r.body.data.skipped).toEqual([]);
  const ids = r.body.data.mintedBlockIds as Record<'loop' | 'fn' | 'wait', string>;
  return { ...w, ...ids };
}

describe('add and edit', () => {
  it('adds a block under a minted id with its inputs, connects placeholders, and records one event', async () => {
    const w = await newWorkflow('Ops add');
    const before = auditCount();
    const r = await apply(w.id, {
      operations: [
        { operation_type: 'edit', block_id: w.startId, params: { connections: { success: 'my-fn' } } },
        add('my-fn', 'function', 'My Fn', { inputs: { code: 'return {ok:true}' } }),
        add('agent', 'agent', 'Helper', { inputs: { userPrompt: 'Summarize <myfn.result>', temperature: 0.2 } }),
        { operation_type: 'edit', block_id: 'my-fn', params: { connections: { success: 'agent', error: 'agent' } } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const data = r.body.data;
    expect(data).toMatchObject({ id: w.id, applied: 4, skipped: [], deferred: [], inputValidationErrors: [], dryRun: false, needsRedeployment: false, warnings: [] });
    expect(data).not.toHaveProperty('previewBlockIds');
    const fnId = data.mintedBlockIds['my-fn'];
    const agentId = data.mintedBlockIds.agent;
    expect(Object.keys(data.mintedBlockIds).sort()).toEqual(['agent', 'my-fn']);
    expect(fnId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(data.lint.orphanBlocks).toEqual([]);
    expect(data.lint.unresolvedReferences).toEqual([]);

    const state = await getState(w.id);
    expect(state.blocks[fnId]).toMatchObject({ id: fnId, type: 'function', name: 'My Fn', enabled: true, subBlocks: { code: { id: 'code', type: 'code', value: 'return {ok:true}' }, timeout: { value: null } } });
    // Inputs not sent keep the registry's defaults.
    expect(state.blocks[agentId].subBlocks).toMatchObject({ model: { value: 'gpt-4o' }, temperature: { type: 'slider', value: 0.2 } });
    const edges = state.edges.map((e: any) => [e.source, e.sourceHandle, e.target]);
    expect(edges).toEqual(
      expect.arrayContaining([
        [w.startId, 'source', fnId],
        [fnId, 'source', agentId],
        [fnId, 'error', agentId],
      ]),
    );
    expect(edges).toHaveLength(3);
    expect(auditCount()).toBe(before + 1);
    const events = auditEvents(w.id);
    expect(events.at(-1)).toEqual({
      action: 'workflow.operations_applied',
      metadata: expect.objectContaining({ operations: 4, applied: 4, skipped: 0, added: 2, edited: 2, blocks: 3, edges: 3 }),
    });
    expect(JSON.stringify(events.at(-1)!.metadata)).not.toContain('return');
  });

  it('declines unknown types, duplicate and reserved names, a second trigger and reused ids; drops bad inputs', async () => {
    const w = await newWorkflow('Ops add rules');
    const r = await apply(w.id, {
      operations: [
        add('a', 'teleporter', 'Beam'),
        add('b', 'function', 'Calc', { inputs: { code: 'return 2', color: 'red' } }),
        add('c', 'wait', 'c a l c'),
        add('d', 'function', 'Loop'),
        add('e', 'start_trigger', 'Another start'),
        add('f', 'api_trigger', 'API'),
        add(w.startId, 'function', 'Shadow'),
        add('b', 'function', 'Again'),
        add('g', 'api', 'Call', { inputs: { method: 'FETCH', url: 'https://example.com' } }),
        add('h', 'agent', 'Hot', { inputs: { temperature: 9 } }),
      ],
    });
    expect(r.status, r.text).toBe(200);
    const d = r.body.data;
    expect(d.skipped.map((f: any) => [f.blockId, f.type, f.operationType])).toEqual([
      ['a', 'invalid_block_type', 'add'],
      ['c', 'duplicate_block_name', 'add'],
      ['d', 'reserved_block_name', 'add'],
      ['e', 'duplicate_trigger', 'add'],
      ['f', 'duplicate_trigger', 'add'],
      [w.startId, 'block_not_allowed', 'add'],
      ['b', 'block_not_allowed', 'add'],
    ]);
    expect(d.skipped[1].details).toMatchObject({ conflictingBlockId: d.mintedBlockIds.b });
    expect(d.applied).toBe(3);
    expect(Object.keys(d.mintedBlockIds).sort()).toEqual(['b', 'g', 'h']);
    expect(d.inputValidationErrors).toEqual([
      { blockId: 'b', blockType: 'function', field: 'color', error: expect.stringContaining('no input "color"') },
      { blockId: 'g', blockType: 'api', field: 'method', error: expect.stringContaining('expects one of GET') },
      { blockId: 'h', blockType: 'agent', field: 'temperature', error: expect.stringContaining('from 0 to 2') },
    ]);
    const state = await getState(w.id);
    expect(Object.keys(state.blocks)).toHaveLength(4);
    expect(state.blocks[d.mintedBlockIds.b].subBlocks).not.toHaveProperty('color');
    expect(state.blocks[d.mintedBlockIds.g].subBlocks.method.value).toBe('GET');
    expect(state.blocks[d.mintedBlockIds.g].subBlocks.url.value).toBe('https://example.com');
  });

  it('edits name and inputs, keeps references to a renamed block, and declines unknown blocks and type changes', async () => {
    const w = await newWorkflow('Ops edit');
    const first = await apply(w.id, ops(add('fn', 'function', 'Source', { inputs: { code: 'return 1', timeout: '100' } }), add('api', 'api', 'Call', { inputs: { url: 'https://x/<source.result>', method: 'POST' } })));
    const { fn, api } = first.body.data.mintedBlockIds;
    const r = await apply(w.id, {
      operations: [
        { operation_type: 'edit', block_id: fn, params: { name: 'Producer', inputs: { code: 'return 2' } } },
        { operation_type: 'edit', block_id: uuid(), params: { name: 'Ghost' } },
        { operation_type: 'edit', block_id: api, params: { type: 'function' } },
        { operation_type: 'edit', block_id: api, params: { name: 'producer' } },
        { operation_type: 'edit', block_id: api, params: { position: { x: 900, y: 40 } } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.skipped.map((f: any) => f.type)).toEqual(['block_not_found', 'invalid_block_type', 'duplicate_block_name']);
    expect(r.body.data.applied).toBe(2);
    expect(r.body.data.mintedBlockIds).toEqual({});
    const state = await getState(w.id);
    expect(state.blocks[fn].name).toBe('Producer');
    // Only the inputs sent change.
    expect(state.blocks[fn].subBlocks.code.value).toBe('return 2');
    expect(state.blocks[fn].subBlocks.timeout.value).toBe('100');
    expect(state.blocks[api].subBlocks.url.value).toBe('https://x/<producer.result>');
    expect(state.blocks[api].name).toBe('Call');
    // A position sent with an edit is kept exactly, layout or not.
    expect(state.blocks[api].position).toEqual({ x: 900, y: 40 });
  });

  it('a blank name or an undeclared field is a 400 and writes nothing', async () => {
    const w = await newWorkflow('Ops strict');
    const before = auditCount();
    expect((await apply(w.id, ops(add('x', 'function', '   ')))).status).toBe(400);
    expect((await apply(w.id, ops(add('x', 'function', 'F', { color: 'red' })))).status).toBe(400);
    expect((await apply(w.id, ops({ operation_type: 'rename', block_id: 'x' }))).status).toBe(400);
    expect((await apply(w.id, { operations: [], extra: true })).status).toBe(400);
    expect((await apply(w.id, { operations: [], layout: 'grid' })).status).toBe(400);
    expect(Object.keys((await getState(w.id)).blocks)).toEqual([w.startId]);
    expect(auditCount()).toBe(before);
  });
});

describe('connections', () => {
  it('declines unknown handles and targets, self-loops, edges into triggers and across container boundaries', async () => {
    const w = await withLoop('Ops connections');
    const r = await apply(w.id, {
      operations: [
        add('cond', 'condition', 'Check', { inputs: { conditions: [{ title: 'if', value: '<start.input> != null' }, { title: 'else', value: '' }] } }),
        { operation_type: 'edit', block_id: w.wait, params: { connections: { success: 'cond' } } },
        { operation_type: 'edit', block_id: 'cond', params: { connections: { if: w.wait, else: 'nowhere', maybe: w.wait, success: w.wait } } },
        { operation_type: 'edit', block_id: w.wait, params: { connections: { error: [w.wait, w.startId, w.fn] } } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const condId = r.body.data.mintedBlockIds.cond;
    expect(r.body.data.skipped.map((f: any) => [f.type, f.details?.handle, f.details?.target])).toEqual([
      ['invalid_edge_target', 'else', 'nowhere'],
      ['invalid_source_handle', 'maybe', undefined],
      ['invalid_source_handle', 'success', undefined],
      ['invalid_edge_target', 'error', w.wait],
      ['invalid_edge_target', 'error', w.startId],
      ['invalid_edge_scope', 'error', w.fn],
    ]);
    const state = await getState(w.id);
    const fromCond = state.edges.filter((e: any) => e.source === condId);
    expect(fromCond.map((e: any) => [e.sourceHandle, e.target])).toEqual([[`condition-${condId}-if`, w.wait]]);
    expect(state.blocks[condId].subBlocks.conditions.value.map((c: any) => c.id)).toEqual([`${condId}-if`, `${condId}-else`]);
    // An edit replaces only the handles it names.
    await apply(w.id, ops({ operation_type: 'edit', block_id: w.wait, params: { connections: { success: null } } }));
    const after = await getState(w.id);
    expect(after.edges.filter((e: any) => e.source === w.wait)).toEqual([]);
    expect(after.edges.filter((e: any) => e.source === condId)).toHaveLength(1);
  });
});

describe('delete', () => {
  it('removes a block with its edges, and a container with everything inside it', async () => {
    const w = await withLoop('Ops delete');
    let r = await apply(w.id, ops({ operation_type: 'delete', block_id: w.wait }));
    expect(r.body.data).toMatchObject({ applied: 1, skipped: [] });
    let state = await getState(w.id);
    expect(state.blocks).not.toHaveProperty(w.wait);
    expect(state.edges.some((e: any) => e.source === w.wait || e.target === w.wait)).toBe(false);
    r = await apply(w.id, ops({ operation_type: 'delete', block_id: w.loop }, { operation_type: 'delete', block_id: w.fn }));
    expect(r.body.data.skipped).toEqual([expect.objectContaining({ type: 'block_not_found', blockId: w.fn, operationType: 'delete' })]);
    state = await getState(w.id);
    expect(Object.keys(state.blocks)).toEqual([w.startId]);
    expect(state.edges).toEqual([]);
    expect(state.loops).toEqual({});
  });

  it('a block added and deleted in one batch is not reported as minted', async () => {
    const w = await newWorkflow('Ops add-delete');
    const r = await apply(w.id, ops(add('tmp', 'wait', 'Tmp'), { operation_type: 'delete', block_id: 'tmp' }));
    expect(r.body.data).toMatchObject({ applied: 2, mintedBlockIds: {}, skipped: [] });
    expect(Object.keys((await getState(w.id)).blocks)).toEqual([w.startId]);
  });
});

describe('subflows', () => {
  it('insert creates a block inside a container; containers are recomputed from parent ids', async () => {
    const w = await withLoop('Ops insert');
    const state = await getState(w.id);
    expect(state.loops[w.loop]).toMatchObject({ id: w.loop, nodes: [w.fn], iterations: 3, loopType: 'for' });
    expect(state.blocks[w.fn].data).toMatchObject({ parentId: w.loop, extent: 'parent' });
    expect(state.edges.map((e: any) => [e.source, e.sourceHandle, e.target])).toEqual(
      expect.arrayContaining([
        [w.loop, 'loop-start-source', w.fn],
        [w.loop, 'loop-end-source', w.wait],
      ]),
    );
    const r = await apply(w.id, ops(add('par', 'parallel', 'Fan out', { inputs: { parallelType: 'count', count: 4, batchSize: 0 } })));
    expect(r.body.data.inputValidationErrors).toEqual([expect.objectContaining({ field: 'batchSize', blockType: 'parallel' })]);
    expect((await getState(w.id)).parallels[r.body.data.mintedBlockIds.par]).toMatchObject({ count: 4, parallelType: 'count', nodes: [] });
  });

  it('moves an existing block in and out, dropping edges that would cross the boundary, keeping its place', async () => {
    const w = await withLoop('Ops move');
    const moveIn = await apply(w.id, ops({ operation_type: 'insert_into_subflow', block_id: w.wait, params: { subflowId: w.loop, type: 'wait', name: 'Pause' } }), '');
    expect(moveIn.body.data).toMatchObject({ applied: 1, skipped: [] });
    expect(moveIn.body.data.warnings).toEqual([expect.stringMatching(/1 connection\(s\) of "Pause" .* removed/)]);
    let state = await getState(w.id);
    expect(state.loops[w.loop].nodes.sort()).toEqual([w.fn, w.wait].sort());
    expect(state.edges.some((e: any) => e.target === w.wait)).toBe(false);

    const out = await apply(w.id, ops({ operation_type: 'extract_from_subflow', block_id: w.fn, params: { subflowId: w.loop } }), '');
    expect(out.body.data).toMatchObject({ applied: 1, skipped: [] });
    state = await getState(w.id);
    expect(state.loops[w.loop].nodes).toEqual([w.wait]);
    expect(state.blocks[w.fn].data ?? {}).not.toHaveProperty('parentId');

    // With layout none the block keeps its place on the canvas: relative to the loop inside, absolute outside.
    const loopPos = state.blocks[w.loop].position;
    const inner = state.blocks[w.wait].position;
    await apply(w.id, { operations: [{ operation_type: 'extract_from_subflow', block_id: w.wait, params: { subflowId: w.loop } }], layout: 'none' });
    expect((await getState(w.id)).blocks[w.wait].position).toEqual({ x: loopPos.x + inner.x, y: loopPos.y + inner.y });
  });

  it('declines bad parents, nesting, triggers in containers, type mismatches and blocks not inside the named container', async () => {
    const w = await withLoop('Ops subflow rules');
    const r = await apply(w.id, {
      operations: [
        { operation_type: 'insert_into_subflow', block_id: 'x1', params: { subflowId: w.wait, type: 'function', name: 'X1' } },
        { operation_type: 'insert_into_subflow', block_id: 'x2', params: { subflowId: uuid(), type: 'function', name: 'X2' } },
        { operation_type: 'insert_into_subflow', block_id: 'inner-loop', params: { subflowId: w.loop, type: 'loop', name: 'Inner loop' } },
        add('p', 'parallel', 'Par'),
        { operation_type: 'insert_into_subflow', block_id: 'p', params: { subflowId: w.loop, type: 'parallel', name: 'Par' } },
        { operation_type: 'insert_into_subflow', block_id: w.startId, params: { subflowId: w.loop, type: 'start_trigger', name: 'Start' } },
        { operation_type: 'insert_into_subflow', block_id: w.wait, params: { subflowId: w.loop, type: 'function', name: 'Pause' } },
        { operation_type: 'extract_from_subflow', block_id: w.wait, params: { subflowId: w.loop } },
        { operation_type: 'extract_from_subflow', block_id: w.fn, params: { subflowId: 'p' } },
        { operation_type: 'extract_from_subflow', block_id: uuid(), params: { subflowId: w.loop } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.skipped.map((f: any) => [f.operationType, f.type])).toEqual([
      ['insert_into_subflow', 'invalid_subflow_parent'],
      ['insert_into_subflow', 'invalid_subflow_parent'],
      ['insert_into_subflow', 'nested_subflow_not_allowed'],
      ['insert_into_subflow', 'nested_subflow_not_allowed'],
      ['insert_into_subflow', 'block_not_allowed'],
      ['insert_into_subflow', 'invalid_block_type'],
      ['extract_from_subflow', 'invalid_subflow_parent'],
      ['extract_from_subflow', 'invalid_subflow_parent'],
      ['extract_from_subflow', 'block_not_found'],
    ]);
    expect(r.body.data.applied).toBe(1);
  });
});

describe('setBlockEnabled', () => {
  it('disabling a container cascades to unlocked descendants; enabling inside a disabled container is declined', async () => {
    const w = await withLoop('Ops enable');
    const extra = await apply(w.id, ops({ operation_type: 'insert_into_subflow', block_id: 'kept', params: { subflowId: w.loop, type: 'wait', name: 'Kept' } }));
    const kept = extra.body.data.mintedBlockIds.kept;
    db.prepare("UPDATE workflows SET state = json_set(state, '$.blocks.' || json_quote(?) || '.locked', json('true')) WHERE id = ?").run(kept, w.id);

    let r = await apply(w.id, { operations: [], setBlockEnabled: [{ block_id: w.loop, enabled: false }, { block_id: w.fn, enabled: true }, { block_id: kept, enabled: false }, { block_id: uuid(), enabled: false }] });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.applied).toBe(1);
    expect(r.body.data.skipped.map((f: any) => [f.operationType, f.type, f.blockId])).toEqual([
      ['set_block_enabled', 'disabled_ancestor', w.fn],
      ['set_block_enabled', 'block_locked', kept],
      ['set_block_enabled', 'block_not_found', expect.any(String)],
    ]);
    let state = await getState(w.id);
    expect([state.blocks[w.loop].enabled, state.blocks[w.fn].enabled, state.blocks[kept].enabled, state.blocks[w.wait].enabled]).toEqual([false, false, true, true]);
    expect(state.loops[w.loop].enabled).toBe(false);

    // Enabling the container brings its unlocked descendants back with it.
    r = await apply(w.id, { operations: [], setBlockEnabled: [{ block_id: w.loop, enabled: true }] });
    state = await getState(w.id);
    expect([state.blocks[w.loop].enabled, state.blocks[w.fn].enabled]).toEqual([true, true]);
  });
});

describe('locks', () => {
  it('locked blocks, and blocks inside a locked container, are declined with block_locked', async () => {
    const w = await withLoop('Ops locked blocks');
    db.prepare("UPDATE workflows SET state = json_set(state, '$.blocks.' || json_quote(?) || '.locked', json('true')) WHERE id = ?").run(w.loop, w.id);
    const r = await apply(w.id, {
      operations: [
        { operation_type: 'edit', block_id: w.loop, params: { inputs: { iterations: 9 } } },
        { operation_type: 'edit', block_id: w.fn, params: { name: 'Changed' } },
        { operation_type: 'delete', block_id: w.fn },
        { operation_type: 'extract_from_subflow', block_id: w.fn, params: { subflowId: w.loop } },
        { operation_type: 'insert_into_subflow', block_id: 'new', params: { subflowId: w.loop, type: 'wait', name: 'New' } },
        { operation_type: 'edit', block_id: w.wait, params: { name: 'Still editable' } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.skipped.map((f: any) => [f.type, f.details.lockedBlockId])).toEqual(Array(5).fill(['block_locked', w.loop]));
    expect(r.body.data.applied).toBe(1);
    const state = await getState(w.id);
    expect(state.blocks[w.fn].name).toBe('Inner');
    expect(state.blocks[w.wait].name).toBe('Still editable');
  });

  it('deleting a container with a locked block inside is declined; atomic batches touching locks answer 423', async () => {
    const w = await withLoop('Ops locked child');
    db.prepare("UPDATE workflows SET state = json_set(state, '$.blocks.' || json_quote(?) || '.locked', json('true')) WHERE id = ?").run(w.fn, w.id);
    const r = await apply(w.id, ops({ operation_type: 'delete', block_id: w.loop }));
    expect(r.body.data.skipped).toEqual([expect.objectContaining({ type: 'block_locked', details: { lockedBlockIds: [w.fn] } })]);
    const before = auditCount();
    const atomic = await apply(w.id, { operations: [{ operation_type: 'edit', block_id: w.wait, params: { name: 'Renamed' } }, { operation_type: 'delete', block_id: w.fn }], atomic: true });
    expect(atomic.status).toBe(423);
    expect(atomic.body.error).toMatchObject({ code: 'LOCKED', details: { lock: 'block', blockIds: [w.fn] } });
    expect((await getState(w.id)).blocks[w.wait].name).toBe('Pause');
    expect(auditCount()).toBe(before);
  });

  it('renaming a block updates references in unlocked blocks and warns about locked ones that still use the old name', async () => {
    const w = await newWorkflow('Ops rename locked reference');
    const r = await apply(
      w.id,
      ops(add('src', 'wait', 'Source', { inputs: { timeValue: '1' } }), add('a', 'function', 'Reader A', { inputs: { code: 'return <source.waitDuration>' } }), add('b', 'function', 'Reader B', { inputs: { code: 'return <Source.waitDuration>' } })),
    );
    const { src, a, b } = r.body.data.mintedBlockIds;
    db.prepare("UPDATE workflows SET state = json_set(state, '$.blocks.' || json_quote(?) || '.locked', json('true')) WHERE id = ?").run(b, w.id);
    const renamed = await apply(w.id, ops({ operation_type: 'edit', block_id: src, params: { name: 'Origin' } }));
    expect(renamed.body.data.warnings).toEqual(['Locked block(s) "Reader B" still refer to "source", which is now "origin".']);
    const state = await getState(w.id);
    expect(state.blocks[a].subBlocks.code.value).toBe('return <origin.waitDuration>');
    expect(state.blocks[b].subBlocks.code.value).toBe('return <Source.waitDuration>');
    expect(renamed.body.data.lint.unresolvedReferences).toEqual([expect.objectContaining({ blockId: b, value: '<Source.waitDuration>' })]);
  });

  it('a locked workflow answers 423, dry run included', async () => {
    const w = await newWorkflow('Ops locked workflow');
    db.prepare('UPDATE workflows SET locked = 1 WHERE id = ?').run(w.id);
    for (const q of ['', '?dryRun=true']) {
      const r = await apply(w.id, ops(add('x', 'wait', 'X')), q);
      expect(r.status).toBe(423);
      expect(r.body.error.code).toBe('LOCKED');
    }
    db.prepare('UPDATE workflows SET locked = 0 WHERE id = ?').run(w.id);
  });
});

describe('atomic batches and dry runs', () => {
  it('atomic: a declined operation or a dropped input is a 409 with the findings, and nothing is written', async () => {
    const w = await newWorkflow('Ops atomic');
    const stateBefore = await getState(w.id);
    const before = auditCount();
    const declined = await apply(w.id, { operations: [add('ok', 'wait', 'Fine'), add('bad', 'teleporter', 'Nope')], atomic: true });
    expect(declined.status).toBe(409);
    expect(declined.body.error.code).toBe('CONFLICT');
    expect(declined.body.error.details).toEqual({ skipped: [expect.objectContaining({ type: 'invalid_block_type', blockId: 'bad' })], inputValidationErrors: [] });
    const dropped = await apply(w.id, { operations: [add('ok', 'wait', 'Fine', { inputs: { nonsense: 1 } })], atomic: true });
    expect(dropped.status).toBe(409);
    expect(dropped.body.error.details.inputValidationErrors).toEqual([expect.objectContaining({ blockId: 'ok', field: 'nonsense' })]);
    expect((await apply(w.id, { operations: [add('bad', 'teleporter', 'Nope')], atomic: true }, '?dryRun=true')).status).toBe(409);
    expect(await getState(w.id)).toEqual(stateBefore);
    expect(auditCount()).toBe(before);
    // The same batch without atomic applies what it can.
    const partial = await apply(w.id, { operations: [add('ok', 'wait', 'Fine'), add('bad', 'teleporter', 'Nope')] });
    expect(partial.body.data).toMatchObject({ applied: 1, skipped: [expect.objectContaining({ type: 'invalid_block_type' })] });
    const clean = await apply(w.id, { operations: [add('two', 'wait', 'Second')], atomic: true });
    expect(clean.status).toBe(200);
  });

  it('dry run writes and records nothing, gives provisional ids, and otherwise answers like the write', async () => {
    const w = await withLoop('Ops dry');
    const batch = {
      operations: [
        add('api', 'api', 'Fetch', { inputs: { url: 'https://example.com/<inner.result>', method: 'GET', bogus: 1 } }),
        { operation_type: 'edit', block_id: w.wait, params: { connections: { success: 'api' } } },
        { operation_type: 'insert_into_subflow', block_id: 'more', params: { subflowId: w.loop, type: 'function', name: 'More' } },
        { operation_type: 'delete', block_id: uuid() },
      ],
      setBlockEnabled: [{ block_id: 'more', enabled: false }],
    };
    const stateBefore = await getState(w.id);
    const before = auditCount();
    const dry = await apply(w.id, batch, '?dryRun=true');
    expect(dry.status, dry.text).toBe(200);
    expect(await getState(w.id)).toEqual(stateBefore);
    expect(auditCount()).toBe(before);
    expect(dry.body.data).toMatchObject({ dryRun: true, mintedBlockIds: {} });
    expect(Object.keys(dry.body.data.previewBlockIds).sort()).toEqual(['api', 'more']);
    expect(dry.body.data.warnings.at(-1)).toMatch(/provisional/);
    // The lint of the dry run sees the new (provisional) blocks.
    expect(dry.body.data.lint.fieldIssues).toEqual([expect.objectContaining({ blockId: dry.body.data.previewBlockIds.more, missingRequiredFields: ['code'] })]);

    const real = await apply(w.id, batch);
    expect(real.status).toBe(200);
    expect(auditCount()).toBe(before + 1);
    const minted = real.body.data.mintedBlockIds;
    // Map the provisional ids onto the minted ones: the rest of the answer must be identical.
    let dryText = JSON.stringify(dry.body.data);
    for (const [placeholder, provisional] of Object.entries<string>(dry.body.data.previewBlockIds)) dryText = dryText.split(provisional).join(minted[placeholder]);
    const { previewBlockIds: _p, mintedBlockIds: _m, warnings, ...dryRest } = JSON.parse(dryText);
    const { mintedBlockIds: _r, warnings: realWarnings, ...realRest } = real.body.data;
    expect({ ...realRest, dryRun: true }).toEqual(dryRest);
    expect(warnings).toEqual([...realWarnings, expect.stringMatching(/provisional/)]);
    expect(realRest.skipped).toHaveLength(1);
    expect(realRest.inputValidationErrors).toHaveLength(1);
  });

  it('needsRedeployment describes the draft as the write leaves it', async () => {
    const w = await newWorkflow('Ops redeploy');
    expect((await call('POST', `/api/v2/workflows/${w.id}/deploy`, {})).status).toBe(200);
    const dry = await apply(w.id, ops(add('x', 'wait', 'X')), '?dryRun=true');
    expect(dry.body.data.needsRedeployment).toBe(true);
    const first = await apply(w.id, ops(add('x', 'wait', 'X')));
    expect(first.body.data.needsRedeployment).toBe(true);
    const second = await apply(w.id, ops(add('y', 'wait', 'Y')));
    expect(second.body.data.needsRedeployment).toBe(true);
    // Deleting what was added brings the draft back to the live graph.
    const undone = await apply(w.id, ops({ operation_type: 'delete', block_id: first.body.data.mintedBlockIds.x }, { operation_type: 'delete', block_id: second.body.data.mintedBlockIds.y }));
    expect(undone.body.data.needsRedeployment).toBe(false);
    // The live version did not change.
    const live = await call('GET', `/api/v2/workflows/${w.id}/versions/1`);
    expect(Object.keys(live.body.data.state.blocks)).toEqual([w.startId]);
  });

  it('a batch that changes nothing writes nothing and records nothing', async () => {
    const w = await newWorkflow('Ops no-op');
    const before = auditCount();
    const r = await apply(w.id, { operations: [{ operation_type: 'delete', block_id: 'nope' }], setBlockEnabled: [{ block_id: w.startId, enabled: true }] });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ applied: 1, skipped: [expect.objectContaining({ type: 'block_not_found' })] });
    expect(auditCount()).toBe(before);
    // Restating an existing connection keeps the edge as it is.
    const made = await apply(w.id, ops(add('next', 'wait', 'Next'), { operation_type: 'edit', block_id: w.startId, params: { connections: { success: 'next' } } }));
    const edges = (await getState(w.id)).edges;
    expect(edges).toHaveLength(1);
    const again = await apply(w.id, ops({ operation_type: 'edit', block_id: w.startId, params: { connections: { source: made.body.data.mintedBlockIds.next } } }));
    expect(again.body.data.applied).toBe(1);
    expect((await getState(w.id)).edges).toEqual(edges);
    expect(auditCount()).toBe(before + 1);
  });
});

describe('layout', () => {
  const box = (b: any) => ({ x1: b.position.x, y1: b.position.y, x2: b.position.x + 250, y2: b.position.y + 100 });
  const overlap = (a: any, b: any) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;

  it('targeted places new blocks without overlaps, beside what feeds them; none keeps positions as supplied', async () => {
    const w = await newWorkflow('Ops layout');
    const r = await apply(w.id, {
      operations: [
        add('a', 'wait', 'A'),
        add('b', 'wait', 'B'),
        add('c', 'wait', 'C', { position: { x: 100, y: 100 } }),
        { operation_type: 'edit', block_id: w.startId, params: { connections: { success: ['a', 'b'] } } },
      ],
    });
    const ids = r.body.data.mintedBlockIds;
    const state = await getState(w.id);
    const placed = Object.values(state.blocks).map(box);
    for (let i = 0; i < placed.length; i++) for (let j = i + 1; j < placed.length; j++) expect(overlap(placed[i], placed[j]), `${i} vs ${j}`).toBe(false);
    const start = state.blocks[w.startId].position;
    expect(state.blocks[ids.a].position).toEqual({ x: start.x + 350, y: start.y });
    expect(state.blocks[ids.b].position.x).toBe(start.x + 350);
    // The start block itself did not move.
    expect(start).toEqual({ x: 100, y: 100 });

    const none = await apply(w.id, { operations: [add('d', 'wait', 'D', { position: { x: 100, y: 100 } }), add('e', 'wait', 'E')], layout: 'none' });
    const after = await getState(w.id);
    expect(after.blocks[none.body.data.mintedBlockIds.d].position).toEqual({ x: 100, y: 100 });
    expect(after.blocks[none.body.data.mintedBlockIds.e].position).toEqual({ x: 0, y: 0 });
  });

  it('a container grows to fit a child placed in it', async () => {
    const w = await newWorkflow('Ops layout container');
    const r = await apply(w.id, ops(add('loop', 'loop', 'L'), { operation_type: 'insert_into_subflow', block_id: 'in', params: { subflowId: 'loop', type: 'wait', name: 'In', position: { x: 600, y: 20 } } }));
    const state = await getState(w.id);
    const loop = state.blocks[r.body.data.mintedBlockIds.loop];
    const child = state.blocks[r.body.data.mintedBlockIds.in];
    expect(child.position).toEqual({ x: 600, y: 20 });
    expect(loop.data.width).toBeGreaterThanOrEqual(600 + 250);
  });
});

describe('access', () => {
  it('another workspace\'s workflow is a 404; workspace keys and read members get 403', async () => {
    const w = await newWorkflow('Ops access');
    const outsider = await s.newUser('ops-outsider@example.com');
    const r = await call('POST', `/api/v2/workflows/${w.id}/operations`, ops(add('x', 'wait', 'X')), outsider.key);
    expect(r.status).toBe(404);
    expect((await call('POST', `/api/v2/workflows/${uuid()}/operations`, ops())).status).toBe(404);
    const reader = await s.newUser('ops-reader@example.com', { [s.workspaceId]: 'read' });
    const denied = await call('POST', `/api/v2/workflows/${w.id}/operations`, ops(add('x', 'wait', 'X')), reader.key);
    expect(denied.status).toBe(403);
    expect(denied.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
    const store = await openSqliteStore(path.join(s.dataDir, 'workspace.sqlite'));
    const { key } = await createApiKey(store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    await store.close();
    const wsKey = await call('POST', `/api/v2/workflows/${w.id}/operations`, ops(add('x', 'wait', 'X')), key);
    expect(wsKey.status).toBe(403);
    expect(wsKey.body.error.details.code).toBe('WORKSPACE_KEY_NOT_ALLOWED');
    expect(Object.keys((await getState(w.id)).blocks)).toEqual([w.startId]);
  });
});

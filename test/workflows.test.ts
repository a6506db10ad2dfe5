// Workflows through HTTP: definitions, folders, draft state, deployment, versions, import/export, catalog.
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
const auditActions = (resourceId: string) =>
  (db.prepare('SELECT action FROM audit_events WHERE resource_id = ? ORDER BY created_at, rowid').all(resourceId) as { action: string }[]).map((r) => r.action);

async function createWorkflow(name: string, extra: Record<string, unknown> = {}, workspaceId = s.workspaceId) {
  const r = await call('POST', '/api/v2/workflows', { workspaceId, name, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

function block(id: string, type: string, name: string, extra: Record<string, unknown> = {}) {
  return { id, type, name, position: { x: 0, y: 0 }, subBlocks: {}, outputs: {}, enabled: true, ...extra };
}
const sub = (id: string, type: string, value: unknown) => ({ [id]: { id, type, value } });
const uuid = () => crypto.randomUUID();

/** A graph with a start block, a loop holding a function, a condition and a variable. */
function sampleState() {
  const [start, loop, fn, cond] = [uuid(), uuid(), uuid(), uuid()];
  const state = {
    blocks: {
      [start]: block(start, 'start_trigger', 'Start', { subBlocks: sub('inputFormat', 'input-format', [{ name: 'city', type: 'string' }]) }),
      [loop]: block(loop, 'loop', 'Loop 1', { data: { loopType: 'for', count: 3 } }),
      [fn]: block(fn, 'function', 'Fn', { subBlocks: sub('code', 'code', 'return <start.input>'), data: { parentId: loop, extent: 'parent' } }),
      [cond]: block(cond, 'condition', 'Check', { subBlocks: sub('conditions', 'condition-input', [{ id: `${cond}-if`, title: 'if', value: 'true' }]) }),
    },
    edges: [
      { id: uuid(), source: start, target: loop },
      { id: uuid(), source: loop, target: cond, sourceHandle: 'loop-end-source' },
    ],
    variables: { v1: { id: 'v1', name: 'greeting', type: 'string', value: 'hi' } },
  };
  return { state, ids: { start, loop, fn, cond } };
}

describe('workflow definitions', () => {
  it('creates a workflow seeded with a start block, with webUrl under BASE_URL and run counters at zero', async () => {
    const w = await createWorkflow('First');
    expect(w).toMatchObject({ name: 'First', description: null, folderPath: '/', workspaceId: s.workspaceId, isDeployed: false, deployedAt: null, runCount: 0, lastRunAt: null });
    expect(w.webUrl).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/workspace/${s.workspaceId}/w/${w.id}$`));
    expect(w.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(w.blocks).toEqual([{ id: expect.any(String), type: 'start_trigger', name: 'Start' }]);
    const state = (await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data;
    expect(Object.keys(state.blocks)).toEqual([w.blocks[0].id]);
    expect(auditActions(w.id)).toEqual(['workflow.created']);
  });

  it('get returns variables and the start block inputs', async () => {
    const w = await createWorkflow('With inputs');
    const { state } = sampleState();
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, state)).status).toBe(200);
    const r = await call('GET', `/api/v2/workflows/${w.id}`);
    expect(r.status).toBe(200);
    expect(r.body.data.inputs).toEqual([{ name: 'city', type: 'string' }]);
    expect(r.body.data.variables.v1).toEqual({ id: 'v1', name: 'greeting', type: 'string', value: 'hi' });
  });

  it('a name taken in the same folder is a 409; blank names are a 400', async () => {
    await createWorkflow('Twin');
    expect((await call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'Twin' })).status).toBe(409);
    expect((await call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: '   ' })).status).toBe(400);
    const other = await createWorkflow('Twin', { folderPath: '/elsewhere' });
    expect(other.folderPath).toBe('/elsewhere');
  });

  it('updates name, description and folder; description null clears it', async () => {
    const w = await createWorkflow('To update', { description: 'old' });
    const r = await call('PATCH', `/api/v2/workflows/${w.id}`, { name: 'Updated', folderPath: 'Team%20A/sub' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ name: 'Updated', description: 'old', folderPath: '/Team%20A/sub' });
    expect((await call('PATCH', `/api/v2/workflows/${w.id}`, { description: null })).body.data.description).toBeNull();
    expect((await call('PATCH', `/api/v2/workflows/${w.id}`, {})).status).toBe(400);
  });

  it('delete archives, restore brings back; archived scope lists it', async () => {
    const w = await createWorkflow('Archivable');
    const d = await call('DELETE', `/api/v2/workflows/${w.id}`);
    expect(d.body).toEqual({ data: { id: w.id, deleted: true, archived: true } });
    const active = await call('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}&search=archivable`);
    expect(active.body.data).toEqual([]);
    const archived = await call('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}&scope=archived&search=ARCHIVABLE`);
    expect(archived.body.data.map((x: any) => x.id)).toEqual([w.id]);
    const r = await call('POST', `/api/v2/workflows/${w.id}/restore`);
    expect(r.status).toBe(200);
    expect(r.body.data.id).toBe(w.id);
    expect(auditActions(w.id)).toEqual(['workflow.created', 'workflow.deleted', 'workflow.restored']);
  });

  it('duplicate copies the draft under new ids and a free name', async () => {
    const w = await createWorkflow('Original');
    const { state } = sampleState();
    await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    const r = await call('POST', `/api/v2/workflows/${w.id}/duplicate`, {});
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.name).toBe('Original (2)');
    const copy = (await call('GET', `/api/v2/workflows/${r.body.data.id}/state`)).body.data;
    expect(Object.keys(copy.blocks)).toHaveLength(4);
    for (const id of Object.keys(copy.blocks)) expect(state.blocks).not.toHaveProperty(id);
    expect(Object.values(copy.loops)).toHaveLength(1);
    expect((Object.values(copy.loops)[0] as any).nodes).toHaveLength(1);
    expect(Object.values(copy.variables).map((v: any) => v.name)).toEqual(['greeting']);
    expect((await call('POST', `/api/v2/workflows/${w.id}/duplicate`, { name: 'Original' })).status).toBe(409);
  });

  it('moves several workflows at once, collapsing duplicates and reporting failures', async () => {
    const a = await createWorkflow('Mover A');
    const b = await createWorkflow('Mover B');
    const r = await call('POST', '/api/v2/workflows/move', { workspaceId: s.workspaceId, workflowIds: [a.id, b.id, a.id, 'nope'], folderPath: '/moved' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({ moved: [a.id, b.id], failed: ['nope'], folderPath: '/moved' });
    const list = await call('GET', `/api/v2/workflows?workspaceId=${s.workspaceId}&folderPath=/moved&sortBy=name`);
    expect(list.body.data.map((x: any) => x.name)).toEqual(['Mover A', 'Mover B']);
  });

  it('a workflow in another workspace is a 404 that does not reveal it', async () => {
    const outsider = await s.newUser('wf-outsider@example.com');
    const w = await createWorkflow('Private');
    const r = await call('GET', `/api/v2/workflows/${w.id}`, undefined, outsider.key);
    expect(r.status).toBe(404);
    expect(r.body.error.message).toBe('Workflow not found.');
    expect((await call('GET', `/api/v2/workflows/${uuid()}`)).status).toBe(404);
  });

  it('read-only members can read but not write', async () => {
    const reader = await s.newUser('wf-reader@example.com', { [s.workspaceId]: 'read' });
    const w = await createWorkflow('Readable');
    expect((await call('GET', `/api/v2/workflows/${w.id}`, undefined, reader.key)).status).toBe(200);
    const r = await call('PATCH', `/api/v2/workflows/${w.id}`, { name: 'x' }, reader.key);
    expect(r.status).toBe(403);
    expect(r.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
  });
});

describe('listing', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await s.newWorkspace('Listing');
    for (const name of ['beta', 'Alpha', 'gamma', 'alpha2', 'Delta']) await createWorkflow(name, {}, ws);
    await createWorkflow('inside', { folderPath: '/f' }, ws);
  });

  it('sorts by position by default, and by name case-sensitively', async () => {
    const byPos = await call('GET', `/api/v2/workflows?workspaceId=${ws}`);
    expect(byPos.body.data.map((w: any) => w.name)).toEqual(['beta', 'Alpha', 'gamma', 'alpha2', 'Delta', 'inside']);
    const byName = await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=name`);
    expect(byName.body.data.map((w: any) => w.name)).toEqual(['Alpha', 'Delta', 'alpha2', 'beta', 'gamma', 'inside']);
    const desc = await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=name&sortOrder=desc`);
    expect(desc.body.data.map((w: any) => w.name)).toEqual(['inside', 'gamma', 'beta', 'alpha2', 'Delta', 'Alpha']);
  });

  it('pages with a cursor bound to the sort and filters', async () => {
    const first = await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=createdAt&limit=2`);
    expect(first.body.data).toHaveLength(2);
    const seen = [...first.body.data];
    let cursor = first.body.nextCursor;
    while (cursor) {
      const next = await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=createdAt&limit=4&cursor=${encodeURIComponent(cursor)}`);
      seen.push(...next.body.data);
      cursor = next.body.nextCursor;
    }
    expect(new Set(seen.map((w: any) => w.id)).size).toBe(6);
    const changed = await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=name&limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(changed.status).toBe(400);
  });

  it('search is a case-insensitive substring; folderPath filters; unknown folder matches nothing', async () => {
    const r = await call('GET', `/api/v2/workflows?workspaceId=${ws}&search=ALPHA&sortBy=name`);
    expect(r.body.data.map((w: any) => w.name)).toEqual(['Alpha', 'alpha2']);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&folderPath=/f`)).body.data.map((w: any) => w.name)).toEqual(['inside']);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&folderPath=/`)).body.data).toHaveLength(5);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&folderPath=/nowhere`)).body).toEqual({ data: [], nextCursor: null });
  });

  it('archived scope with an archived folder gives an empty page', async () => {
    const w = await createWorkflow('doomed', { folderPath: '/gone' }, ws);
    expect((await call('DELETE', `/api/v2/workflows/folders?workspaceId=${ws}&path=/gone&recursive=true`)).status).toBe(200);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&scope=archived&folderPath=/gone`)).body.data).toEqual([]);
    const archived = await call('GET', `/api/v2/workflows?workspaceId=${ws}&scope=archived`);
    expect(archived.body.data.map((x: any) => x.id)).toContain(w.id);
  });

  it('validates its parameters', async () => {
    expect((await call('GET', '/api/v2/workflows')).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${'x'.repeat(129)}`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&search=`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&search=${'a'.repeat(201)}`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&folderPath=${'a'.repeat(4097)}`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=size`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&scope=all`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&_=1`)).status).toBe(400);
    const bad = await call('GET', `/api/v2/workflows?workspaceId=${ws}&folderPath=/a/../b`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/folder path/i);
  });

  it('deployedOnly lists only deployed workflows; runCount sort works', async () => {
    const list = (await call('GET', `/api/v2/workflows?workspaceId=${ws}`)).body.data;
    await call('POST', `/api/v2/workflows/${list[0].id}/deploy`, {});
    const r = await call('GET', `/api/v2/workflows?workspaceId=${ws}&deployedOnly=true`);
    expect(r.body.data.map((w: any) => w.id)).toEqual([list[0].id]);
    expect(r.body.data[0].isDeployed).toBe(true);
    expect((await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=runCount`)).status).toBe(200);
  });
});

describe('run counters', () => {
  it('runCount and lastRunAt reflect recorded runs and drive the runCount sort', async () => {
    const ws = await s.newWorkspace('Runs');
    const quiet = await createWorkflow('quiet', {}, ws);
    const busy = await createWorkflow('busy', {}, ws);
    const store = await openSqliteStore(path.join(s.dataDir, 'workspace.sqlite'));
    await store.transaction(async (tx) => {
      await tx.workflows.recordRun(busy.id, '2024-05-01T10:00:00.000Z');
      await tx.workflows.recordRun(busy.id, '2024-05-02T10:00:00.000Z');
    });
    await store.close();
    const list = await call('GET', `/api/v2/workflows?workspaceId=${ws}&sortBy=runCount&sortOrder=desc`);
    expect(list.body.data.map((w: any) => [w.name, w.runCount, w.lastRunAt])).toEqual([
      ['busy', 2, '2024-05-02T10:00:00.000Z'],
      ['quiet', 0, null],
    ]);
    expect((await call('GET', `/api/v2/workflows/${quiet.id}`)).body.data).toMatchObject({ runCount: 0, lastRunAt: null });
  });
});

describe('folders', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await s.newWorkspace('Folders');
  });

  it('creates folders with canonical, percent-encoded paths and lists them', async () => {
    const r = await call('POST', '/api/v2/workflows/folders', { workspaceId: ws, path: 'New%20folder/child/' });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ name: 'child', path: '/New%20folder/child', parentPath: '/New%20folder', locked: false });
    expect((await call('POST', '/api/v2/workflows/folders', { workspaceId: ws, path: '/New%20folder/child' })).status).toBe(409);
    const root = await call('GET', `/api/v2/workflows/folders?workspaceId=${ws}&parentPath=/`);
    expect(root.body.data.map((f: any) => f.path)).toEqual(['/New%20folder']);
    const all = await call('GET', `/api/v2/workflows/folders?workspaceId=${ws}`);
    expect(all.body.data).toHaveLength(2);
    for (const bad of ['/a/..', '/a/%zz', '/a\\b']) {
      const b = await call('POST', '/api/v2/workflows/folders', { workspaceId: ws, path: bad });
      expect(b.status, bad).toBe(400);
      expect(b.body.error.details[0].path).toEqual(['body', 'path']);
    }
  });

  it('relocates a folder with mv semantics, carrying its workflows', async () => {
    await call('POST', '/api/v2/workflows/folders', { workspaceId: ws, path: '/src/inner' });
    await call('POST', '/api/v2/workflows/folders', { workspaceId: ws, path: '/dest' });
    const w = await createWorkflow('carried', { folderPath: '/src/inner' }, ws);
    const into = await call('PATCH', '/api/v2/workflows/folders', { workspaceId: ws, path: '/src', destinationPath: '/dest' });
    expect(into.status, into.text).toBe(200);
    expect(into.body.data).toMatchObject({ path: '/dest/src', parentPath: '/dest', name: 'src' });
    expect((await call('GET', `/api/v2/workflows/${w.id}`)).body.data.folderPath).toBe('/dest/src/inner');
    const renamed = await call('PATCH', '/api/v2/workflows/folders', { workspaceId: ws, path: '/dest/src', destinationPath: '/renamed' });
    expect(renamed.body.data).toMatchObject({ path: '/renamed', name: 'renamed', parentPath: '/' });
    expect((await call('GET', `/api/v2/workflows/folders?workspaceId=${ws}&parentPath=/renamed`)).body.data.map((f: any) => f.path)).toEqual(['/renamed/inner']);
    expect((await call('PATCH', '/api/v2/workflows/folders', { workspaceId: ws, path: '/renamed', destinationPath: '/renamed/inner/x' })).status).toBe(409);
    expect((await call('PATCH', '/api/v2/workflows/folders', { workspaceId: ws, path: '/missing', destinationPath: '/x' })).status).toBe(404);
  });

  it('deletes empty folders directly and full ones only recursively, archiving what is inside', async () => {
    await call('POST', '/api/v2/workflows/folders', { workspaceId: ws, path: '/full/sub' });
    const w = await createWorkflow('in full', { folderPath: '/full/sub' }, ws);
    const refused = await call('DELETE', `/api/v2/workflows/folders?workspaceId=${ws}&path=/full`);
    expect(refused.status).toBe(409);
    expect((await call('DELETE', `/api/v2/workflows/folders?workspaceId=${ws}&path=/full&recursive=maybe`)).status).toBe(400);
    const r = await call('DELETE', `/api/v2/workflows/folders?workspaceId=${ws}&path=/full&recursive=yes`);
    expect(r.body).toEqual({ data: { path: '/full', deleted: true, deletedItems: { folders: 2, workflows: 1 } } });
    expect((await call('GET', `/api/v2/workflows/${w.id}`)).status).toBe(200);
    const restored = await call('POST', `/api/v2/workflows/${w.id}/restore`);
    expect(restored.body.data.folderPath).toBe('/');
    expect((await call('DELETE', `/api/v2/workflows/folders?workspaceId=${ws}&path=/full`)).status).toBe(404);
  });

  it('answers 413 when the folder tree has more than 10,000 folders', async () => {
    const big = await s.newWorkspace('Big tree');
    const insert = db.prepare("INSERT INTO folders (id, workspace_id, kind, path, parent_path, name, created_at, updated_at) VALUES (?, ?, 'workflow', ?, ?, ?, ?, ?)");
    db.exec('BEGIN');
    for (let i = 0; i < 10_001; i++) insert.run(uuid(), big, `/f${i}`, '/', `f${i}`, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');
    db.exec('COMMIT');
    expect((await call('GET', `/api/v2/workflows?workspaceId=${big}&folderPath=/f1`)).status).toBe(413);
    expect((await call('GET', `/api/v2/workflows/folders?workspaceId=${big}`)).status).toBe(413);
    const create = await call('POST', '/api/v2/workflows', { workspaceId: big, name: 'x', folderPath: '/f1' });
    expect(create.status).toBe(413);
    expect(create.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect((await call('POST', '/api/v2/workflows/folders', { workspaceId: big, path: '/new' })).status).toBe(413);
    expect((await call('POST', '/api/v2/workflows/move', { workspaceId: big, workflowIds: [uuid()], folderPath: '/' })).status).toBe(413);
    // Listing without a folder filter resolves no folder.
    expect((await call('GET', `/api/v2/workflows?workspaceId=${big}`)).status).toBe(200);
  });
});

describe('draft state', () => {
  it('replace recomputes containers, keeps omitted variables, lints, and HEAD mirrors GET', async () => {
    const w = await createWorkflow('Stateful');
    const { state, ids } = sampleState();
    const r = await call('PUT', `/api/v2/workflows/${w.id}/state`, { ...state, loops: { bogus: { id: 'bogus', nodes: [], iterations: 1, loopType: 'for' } } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ id: w.id, needsRedeployment: false, dryRun: false });
    expect(r.body.data.warnings[0]).toMatch(/recomputed/);
    const got = (await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data;
    expect(got.loops).toEqual({ [ids.loop]: { id: ids.loop, nodes: [ids.fn], iterations: 3, loopType: 'for', enabled: true } });
    expect(got.parallels).toEqual({});
    const { variables, ...withoutVariables } = state;
    await call('PUT', `/api/v2/workflows/${w.id}/state`, withoutVariables);
    expect((await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data.variables).toEqual(variables);

    const before = auditCount();
    const head = await s.request(`/api/v2/workflows/${w.id}/state`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const get = await s.request(`/api/v2/workflows/${w.id}/state`);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    expect(head.headers.get('x-ratelimit-limit')).toBe(get.headers.get('x-ratelimit-limit'));
    expect((await s.request(`/api/v2/workflows/${uuid()}/state`, { method: 'HEAD' })).status).toBe(404);
    expect(auditCount()).toBe(before);
  });

  it('lint reports unknown types, dangling edges, unreachable blocks, missing inputs and bad references', async () => {
    const w = await createWorkflow('Linty');
    const [start, fn, lonely, weird, api] = [uuid(), uuid(), uuid(), uuid(), uuid()];
    const r = await call('PUT', `/api/v2/workflows/${w.id}/state`, {
      blocks: {
        [start]: block(start, 'start_trigger', 'Start'),
        [fn]: block(fn, 'function', 'Fn', { subBlocks: sub('code', 'code', '') }),
        [lonely]: block(lonely, 'wait', 'Lonely', { subBlocks: sub('timeValue', 'short-input', '5') }),
        [weird]: block(weird, 'teleporter', 'Weird'),
        [api]: block(api, 'api', 'Call', { subBlocks: { ...sub('url', 'short-input', 'https://x/<fn.result> <nosuch.out> <fn..x>'), ...sub('method', 'dropdown', 'GET') } }),
      },
      edges: [
        { id: uuid(), source: start, target: fn },
        { id: uuid(), source: fn, target: api },
        { id: uuid(), source: fn, target: 'ghost' },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const lint = r.body.data.lint;
    expect(lint.notes.join(' ')).toMatch(/teleporter/);
    expect(lint.invalidConnectionTargets).toEqual([expect.objectContaining({ sourceBlockId: fn, targetBlockId: 'ghost' })]);
    expect(lint.orphanBlocks.map((b: any) => b.blockId).sort()).toEqual([lonely, weird].sort());
    expect(lint.fieldIssues).toEqual([expect.objectContaining({ blockId: fn, missingRequiredFields: ['code'] })]);
    expect(lint.unresolvedReferences.map((u: any) => u.value)).toEqual(['<nosuch.out>', '<fn..x>']);
    expect(lint.sources.map((b: any) => b.blockId)).toContain(start);
  });

  it('dry run validates and lints, saves nothing, records nothing, and answers like the write', async () => {
    const w = await createWorkflow('Dry');
    const { state } = sampleState();
    const before = auditCount();
    const stateBefore = (await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data;
    const dry = await call('PUT', `/api/v2/workflows/${w.id}/state?dryRun=true`, state);
    expect(dry.status).toBe(200);
    expect(dry.body.data.dryRun).toBe(true);
    expect((await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data).toEqual(stateBefore);
    expect(auditCount()).toBe(before);
    const real = await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    expect({ ...real.body.data, dryRun: true }).toEqual(dry.body.data);
    expect(auditCount()).toBe(before + 1);
  });

  it('block and edge ids are scoped to their workflow: two workflows may both have block b1 and edge e1', async () => {
    const a = await createWorkflow('First of two');
    const b = await createWorkflow('Second of two');
    const state = {
      blocks: { b1: block('b1', 'start_trigger', 'Start'), b2: block('b2', 'function', 'Fn', { subBlocks: sub('code', 'code', 'return 1') }) },
      edges: [{ id: 'e1', source: 'b1', target: 'b2' }],
    };
    expect((await call('PUT', `/api/v2/workflows/${a.id}/state`, state)).status).toBe(200);
    const dry = await call('PUT', `/api/v2/workflows/${b.id}/state?dryRun=true`, state);
    expect(dry.status, dry.text).toBe(200);
    const r = await call('PUT', `/api/v2/workflows/${b.id}/state`, state);
    expect(r.status, r.text).toBe(200);
    for (const w of [a, b]) {
      const saved = (await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data;
      expect(Object.keys(saved.blocks).sort()).toEqual(['b1', 'b2']);
      expect(saved.edges.map((e: any) => e.id)).toEqual(['e1']);
    }
    // Operations on one leave the other alone.
    const ops = await call('POST', `/api/v2/workflows/${b.id}/operations`, { operations: [{ operation_type: 'delete', block_id: 'b2' }] });
    expect(ops.status, ops.text).toBe(200);
    expect(Object.keys((await call('GET', `/api/v2/workflows/${a.id}/state`)).body.data.blocks).sort()).toEqual(['b1', 'b2']);
    // Copies keep working: a duplicate gets fresh ids, an import of the export keeps them.
    const dup = await call('POST', `/api/v2/workflows/${a.id}/duplicate`, {});
    expect(dup.status, dup.text).toBe(201);
    const dupState = (await call('GET', `/api/v2/workflows/${dup.body.data.id}/state`)).body.data;
    expect(Object.keys(dupState.blocks)).not.toContain('b1');
    expect(dupState.edges.map((e: any) => e.id)).not.toContain('e1');
    const doc = (await call('GET', `/api/v2/workflows/${a.id}/export`)).body.data;
    const imported = await call('POST', '/api/v2/workflows/import', { workspaceId: s.workspaceId, workflow: doc, name: 'Imported twin' });
    expect(imported.status, imported.text).toBe(201);
    expect(imported.body.data.idMap).toEqual({});
    const importedState = (await call('GET', `/api/v2/workflows/${imported.body.data.id}/state`)).body.data;
    expect(Object.keys(importedState.blocks).sort()).toEqual(['b1', 'b2']);
    expect(importedState.edges).toEqual([expect.objectContaining({ id: 'e1', source: 'b1', target: 'b2' })]);
  });

  it('rejects malformed graphs with a 400 and undeclared fields', async () => {
    const w = await createWorkflow('Strict');
    const id = uuid();
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, { blocks: { other: block(id, 'function', 'F') }, edges: [] })).status).toBe(400);
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, { blocks: {}, edges: [], extra: 1 })).status).toBe(400);
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, { blocks: {} })).status).toBe(400);
    const dupEdge = { id: 'e', source: 'a', target: 'b' };
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, { blocks: {}, edges: [dupEdge, dupEdge] })).status).toBe(400);
  });

  it('concurrent replaces are last-write-wins and never mix', async () => {
    const w = await createWorkflow('Racy');
    const states = Array.from({ length: 6 }, () => sampleState().state);
    const results = await Promise.all(states.map((st) => call('PUT', `/api/v2/workflows/${w.id}/state`, st)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const final = (await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data;
    const match = states.filter((st) => Object.keys(st.blocks).every((id) => id in final.blocks));
    expect(match).toHaveLength(1);
    expect(Object.keys(final.blocks)).toHaveLength(4);
  });

  it('workspace keys cannot replace state, deploy or undeploy, but may read', async () => {
    const w = await createWorkflow('Keyed');
    const store = await openSqliteStore(path.join(s.dataDir, 'workspace.sqlite'));
    const { key } = await createApiKey(store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    await store.close();
    expect((await call('GET', `/api/v2/workflows/${w.id}/state`, undefined, key)).status).toBe(200);
    for (const [method, p, body] of [
      ['PUT', `/api/v2/workflows/${w.id}/state`, { blocks: {}, edges: [] }],
      ['POST', `/api/v2/workflows/${w.id}/deploy`, {}],
      ['DELETE', `/api/v2/workflows/${w.id}/deploy`, undefined],
    ] as const) {
      const r = await call(method, p, body, key);
      expect(r.status, `${method} ${p}`).toBe(403);
      expect(r.body.error.details.code).toBe('WORKSPACE_KEY_NOT_ALLOWED');
    }
  });

  it('variables: add, edit, delete by name', async () => {
    const w = await createWorkflow('Vars');
    const r = await call('PATCH', `/api/v2/workflows/${w.id}/variables`, {
      operations: [
        { operation: 'add', name: 'a', type: 'string', value: 'x' },
        { operation: 'add', name: 'b', type: 'number', value: 1 },
        { operation: 'edit', name: 'a', value: 'y' },
        { operation: 'delete', name: 'b' },
      ],
    });
    expect(r.body.data).toEqual({ id: w.id, variableCount: 1, changed: true });
    const vars = (await call('GET', `/api/v2/workflows/${w.id}`)).body.data.variables;
    expect(Object.values(vars)).toEqual([expect.objectContaining({ name: 'a', type: 'string', value: 'y' })]);
    expect((await call('PATCH', `/api/v2/workflows/${w.id}/variables`, { operations: [{ operation: 'add', name: 'a', type: 'string', value: 1 }] })).status).toBe(409);
    expect((await call('PATCH', `/api/v2/workflows/${w.id}/variables`, { operations: [{ operation: 'delete', name: 'zz' }] })).status).toBe(400);
    expect((await call('PATCH', `/api/v2/workflows/${w.id}/variables`, { operations: [{ operation: 'rename', name: 'a' }] })).status).toBe(400);
  });
});

describe('locks', () => {
  it('a locked workflow answers 423 to deploy, undeploy, state replace and delete', async () => {
    const w = await createWorkflow('Locked');
    db.prepare('UPDATE workflows SET locked = 1 WHERE id = ?').run(w.id);
    const before = auditCount();
    for (const [method, p, body] of [
      ['POST', `/api/v2/workflows/${w.id}/deploy`, {}],
      ['DELETE', `/api/v2/workflows/${w.id}/deploy`, undefined],
      ['PUT', `/api/v2/workflows/${w.id}/state`, { blocks: {}, edges: [] }],
      ['DELETE', `/api/v2/workflows/${w.id}`, undefined],
    ] as const) {
      const r = await call(method, p, body);
      expect(r.status, `${method} ${p}`).toBe(423);
      expect(r.body.error.code).toBe('LOCKED');
    }
    expect(auditCount()).toBe(before);
    db.prepare('UPDATE workflows SET locked = 0 WHERE id = ?').run(w.id);
  });

  it('a state replace that changes a locked block answers 423; keeping it is fine', async () => {
    const w = await createWorkflow('Locked blocks');
    const { state, ids } = sampleState();
    (state.blocks[ids.fn] as any).locked = true;
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, state)).status).toBe(200);
    const changed = structuredClone(state);
    (changed.blocks[ids.fn] as any).name = 'Renamed';
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, changed)).status).toBe(423);
    const removed = structuredClone(state);
    delete (removed.blocks as any)[ids.fn];
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, removed)).status).toBe(423);
    const other = structuredClone(state);
    (other.blocks[ids.cond] as any).name = 'Other';
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, other)).status).toBe(200);
  });
});

describe('deployment and versions', () => {
  it('deploy reports references to missing blocks and outputs; a run fails naming the reference and the block', async () => {
    const w = await createWorkflow('Bad references');
    const state: any = {
      blocks: {
        st: block('st', 'start_trigger', 'Start', { subBlocks: sub('inputFormat', 'input-format', [{ name: 'n', type: 'number' }]) }),
        dbl: block('dbl', 'function', 'double', { subBlocks: sub('code', 'code', 'return <calc.result> * 2') }),
        out: block('out', 'response', 'Out', { subBlocks: sub('data', 'code', '{"v": <double.reslt>, "deep": <double.result.any.path>, "n": <start.n>, "m": <start.m>, "len": <double.stdout.length>, "bad": <double.stdout.x>}') }),
      },
      edges: [
        { id: 'e1', source: 'st', target: 'dbl' },
        { id: 'e2', source: 'dbl', target: 'out' },
      ],
    };
    const put = await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    expect(put.status, put.text).toBe(200);
    const found = put.body.data.lint.unresolvedReferences.map((u: any) => [u.blockId, u.value, u.reason]);
    expect(found).toEqual([
      ['dbl', '<calc.result>', 'No block named "calc" in this workflow.'],
      ['out', '<double.reslt>', 'Block "double" has no output "reslt"; its outputs are result, stdout.'],
      ['out', '<start.m>', 'Block "Start" has no output "m"; its outputs are input, conversationId, files, n.'],
      ['out', '<double.stdout.x>', 'The output "stdout" of block "double" is a string and has no "x".'],
    ]);

    const d = await call('POST', `/api/v2/workflows/${w.id}/deploy`, {});
    expect(d.status, d.text).toBe(200);
    expect(d.body.data.warnings).toEqual([
      'Block "double" (code) references <calc.result>: No block named "calc" in this workflow.',
      'Block "Out" (data) references <double.reslt>: Block "double" has no output "reslt"; its outputs are result, stdout.',
      'Block "Out" (data) references <start.m>: Block "Start" has no output "m"; its outputs are input, conversationId, files, n.',
      'Block "Out" (data) references <double.stdout.x>: The output "stdout" of block "double" is a string and has no "x".',
    ]);
    expect((await call('GET', `/api/v2/workflows/${w.id}/deployment`)).body.data.warnings).toEqual(d.body.data.warnings);

    const run = await call('POST', `/api/v2/workflows/${w.id}/execute`, { input: { n: 2 } });
    expect(run.status, run.text).toBe(200);
    expect(run.body.data.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'dbl', blockName: 'double' });
    expect(run.body.data.error.message).toBe('Block "double" references <calc.result>, but no block named "calc" exists');

    // Fixed, the findings are gone, and a misspelled path fails the run naming it.
    state.blocks.dbl.subBlocks.code.value = 'return <start.n> * 2';
    state.blocks.out.subBlocks.data.value = '{"v": <double.result>}';
    expect((await call('PUT', `/api/v2/workflows/${w.id}/state`, state)).body.data.lint.unresolvedReferences).toEqual([]);
    const fixed = await call('POST', `/api/v2/workflows/${w.id}/deploy`, {});
    expect(fixed.body.data.warnings).toEqual([]);
    expect((await call('POST', `/api/v2/workflows/${w.id}/execute`, { input: { n: 2 } })).body.data.output).toEqual({ v: 4 });
    state.blocks.out.subBlocks.data.value = '{"v": <double.reslt>}';
    await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    await call('POST', `/api/v2/workflows/${w.id}/deploy`, {});
    const misspelled = await call('POST', `/api/v2/workflows/${w.id}/execute`, { input: { n: 2 } });
    expect(misspelled.body.data.error.message).toBe('Block "Out" references <double.reslt>, but the output of "double" has no "reslt"');
  });

  it('deploy snapshots the draft; state writes never change the live version; needsRedeployment compares normalized forms', async () => {
    const w = await createWorkflow('Deployable');
    const { state, ids } = sampleState();
    await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    const d = await call('POST', `/api/v2/workflows/${w.id}/deploy`, { name: 'first' });
    expect(d.status, d.text).toBe(200);
    expect(d.body.data).toMatchObject({ id: w.id, isDeployed: true, version: 1, warnings: [], activeDeployment: { version: 1 } });
    expect(d.body.data.latestDeploymentAttempt).toMatchObject({ action: 'deploy', status: 'active', isCurrent: true });

    // Moving blocks and reordering keys is not a change that needs a redeploy.
    const moved = structuredClone(state);
    (moved.blocks[ids.fn] as any).position = { x: 500, y: 500 };
    moved.blocks = Object.fromEntries(Object.entries(moved.blocks).reverse());
    const first = await call('PUT', `/api/v2/workflows/${w.id}/state`, moved);
    expect(first.body.data.needsRedeployment).toBe(false);
    const second = await call('PUT', `/api/v2/workflows/${w.id}/state`, moved);
    expect(second.body.data.needsRedeployment).toBe(false);
    expect((await call('GET', `/api/v2/workflows/${w.id}/deployment`)).body.data.needsRedeployment).toBe(false);

    const edited = structuredClone(moved);
    (edited.blocks[ids.fn] as any).subBlocks.code.value = 'return 2';
    // needsRedeployment describes the draft as the write leaves it: the first edit already answers true.
    const dryEdit = await call('PUT', `/api/v2/workflows/${w.id}/state?dryRun=true`, edited);
    expect(dryEdit.body.data.needsRedeployment).toBe(true);
    const third = await call('PUT', `/api/v2/workflows/${w.id}/state`, edited);
    expect(third.body.data.needsRedeployment).toBe(true);
    const fourth = await call('PUT', `/api/v2/workflows/${w.id}/state`, edited);
    expect(fourth.body.data.needsRedeployment).toBe(true);
    const dep = (await call('GET', `/api/v2/workflows/${w.id}/deployment`)).body.data;
    expect(dep).toMatchObject({ isDeployed: true, needsRedeployment: true, isPublicApi: false, webhooks: [], activeDeployment: { version: 1 } });
    const v1 = (await call('GET', `/api/v2/workflows/${w.id}/versions/1`)).body.data;
    expect(v1.state.blocks[ids.fn].subBlocks.code.value).toBe('return <start.input>');
    expect(v1).toMatchObject({ version: 1, name: 'first', isActive: true });

    // Writing the live graph back answers false at once.
    const back = await call('PUT', `/api/v2/workflows/${w.id}/state`, moved);
    expect(back.body.data.needsRedeployment).toBe(false);
  });

  it('versions list/update, activate, revert and rollback', async () => {
    const w = await createWorkflow('Versioned');
    const { state, ids } = sampleState();
    await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    await call('POST', `/api/v2/workflows/${w.id}/deploy`, {});
    const edited = structuredClone(state);
    (edited.blocks[ids.fn] as any).subBlocks.code.value = 'return 2';
    await call('PUT', `/api/v2/workflows/${w.id}/state`, edited);
    await call('POST', `/api/v2/workflows/${w.id}/deploy`, { description: 'second' });

    const list = await call('GET', `/api/v2/workflows/${w.id}/versions?limit=1`);
    expect(list.body.data).toEqual([expect.objectContaining({ version: 2, isActive: true, description: 'second', latestOperationStatus: 'active' })]);
    const rest = await call('GET', `/api/v2/workflows/${w.id}/versions?limit=1&cursor=${encodeURIComponent(list.body.nextCursor)}`);
    expect(rest.body.data).toEqual([expect.objectContaining({ version: 1, isActive: false, latestOperationStatus: 'superseded' })]);
    expect(rest.body.nextCursor).toBeNull();

    const upd = await call('PATCH', `/api/v2/workflows/${w.id}/versions/1`, { name: 'v-one', description: null });
    expect(upd.body.data).toEqual({ version: 1, name: 'v-one', description: null });
    expect((await call('GET', `/api/v2/workflows/${w.id}/versions/9`)).status).toBe(404);
    expect((await call('GET', `/api/v2/workflows/${w.id}/versions/abc`)).status).toBe(400);

    const rb = await call('POST', `/api/v2/workflows/${w.id}/rollback`, {});
    expect(rb.status, rb.text).toBe(200);
    expect(rb.body.data).toMatchObject({ isDeployed: true, version: 1, activeDeployment: { version: 1 } });
    const act = await call('POST', `/api/v2/workflows/${w.id}/versions/2/activate`);
    expect(act.body.data).toMatchObject({ version: 2, activeDeployment: { version: 2 }, latestDeploymentAttempt: { action: 'activate' } });

    const rev = await call('POST', `/api/v2/workflows/${w.id}/versions/1/revert`);
    expect(rev.status, rev.text).toBe(200);
    expect(rev.body.data).toMatchObject({ id: w.id, version: 1, lastSaved: expect.any(Number) });
    expect((await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data.blocks[ids.fn].subBlocks.code.value).toBe('return <start.input>');
    const revActive = await call('POST', `/api/v2/workflows/${w.id}/versions/active/revert`);
    expect(revActive.body.data.version).toBe('active');
    expect((await call('GET', `/api/v2/workflows/${w.id}/state`)).body.data.blocks[ids.fn].subBlocks.code.value).toBe('return 2');

    const fresh = await createWorkflow('Never deployed');
    expect((await call('POST', `/api/v2/workflows/${fresh.id}/rollback`, {})).status).toBe(409);
  });

  it('undeploy answers exactly the documented status, and public API access can be set', async () => {
    const w = await createWorkflow('Undeployable');
    await call('POST', `/api/v2/workflows/${w.id}/deploy`, {});
    const pub = await call('PATCH', `/api/v2/workflows/${w.id}/deployment`, { isPublicApi: true });
    expect(pub.body.data).toEqual({ id: w.id, isPublicApi: true });
    const r = await call('DELETE', `/api/v2/workflows/${w.id}/deploy`);
    expect(r.body).toEqual({
      data: { id: w.id, isDeployed: false, deployedAt: null, warnings: [], activeDeployment: null, latestDeploymentAttempt: null, archivedMcpTools: [] },
    });
    const dep = (await call('GET', `/api/v2/workflows/${w.id}/deployment`)).body.data;
    expect(dep).toMatchObject({ isDeployed: false, deployedAt: null, activeDeployment: null, needsRedeployment: false, isPublicApi: true });
    expect((await call('GET', `/api/v2/workflows/${w.id}`)).body.data.isDeployed).toBe(false);
  });
});

describe('export and import', () => {
  it('round-trips every block, edge, container and variable under the same ids', async () => {
    const w = await createWorkflow('Portable', { description: 'travels' });
    const { state, ids } = sampleState();
    await call('PUT', `/api/v2/workflows/${w.id}/state`, state);
    const exp = await call('GET', `/api/v2/workflows/${w.id}/export`);
    expect(exp.status).toBe(200);
    const doc = exp.body.data;
    expect(doc).toMatchObject({ version: '1.0', workflow: { id: w.id, name: 'Portable', description: 'travels', folderPath: '/' } });

    const preview = await call('POST', '/api/v2/workflows/import/preview', { workspaceId: s.workspaceId, workflow: doc });
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.data).toMatchObject({ ready: true, unresolvedBindings: [] });

    const imp = await call('POST', '/api/v2/workflows/import', { workspaceId: s.workspaceId, workflow: JSON.stringify(doc), folderPath: '/imports', previewFingerprint: preview.body.data.previewFingerprint });
    expect(imp.status, imp.text).toBe(409); // the preview had no folder: the import differs from what was reviewed
    const ok = await call('POST', '/api/v2/workflows/import', { workspaceId: s.workspaceId, workflow: JSON.stringify(doc), folderPath: '/imports' });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.data).toMatchObject({ name: 'Portable', description: 'travels', folderPath: '/imports', kind: 'workflow_import', applied: true, idMap: {} });
    const imported = (await call('GET', `/api/v2/workflows/${ok.body.data.id}/state`)).body.data;
    expect(Object.keys(imported.blocks).sort()).toEqual(Object.values(ids).sort());
    expect(imported.loops[ids.loop].nodes).toEqual([ids.fn]);
    expect(imported.blocks[ids.fn].data.parentId).toBe(ids.loop);
    expect(imported.edges).toEqual(state.edges);
    expect(imported.variables).toEqual(state.variables);
    expect(imported.blocks[ids.cond].subBlocks.conditions.value[0].id).toBe(`${ids.cond}-if`);
  });

  it('something that is not a workflow document is a 400 naming the problem', async () => {
    for (const [workflow, pattern] of [
      ['not json', /not valid JSON/],
      [{ hello: 'world' }, /not a workflow document/],
      [{ version: '9.9', state: { blocks: {} } }, /Unsupported export version/],
      [{ blocks: [] }, /blocks/],
      [{ blocks: { a: { id: 'a', name: 'x' } } }, /has no type/],
      // Passes the lenient reading but breaks the spec's state schema (a name over 200 characters).
      [{ blocks: { a: { id: 'a', type: 'function', name: 'n'.repeat(300) } }, edges: [] }, /state\.blocks\.a\.name must NOT have more than 200 characters/],
    ] as const) {
      const r = await call('POST', '/api/v2/workflows/import', { workspaceId: s.workspaceId, workflow });
      expect(r.status, JSON.stringify(workflow)).toBe(400);
      expect(r.body.error.message).toMatch(pattern);
      const p = await call('POST', '/api/v2/workflows/import/preview', { workspaceId: s.workspaceId, workflow });
      expect(p.status).toBe(400);
    }
  });
});

describe('block catalog', () => {
  it('lists every block type the server runs, filters and pages', async () => {
    const r = await call('GET', `/api/v2/blocks?workspaceId=${s.workspaceId}&limit=100`);
    expect(r.status).toBe(200);
    const ids = r.body.data.map((b: any) => b.id);
    for (const t of ['start_trigger', 'api_trigger', 'function', 'condition', 'router', 'variables', 'response', 'wait', 'human_in_the_loop', 'api', 'workflow', 'agent', 'loop', 'parallel']) {
      expect(ids).toContain(t);
    }
    expect(ids).toEqual([...ids].sort());
    const triggers = await call('GET', `/api/v2/blocks?workspaceId=${s.workspaceId}&capability=trigger`);
    expect(triggers.body.data.every((b: any) => b.triggerAllowed)).toBe(true);
    const page = await call('GET', `/api/v2/blocks?workspaceId=${s.workspaceId}&limit=5&sortBy=name`);
    const next = await call('GET', `/api/v2/blocks?workspaceId=${s.workspaceId}&limit=5&sortBy=name&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    expect(next.body.data[0].name >= page.body.data[4].name).toBe(true);
    expect((await call('GET', `/api/v2/blocks?workspaceId=${s.workspaceId}&search=HTTP`)).body.data.map((b: any) => b.id)).toEqual(['api']);
    expect((await call('GET', `/api/v2/blocks?workspaceId=${s.workspaceId}&source=custom`)).body.data).toEqual([]);
  });

  it('describes one block with its inputs and outputs; unknown is 404', async () => {
    const r = await call('GET', `/api/v2/blocks/function?workspaceId=${s.workspaceId}`);
    expect(r.body.data.inputSchema).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'code', type: 'code', required: true })]));
    expect(r.body.data.outputs.result).toEqual({ type: 'any', description: expect.any(String) });
    expect((await call('GET', `/api/v2/blocks/nope?workspaceId=${s.workspaceId}`)).status).toBe(404);
    expect((await call('GET', '/api/v2/blocks/function')).status).toBe(400);
  });
});

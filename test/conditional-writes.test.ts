// Conditional writes through HTTP (issue 13): every replaceable document answers its reads with a strong ETag,
// and its writes honour If-Match — a stale tag is a 412 carrying the current tag, with nothing written.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';
import { OPERATIONS } from '../generated/operations.ts';
import { buildModel } from '../generator/model.ts';
import { ifMatchPasses, ifNoneMatchHits, parseTagCondition } from '../src/http/conditional.ts';

let s: TestServer;
const ws = () => s.workspaceId;
const STRONG = /^"[A-Za-z0-9_-]{22}"$/;

interface Answer {
  status: number;
  etag: string | null;
  body: any;
}

async function send(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await s.request(path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get('etag'), body: text ? JSON.parse(text) : undefined };
}

/** One document family: how to read it, write it (each call changes it), and change it by another path. */
interface Family {
  name: string;
  read: () => string;
  write: (n: number) => { method: string; path: string; body?: unknown };
  /** A change made without If-Match through another operation (or the same one, where there is no other). */
  other: (n: number) => Promise<void>;
  /** The same write aimed at a document that does not exist. */
  missing: () => { method: string; path: string; body?: unknown };
  /** What a write with If-Match answers for a missing document (404 unless the write would create it). */
  missingStatus: number;
  /** The read answers 304 to a matching If-None-Match (its tag covers the whole answer). */
  notModified: boolean;
  /** Deletes it (If-Match honoured); omitted where a family's delete is tested elsewhere. */
  remove?: () => { method: string; path: string };
}

let n = 0;
const ok = async (method: string, path: string, body?: unknown) => {
  const r = await send(method, path, { body });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r;
};

const families: Family[] = [];
let workflowId: string;
let startId: string;

beforeAll(async () => {
  s = await startTestServer();
  const wf = await buildWorkflow(s, 'Conditional', [apiBlock('start_trigger', 'Start')], [], { deploy: false });
  workflowId = wf.id;
  startId = wf.ids.Start!;

  const statePath = () => `/api/v2/workflows/${workflowId}/state`;
  const moveStart = (x: number) => ({ method: 'PUT', path: statePath(), body: { blocks: { [startId]: { ...apiBlock('start_trigger', 'Start'), id: startId, position: { x, y: 0 } } }, edges: [] } });
  const addVariable = async (i: number) => {
    await ok('PATCH', `/api/v2/workflows/${workflowId}/variables`, { operations: [{ operation: 'add', name: `v${i}`, type: 'string', value: 'x' }] });
  };
  families.push({
    name: 'workflow draft state',
    read: statePath,
    write: (i) => moveStart(i),
    other: addVariable,
    missing: () => ({ ...moveStart(1), path: `/api/v2/workflows/${randomUUID()}/state` }),
    missingStatus: 404,
    notModified: true,
  });

  const meta = await ok('POST', '/api/v2/workflows', { workspaceId: ws(), name: 'Meta doc' });
  const metaId = meta.body.data.id as string;
  families.push({
    name: 'workflow metadata',
    read: () => `/api/v2/workflows/${metaId}`,
    write: (i) => ({ method: 'PATCH', path: `/api/v2/workflows/${metaId}`, body: { description: `d${i}` } }),
    other: async () => void (await ok('POST', `/api/v2/workflows/${metaId}/deploy`)),
    missing: () => ({ method: 'PATCH', path: `/api/v2/workflows/${randomUUID()}`, body: { description: 'x' } }),
    missingStatus: 404,
    notModified: false,
    remove: () => ({ method: 'DELETE', path: `/api/v2/workflows/${metaId}` }),
  });

  const table = await ok('POST', '/api/v2/tables', { workspaceId: ws(), name: 'cond_table', schema: { columns: [{ name: 'title', type: 'string' }] } });
  const tableId = table.body.data.id as string;
  families.push({
    name: 'table schema',
    read: () => `/api/v2/tables/${tableId}?workspaceId=${ws()}`,
    write: (i) => ({ method: 'PATCH', path: `/api/v2/tables/${tableId}`, body: { workspaceId: ws(), description: `d${i}` } }),
    other: async (i) => void (await ok('POST', `/api/v2/tables/${tableId}/columns`, { workspaceId: ws(), column: { name: `c${i}`, type: 'number' } })),
    missing: () => ({ method: 'PATCH', path: `/api/v2/tables/tbl_${'0'.repeat(32)}`, body: { workspaceId: ws(), description: 'x' } }),
    missingStatus: 404,
    notModified: false,
  });

  const viewTable = await ok('POST', '/api/v2/tables', { workspaceId: ws(), name: 'cond_views', schema: { columns: [{ name: 'done', type: 'boolean' }] } });
  const vt = viewTable.body.data.id as string;
  const view = await ok('POST', `/api/v2/tables/${vt}/views`, { workspaceId: ws(), name: 'Open', config: { hiddenColumns: ['done'] } });
  const viewId = view.body.data.id as string;
  let column = 'done';
  families.push({
    name: 'table view',
    read: () => `/api/v2/tables/${vt}/views/${viewId}?workspaceId=${ws()}`,
    write: (i) => ({ method: 'PATCH', path: `/api/v2/tables/${vt}/views/${viewId}`, body: { workspaceId: ws(), name: `Open ${i}` } }),
    // Renaming a column the view names changes what the view reads as.
    other: async (i) => {
      await ok('PATCH', `/api/v2/tables/${vt}/columns`, { workspaceId: ws(), columnName: column, updates: { name: `done_${i}` } });
      column = `done_${i}`;
    },
    missing: () => ({ method: 'PATCH', path: `/api/v2/tables/${vt}/views/view_nope`, body: { workspaceId: ws(), name: 'x' } }),
    missingStatus: 404,
    notModified: true,
    remove: () => ({ method: 'DELETE', path: `/api/v2/tables/${vt}/views/${viewId}?workspaceId=${ws()}` }),
  });

  const skill = await ok('POST', '/api/v2/skills', { workspaceId: ws(), name: 'cond-skill', description: 'A skill', content: 'Do things.' });
  const skillId = skill.body.data.id as string;
  families.push({
    name: 'skill',
    read: () => `/api/v2/skills/${skillId}?workspaceId=${ws()}`,
    write: (i) => ({ method: 'PATCH', path: `/api/v2/skills/${skillId}`, body: { workspaceId: ws(), description: `d${i}` } }),
    other: async (i) => void (await ok('PATCH', `/api/v2/skills/${skillId}`, { workspaceId: ws(), content: `Other ${i}` })),
    missing: () => ({ method: 'PATCH', path: `/api/v2/skills/${randomUUID()}`, body: { workspaceId: ws(), description: 'x' } }),
    missingStatus: 404,
    notModified: true,
    remove: () => ({ method: 'DELETE', path: `/api/v2/skills/${skillId}?workspaceId=${ws()}` }),
  });

  const schema = { type: 'function', function: { name: 'add', description: 'Adds', parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] } } };
  const tool = await ok('POST', '/api/v2/custom-tools', { workspaceId: ws(), title: 'Cond tool', schema, code: 'return a' });
  const toolId = tool.body.data.id as string;
  families.push({
    name: 'custom tool',
    read: () => `/api/v2/custom-tools/${toolId}?workspaceId=${ws()}`,
    write: (i) => ({ method: 'PATCH', path: `/api/v2/custom-tools/${toolId}`, body: { workspaceId: ws(), code: `return a + ${i}` } }),
    other: async (i) => void (await ok('PATCH', `/api/v2/custom-tools/${toolId}`, { workspaceId: ws(), title: `Cond tool ${i}` })),
    missing: () => ({ method: 'PATCH', path: `/api/v2/custom-tools/${randomUUID()}`, body: { workspaceId: ws(), code: 'return 1' } }),
    missingStatus: 404,
    notModified: true,
    remove: () => ({ method: 'DELETE', path: `/api/v2/custom-tools/${toolId}?workspaceId=${ws()}` }),
  });

  const chatWf = await buildWorkflow(s, 'Chat doc', [apiBlock('start_trigger', 'Start')], []);
  const noChatWf = await buildWorkflow(s, 'No chat', [apiBlock('start_trigger', 'Start')], []);
  const chatPath = (id: string) => `/api/v2/workflows/${id}/deployments/chat`;
  await ok('PUT', chatPath(chatWf.id), { identifier: 'cond-chat', title: 'Chat' });
  let deployed = true;
  families.push({
    name: 'hosted chat settings',
    read: () => chatPath(chatWf.id),
    write: (i) => ({ method: 'PUT', path: chatPath(chatWf.id), body: { identifier: 'cond-chat', title: `Chat ${i}` } }),
    // Whether the chat is live follows the workflow's deployment.
    other: async () => {
      await ok(deployed ? 'DELETE' : 'POST', `/api/v2/workflows/${chatWf.id}/deploy`);
      deployed = !deployed;
    },
    missing: () => ({ method: 'PUT', path: chatPath(noChatWf.id), body: { identifier: 'never-made', title: 'No' } }),
    // The PUT would create the chat, so If-Match (even `*`) fails for want of one (RFC 9110 §13.1.1).
    missingStatus: 412,
    notModified: true,
    remove: () => ({ method: 'DELETE', path: chatPath(chatWf.id) }),
  });
});
afterAll(() => s.stop());

const readTag = async (f: Family) => {
  const r = await send('GET', f.read());
  expect(r.status).toBe(200);
  return r;
};
const writeWith = (f: Family, ifMatch?: string) => {
  const w = f.write(++n);
  return send(w.method, w.path, { body: w.body, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } });
};

describe.each([0, 1, 2, 3, 4, 5, 6])('document family #%i', (index) => {
  const f = () => families[index]!;

  it('reads answer a strong ETag; a write with the matching If-Match succeeds and answers the new one', async () => {
    const before = await readTag(f());
    expect(before.etag, f().name).toMatch(STRONG);
    const w = await writeWith(f(), before.etag!);
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(w.etag).toMatch(STRONG);
    expect(w.etag).not.toBe(before.etag);
    const after = await readTag(f());
    expect(after.etag).toBe(w.etag);
  });

  it('a stale tag is a 412 with the current tag in details.etag and the ETag header, and nothing is written', async () => {
    const old = (await readTag(f())).etag!;
    expect((await writeWith(f(), old)).status).toBe(200);
    const current = await readTag(f());
    const r = await writeWith(f(), old);
    expect(r.status).toBe(412);
    expect(r.body.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { etag: current.etag } });
    expect(r.etag).toBe(current.etag);
    const after = await readTag(f());
    expect(after.body).toEqual(current.body);
    expect(after.etag).toBe(current.etag);
  });

  it('`*` writes an existing document; a missing one answers the documented status', async () => {
    expect((await writeWith(f(), '*')).status).toBe(200);
    const m = f().missing();
    const r = await send(m.method, m.path, { body: m.body, headers: { 'if-match': '*' } });
    expect(r.status).toBe(f().missingStatus);
    if (r.status === 412) expect(r.body.error.details).toEqual({ etag: null });
  });

  it('a list matches any of its tags; a weak tag never matches; an unquoted one is a 400', async () => {
    const current = (await readTag(f())).etag!;
    const weak = await writeWith(f(), `W/${current}`);
    expect(weak.status).toBe(412);
    const bad = await writeWith(f(), current.slice(1, -1));
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toEqual(['header', 'if-match']);
    expect((await readTag(f())).etag).toBe(current);
    expect((await writeWith(f(), `"nope", ${current}`)).status).toBe(200);
  });

  it('without If-Match the write is last-write-wins as before (and still answers the new tag)', async () => {
    const before = (await readTag(f())).etag;
    const r = await writeWith(f());
    expect(r.status).toBe(200);
    expect(r.etag).not.toBe(before);
    expect((await readTag(f())).etag).toBe(r.etag);
  });

  it('a change by another path changes the tag, so the old tag is then stale', async () => {
    const before = (await readTag(f())).etag!;
    await f().other(++n);
    const after = (await readTag(f())).etag!;
    expect(after).not.toBe(before);
    expect((await writeWith(f(), before)).status).toBe(412);
  });

  it('If-None-Match with the current tag is a 304 where the read offers it, else a 200', async () => {
    const current = await readTag(f());
    const r = await send('GET', f().read(), { headers: { 'if-none-match': current.etag! } });
    expect(r.status).toBe(f().notModified ? 304 : 200);
    expect(r.etag).toBe(current.etag);
    if (r.status === 304) expect(r.body).toBeUndefined();
    else expect(r.body).toEqual(current.body);
  });

  it('a delete honours If-Match too', async () => {
    const remove = f().remove?.();
    if (!remove) return;
    const current = (await readTag(f())).etag!;
    const stale = await send(remove.method, remove.path, { headers: { 'if-match': '"stale-tag-0000000000000"' } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.details.etag).toBe(current);
    expect((await send('GET', f().read())).status).toBe(200);
    expect((await send(remove.method, remove.path, { headers: { 'if-match': current } })).status).toBe(200);
  });
});

/**
 * Runs `fn` while every store transaction first yields to the event loop, so a concurrent request runs all it
 * does before its own transaction in between: a check made outside the writing transaction would let two win.
 */
async function withYieldingTransactions(fn: () => Promise<void>): Promise<void> {
  const store = s.services.store;
  const transaction = store.transaction;
  store.transaction = <T>(work: Parameters<typeof transaction<T>>[0]) =>
    new Promise<void>((resolve) => setImmediate(resolve)).then(() => transaction.call(store, work) as Promise<T>);
  try {
    await fn();
  } finally {
    store.transaction = transaction;
  }
}

describe('the draft state', () => {
  const statePath = () => `/api/v2/workflows/${workflowId}/state`;
  const body = (x: number) => ({ blocks: { [startId]: { ...apiBlock('start_trigger', 'Start'), id: startId, position: { x, y: 0 } } }, edges: [] });

  it('two clients racing a state replace with the same If-Match: exactly one wins, the other gets 412', async () => {
    await withYieldingTransactions(raceRounds);
  });

  async function raceRounds() {
    for (let round = 0; round < 25; round++) {
      const tag = (await send('GET', statePath())).etag!;
      const racers = await Promise.all(
        [1, 2].map((c) => send('PUT', statePath(), { body: body(round * 10 + c), headers: { 'if-match': tag } })),
      );
      const statuses = racers.map((r) => r.status).sort();
      expect(statuses, `round ${round}`).toEqual([200, 412]);
      const winner = racers.find((r) => r.status === 200)!;
      const loser = racers.find((r) => r.status === 412)!;
      expect(loser.body.error.details.etag).toBe(winner.etag);
      const now = await send('GET', statePath());
      expect(now.etag).toBe(winner.etag);
    }
  }

  it('five clients at once, across the three state writes: one wins per round', () => withYieldingTransactions(async () => {
    for (let round = 0; round < 10; round++) {
      const tag = (await send('GET', statePath())).etag!;
      const h = { 'if-match': tag };
      const racers = await Promise.all([
        send('PUT', statePath(), { body: body(1000 + round), headers: h }),
        send('PUT', statePath(), { body: body(2000 + round), headers: h }),
        send('PATCH', `/api/v2/workflows/${workflowId}/variables`, { body: { operations: [{ operation: 'add', name: `race${round}`, type: 'string', value: '' }] }, headers: h }),
        send('POST', `/api/v2/workflows/${workflowId}/operations`, { body: { operations: [{ operation_type: 'add', block_id: 'n', params: { type: 'function', name: `Fn ${round}` } }] }, headers: h }),
        send('PUT', statePath(), { body: body(3000 + round), headers: h }),
      ]);
      expect(racers.filter((r) => r.status === 200)).toHaveLength(1);
      expect(racers.filter((r) => r.status === 412)).toHaveLength(4);
    }
  }));

  it('HEAD answers the same ETag; If-None-Match with it is a 304 without a body, a stale one a 200', async () => {
    const get = await send('GET', statePath());
    const head = await s.request(statePath(), { method: 'HEAD' });
    expect(head.headers.get('etag')).toBe(get.etag);
    const fresh = await s.request(statePath(), { headers: { 'if-none-match': get.etag! } });
    expect(fresh.status).toBe(304);
    expect(fresh.headers.get('etag')).toBe(get.etag);
    expect(await fresh.text()).toBe('');
    const headFresh = await s.request(statePath(), { method: 'HEAD', headers: { 'if-none-match': `"x", W/${get.etag}` } });
    expect(headFresh.status).toBe(304);
    const stale = await send('GET', statePath(), { headers: { 'if-none-match': '"old0000000000000000000"' } });
    expect(stale.status).toBe(200);
    expect(stale.body.data.blocks[startId]).toBeDefined();
    expect((await send('GET', statePath(), { headers: { 'if-none-match': 'garbage' } })).status).toBe(400);
  });

  it('dry runs check If-Match too and answer the unchanged tag', async () => {
    const tag = (await send('GET', statePath())).etag!;
    const dry = await send('PUT', `${statePath()}?dryRun=true`, { body: body(7), headers: { 'if-match': tag } });
    expect(dry.status).toBe(200);
    expect(dry.etag).toBe(tag);
    expect((await send('PUT', `${statePath()}?dryRun=true`, { body: body(7), headers: { 'if-match': '"stale00000000000000000"' } })).status).toBe(412);
    const ops = await send('POST', `/api/v2/workflows/${workflowId}/operations?dryRun=true`, { body: { operations: [] }, headers: { 'if-match': tag } });
    expect(ops.status).toBe(200);
    expect(ops.etag).toBe(tag);
  });

  it('operations, variables and a version revert are conditional writes of the same document', async () => {
    let tag = (await send('GET', statePath())).etag!;
    const ops = await send('POST', `/api/v2/workflows/${workflowId}/operations`, {
      body: { operations: [{ operation_type: 'add', block_id: 'p', params: { type: 'function', name: 'Planned' } }] },
      headers: { 'if-match': tag },
    });
    expect(ops.status, JSON.stringify(ops.body)).toBe(200);
    expect(ops.etag).not.toBe(tag);
    expect((await send('GET', statePath())).etag).toBe(ops.etag);
    const nothing = await send('POST', `/api/v2/workflows/${workflowId}/operations`, { body: { operations: [] }, headers: { 'if-match': ops.etag! } });
    expect(nothing.etag).toBe(ops.etag);
    const vars = await send('PATCH', `/api/v2/workflows/${workflowId}/variables`, {
      body: { operations: [{ operation: 'add', name: 'answer', type: 'number', value: 42 }] },
      headers: { 'if-match': tag },
    });
    expect(vars.status).toBe(412);
    expect(vars.body.error.details.etag).toBe(ops.etag);
    tag = ops.etag!;
    expect((await send('POST', `/api/v2/workflows/${workflowId}/deploy`)).status).toBe(200);
    const version = (await send('GET', `/api/v2/workflows/${workflowId}/versions`)).body.data[0].version;
    expect((await send('POST', `/api/v2/workflows/${workflowId}/versions/${version}/revert`, { headers: { 'if-match': '"stale00000000000000000"' } })).status).toBe(412);
    const reverted = await send('POST', `/api/v2/workflows/${workflowId}/versions/${version}/revert`, { headers: { 'if-match': tag } });
    expect(reverted.status).toBe(200);
    expect((await send('GET', statePath())).etag).toBe(reverted.etag);
  });
});

describe('what the tags leave out', () => {
  it("a table's rows do not change its tag; its tag is not offered for If-None-Match", async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws(), name: 'cond_rows', schema: { columns: [{ name: 'a', type: 'number' }] } });
    const path = `/api/v2/tables/${t.body.data.id}?workspaceId=${ws()}`;
    const before = await send('GET', path);
    await ok('POST', `/api/v2/tables/${t.body.data.id}/rows`, { workspaceId: ws(), rows: [{ a: 1 }, { a: 2 }] });
    const after = await send('GET', path);
    expect(after.body.data.rowCount).toBe(2);
    expect(after.etag).toBe(before.etag);
    // The row count differs from what the client holds, so no 304 on this tag.
    expect((await send('GET', path, { headers: { 'if-none-match': before.etag! } })).status).toBe(200);
    const renamed = await send('PATCH', `/api/v2/tables/${t.body.data.id}`, { body: { workspaceId: ws(), name: 'cond_rows2' }, headers: { 'if-match': before.etag! } });
    expect(renamed.status).toBe(200);
  });

  it("a workflow's runs do not change its tag", async () => {
    const wf = await buildWorkflow(s, 'Runs', [apiBlock('start_trigger', 'Start')], []);
    const before = await send('GET', `/api/v2/workflows/${wf.id}`);
    expect((await send('POST', `/api/v2/workflows/${wf.id}/execute`, { body: { input: {} } })).status).toBe(200);
    const after = await send('GET', `/api/v2/workflows/${wf.id}`);
    expect(after.body.data.runCount).toBe(before.body.data.runCount + 1);
    expect(after.etag).toBe(before.etag);
    expect((await send('PATCH', `/api/v2/workflows/${wf.id}`, { body: { name: 'Runs renamed' }, headers: { 'if-match': before.etag! } })).status).toBe(200);
  });

  it('the column operations are conditional writes of the table', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws(), name: 'cond_cols', schema: { columns: [{ name: 'a', type: 'number' }] } });
    const id = t.body.data.id;
    const path = `/api/v2/tables/${id}?workspaceId=${ws()}`;
    let tag = (await send('GET', path)).etag!;
    const added = await send('POST', `/api/v2/tables/${id}/columns`, { body: { workspaceId: ws(), column: { name: 'b', type: 'string' } }, headers: { 'if-match': tag } });
    expect(added.status).toBe(200);
    expect((await send('GET', path)).etag).toBe(added.etag);
    const stale = await send('PATCH', `/api/v2/tables/${id}/columns`, { body: { workspaceId: ws(), columnName: 'b', updates: { name: 'c' } }, headers: { 'if-match': tag } });
    expect(stale.status).toBe(412);
    tag = added.etag!;
    const renamed = await send('PATCH', `/api/v2/tables/${id}/columns`, { body: { workspaceId: ws(), columnName: 'b', updates: { name: 'c' } }, headers: { 'if-match': tag } });
    expect(renamed.status).toBe(200);
    const dropped = await send('DELETE', `/api/v2/tables/${id}/columns`, { body: { workspaceId: ws(), columnName: 'c' }, headers: { 'if-match': renamed.etag! } });
    expect(dropped.status).toBe(200);
    expect((await send('GET', path)).etag).toBe(dropped.etag);
    expect((await send('DELETE', `/api/v2/tables/${id}?workspaceId=${ws()}`, { headers: { 'if-match': tag } })).status).toBe(412);
    expect((await send('DELETE', `/api/v2/tables/${id}?workspaceId=${ws()}`, { headers: { 'if-match': dropped.etag! } })).status).toBe(200);
  });
});

describe('create-only chat settings', () => {
  it('If-None-Match: * creates a chat once; the second such PUT is a 412 naming the chat that exists', async () => {
    const wf = await buildWorkflow(s, 'Create only', [apiBlock('start_trigger', 'Start')], []);
    const path = `/api/v2/workflows/${wf.id}/deployments/chat`;
    const headers = { 'if-none-match': '*' };
    const first = await send('PUT', path, { body: { identifier: 'create-only', title: 'First' }, headers });
    expect(first.status).toBe(200);
    expect(first.etag).toMatch(STRONG);
    const second = await send('PUT', path, { body: { identifier: 'create-only', title: 'Second' }, headers });
    expect(second.status).toBe(412);
    expect(second.body.error.details).toEqual({ etag: first.etag });
    expect((await send('GET', path)).body.data.title).toBe('First');
    expect((await send('PUT', path, { body: { identifier: 'create-only', title: 'Third' }, headers: { 'if-none-match': '"other-tag"' } })).status).toBe(200);
  });
});

describe('coverage', () => {
  it('every operation declaring x-etag is exercised above', () => {
    const tested = [
      'getWorkflow', 'updateWorkflow', 'deleteWorkflow', 'getWorkflowState', 'headWorkflowState', 'replaceWorkflowState',
      'applyWorkflowOperations', 'applyWorkflowVariables', 'revertWorkflowVersion', 'getTable', 'updateTable', 'deleteTable',
      'addTableColumn', 'updateTableColumn', 'deleteTableColumn', 'getTableView', 'updateTableView', 'deleteTableView',
      'getSkill', 'updateSkill', 'deleteSkill', 'getCustomTool', 'updateCustomTool', 'deleteCustomTool',
      'getWorkflowChatDeployment', 'replaceWorkflowChatDeployment', 'deleteWorkflowChatDeployment',
    ].sort();
    const declared = Object.values(OPERATIONS).filter((o) => o.etag !== null).map((o) => o.operationId).sort();
    expect(declared).toEqual(tested);
  });
});

describe('the spec rules for x-etag (generator/model.ts)', () => {
  const err = { description: 'e', content: { 'application/json': { schema: { type: 'string' } } } };
  const errors = { '400': err, '401': err, '429': err, '500': err };
  const ifMatch = { name: 'if-match', in: 'header', schema: { type: 'string' } };
  const docWith = (op: Record<string, unknown>) => ({
    paths: {
      '/x': {
        patch: { operationId: 'updateX', tags: ['X'], description: 'd', security: [{ apiKey: [] }, { oauth2: ['api:write'] }], 'x-rate-bucket': 'api', ...op },
      },
    },
  });
  const ok200 = { description: 'ok', headers: { ETag: { schema: { type: 'string' } } } };

  it('accepts a complete declaration and emits etag', () => {
    const { operations, problems } = buildModel(docWith({ 'x-etag': 'write', parameters: [ifMatch], responses: { '200': ok200, '412': err, ...errors } }));
    expect(problems).toEqual([]);
    expect(operations[0]!.etag).toBe('write');
  });

  it('names what a write lacks: If-Match, the 412, the ETag header', () => {
    const { problems } = buildModel(docWith({ 'x-etag': 'write', responses: { '200': { description: 'ok' }, ...errors } }));
    expect(problems.join('\n')).toMatch(/IfMatch header parameter/);
    expect(problems.join('\n')).toMatch(/412 response/);
    expect(problems.join('\n')).toMatch(/ETag header/);
  });

  it('refuses If-Match without x-etag, an unknown x-etag, and If-None-Match without a 304', () => {
    expect(buildModel(docWith({ parameters: [ifMatch], responses: { '200': ok200, ...errors } })).problems.join()).toMatch(/need x-etag/);
    expect(buildModel(docWith({ 'x-etag': 'maybe', responses: { '200': ok200, ...errors } })).problems.join()).toMatch(/read or write/);
    const inm = { name: 'if-none-match', in: 'header', schema: { type: 'string' } };
    expect(buildModel(docWith({ 'x-etag': 'read', parameters: [inm], responses: { '200': ok200, ...errors } })).problems.join()).toMatch(/304/);
  });
});

describe('If-Match and If-None-Match parsing (src/http/conditional.ts)', () => {
  it('reads *, lists, weak tags and empty list members; refuses unquoted values', () => {
    expect(parseTagCondition(undefined, 'if-match')).toBeNull();
    expect(parseTagCondition(' * ', 'if-match')).toEqual({ any: true });
    expect(parseTagCondition('"a", W/"b",,"c"', 'if-match')).toEqual({ any: false, tags: [{ weak: false, opaque: 'a' }, { weak: true, opaque: 'b' }, { weak: false, opaque: 'c' }] });
    for (const bad of ['a', '"a', '*, "a"', ',', 'W/a', '"a b"']) expect(() => parseTagCondition(bad, 'if-match'), bad).toThrow(/entity tag/);
  });

  it('If-Match compares strongly, If-None-Match weakly; nothing matches a missing document', () => {
    const cond = parseTagCondition('W/"a", "b"', 'if-match')!;
    expect(ifMatchPasses(cond, '"a"')).toBe(false);
    expect(ifMatchPasses(cond, '"b"')).toBe(true);
    expect(ifNoneMatchHits(cond, '"a"')).toBe(true);
    expect(ifMatchPasses({ any: true }, null)).toBe(false);
    expect(ifNoneMatchHits({ any: true }, null)).toBe(false);
  });
});

// The workspace-data tools (tables, files, knowledge) in the tool catalog and through executeTool, on data
// created through the API; bad input, unknown resources, and another workspace's resources fail clearly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';

let s: TestServer;
const ws = () => s.workspaceId;
const execute = (toolId: string, input: Record<string, unknown>, workspaceId = ws()) => s.call('POST', `/api/v2/tools/${toolId}/execute`, { workspaceId, input });
let tableId: string;

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1000' });
  const t = await s.call('POST', '/api/v2/tables', { workspaceId: ws(), name: 'tasks', schema: { columns: [{ name: 'title', type: 'string' }, { name: 'points', type: 'number' }] } });
  expect(t.status, t.text).toBeLessThan(300);
  tableId = t.body.data.id;
  for (const [title, points] of [['alpha', 1], ['beta', 5], ['gamma', 8]] as const) {
    const r = await s.call('POST', `/api/v2/tables/${tableId}/rows`, { workspaceId: ws(), data: { title, points } });
    expect(r.status, r.text).toBe(201);
  }
});
afterAll(async () => {
  await s.stop();
});

describe('workspace data tools', () => {
  it('are in the catalog with their input schemas', async () => {
    const list = await s.call('GET', `/api/v2/tools?workspaceId=${ws()}&limit=100`);
    expect(list.status).toBe(200);
    const ids = list.body.data.map((t: any) => t.id);
    for (const id of ['table_query_rows', 'table_insert_row', 'file_read_text', 'file_write_text', 'knowledge_search']) expect(ids).toContain(id);
    const one = await s.call('GET', `/api/v2/tools/table_query_rows?workspaceId=${ws()}`);
    expect(one.body.data.params.tableId).toMatchObject({ type: 'string', required: true });
  });

  it('queries rows with a filter and inserts a row', async () => {
    const q = await execute('table_query_rows', { tableId, filter: { field: 'points', op: 'gt', value: 2 } });
    expect(q.status, q.text).toBe(200);
    expect(q.body.data.status, q.text).toBe('succeeded');
    expect(q.body.data.output.rows.map((r: any) => r.data.title).sort()).toEqual(['beta', 'gamma']);
    const ins = await execute('table_insert_row', { tableId, data: { title: 'delta', points: 3 } });
    expect(ins.body.data.status, ins.text).toBe('succeeded');
    expect(ins.body.data.output.row.data).toMatchObject({ title: 'delta', points: 3 });
    const rows = await s.call('GET', `/api/v2/tables/${tableId}/rows?workspaceId=${ws()}`);
    expect(rows.body.data.map((r: any) => r.data.title)).toContain('delta');
  });

  it('fails clearly on an unknown table, a bad filter, a bad cell and schema-invalid input', async () => {
    const unknown = await execute('table_query_rows', { tableId: 'tbl_nope' });
    expect(unknown.body.data.status).toBe('failed');
    expect(unknown.body.data.error.message).toMatch(/not found/i);
    const badFilter = await execute('table_query_rows', { tableId, filter: { field: 'nosuch', op: 'eq', value: 1 } });
    expect(badFilter.body.data).toMatchObject({ status: 'failed' });
    expect(badFilter.body.data.error.message).toMatch(/Invalid filter/);
    const badCell = await execute('table_insert_row', { tableId, data: { points: 'many' } });
    expect(badCell.body.data.status).toBe('failed');
    expect(badCell.body.data.error.message).toMatch(/Invalid row/);
    const invalid = await execute('table_query_rows', { limit: 5 });
    expect(invalid.status).toBe(400);
    const rows = await s.call('GET', `/api/v2/tables/${tableId}/rows?workspaceId=${ws()}`);
    expect(rows.body.data.length).toBe(4);
  });

  it('writes a text file and reads it back', async () => {
    const w = await execute('file_write_text', { name: 'notes.md', content: '# Notes\nhello tools\n' });
    expect(w.body.data.status, w.text).toBe('succeeded');
    const fileId = w.body.data.output.fileId;
    const got = await s.request(`/api/v2/files/${fileId}?workspaceId=${ws()}`);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('# Notes\nhello tools\n');
    const r = await execute('file_read_text', { fileId });
    expect(r.body.data.output).toMatchObject({ fileId, name: 'notes.md', text: '# Notes\nhello tools\n', truncated: false });
    const made = await s.call('POST', '/api/v2/files', { workspaceId: ws(), name: 'api.txt', content: 'from the api' });
    expect((await execute('file_read_text', { fileId: made.body.data.id })).body.data.output.text).toBe('from the api');
    const dup = await execute('file_write_text', { name: 'notes.md', content: 'again' });
    expect(dup.body.data.status).toBe('failed');
    expect(dup.body.data.error.message).toMatch(/already exists/);
    const noFolder = await execute('file_write_text', { name: 'x.txt', content: 'x', folderPath: '/missing' });
    expect(noFolder.body.data.status).toBe('failed');
  });

  it('searches a knowledge base with a processed document', async () => {
    const kb = await createBase(s, { name: 'Handbook' });
    const up = await uploadDocument(s, kb.id, 'vacation.txt', 'Employees get twenty-five vacation days each year. Requests go to the team lead.');
    const doc = await waitForDocument(s, kb.id, up.document?.id ?? up.documentId ?? up.id);
    expect(doc.processingStatus).toBe('completed');
    const r = await execute('knowledge_search', { knowledgeBaseId: kb.id, query: 'vacation days', topK: 3 });
    expect(r.body.data.status, r.text).toBe('succeeded');
    expect(r.body.data.output.totalResults).toBeGreaterThan(0);
    expect(r.body.data.output.results[0].content).toMatch(/vacation/);
    const missing = await execute('knowledge_search', { knowledgeBaseId: 'kb_nope', query: 'x' });
    expect(missing.body.data.status).toBe('failed');
    expect(missing.body.data.error.message).toMatch(/not found/);
  });

  it("never reaches another workspace's table, file or knowledge base", async () => {
    const other = await s.newWorkspace('Other');
    const file = await s.call('POST', '/api/v2/files', { workspaceId: ws(), name: 'secret.txt', content: 'mine' });
    const kb = await createBase(s, { name: 'Private' });
    const cases: [string, Record<string, unknown>][] = [
      ['table_query_rows', { tableId }],
      ['table_insert_row', { tableId, data: { title: 'intruder' } }],
      ['file_read_text', { fileId: file.body.data.id }],
      ['knowledge_search', { knowledgeBaseId: kb.id, query: 'anything' }],
    ];
    for (const [tool, input] of cases) {
      const r = await execute(tool, input, other);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.status, `${tool}: ${r.text}`).toBe('failed');
      expect(r.body.data.error.message).toMatch(/not found/i);
    }
    const rows = await s.call('GET', `/api/v2/tables/${tableId}/rows?workspaceId=${ws()}`);
    expect(rows.body.data.map((r: any) => r.data.title)).not.toContain('intruder');
  });
});

// Table imports and exports: the upload path of src/files (signed PUT, parts, upload-token), delimiter sniffing,
// type inference, rejected rows, all-or-nothing visibility (also across a restart), append and replace with a
// mapping, a workspace file as source, the CLI's import command, and CSV/JSON exports with their download link.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { waitUntil } from './support/wait.ts';

let s: TestServer;
let ws: string;
let dir: string;
beforeAll(async () => {
  s = await startTestServer({ TABLES_LIMIT_FREE: '100', TABLE_ROWS_LIMIT_FREE: '1000000', UPLOAD_PART_SIZE: '64kb', RATE_LIMIT_FREE_API: '100000' });
  ws = s.workspaceId;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-timp-'));
});
afterAll(async () => {
  await s.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function ok(method: string, p: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) };
  const r = await s.request(p, init);
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${text}`);
  return JSON.parse(text).data;
}

/** Creates an import of `csv`, uploads it (one PUT or parts), completes it and waits for the end. */
async function importCsv(csv: string | Buffer, target: unknown, extra: Record<string, unknown> = {}) {
  const bytes = Buffer.isBuffer(csv) ? csv : Buffer.from(csv);
  const created = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'data.csv', contentType: 'text/csv', size: bytes.length }, target, ...extra });
  const token = created.uploadToken;
  if (created.transfer.method === 'put') {
    const put = await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: bytes });
    expect(put.status).toBe(200);
  } else {
    const { partSize, partCount } = created.transfer;
    const { parts } = await ok('POST', `/api/v2/tables/imports/${created.session.id}/parts?workspaceId=${ws}`, { partNumbers: Array.from({ length: partCount }, (_, i) => i + 1) }, { 'upload-token': token });
    for (const p of parts) {
      const put = await fetch(p.url, { method: 'PUT', headers: p.headers, body: bytes.subarray((p.partNumber - 1) * partSize, p.partNumber * partSize) });
      expect(put.status).toBe(200);
    }
  }
  await ok('POST', `/api/v2/tables/imports/${created.session.id}/complete?workspaceId=${ws}`, undefined, { 'upload-token': token });
  return waitImport(created.session.id);
}

async function waitImport(id: string) {
  return waitUntil(`import ${id} to end`, async () => {
    const imp = await ok('GET', `/api/v2/tables/imports/${id}?workspaceId=${ws}`);
    return imp.status !== 'processing' && imp.status !== 'uploading' ? imp : null;
  });
}

const rows = async (tableId: string) => (await ok('POST', `/api/v2/tables/${tableId}/query`, { workspaceId: ws, limit: 0 })).map((r: any) => r.data);

describe('imports', () => {
  it('imports a new table: sniffed delimiter, BOM, CRLF, quotes, inferred types, rejected rows', async () => {
    const filler = Array.from({ length: 100 }, (_, i) => `P${i};${i};false;2024-02-01;`).join('\r\n');
    const csv = `\ufeffName;Age;Active;Joined;Note\r\n"Lovelace; Ada";36;true;2024-01-02;"said ""hi""\r\nthen left"\r\nBob;9;false;2023-05-06;\r\n${filler}\r\nEve;old;true;2024-01-01;x\r\nShort;1\r\n`;
    const imp = await importCsv(csv, { type: 'new', name: 'people', folderPath: '/Imports' });
    expect(imp).toMatchObject({ status: 'completed', rowsProcessed: 104, rowsRejected: 2, cellsRejected: 1 });
    expect(imp.rejectedSamples.map((r: any) => r.code)).toEqual(['INVALID_VALUE', 'FIELD_COUNT']);
    expect(imp.rejectedSamples[0].line).toBe(105);
    const t = await ok('GET', `/api/v2/tables/${imp.tableId}?workspaceId=${ws}`);
    expect(t).toMatchObject({ name: 'people', folderPath: '/Imports', rowCount: 102 });
    expect(t.schema.columns.map((c: any) => [c.name, c.type])).toEqual([['Name', 'string'], ['Age', 'number'], ['Active', 'boolean'], ['Joined', 'date'], ['Note', 'string']]);
    // Per-column indexes of an imported table are built on first use.
    const fields: any[] = [{ kind: 'column', column: t.schema.columns[1] }, { kind: 'system', name: 'createdAt' }];
    expect(await s.services.store.tableRows.missingIndexes(imp.tableId, fields)).toHaveLength(2);
    await ok('POST', `/api/v2/tables/${imp.tableId}/query`, { workspaceId: ws, predicate: { field: 'Age', op: 'gt', value: 1 }, sort: [{ field: 'createdAt', direction: 'desc' }] });
    await waitUntil('the indexes to be built', async () => (await s.services.store.tableRows.missingIndexes(imp.tableId, fields)).length === 0);
    expect((await rows(imp.tableId)).slice(0, 2)).toEqual([
      { Name: 'Lovelace; Ada', Age: 36, Active: true, Joined: '2024-01-02T00:00:00.000Z', Note: 'said "hi"\r\nthen left' },
      { Name: 'Bob', Age: 9, Active: false, Joined: '2023-05-06T00:00:00.000Z', Note: null },
    ]);
  });

  it('uploads in parts, appends and replaces with a mapping and new columns, with TSV', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'stock', schema: { columns: [{ name: 'sku', type: 'string', unique: true }, { name: 'qty', type: 'number' }] } });
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: [{ sku: 'KEEP', qty: 1 }] });
    const lines = ['Code\tCount\tColour\tIgnored'];
    for (let i = 0; i < 6000; i++) lines.push(`S${i}\t${i}\tred\tz`);
    lines.push('KEEP\t5\tblue\tz');
    const big = lines.join('\n') + '\n';
    expect(big.length).toBeGreaterThan(64 * 1024);
    const appended = await importCsv(big, { type: 'existing', tableId: t.id, mode: 'append' }, { mapping: { Code: 'sku', Count: 'qty', Ignored: null }, createColumns: ['Colour'] });
    expect(appended).toMatchObject({ status: 'completed', rowsProcessed: 6001, rowsRejected: 1, rejectedSamples: [{ code: 'UNIQUE' }] });
    const after = await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`);
    expect(after.rowCount).toBe(6001);
    expect(after.schema.columns.map((c: any) => c.name)).toEqual(['sku', 'qty', 'Colour']);
    const page = await ok('POST', `/api/v2/tables/${t.id}/query`, { workspaceId: ws, limit: 2 });
    expect(page.map((r: any) => r.data)).toEqual([{ sku: 'KEEP', qty: 1, Colour: null }, { sku: 'S0', qty: 0, Colour: 'red' }]);

    const replaced = await importCsv('sku,qty\nX,1\nY,2\n', { type: 'existing', tableId: t.id, mode: 'replace' });
    expect(replaced.status).toBe('completed');
    expect((await rows(t.id)).map((r: any) => r.sku)).toEqual(['X', 'Y']);
  });

  it('imports a workspace file without an upload', async () => {
    const file = await ok('POST', '/api/v2/files', { workspaceId: ws, name: 'cities.csv', content: 'city|pop\nOslo|700000\nBergen|285000\n' });
    const created = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'workspace_file', fileId: file.id }, target: { type: 'new', name: 'cities' } });
    expect(created.uploadToken).toBeNull();
    expect(created.transfer).toBeNull();
    const imp = await waitImport(created.session.id);
    expect(imp.status).toBe('completed');
    expect(await rows(imp.tableId)).toEqual([{ city: 'Oslo', pop: 700000 }, { city: 'Bergen', pop: 285000 }]);
  });

  it('fails a malformed CSV whole, and refuses wrong tokens, missing bytes and a second completion', async () => {
    const bad = await importCsv('a,b\n1,2\n3,"unclosed\n', { type: 'new', name: 'broken' });
    expect(bad.status).toBe('failed');
    expect(bad.error).toMatch(/not valid CSV/);
    expect((await s.call('GET', `/api/v2/tables?workspaceId=${ws}&search=broken`)).body.data).toEqual([]);

    const created = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'x.csv', contentType: 'text/csv', size: 10 }, target: { type: 'new', name: 'never' } });
    const id = created.session.id;
    const complete = (token: string) => s.request(`/api/v2/tables/imports/${id}/complete?workspaceId=${ws}`, { method: 'POST', headers: { 'upload-token': token } });
    expect((await complete('nonsense')).status).toBe(403);
    const other = await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'y.csv', contentType: 'text/csv', size: 10 }, target: { type: 'new', name: 'never2' } });
    expect((await complete(other.uploadToken)).status).toBe(403);
    const missing = await complete(created.uploadToken);
    expect(missing.status).toBe(409);
    expect(((await missing.json()) as any).error.details.code).toBe('UPLOAD_INCOMPLETE');
    expect((await s.request(`/api/v2/tables/imports/imp_nope/complete?workspaceId=${ws}`, { method: 'POST', headers: { 'upload-token': created.uploadToken } })).status).toBe(404);
    expect((await s.request(`/api/v2/tables/imports/${id}?workspaceId=${ws}`, { method: 'DELETE' })).status).toBe(200);
    expect((await complete(created.uploadToken)).status).toBe(409);

    expect((await s.call('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'x.csv', contentType: 'text/csv', size: 10 }, target: { type: 'new', name: 'n' }, mapping: { a: 'b' } })).status).toBe(400);
    expect((await s.call('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'x.csv', contentType: 'text/csv', size: 10 }, target: { type: 'new', name: 'n' }, timezone: 'Mars/Base' })).status).toBe(400);
    expect((await s.call('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'workspace_file', fileId: 'wf_missing' }, target: { type: 'new', name: 'n' } })).status).toBe(404);
  });

  it('refuses an import into an insert-locked table (423)', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'locked_target', schema: { columns: [{ name: 'a', type: 'string' }] } });
    await s.services.store.transaction((tx) => tx.userTables.setLocks(t.id, { schemaLocked: false, insertLocked: true, updateLocked: false, deleteLocked: false }, new Date().toISOString()));
    const r = await s.call('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'upload', name: 'x.csv', contentType: 'text/csv', size: 4 }, target: { type: 'existing', tableId: t.id, mode: 'append' } });
    expect(r.status).toBe(423);
    expect(r.body.error.details.lock).toBe('insert');
  });

  it('through the CLI, which uploads and polls', async () => {
    const file = path.join(dir, 'scores.csv');
    fs.writeFileSync(file, 'player,score\nann,3\nbo,5\n');
    const r = await runCli(['--output', 'json', 'tables', 'import', file, '--name', 'scores'], { endpoint: s.url, apiKey: s.key, workspace: ws });
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(JSON.stringify(r.json)).toContain('completed');
    const list = (await s.call('GET', `/api/v2/tables?workspaceId=${ws}&search=scores`)).body.data;
    expect(list[0].rowCount).toBe(2);
  });
});

describe('a process dying mid-import', () => {
  it('leaves nothing visible, and the next poll of any process reports the import failed once its lease ran out', async () => {
    const p = await startTestServer({ TABLES_LIMIT_FREE: '10' });
    const dataDir = p.dataDir;
    // A processing import whose staging rows were written, as a crash would leave it: leased by a process that is gone.
    const { TableJobRunner } = await import('../src/tables/jobs.ts');
    const store = p.services.store;
    const now = new Date().toISOString();
    await store.transaction(async (tx) => {
      await tx.tableImports.insert({
        id: 'imp_crash', workspaceId: p.workspaceId, userId: p.userId, uploadId: null, source: { type: 'workspace_file', fileId: 'wf_x' }, target: { type: 'new', name: 'half' },
        options: {}, status: 'processing', tableId: null, stagingId: 'tbl_' + 'ab'.repeat(16), rowsProcessed: 5000, rowsRejected: 0, cellsRejected: 0, rejectedSamples: [], error: null,
        expiresAt: now, createdAt: now, updatedAt: now, completedAt: null,
      });
      await tx.tableImports.claim('imp_crash', 'a-dead-process', new Date(Date.now() - 1000).toISOString());
      await tx.tableRows.createTable('tbl_' + 'ab'.repeat(16), [], { indexes: false });
    });
    // Another process's poll (the server's own poll may come first: either reclaims it once).
    await new TableJobRunner({ store, blobs: p.services.blobs, config: p.services.config, logger: p.services.logger }).reclaimExpired();
    const imp = await waitUntil('the import to be failed', async () =>
      ((i) => (i.status === 'processing' ? null : i))((await p.call('GET', `/api/v2/tables/imports/imp_crash?workspaceId=${p.workspaceId}`)).body.data),
    );
    expect(imp.status).toBe('failed');
    expect(imp.error).toMatch(/restart/);
    expect(await store.tableRows.tableExists('tbl_' + 'ab'.repeat(16))).toBe(false);
    expect((await p.call('GET', `/api/v2/tables?workspaceId=${p.workspaceId}`)).body.data).toEqual([]);
    await p.stop();
    void dataDir;
  });
});

describe('exports', () => {
  it('exports CSV and JSON within the request and serves them through a signed link', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'export_me', schema: { columns: [{ name: 'name', type: 'string' }, { name: 'n', type: 'number' }, { name: 'tag', type: 'select', options: [{ id: 'o1', name: 'Blue' }] }] } });
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: [{ name: 'a, "quoted"', n: 1, tag: 'Blue' }, { name: 'line\nbreak', n: null }] });
    const csv = await ok('POST', `/api/v2/tables/${t.id}/exports`, { workspaceId: ws, format: 'csv' });
    expect(csv).toMatchObject({ status: 'completed', rowsProcessed: 2, format: 'csv' });
    const link = await ok('GET', `/api/v2/tables/${t.id}/exports/${csv.id}/download?workspaceId=${ws}`);
    expect(link.fileName).toBe('export_me.csv');
    const body = await (await fetch(link.url)).text();
    expect(body).toBe('name,n,tag\n"a, ""quoted""",1,Blue\n"line\nbreak",,\n');
    expect((await fetch(link.url.replace(/signature=[^&]+/, 'signature=bad'))).status).toBe(403);

    const json = await ok('POST', `/api/v2/tables/${t.id}/exports`, { workspaceId: ws, format: 'json' });
    const jl = await ok('GET', `/api/v2/tables/${t.id}/exports/${json.id}/download?workspaceId=${ws}`);
    const parsed = JSON.parse(await (await fetch(jl.url)).text());
    expect(parsed.map((r: any) => r.name)).toEqual(['a, "quoted"', 'line\nbreak']);
    expect(await ok('GET', `/api/v2/tables/${t.id}/exports/${json.id}?workspaceId=${ws}`)).toMatchObject({ status: 'completed' });
    expect((await s.call('DELETE', `/api/v2/tables/${t.id}/exports/${json.id}?workspaceId=${ws}`)).status).toBe(409);

    const cli = await runCli(['--output', 'json', 'tables', 'exports', 'create', t.id, '--format', 'csv'], { endpoint: s.url, apiKey: s.key, workspace: ws });
    expect(cli.code).toBe(0);
    expect(cli.json).toMatchObject({ status: 'completed' });
    const got = await runCli(['--output', 'json', 'tables', 'exports', 'get', t.id, cli.json.id], { endpoint: s.url, apiKey: s.key, workspace: ws });
    expect(got.json).toMatchObject({ id: cli.json.id });
    const dl = await runCli(['--output', 'json', 'tables', 'exports', 'download', t.id, cli.json.id], { endpoint: s.url, apiKey: s.key, workspace: ws });
    expect(dl.code).toBe(0);
    expect(await (await fetch(dl.json.url)).text()).toContain('name,n,tag');
  });

  it('writes a date column as dates in CSV (a time only where there is one), which import reads back unchanged', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'dated', schema: { columns: [{ name: 'label', type: 'string' }, { name: 'day', type: 'date' }] } });
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: [{ label: 'plain', day: '2021-10-25' }, { label: 'timed', day: '2021-10-25T13:45:30.500Z' }, { label: 'none', day: null }] });
    const before = await rows(t.id);
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const made = await runCli(['--output', 'json', 'tables', 'exports', 'create', t.id, '--format', 'csv'], env);
    expect(made.json, made.stderr).toMatchObject({ status: 'completed' });
    const dl = await runCli(['--output', 'json', 'tables', 'exports', 'download', t.id, made.json.id], env);
    const csv = await (await fetch(dl.json.url)).text();
    expect(csv).toBe('label,day\nplain,2021-10-25\ntimed,2021-10-25T13:45:30.500Z\nnone,\n');

    const fresh = await importCsv(csv, { type: 'new', name: 'dated_again' });
    expect(fresh).toMatchObject({ status: 'completed', rowsProcessed: 3, rowsRejected: 0 });
    const again = await ok('GET', `/api/v2/tables/${fresh.tableId}?workspaceId=${ws}`);
    expect(again.schema.columns.map((c: any) => [c.name, c.type])).toEqual([['label', 'string'], ['day', 'date']]);
    expect(await rows(fresh.tableId)).toEqual(before);
    const appended = await importCsv(csv, { type: 'existing', tableId: t.id, mode: 'append' });
    expect(appended).toMatchObject({ status: 'completed', rowsRejected: 0, cellsRejected: 0 });
    expect(await rows(t.id)).toEqual([...before, ...before]);
  });

  it('queues the export of a table over 10,000 rows, which can be cancelled while queued or running', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'big_export', schema: { columns: [{ name: 'n', type: 'number' }] } });
    for (let b = 0; b < 11; b++) await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: Array.from({ length: 1000 }, (_, i) => ({ n: b * 1000 + i })) });
    const e = await ok('POST', `/api/v2/tables/${t.id}/exports`, { workspaceId: ws, format: 'csv' });
    expect(e.status).toBe('queued');
    expect((await s.call('GET', `/api/v2/tables/${t.id}/exports/${e.id}/download?workspaceId=${ws}`)).status).toBe(409);
    const done = await waitUntil('the export to end', async () => ((x) => (x.status === 'queued' || x.status === 'processing' ? null : x))(await ok('GET', `/api/v2/tables/${t.id}/exports/${e.id}?workspaceId=${ws}`)));
    expect(done).toMatchObject({ status: 'completed', rowsProcessed: 11000 });
    const link = await ok('GET', `/api/v2/tables/${t.id}/exports/${e.id}/download?workspaceId=${ws}`);
    const text = await (await fetch(link.url)).text();
    expect(text.split('\n').length).toBe(11002);
    const second = await ok('POST', `/api/v2/tables/${t.id}/exports`, { workspaceId: ws, format: 'json' });
    const cancelled = await s.call('DELETE', `/api/v2/tables/${t.id}/exports/${second.id}?workspaceId=${ws}`);
    if (cancelled.status === 200) expect(cancelled.body.data.status).toBe('canceled');
    else expect(cancelled.status).toBe(409); // it finished first
  });
});

describe('the import worker', () => {
  /** A CSV of `n` rows `k<i>,<i>` under the header `k,n`. */
  const numbered = (n: number, extra: string[] = []) => ['k,n', ...Array.from({ length: n }, (_, i) => `k${i},${i}`), ...extra].join('\n') + '\n';

  it('checks unique values against earlier batches, the same batch and the target, naming each line', async () => {
    const t = await ok('POST', '/api/v2/tables', { workspaceId: ws, name: 'uniq_batches', schema: { columns: [{ name: 'k', type: 'string', unique: true }, { name: 'n', type: 'number' }] } });
    await ok('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws, rows: [{ k: 'present', n: 0 }] });
    // 1,200 rows span three staging batches; then a repeat of row 3 (an earlier batch), a row twice in a row
    // (the same batch) and a value the table already holds.
    const csv = numbered(1200, ['k3,99', 'twin,1', 'twin,2', 'present,5']);
    const imp = await importCsv(csv, { type: 'existing', tableId: t.id, mode: 'append' });
    expect(imp).toMatchObject({ status: 'completed', rowsProcessed: 1204, rowsRejected: 3 });
    expect(imp.rejectedSamples.map((r: any) => [r.line, r.code])).toEqual([[1202, 'UNIQUE'], [1204, 'UNIQUE'], [1205, 'UNIQUE']]);
    expect((await ok('GET', `/api/v2/tables/${t.id}?workspaceId=${ws}`)).rowCount).toBe(1202);
  });

  it('reads long records and many short ones within its memory cap', async () => {
    // 40 rows of ~300 KB (wider than a batch's text bound) and, separately, 300,000 tiny rows (read in 1 MB
    // chunks, each tens of thousands of records: the worker hands them to the parser in small slices).
    const wide = ['id,blob', ...Array.from({ length: 40 }, (_, i) => `${i},${String.fromCharCode(97 + (i % 26)).repeat(300_000)}`)].join('\n') + '\n';
    const a = await importCsv(wide, { type: 'new', name: 'wide_rows' });
    expect(a).toMatchObject({ status: 'completed', rowsProcessed: 40, rowsRejected: 0 });
    const b = await waitImport(await startImport(numbered(300_000), { type: 'new', name: 'tiny_rows' }));
    expect(b).toMatchObject({ status: 'completed', rowsProcessed: 300_000, rowsRejected: 0 });
    expect((await ok('GET', `/api/v2/tables/${b.tableId}?workspaceId=${ws}`)).rowCount).toBe(300_000);
  });

  it('a canceled import stops its worker and leaves nothing staged', async () => {
    const imp = await startImport(numbered(600_000), { type: 'new', name: 'to_cancel' });
    await waitFor(async () => {
      const now = await ok('GET', `/api/v2/tables/imports/${imp}?workspaceId=${ws}`);
      if (now.status !== 'processing') throw new Error(`the import ended before it could be canceled: ${JSON.stringify(now)}`);
      return now.rowsProcessed > 0;
    });
    const stagingId = (await s.services.store.tableImports.get(imp))!.stagingId!;
    expect((await s.call('DELETE', `/api/v2/tables/imports/${imp}?workspaceId=${ws}`)).status).toBe(200);
    await waitFor(async () => !(await s.services.store.tableRows.tableExists(stagingId)));
    const after = await ok('GET', `/api/v2/tables/imports/${imp}?workspaceId=${ws}`);
    expect(after.status).toBe('canceled');
    expect((await s.call('GET', `/api/v2/tables?workspaceId=${ws}&search=to_cancel`)).body.data).toEqual([]);
  });

  it('a server shutting down mid-import stops the worker between batches and reports the import failed', async () => {
    const p = await startTestServer({ TABLES_LIMIT_FREE: '10', RATE_LIMIT_FREE_API: '100000' });
    const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const r = await p.request(url, { method, headers: { ...headers, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await r.text();
      if (r.status >= 300) throw new Error(`${method} ${url} → ${r.status} ${text}`);
      return JSON.parse(text).data;
    };
    const bytes = Buffer.from(numbered(1_000_000));
    const created = await call('POST', '/api/v2/tables/imports', { workspaceId: p.workspaceId, source: { type: 'upload', name: 'big.csv', contentType: 'text/csv', size: bytes.length }, target: { type: 'new', name: 'interrupted' } });
    expect(created.transfer.method).toBe('put');
    expect((await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: bytes })).status).toBe(200);
    await call('POST', `/api/v2/tables/imports/${created.session.id}/complete?workspaceId=${p.workspaceId}`, undefined, { 'upload-token': created.uploadToken });
    const id = created.session.id;
    await waitFor(async () => (await call('GET', `/api/v2/tables/imports/${id}?workspaceId=${p.workspaceId}`)).rowsProcessed > 0);
    // What a shutdown does first: the table jobs stop, while the store stays open to record how they ended.
    const started = Date.now();
    await p.services.tableJobs.close();
    expect(Date.now() - started).toBeLessThan(5000);
    const imp = (await p.services.store.tableImports.get(id))!;
    expect(imp.status).toBe('failed');
    expect(imp.error).toMatch(/shutting down/);
    expect(imp.rowsProcessed).toBeLessThan(1_000_000);
    expect(await p.services.store.tableRows.tableExists(imp.stagingId!)).toBe(false);
    await p.stop();
  });
});

/** Creates and completes an import of `csv` (one PUT) without waiting for it; its id. */
async function startImport(csv: string, target: unknown): Promise<string> {
  const bytes = Buffer.from(csv);
  const file = await ok('POST', '/api/v2/files', { workspaceId: ws, name: `rows-${Date.now()}-${Math.random().toString(36).slice(2)}.csv`, content: bytes.toString('utf8') });
  return (await ok('POST', '/api/v2/tables/imports', { workspaceId: ws, source: { type: 'workspace_file', fileId: file.id }, target })).session.id;
}

const waitFor = (check: () => Promise<boolean>) => waitUntil('the condition', check);

describe('export retention', () => {
  it('deletes an ended export and its file once the retention is over; links never outlive it', async () => {
    const p = await startTestServer({ TABLE_EXPORT_RETENTION_SECONDS: '1' });
    // The server runs in this process: its clock (Date only; the sweep's timer stays real) stands still until the
    // test moves it past the retention, so a busy machine cannot expire the export before it has been looked at.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const call = async (method: string, url: string, body?: unknown) => {
        const r = await p.call(method, url, body);
        if (r.status >= 300) throw new Error(`${method} ${url} → ${r.status} ${r.text}`);
        return r.body.data;
      };
      const ws2 = p.workspaceId;
      const t = await call('POST', '/api/v2/tables', { workspaceId: ws2, name: 'short_lived', schema: { columns: [{ name: 'a', type: 'string' }] } });
      await call('POST', `/api/v2/tables/${t.id}/rows`, { workspaceId: ws2, rows: [{ a: 'x' }] });
      const e = await call('POST', `/api/v2/tables/${t.id}/exports`, { workspaceId: ws2, format: 'csv' });
      expect(e.status).toBe('completed');
      const link = await call('GET', `/api/v2/tables/${t.id}/exports/${e.id}/download?workspaceId=${ws2}`);
      expect(Date.parse(link.expiresAt)).toBeLessThanOrEqual(Date.parse(e.completedAt ?? new Date().toISOString()) + 1000);
      const file = p.services.tableJobs.exportPath(e.id, 'csv');
      expect(fs.existsSync(file)).toBe(true);
      vi.setSystemTime(Date.now() + 1001);
      await waitFor(async () => (await p.call('GET', `/api/v2/tables/${t.id}/exports/${e.id}?workspaceId=${ws2}`)).status === 404);
      expect(fs.existsSync(file)).toBe(false);
      expect((await p.call('GET', `/api/v2/tables/${t.id}/exports/${e.id}/download?workspaceId=${ws2}`)).status).toBe(404);
      expect((await fetch(link.url)).status).toBeGreaterThanOrEqual(403);
    } finally {
      vi.useRealTimers();
      await p.stop();
    }
  });
});

// Issue 9: tables. A server process on loopback; everything through HTTP as a client would send it.
// - Query on a 100,000-row table: an indexed equality filter plus a sort, first page of 100 (target p50 < 20 ms),
//   and an unindexed `contains` filter; both against the same SQL run directly on the database file.
// - CSV import of 1,000,000 rows (5 columns) through the real upload path (parts, complete, poll): rows/s
//   (target ≥ 100,000) and the server's resident-memory growth (target < 100 MB).
// - 20 concurrent upserts on one key: exactly one row.
// - Export of the 1,000,000 rows to CSV: rows/s and memory growth.
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { figure, fmt, median, percentile, root, startProcess, tempDir } from '../lib.ts';
import { TableRowsRepository } from '../../src/store/table-rows.ts';
import { parsePredicate, parseSort } from '../../src/tables/predicate.ts';
import type { Column } from '../../src/tables/columns.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';
const MB = 1024 * 1024;
const STATUSES = ['active', 'blocked', 'pending', 'trial', 'churned'];
const CITIES = ['Oslo', 'Bergen', 'Trondheim', 'Stavanger', 'Tromsø', 'Lisbon', 'Porto', 'Madrid', 'Valencia', 'Rome'];

/** Resident memory, and its anonymous part (heap and stacks, without file pages such as the mapped database). */
function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}
function anonOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/RssAnon:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

function writeCsv(file: string, rows: number): number {
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, 'email,status,score,city,joined\n');
  let chunk = '';
  for (let i = 0; i < rows; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0');
    chunk += `user${i}@example.com,${STATUSES[i % 5]},${(i * 7919) % 100000},${CITIES[i % 10]}-${i % 997},2024-03-${day}\n`;
    if (chunk.length > MB) {
      fs.writeSync(fd, chunk);
      chunk = '';
    }
  }
  fs.writeSync(fd, chunk);
  fs.closeSync(fd);
  return fs.statSync(file).size;
}

export async function tables(options: { rounds: number }): Promise<void> {
  const work = tempDir('owa-bench-tables-');
  const dataDir = path.join(work, 'data');
  const server = await startProcess(path.join(root, 'bin', 'start.js'), {
    DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', FILE_PURGE_INTERVAL_SECONDS: '0', UPLOAD_PART_SIZE: '8mb',
    TABLE_ROWS_LIMIT_FREE: '2000000', TABLES_LIMIT_FREE: '100', RATE_LIMIT_FREE_API: '1000000',
  });
  const pid = server.child.pid!;
  const api = async (p: string, init: RequestInit = {}) => {
    const r = await fetch(server.url + p, { ...init, headers: { 'X-API-Key': KEY, 'content-type': 'application/json', ...(init.headers as object) } });
    const body = (await r.json()) as any;
    if (!r.ok) throw new Error(`${init.method ?? 'GET'} ${p}: ${r.status} ${JSON.stringify(body)}`);
    return body.data;
  };
  try {
    const workspaceId = (await api('/api/v2/workspaces'))[0].id as string;

    const importFile = async (file: string, name: string) => {
      const size = fs.statSync(file).size;
      const created = await api('/api/v2/tables/imports', { method: 'POST', body: JSON.stringify({ workspaceId, source: { type: 'upload', name: `${name}.csv`, contentType: 'text/csv', size }, target: { type: 'new', name } }) });
      const token = created.uploadToken as string;
      const id = created.session.id as string;
      const partSize = created.transfer.method === 'put' ? size : created.transfer.partSize;
      const urls = created.transfer.method === 'put'
        ? [{ partNumber: 1, url: created.transfer.url, headers: created.transfer.headers }]
        : (await api(`/api/v2/tables/imports/${id}/parts?workspaceId=${workspaceId}`, { method: 'POST', headers: { 'upload-token': token }, body: JSON.stringify({ partNumbers: Array.from({ length: created.transfer.partCount }, (_, i) => i + 1) }) })).parts;
      for (const p of urls) {
        const start = (p.partNumber - 1) * partSize;
        const body = fs.readFileSync(file).subarray(start, Math.min(start + partSize, size));
        const r = await fetch(p.url, { method: 'PUT', headers: p.headers, body });
        if (r.status !== 200) throw new Error(`part ${p.partNumber}: ${r.status}`);
      }
      await api(`/api/v2/tables/imports/${id}/complete?workspaceId=${workspaceId}`, { method: 'POST', headers: { 'upload-token': token } });
      for (;;) {
        const imp = await api(`/api/v2/tables/imports/${id}?workspaceId=${workspaceId}`);
        if (imp.status === 'completed') return imp;
        if (imp.status !== 'processing') throw new Error(`import ${imp.status}: ${imp.error}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    // ── query on 100,000 rows
    const small = path.join(work, 'small.csv');
    writeCsv(small, 100_000);
    const smallImport = await importFile(small, 'customers');
    const table = await api(`/api/v2/tables/${smallImport.tableId}?workspaceId=${workspaceId}`);
    const columns = table.schema.columns as Column[];
    const queries = {
      'indexed eq + sort, page of 100': { predicate: { field: 'status', op: 'eq', value: 'trial' }, sort: [{ field: 'score', direction: 'desc' }], limit: 100 },
      'unindexed contains, page of 100': { predicate: { field: 'city', op: 'contains', value: 'bergen-9' }, limit: 100 },
    };
    const db = new DatabaseSync(path.join(dataDir, 'workspace.sqlite'), { readOnly: true });
    db.function('owa_fold', { deterministic: true }, (v) => (typeof v === 'string' ? v.toLowerCase() : v));
    // The baseline runs the SQL the server's store would run (same plan choice), straight on the file.
    const exec = {
      all: async (sql: string, p: unknown[] = []) => db.prepare(sql).all(...(p as never[])),
      get: async (sql: string, p: unknown[] = []) => db.prepare(sql).get(...(p as never[])),
      run: async () => ({ changes: 0 }),
    };
    const repo = new TableRowsRepository(exec as never);
    const sqlOf = async (q: { predicate: unknown; sort?: unknown[]; limit: number }) =>
      repo.querySql(table.id, await repo.plan(table.id, { where: parsePredicate(columns, q.predicate, []), sort: parseSort(columns, q.sort ?? [], []), limit: q.limit + 1 }));
    // First use builds the indexes of the columns a query reads (in the background); let that finish.
    for (const q of Object.values(queries)) await api(`/api/v2/tables/${table.id}/query`, { method: 'POST', body: JSON.stringify({ workspaceId, ...q }) });
    await new Promise((r) => setTimeout(r, 3000));
    console.log(`\ntables: query on a 100,000-row table (${options.rounds} rounds of 100 sequential requests; p50 per request)`);
    for (const [label, q] of Object.entries(queries)) {
      const http: number[] = [];
      const direct: number[] = [];
      const { sql, params } = await sqlOf(q);
      const stmt = db.prepare(sql);
      for (let round = 0; round < options.rounds; round++) {
        for (let i = 0; i < 100; i++) {
          let t = performance.now();
          await api(`/api/v2/tables/${table.id}/query`, { method: 'POST', body: JSON.stringify({ workspaceId, ...q }) });
          http.push(performance.now() - t);
          t = performance.now();
          stmt.all(...(params as never[]));
          direct.push(performance.now() - t);
        }
      }
      console.log(`  ${label.padEnd(34)} HTTP p50 ${fmt(median(http), 2).padStart(7)} ms  p99 ${fmt(percentile(http, 99), 2).padStart(7)} ms   same SQL direct p50 ${fmt(median(direct), 2).padStart(6)} ms`);
      figure('tables', `query p50: ${label}`, median(http), 'ms', 'lower');
    }
    db.close();

    // ── 20 concurrent upserts on one key
    const up = await api('/api/v2/tables', { method: 'POST', body: JSON.stringify({ workspaceId, name: 'upserts', schema: { columns: [{ name: 'k', type: 'string', unique: true }, { name: 'n', type: 'number' }] } }) });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api(`/api/v2/tables/${up.id}/rows/upsert`, { method: 'POST', body: JSON.stringify({ workspaceId, data: { k: 'same', n: i } }) })),
    );
    const count = (await api(`/api/v2/tables/${up.id}/query/count`, { method: 'POST', body: JSON.stringify({ workspaceId, predicate: { field: 'k', op: 'eq', value: 'same' } }) })).totalCount;
    console.log(`  20 concurrent upserts on one key: ${count} row(s) (target 1); ${results.filter((r) => r.operation === 'insert').length} insert, ${results.filter((r) => r.operation === 'update').length} updates`);

    // ── import of 1,000,000 rows, `rounds` times (each into a new table), growth measured from before each upload
    const big = path.join(work, 'big.csv');
    const bytes = writeCsv(big, 1_000_000);
    console.log(`\ntables: CSV import of 1,000,000 rows × 5 columns (${fmt(bytes / MB)} MB) through upload, complete and poll (${options.rounds} rounds)`);
    const rates: number[] = [];
    const growths: number[] = [];
    let bigImport: any;
    for (let round = 0; round < options.rounds; round++) {
      let peak = 0;
      let peakAnon = 0;
      const before = rssOf(pid);
      const beforeAnon = anonOf(pid);
      const sampler = setInterval(() => {
        peak = Math.max(peak, rssOf(pid));
        peakAnon = Math.max(peakAnon, anonOf(pid));
      }, 20);
      const t = performance.now();
      bigImport = await importFile(big, `events_${round}`);
      const importMs = performance.now() - t;
      clearInterval(sampler);
      rates.push(1_000_000 / (importMs / 1000));
      growths.push((peak - before) / MB);
      console.log(`  round ${round + 1}: ${fmt(1_000_000 / (importMs / 1000), 0)} rows/s (${fmt(importMs / 1000, 2)} s); server RSS before ${fmt(before / MB)} MB, growth ${fmt((peak - before) / MB)} MB (anonymous ${fmt((peakAnon - beforeAnon) / MB)} MB)`);
      if (bigImport.rowsRejected !== 0) console.log(`  (rejected ${bigImport.rowsRejected} rows!)`);
    }
    console.log(`  median ${fmt(median(rates), 0)} rows/s (target ≥ 100,000); median RSS growth ${fmt(median(growths))} MB (target < 100 MB)`);
    figure('tables', 'CSV import', median(rates), 'rows/s', 'higher');
    figure('tables', 'CSV import RSS growth', median(growths), 'MB', 'lower');

    // ── export of 1,000,000 rows
    const beforeExport = rssOf(pid);
    const beforeExportAnon = anonOf(pid);
    let peak = beforeExport;
    let peakAnon = beforeExportAnon;
    const sampler2 = setInterval(() => {
      peak = Math.max(peak, rssOf(pid));
      peakAnon = Math.max(peakAnon, anonOf(pid));
    }, 20);
    const t = performance.now();
    const exp = await api(`/api/v2/tables/${bigImport.tableId}/exports`, { method: 'POST', body: JSON.stringify({ workspaceId, format: 'csv' }) });
    for (;;) {
      const e = await api(`/api/v2/tables/${bigImport.tableId}/exports/${exp.id}?workspaceId=${workspaceId}`);
      if (e.status === 'completed') break;
      if (e.status === 'failed' || e.status === 'canceled') throw new Error(`export ${e.status}: ${e.error}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const exportMs = performance.now() - t;
    clearInterval(sampler2);
    console.log(`tables: CSV export of 1,000,000 rows: ${fmt(1_000_000 / (exportMs / 1000), 0)} rows/s (${fmt(exportMs / 1000, 2)} s); server RSS growth ${fmt((peak - beforeExport) / MB)} MB, anonymous (heap) growth ${fmt((peakAnon - beforeExportAnon) / MB)} MB`);
    figure('tables', 'CSV export', 1_000_000 / (exportMs / 1000), 'rows/s', 'higher');
  } finally {
    await server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

// The semantic editing endpoint (POST /api/v2/workflows/{id}/operations) against the whole-state replace it
// spares clients from: one small edit of a 200-block workflow, and a batch that builds 200 connected blocks
// (with targeted layout) from scratch. Baselines from the same run: GET and PUT of the same 200-block state.
import fs from 'node:fs';
import path from 'node:path';
import { figure, fmt, median, root, startProcess, tempDir } from '../lib.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { bootstrapIfEmpty } from '../../src/identity/admin.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';
const BLOCKS = 200;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function call(url: string, method = 'GET', body?: unknown): Promise<{ ms: number; data: any }> {
  const t = performance.now();
  const res = await fetch(url, { method, headers: { 'X-API-Key': KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const ms = performance.now() - t;
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return { ms, data: text ? JSON.parse(text).data : undefined };
}

/** Operations that add `n` function blocks, each connected from the one before (the first from the start block). */
function chainOfAdds(startId: string, n: number) {
  const operations: unknown[] = [];
  for (let i = 0; i < n; i++) {
    operations.push({
      operation_type: 'add',
      block_id: `fn-${i}`,
      params: { type: 'function', name: `Fn ${i}`, inputs: { code: `return ${i}` }, connections: i + 1 < n ? { success: `fn-${i + 1}` } : undefined },
    });
  }
  operations.push({ operation_type: 'edit', block_id: startId, params: { connections: { success: 'fn-0' } } });
  return JSON.parse(JSON.stringify(operations));
}

const line = (label: string, xs: number[], base?: number) =>
  `  ${label.padEnd(46)} p50 ${fmt(median(xs), 2)} ms   p99 ${fmt(percentile(xs, 99), 2)} ms${base ? `   ×${fmt(median(xs) / base, 2)} baseline` : ''}`;

export async function workflowOperations(options: { seconds: number; rounds: number }): Promise<void> {
  const dataDir = tempDir('owa-bench-ops-');
  const store = await openSqliteStore(path.join(dataDir, 'workspace.sqlite'));
  const ws = (await bootstrapIfEmpty(store, { apiKey: KEY }))!.workspace.id;
  await store.close();
  const server = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, NODE_ENV: 'production' });
  const api = `${server.url}/api/v2`;
  try {
    const rounds = Math.max(1, options.rounds);
    // A 200-block workflow built by the endpoint itself.
    const big = (await call(`${api}/workflows`, 'POST', { workspaceId: ws, name: 'Big' })).data;
    const built = await call(`${api}/workflows/${big.id}/operations`, 'POST', { operations: chainOfAdds(big.blocks[0].id, BLOCKS - 1) });
    const state = (await call(`${api}/workflows/${big.id}/state`)).data;
    const firstFn = built.data.mintedBlockIds['fn-0'];
    const replaceBody = { blocks: state.blocks, edges: state.edges };

    const reads: number[] = [];
    const replaces: number[] = [];
    const edits: number[] = [];
    const editDryRuns: number[] = [];
    const n = 30 * rounds;
    for (let i = 0; i < n; i++) {
      reads.push((await call(`${api}/workflows/${big.id}/state`)).ms);
      replaces.push((await call(`${api}/workflows/${big.id}/state`, 'PUT', replaceBody)).ms);
      const edit = { operations: [{ operation_type: 'edit', block_id: firstFn, params: { inputs: { code: `return ${i}` } } }] };
      editDryRuns.push((await call(`${api}/workflows/${big.id}/operations?dryRun=true`, 'POST', edit)).ms);
      edits.push((await call(`${api}/workflows/${big.id}/operations`, 'POST', edit)).ms);
    }
    console.log(`\nworkflow operations: one edit of a ${BLOCKS}-block workflow (${n} sequential calls each)`);
    const base = median(reads);
    console.log(line('baseline GET state', reads));
    console.log(line('PUT state (whole graph, committed)', replaces, base));
    console.log(line('POST operations: 1 edit (dryRun)', editDryRuns, base));
    console.log(line('POST operations: 1 edit (committed)', edits, base));
    figure('workflow-operations', 'one edit p50', median(edits), 'ms', 'lower');
    figure('workflow-operations', 'whole-graph PUT p50', median(replaces), 'ms', 'lower');

    const builds: number[] = [];
    const buildsNoLayout: number[] = [];
    for (let i = 0; i < 5 * rounds; i++) {
      for (const [layout, into] of [['targeted', builds], ['none', buildsNoLayout]] as const) {
        const w = (await call(`${api}/workflows`, 'POST', { workspaceId: ws, name: `Build ${layout} ${i}` })).data;
        into.push((await call(`${api}/workflows/${w.id}/operations`, 'POST', { operations: chainOfAdds(w.blocks[0].id, BLOCKS - 1), layout })).ms);
      }
    }
    console.log(`\nworkflow operations: build ${BLOCKS - 1} connected blocks in one batch (${builds.length} fresh workflows each)`);
    console.log(line('POST operations, layout none', buildsNoLayout, base));
    console.log(line('POST operations, layout targeted', builds, base));
    figure('workflow-operations', 'batch build p50 (targeted layout)', median(builds), 'ms', 'lower');
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// Issue 4: listing a workspace of 10,000 workflows in 500 folders, page by page, with each sort; and replacing
// the draft state of a 200-block workflow. Baselines from the same run: GET /api/v2/workspaces (the cheapest
// authenticated, validated read) for pages, and GET of the same 200-block state for the replace.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { figure, fmt, median, root, startProcess, tempDir } from '../lib.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { bootstrapIfEmpty } from '../../src/identity/admin.ts';
import { seedState } from '../../src/workflows/state.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';
const WORKFLOWS = 10_000;
const FOLDERS = 500;
const SORTS = ['position', 'name', 'createdAt', 'updatedAt', 'runCount'] as const;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Seeds straight through the store: one transaction, no HTTP, so seeding is seconds rather than minutes. */
async function seed(dataDir: string): Promise<string> {
  const store = await openSqliteStore(path.join(dataDir, 'workspace.sqlite'));
  try {
    const boot = (await bootstrapIfEmpty(store, { apiKey: KEY }))!;
    const ws = boot.workspace.id;
    const base = Date.parse('2024-01-01T00:00:00.000Z');
    await store.transaction(async (tx) => {
      for (let f = 0; f < FOLDERS; f++) {
        const at = new Date(base + f * 1000).toISOString();
        await tx.workflowFolders.insert({ id: randomUUID(), workspaceId: ws, path: `/folder-${f}`, parentPath: '/', name: `folder-${f}`, locked: false, createdAt: at, updatedAt: at, archivedAt: null, archiveBatch: null });
      }
      for (let i = 0; i < WORKFLOWS; i++) {
        const at = new Date(base + i * 60_000).toISOString();
        const updated = new Date(base + ((i * 7919) % WORKFLOWS) * 60_000).toISOString();
        const { state } = seedState();
        await tx.workflows.insert({
          id: randomUUID(), workspaceId: ws, name: `${i % 3 === 0 ? 'Report' : 'sync'} ${(i * 104729) % WORKFLOWS}`, description: null,
          folderPath: `/folder-${i % FOLDERS}`, position: i + 1, archived: false, archivedAt: null, locked: false, isDeployed: i % 4 === 0,
          deployedAt: null, activeVersionId: null, isPublicApi: false, runCount: (i * 31) % 997, lastRunAt: null, state: JSON.stringify(state),
          stateSavedAt: at, createdBy: boot.user.id, createdAt: at, updatedAt: updated,
        });
      }
    });
    return ws;
  } finally {
    await store.close();
  }
}

async function timed(url: string, init: RequestInit = {}): Promise<{ ms: number; body: any }> {
  const t = performance.now();
  const res = await fetch(url, { ...init, headers: { 'X-API-Key': KEY, ...(init.headers ?? {}) } });
  const text = await res.text();
  const ms = performance.now() - t;
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return { ms, body: text ? JSON.parse(text) : undefined };
}

function stateOf200Blocks() {
  const { state } = seedState();
  const ids = Object.keys(state.blocks);
  for (let i = 0; i < 199; i++) {
    const id = randomUUID();
    state.blocks[id] = {
      id, type: 'function', name: `Fn ${i}`, position: { x: i * 10, y: 0 }, outputs: {}, enabled: true,
      subBlocks: { code: { id: 'code', type: 'code', value: `return <fn${i}.result> + ${i}` } },
    };
    state.edges.push({ id: randomUUID(), source: ids.at(-1)!, target: id });
    ids.push(id);
  }
  return { blocks: state.blocks, edges: state.edges };
}

export async function workflows(options: { seconds: number; rounds: number }): Promise<void> {
  const dataDir = tempDir('owa-bench-wf-');
  const seedStart = performance.now();
  const ws = await seed(dataDir);
  const seedMs = performance.now() - seedStart;
  const server = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, NODE_ENV: 'production' });
  try {
    const rounds = Math.max(1, options.rounds);
    const baseline: number[] = [];
    for (let i = 0; i < 200 * rounds; i++) baseline.push((await timed(`${server.url}/api/v2/workspaces`)).ms);
    const base50 = median(baseline.slice(50));
    console.log(`\nworkflows: list ${WORKFLOWS} workflows in ${FOLDERS} folders, 50 per page, every page (seeded in ${fmt(seedMs / 1000)} s)`);
    console.log(`  baseline GET /api/v2/workspaces         p50 ${fmt(base50, 2)} ms   p99 ${fmt(percentile(baseline.slice(50), 99), 2)} ms`);
    const scenarios: [string, string][] = [
      ...SORTS.map((s) => [`sortBy=${s}`, `sortBy=${s}`] as [string, string]),
      ['sortBy=name&sortOrder=desc', 'sortBy=name&sortOrder=desc'],
      ['folderPath=/folder-7 (position)', 'folderPath=%2Ffolder-7'],
      ['search=report (position)', 'search=report'],
    ];
    for (const [label, qs] of scenarios) {
      const pages: number[] = [];
      let total = 0;
      for (let r = 0; r < rounds; r++) {
        let cursor: string | null = null;
        total = 0;
        do {
          const { ms, body } = await timed(`${server.url}/api/v2/workflows?workspaceId=${ws}&limit=50&${qs}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          pages.push(ms);
          total += body.data.length;
          cursor = body.nextCursor;
        } while (cursor);
      }
      const p50 = median(pages);
      console.log(
        `  ${label.padEnd(38)} ${String(total).padStart(5)} rows ${String(pages.length / rounds).padStart(4)} pages   p50 ${fmt(p50, 2)} ms   p99 ${fmt(percentile(pages, 99), 2)} ms   p50 ×${fmt(p50 / base50, 2)} baseline`,
      );
      figure('workflows', `list page p50: ${label}`, p50, 'ms', 'lower');
    }

    const created = (await timed(`${server.url}/api/v2/workflows`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: ws, name: 'Big graph' }) })).body.data;
    const body = JSON.stringify(stateOf200Blocks());
    const stateUrl = `${server.url}/api/v2/workflows/${created.id}/state`;
    const writes: number[] = [];
    const dryRuns: number[] = [];
    const reads: number[] = [];
    const n = 30 * rounds;
    for (let i = 0; i < n; i++) {
      writes.push((await timed(stateUrl, { method: 'PUT', headers: { 'content-type': 'application/json' }, body })).ms);
      dryRuns.push((await timed(`${stateUrl}?dryRun=true`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body })).ms);
      reads.push((await timed(stateUrl)).ms);
    }
    console.log(`\nworkflows: replace the state of a 200-block, 199-edge workflow (${n} sequential writes, ${fmt(body.length / 1024)} KiB body)`);
    console.log(`  baseline GET state                      p50 ${fmt(median(reads), 2)} ms   p99 ${fmt(percentile(reads, 99), 2)} ms`);
    console.log(`  PUT state (dryRun: validate + lint)     p50 ${fmt(median(dryRuns), 2)} ms   p99 ${fmt(percentile(dryRuns, 99), 2)} ms   ×${fmt(median(dryRuns) / median(reads), 2)} baseline`);
    console.log(`  PUT state (committed)                   p50 ${fmt(median(writes), 2)} ms   p99 ${fmt(percentile(writes, 99), 2)} ms   ×${fmt(median(writes) / median(reads), 2)} baseline`);
    figure('workflows', 'PUT state 200 blocks p50', median(writes), 'ms', 'lower');
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

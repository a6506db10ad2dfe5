// Issue 23: the web console must load its pages in under 300 ms on a workspace of 1,000 workflows and 100,000
// runs. Seeds that workspace straight through the store (workflows spread over 50 folders; half the runs on one
// busy workflow, the rest spread evenly; each with its execution log; a share of them in the last hour), signs in on /login like a browser, then times each
// console page as the browser loads it: the HTML shell, then the API calls its script makes (in parallel, as
// the page issues them). Reported per page and per call: median and p99 over every round.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { figure, fmt, median, percentile, root, startProcess, tempDir, type Proc } from '../lib.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { bootstrapIfEmpty } from '../../src/identity/admin.ts';
import { setUserPassword } from '../../src/identity/web-session.ts';
import { seedState } from '../../src/workflows/state.ts';

const KEY = 'sk-owa-bench-console-00000000000000000';
const PASSWORD = 'bench console password';
const WORKFLOWS = 1_000;
const RUNS = 100_000;
const FOLDERS = 50;

interface Seeded {
  ws: string;
  email: string;
  workflowId: string;
  busyWorkflowId: string;
  runId: string;
}

/** One transaction per 5,000 runs through the store's own inserts, so the rows are exactly what the server writes. */
async function seed(dataDir: string): Promise<Seeded> {
  const store = await openSqliteStore(path.join(dataDir, 'workspace.sqlite'));
  try {
    const boot = (await bootstrapIfEmpty(store, { apiKey: KEY }))!;
    await setUserPassword(store, boot.user.id, PASSWORD);
    const ws = boot.workspace.id;
    const account = boot.workspace.billingAccountId;
    const now = Date.now();
    const ids: string[] = [];
    await store.transaction(async (tx) => {
      for (let f = 0; f < FOLDERS; f++) {
        const at = new Date(now - 90 * 86_400_000).toISOString();
        await tx.workflowFolders.insert({ id: randomUUID(), workspaceId: ws, path: `/folder-${f}`, parentPath: '/', name: `folder-${f}`, locked: false, createdAt: at, updatedAt: at, archivedAt: null, archiveBatch: null });
      }
      for (let i = 0; i < WORKFLOWS; i++) {
        const at = new Date(now - 60 * 86_400_000 + i * 60_000).toISOString();
        const { state } = seedState();
        const id = randomUUID();
        ids.push(id);
        await tx.workflows.insert({
          id, workspaceId: ws, name: `Workflow ${i}`, description: null, folderPath: `/folder-${i % FOLDERS}`, position: i + 1, archived: false,
          archivedAt: null, locked: false, isDeployed: false, deployedAt: null, activeVersionId: null, isPublicApi: false, runCount: RUNS / WORKFLOWS,
          lastRunAt: null, state: JSON.stringify(state), stateSavedAt: at, createdBy: boot.user.id, createdAt: at, updatedAt: at,
        });
      }
    });
    // Runs over the last 30 days, newest last; every 50th in the last hour, so the operations page has data.
    const spanMs = 30 * 86_400_000;
    let lastRun = '';
    for (let i = 0; i < RUNS; i += 5_000) {
      await store.transaction(async (tx) => {
        for (let j = i; j < Math.min(RUNS, i + 5_000); j++) {
          const id = randomUUID();
          const workflowId = j % 2 === 0 ? ids[0]! : ids[1 + (j % (WORKFLOWS - 1))]!;
          const startedMs = j % 50 === 0 ? now - ((j * 37) % 3_600_000) : now - spanMs + Math.floor((j / RUNS) * (spanMs - 3_600_000));
          const queuedAt = new Date(startedMs - 5).toISOString();
          const startedAt = new Date(startedMs).toISOString();
          const endedAt = new Date(startedMs + 120).toISOString();
          const failed = j % 13 === 0;
          await tx.workflowRuns.insert({
            id, workflowId, workspaceId: ws, billingAccountId: account, deploymentVersionId: null, status: failed ? 'failed' : 'completed', mode: 'sync',
            trigger: 'api', source: 'manual', triggerBlockId: null, input: '{}', timeoutMs: 60_000, triggeredBy: boot.user.id, resumeInput: null,
            checkpoint: null, pause: null, resumedCount: 0, output: failed ? null : '{"ok":true}', blockOutputs: null,
            error: failed ? JSON.stringify({ message: 'boom' }) : null, costTotal: 0.0001, blockExecutions: 3, queuedAt, startedAt, endedAt, durationMs: 120, updatedAt: endedAt,
          });
          await tx.executionLogs.insert({
            runId: id, workspaceId: ws, workflowId, deploymentVersionId: null, trigger: 'api', level: failed ? 'error' : 'info', status: failed ? 'failed' : 'completed',
            startedAt, endedAt, durationMs: 120, costTotal: 0.0001, cost: null, hasHandledErrors: false, errorMessage: failed ? 'boom' : null, models: null,
            executedBy: boot.user.id, workflowInput: '{}', finalOutput: failed ? null : '{"ok":true}', traceSpans: '[]', createdAt: startedAt,
          });
          if (workflowId === ids[1]) lastRun = id;
        }
      });
    }
    return { ws, email: boot.user.email, workflowId: ids[1]!, busyWorkflowId: ids[0]!, runId: lastRun };
  } finally {
    await store.close();
  }
}

/** Signs in on /login as a browser does and answers the Cookie header the console's requests carry. */
async function signIn(server: Proc, email: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';')[0]!;
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  };
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const form = await fetch(`${server.url}/login`, { redirect: 'manual' });
  keep(form);
  const html = await form.text();
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  const res = await fetch(`${server.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...fields, email, password: PASSWORD }).toString(),
  });
  keep(res);
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}: ${await res.text()}`);
  return cookie();
}

/** The console's pages: the shell's path, then the API calls its script makes once loaded. */
function pages(d: Seeded): { name: string; html: string; calls: string[] }[] {
  const wf = `/api/v2/workflows/${d.workflowId}`;
  const busy = `/api/v2/workflows/${d.busyWorkflowId}`;
  const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();
  return [
    {
      name: 'home',
      html: `/workspace/${d.ws}`,
      calls: [
        `/api/v2/workflows?workspaceId=${d.ws}&limit=50`,
        `/api/v2/workflows/folders?workspaceId=${d.ws}&limit=100`,
        `/api/v2/tables?workspaceId=${d.ws}&limit=50`,
        `/api/v2/knowledge?workspaceId=${d.ws}&limit=50`,
        `/api/v2/files?workspaceId=${d.ws}&limit=50`,
      ],
    },
    {
      name: 'workflow',
      html: `/workspace/${d.ws}/w/${d.workflowId}`,
      calls: [wf, `${wf}/state`, `${wf}/runs?limit=25`, `${wf}/deployment`, `${wf}/versions?limit=20`, `${wf}/lint`],
    },
    {
      // The busy workflow's page, its runs filtered by a status it rarely has and one it never has.
      name: `busy workflow (${RUNS / 2} runs)`,
      html: `/workspace/${d.ws}/w/${d.busyWorkflowId}`,
      calls: [busy, `${busy}/state`, `${busy}/runs?limit=25`, `${busy}/runs?status=failed&limit=25`, `${busy}/runs?status=cancelled&limit=25`, `${busy}/deployment`, `${busy}/versions?limit=20`, `${busy}/lint`],
    },
    { name: 'run', html: `/workspace/${d.ws}/w/${d.workflowId}/runs/${d.runId}`, calls: [`${wf}/runs/${d.runId}`, `/api/v2/logs/${d.runId}`] },
    {
      name: 'operations',
      html: `/workspace/${d.ws}/operations`,
      get calls() {
        return [
          `/api/v2/logs/stats?workspaceId=${d.ws}&startDate=${encodeURIComponent(hourAgo())}&endDate=${encodeURIComponent(new Date().toISOString())}&segmentCount=60&includeEmpty=true`,
          `/api/v2/workspaces/${d.ws}/queue`,
        ];
      },
    },
  ];
}

async function get(server: Proc, cookie: string, pathname: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(server.url + pathname, { headers: { cookie, accept: pathname.startsWith('/api/') ? 'application/json' : 'text/html' } });
  await res.arrayBuffer();
  if (res.status === 404 && pathname.startsWith('/api/')) return NaN; // an operation this build does not have
  if (!res.ok) throw new Error(`GET ${pathname} answered ${res.status}`);
  return performance.now() - t;
}

export async function consoleSuite(options: { seconds: number; rounds: number }): Promise<void> {
  const dataDir = tempDir('owa-bench-console-');
  const t0 = performance.now();
  const seeded = await seed(dataDir);
  const seedS = (performance.now() - t0) / 1000;
  const server = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, NODE_ENV: 'production', BOOTSTRAP_API_KEY: KEY });
  try {
    const cookie = await signIn(server, seeded.email);
    const n = Math.max(20, Math.round(options.seconds * 10)) * options.rounds;
    console.log(`\nconsole: pages of a workspace with ${WORKFLOWS} workflows and ${RUNS} runs (seeded in ${fmt(seedS)} s), signed in with the session cookie, ${n} loads each`);
    for (const p of pages(seeded)) {
      const whole: number[] = [];
      const perCall = new Map<string, number[]>();
      for (let i = 0; i < n + 3; i++) {
        const t = performance.now();
        const html = await get(server, cookie, p.html);
        const calls = p.calls;
        const times = await Promise.all(calls.map((c) => get(server, cookie, c)));
        if (i < 3) continue; // warm-up
        whole.push(performance.now() - t);
        (perCall.get('HTML') ?? perCall.set('HTML', []).get('HTML')!).push(html);
        calls.forEach((c, k) => {
          const key = c.replace(/\?(?:status=(\w+))?.*/, (_m, status) => (status ? `?status=${status}` : '')).replace(seeded.ws, '{ws}').replace(seeded.workflowId, '{id}').replace(seeded.busyWorkflowId, '{busy}').replace(seeded.runId, '{run}');
          (perCall.get(key) ?? perCall.set(key, []).get(key)!).push(times[k]!);
        });
      }
      console.log(`  ${(p.name + ' page').padEnd(40)} p50 ${fmt(median(whole), 2).padStart(7)} ms   p99 ${fmt(percentile(whole, 99), 2).padStart(7)} ms   (target < 300 ms)`);
      for (const [call, xs] of perCall) {
        const ok = xs.filter(Number.isFinite);
        if (!ok.length) {
          console.log(`    ${call.padEnd(38)} (not served by this build)`);
          continue;
        }
        console.log(`    ${call.padEnd(38)} p50 ${fmt(median(ok), 2).padStart(7)} ms   p99 ${fmt(percentile(ok, 99), 2).padStart(7)} ms`);
      }
      figure('console', `${p.name} page p50`, median(whole), 'ms', 'lower');
      figure('console', `${p.name} page p99`, percentile(whole, 99), 'ms', 'lower');
    }
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// The web console in Debian's Chromium (playwright-core): sign-in and back, each page as a writer and as a reader
// (a reader sees no run, edit, cancel controls and the API refuses its writes), a graph with a loop, a parallel
// and a disabled block, the waterfall of a failed run, a gate-held run finishing on screen, a cell edit, a
// knowledge search; axe-core on every page and keyboard use. Screenshots go to test-output/ (gitignored).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { axeViolations, CHROMIUM_PATH, launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { createUser, setMember } from '../src/identity/admin.ts';

const OUTPUT = path.resolve(import.meta.dirname, '../test-output');
const PASSWORD = 'password for the console';
const haveChromium = fs.existsSync(CHROMIUM_PATH);

let s: TestServer;
let gate: GateServer;
let browser: Browser;
let writer: BrowserContext;
let reader: BrowserContext;
let writerEmail: string;
const readerEmail = 'reader@console.test';
let graph: BuiltWorkflow;
let failing: BuiltWorkflow;
let held: BuiltWorkflow;
let queuedHeld: BuiltWorkflow;
let failedRunId: string;
let tableId: string;
let kbId: string;
let fileId: string;
let cancelHeld: BuiltWorkflow;
let approval: BuiltWorkflow;

async function signIn(context: BrowserContext, email: string, target: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${s.url}${target}`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${s.url}${target}`);
  return page;
}

async function audit(page: Page, where: string) {
  expect((await axeViolations(page)).map((v) => `${where}: ${v.id} [${v.impact}] (${v.help}) at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`)).toEqual([]);
}

async function shot(page: Page, name: string) {
  fs.mkdirSync(OUTPUT, { recursive: true });
  await page.screenshot({ path: path.join(OUTPUT, `console-${name}.png`), fullPage: true });
}

const ws = () => `/workspace/${s.workspaceId}`;

beforeAll(async () => {
  if (!haveChromium) return;
  gate = await new GateServer().start();
  s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  writerEmail = (await s.services.store.users.get(s.userId))!.email;
  await setUserPassword(s.services.store, s.userId, PASSWORD);
  const r = await createUser(s.services.store, { email: readerEmail });
  await setMember(s.services.store, { workspaceId: s.workspaceId, userId: r.id, role: 'read' });
  await setUserPassword(s.services.store, r.id, PASSWORD);

  {
    const start = apiBlock('start_trigger', 'Start');
    const loop = apiBlock('loop', 'Repeat', {}, { data: { loopType: 'for', count: 2 } });
    const step = apiBlock('function', 'Step', { code: 'return 1' }, { data: { parentId: loop.id, extent: 'parent' } });
    const fan = apiBlock('parallel', 'Fan out', {}, { data: { parallelType: 'count', count: 2 } });
    const branch = apiBlock('function', 'Branch', { code: 'return 2' }, { data: { parentId: fan.id, extent: 'parent' } });
    const off = apiBlock('function', 'Switched off', { code: 'return 3' }, { enabled: false });
    const out = apiBlock('response', 'Done', { data: '{"ok": true}' });
    graph = await buildWorkflow(s, 'Graph with containers', [start, loop, step, fan, branch, off, out], [
      link(start, loop),
      link(loop, step, 'loop-start-source'),
      link(loop, fan, 'loop-end-source'),
      link(fan, branch, 'parallel-start-source'),
      link(fan, out, 'parallel-end-source'),
      link(out, off),
    ]);
    // Version 2 changes Step's code, adds a block after Done and drops the edge to the disabled block, so the
    // workflow page has two versions to compare.
    const v1 = await s.ok('GET', `/api/v2/workflows/${graph.id}/state`);
    const later = apiBlock('function', 'Added later', { code: 'return 4' });
    const blocks = { ...v1.blocks, [later.id]: later };
    blocks[step.id] = { ...blocks[step.id], subBlocks: { ...blocks[step.id].subBlocks, code: { ...blocks[step.id].subBlocks.code, value: 'return 10' } } };
    const edges = [...v1.edges.filter((e: any) => e.target !== off.id), link(out, later)];
    await s.ok('PUT', `/api/v2/workflows/${graph.id}/state`, { blocks, edges });
    await s.ok('POST', `/api/v2/workflows/${graph.id}/deploy`, {});
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const prep = apiBlock('function', 'Prepare', { code: 'return 1' });
    const boom = apiBlock('function', 'Boom', { code: 'throw new Error("boom")' });
    failing = await buildWorkflow(s, 'Always fails', [start, prep, boom], [link(start, prep), link(prep, boom)]);
    const run = await s.call('POST', `/api/v2/workflows/${failing.id}/execute`, { input: {} });
    expect(run.body.data.status).toBe('failed');
    failedRunId = run.body.data.runId;
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    held = await buildWorkflow(s, 'Held at the gate', [start, gate.block('Held', 'console')], []);
    const state = (await s.ok('GET', `/api/v2/workflows/${held.id}/state`));
    await s.ok('PUT', `/api/v2/workflows/${held.id}/state`, { blocks: state.blocks, edges: [{ id: 'e1', source: held.ids.Start, target: held.ids.Held, sourceHandle: 'source', targetHandle: 'target' }] });
    await s.ok('POST', `/api/v2/workflows/${held.id}/deploy`, {});
  }
  {
    // A run queued through the API (not from the page) that waits at its own gate.
    const start = apiBlock('start_trigger', 'Start');
    const wait = gate.block('Waiting', 'console-queued');
    const after = apiBlock('function', 'Afterwards', { code: 'return 5' });
    queuedHeld = await buildWorkflow(s, 'Queued and held', [start, wait, after], [link(start, wait), link(wait, after)]);
  }
  {
    const t = await s.ok('POST', '/api/v2/tables', { workspaceId: s.workspaceId, name: 'people', schema: { columns: [{ name: 'name', type: 'string' }, { name: 'score', type: 'number' }] } });
    tableId = t.id;
    await s.ok('POST', `/api/v2/tables/${tableId}/rows`, { workspaceId: s.workspaceId, rows: [{ name: 'Ada', score: 3 }, { name: 'Grace', score: 5 }] });
  }
  {
    const kb = await createBase(s, { name: 'Handbook' });
    kbId = kb.id;
    const doc = await uploadDocument(s, kbId, 'holidays.txt', 'Employees get twenty-five days of paid holiday each year. Requests go to the team lead two weeks ahead.');
    await waitForDocument(s, kbId, doc.documentId ?? doc.document?.id ?? doc.id);
  }
  {
    const bytes = Buffer.from('Console notes: one line of text.');
    const up = await s.ok('POST', '/api/v2/files/uploads', { workspaceId: s.workspaceId, name: 'notes.txt', contentType: 'text/plain', size: bytes.length });
    expect((await fetch(up.transfer.url, { method: 'PUT', headers: up.transfer.headers, body: bytes })).status).toBe(200);
    const done = await s.request(`/api/v2/files/uploads/${up.session.id}/complete?workspaceId=${s.workspaceId}`, { method: 'POST', headers: { 'upload-token': up.uploadToken } });
    expect(done.status).toBe(200);
    fileId = ((await done.json()) as any).data.file.id;
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    cancelHeld = await buildWorkflow(s, 'Held until cancelled', [start, gate.block('Stuck', 'console-cancel')], []);
    const state = await s.ok('GET', `/api/v2/workflows/${cancelHeld.id}/state`);
    await s.ok('PUT', `/api/v2/workflows/${cancelHeld.id}/state`, { blocks: state.blocks, edges: [{ id: 'e1', source: cancelHeld.ids.Start, target: cancelHeld.ids.Stuck, sourceHandle: 'source', targetHandle: 'target' }] });
    await s.ok('POST', `/api/v2/workflows/${cancelHeld.id}/deploy`, {});
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const ask = apiBlock('human_in_the_loop', 'Ask', { message: 'ok?', inputFormat: [{ name: 'note', type: 'string', required: true }] });
    const reply = apiBlock('response', 'Reply', { data: '{"note": <ask.note>}' });
    approval = await buildWorkflow(s, 'Needs approval', [start, ask, reply], [link(start, ask), link(ask, reply)]);
  }
  browser = await launchChromium();
  // CSP is bypassed only so axe-core can be injected; the pages are unchanged.
  writer = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
  reader = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await gate?.stop();
});

describe.skipIf(!haveChromium)('web console in Chromium', () => {
  it('a signed-out visit goes through the sign-in page and back to the workspace home, which lists workflows, tables, knowledge bases', async () => {
    const page = await signIn(writer, writerEmail, ws());
    await page.getByRole('link', { name: 'Graph with containers' }).waitFor();
    await page.getByRole('link', { name: 'people' }).waitFor();
    await page.getByRole('link', { name: 'Handbook' }).waitFor();
    // The page marks when its first data is drawn (what `npm run bench -- console` times in Chromium).
    await page.locator('body[data-loaded]').waitFor();
    expect(await page.evaluate(`performance.getEntriesByName('console-loaded').length`)).toBe(1);
    await audit(page, 'home');
    await shot(page, 'home');
    // Keyboard: the skip link comes first, then the console's navigation; Enter follows a link.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent)).toBe('Skip to content');
    await page.getByRole('link', { name: 'Graph with containers' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${s.url}${ws()}/w/${graph.id}`);
    await page.close();
  });

  it('draws the graph with a loop and a parallel as containers and the disabled block marked; Enter on a block shows it', async () => {
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/w/${graph.id}`);
    const svg = page.locator('svg.graph');
    await svg.waitFor();
    await expect.poll(() => page.locator('svg.graph .block.container.type-loop').count()).toBe(1);
    expect(await page.locator('svg.graph .block.container.type-parallel').count()).toBe(1);
    expect(await page.locator('svg.graph .block.disabled').getAttribute('data-block-name')).toBe('Switched off');
    // The loop's body is drawn inside the loop's box.
    const inside = await page.evaluate(() => {
      const r = (name: string) => (globalThis as any).document.querySelector(`[data-block-name="${name}"] rect`)!.getBoundingClientRect();
      const loop = r('Repeat');
      const step = r('Step');
      return step.left >= loop.left && step.right <= loop.right && step.top >= loop.top && step.bottom <= loop.bottom;
    });
    expect(inside).toBe(true);
    await page.locator('[data-block-name="Branch"]').focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Branch', level: 3 }).waitFor();
    await page.getByRole('button', { name: 'Run' }).waitFor();
    await page.getByText(/No findings|warning/).first().waitFor();
    await page.getByText('Not deployed.').or(page.getByText(/Deployed/)).first().waitFor();
    // Compare the two deployment versions (the form starts at the newest two).
    await page.getByLabel('From version').fill('1');
    await page.getByLabel('To version').fill('2');
    await page.getByRole('button', { name: 'Compare' }).click();
    const diff = page.locator('.diff');
    await diff.locator('[data-diff="blocks-added"]', { hasText: 'Added later' }).waitFor();
    expect(await diff.locator('[data-diff="blocks-changed"] li[data-setting="code"]').textContent()).toContain('return 1 → return 10');
    await diff.locator('[data-diff="edges-added"]', { hasText: 'Done → Added later' }).waitFor();
    await diff.locator('[data-diff="edges-removed"]', { hasText: 'Done → Switched off' }).waitFor();
    expect(await diff.locator('[data-diff="blocks-removed"]').count()).toBe(0);
    await audit(page, 'workflow');
    await shot(page, 'workflow-graph');
    await page.close();
  });

  it('shows a failed run as a waterfall with the failing block marked and its error, input and output on click', async () => {
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/w/${failing.id}`);
    await page.getByRole('link', { name: failedRunId.slice(0, 12) }).click();
    await page.waitForURL(`${s.url}${ws()}/w/${failing.id}/runs/${failedRunId}`);
    const boom = page.locator('li.span[data-span-name="Boom"]');
    await boom.waitFor();
    expect(await boom.getAttribute('class')).toContain('failed');
    expect(await page.locator('li.span[data-span-name="Prepare"]').getAttribute('class')).not.toContain('failed');
    await boom.getByRole('button').click();
    await page.getByRole('alert').filter({ hasText: 'boom' }).waitFor();
    await page.getByRole('heading', { name: 'Output' }).waitFor();
    await audit(page, 'run');
    await shot(page, 'run-failed');
    await page.close();
  });

  it('runs a workflow from the page and shows it running, then finished once the gate opens', async () => {
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/w/${held.id}`);
    await page.getByLabel('Input (JSON)').fill('{"who": "console"}');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.locator('.events li.running', { hasText: 'Held' }).waitFor();
    await shot(page, 'run-live');
    gate.release('console');
    await page.getByText('Run completed').waitFor();
    await page.locator('.events li.done', { hasText: 'Held' }).waitFor();
    await page.getByRole('link', { name: 'Open this run' }).click();
    await page.locator('li.span[data-span-name="Held"]').waitFor();
    await page.close();
  });

  it('follows a run queued elsewhere live on its run page: its blocks appear as they run, then it finishes on screen with its trace', async () => {
    const queued = await s.ok('POST', `/api/v2/workflows/${queuedHeld.id}/execute`, { async: true, input: {} });
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/w/${queuedHeld.id}/runs/${queued.runId}`);
    await page.locator('.events li.running', { hasText: 'Waiting' }).waitFor();
    expect(await page.locator('.facts .badge').first().textContent()).toBe('running');
    await page.getByRole('button', { name: 'Cancel run' }).waitFor();
    await shot(page, 'run-following');
    gate.release('console-queued');
    // The end arrives on the page's event stream (the page no longer re-reads the run on a timer).
    await page.locator('.facts .badge', { hasText: 'completed' }).waitFor();
    await page.locator('li.span[data-span-name="Afterwards"]').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    await audit(page, 'run (followed)');
    await page.close();
  });

  it('cancels a running run from its run page, which shows it cancelled', async () => {
    const queued = await s.ok('POST', `/api/v2/workflows/${cancelHeld.id}/execute`, { async: true, input: {} });
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/w/${cancelHeld.id}/runs/${queued.runId}`);
    await page.locator('.events li.running', { hasText: 'Stuck' }).waitFor();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.locator('.facts .badge', { hasText: 'cancelled' }).waitFor();
    expect((await s.ok('GET', `/api/v2/workflows/${cancelHeld.id}/runs/${queued.runId}`)).status).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    await page.close();
  });

  it('resumes a paused run from its run page with a JSON input, and shows it completed', async () => {
    const paused = await s.call('POST', `/api/v2/workflows/${approval.id}/execute`, { input: {} });
    expect(paused.body.data.status).toBe('paused');
    const runId = paused.body.data.runId;
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/w/${approval.id}/runs/${runId}`);
    await page.locator('.facts .badge', { hasText: 'paused' }).waitFor();
    await page.getByLabel('Resume input (JSON)').fill('{"note": "fine"}');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('.facts .badge', { hasText: 'completed' }).waitFor();
    await page.locator('li.span[data-span-name="Reply"]').waitFor();
    expect((await s.ok('GET', `/api/v2/workflows/${approval.id}/runs/${runId}`)).status).toBe('completed');
    await audit(page, 'run (resumed)');
    await shot(page, 'run-resumed');
    await page.close();
  });

  it('shows a file with its facts and a download link', async () => {
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/files/${fileId}`);
    await page.getByRole('heading', { name: 'notes.txt', level: 1 }).waitFor();
    const href = await page.getByRole('link', { name: 'Download' }).getAttribute('href');
    const body = await page.evaluate(async (url) => (await fetch(url!)).text(), href);
    expect(body).toBe('Console notes: one line of text.');
    await audit(page, 'file');
    await shot(page, 'file');
    await page.close();
  });

  it('edits a table cell and filters and sorts the grid', async () => {
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/tables/${tableId}`);
    const cell = page.getByRole('button', { name: /edit score/ }).first();
    await cell.waitFor();
    await cell.click();
    const input = page.locator('input.cell-input');
    await input.fill('42');
    await input.press('Enter');
    await page.getByText('Saved score.').waitFor();
    const rows = await s.ok('POST', `/api/v2/tables/${tableId}/query`, { workspaceId: s.workspaceId, predicate: { field: 'score', op: 'eq', value: 42 } });
    expect(rows.map((r: any) => r.data.name)).toEqual(['Ada']);
    await page.getByLabel('Filter').selectOption('name');
    await page.getByLabel('Value').fill('Grace');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.locator('table.grid tbody tr').count()).toBe(1);
    await page.getByRole('button', { name: /edit name/ }).filter({ hasText: 'Grace' }).waitFor();
    await audit(page, 'table');
    await shot(page, 'table');
    await page.close();
  });

  it('lists a knowledge base\'s documents with their state and searches it, showing each hit\'s scores', async () => {
    const page = await writer.newPage();
    await page.goto(`${s.url}${ws()}/knowledge/${kbId}`);
    await page.getByRole('cell', { name: 'holidays.txt' }).waitFor();
    await page.getByText('completed').first().waitFor();
    await page.getByRole('searchbox', { name: 'Search' }).fill('how many days of paid holiday');
    await page.getByRole('searchbox', { name: 'Search' }).press('Enter');
    const hit = page.locator('.hit').first();
    await hit.waitFor();
    await hit.getByText('rank score').waitFor();
    await hit.getByText('vector similarity').waitFor();
    await audit(page, 'knowledge');
    await shot(page, 'knowledge');
    await page.goto(`${s.url}${ws()}/operations`);
    await page.locator('figure.plot svg').first().waitFor();
    // The gate-held run has finished, so nothing is queued or running.
    expect(await page.locator('[data-queue="queued"]').textContent()).toBe('0');
    expect(await page.locator('[data-queue="running"]').textContent()).toBe('0');
    expect(await page.locator('[data-queue="oldest"]').textContent()).toBe('none queued');
    await audit(page, 'operations');
    await shot(page, 'operations');
    await page.close();
  });

  it('a reader sees every page without run, edit or cancel controls, and the API refuses its writes', async () => {
    const page = await signIn(reader, readerEmail, `${ws()}/w/${graph.id}`);
    await page.locator('svg.graph').waitFor();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    expect(await page.getByRole('button', { name: 'Run' }).count()).toBe(0);
    // The draft's lint findings come from the read operation, so a reader sees them too.
    const lint = (await s.ok('GET', `/api/v2/workflows/${graph.id}/lint`)).lint;
    const kinds = ['orphanBlocks', 'emptyOutgoingPorts', 'invalidBranchPorts', 'invalidConnectionTargets', 'fieldIssues', 'unresolvedReferences', 'tableFieldIssues', 'notes'].filter((k) => lint[k].length > 0);
    if (kinds.length) await page.locator(`[data-finding="${kinds[0]}"] li`).first().waitFor();
    else await page.getByText('No findings').waitFor();
    await audit(page, 'workflow (reader)');
    await shot(page, 'workflow-reader');

    await page.goto(`${s.url}${ws()}/tables/${tableId}`);
    await page.getByRole('cell', { name: 'Grace' }).waitFor();
    expect(await page.locator('button.cell').count()).toBe(0);

    await page.goto(`${s.url}${ws()}/w/${failing.id}/runs/${failedRunId}`);
    await page.locator('li.span[data-span-name="Boom"]').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);

    // The page's own token does not make a reader a writer: the API's policy answers 403.
    const refused = await page.evaluate(async ([table, workspaceId]) => {
      const res = await fetch(`/api/v2/tables/${table}/rows`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': (globalThis as any).document.body.dataset.csrf! },
        body: JSON.stringify({ workspaceId, rows: [{ name: 'Mallory', score: 0 }] }),
      });
      return res.status;
    }, [tableId, s.workspaceId]);
    expect(refused).toBe(403);

    // The other pages read the same for a reader, clean under axe.
    await page.goto(`${s.url}${ws()}`);
    await page.getByRole('link', { name: 'Graph with containers' }).waitFor();
    await page.locator('body[data-loaded]').waitFor();
    await audit(page, 'home (reader)');
    await page.goto(`${s.url}${ws()}/knowledge/${kbId}`);
    await page.getByRole('cell', { name: 'holidays.txt' }).waitFor();
    await audit(page, 'knowledge (reader)');
    await page.goto(`${s.url}${ws()}/files/${fileId}`);
    await page.getByRole('heading', { name: 'notes.txt', level: 1 }).waitFor();
    await audit(page, 'file (reader)');
    await page.goto(`${s.url}${ws()}/operations`);
    await page.locator('figure.plot svg').first().waitFor();
    await audit(page, 'operations (reader)');
    await page.close();
  });
});

// A workflow's page: its graph, deployment and versions, the draft's lint findings, "Run" with a JSON input
// (writers; followed live on the execute call's SSE stream) and its runs, filtered by status and paged.
import { api, badge, canWrite, duration, el, fill, heading, json, main, money, page, pager, query, section, statusLine, table, when, wsPath, showError } from './core.js';
import { drawGraph } from './graph.js';

const wfPath = () => `/api/v2/workflows/${encodeURIComponent(page.workflowId)}`;
const RUN_PAGE = 25;

export async function workflowPage() {
  let wf, state;
  try {
    [wf, state] = await Promise.all([api('GET', wfPath()), api('GET', `${wfPath()}/state`)]);
  } catch (err) {
    return showError(err);
  }
  wf = wf.data;
  state = state.data;
  document.title = `${wf.name} · Console`;
  fill(main, heading(wf.name, [wf.isDeployed ? badge('deployed') : badge('draft'), ' ', wf.description ?? '', ' · folder ', wf.folderPath ?? '/']));
  main.append(graphSection(state));
  if (canWrite) main.append(runSection());
  main.append(runsSection(), deploymentSection(), lintSection(state));
}

function graphSection(state) {
  const details = el('div', { class: 'block-details', 'aria-live': 'polite' });
  const show = (b) => {
    fill(
      details,
      el('h3', { text: `${b.name}` }),
      el('p', {}, `Type ${b.type}`, b.enabled === false ? ' · disabled' : '', b.data?.parentId ? ` · inside ${state.blocks[b.data.parentId]?.name ?? b.data.parentId}` : ''),
      el('pre', { class: 'json', text: json(Object.fromEntries(Object.entries(b.subBlocks ?? {}).map(([k, v]) => [k, v?.value]))) }),
    );
  };
  const blocks = Object.values(state.blocks ?? {});
  const list = table('Blocks', [
    ['Block', (b) => el('button', { type: 'button', class: 'link', text: b.name, onclick: () => show(b) })],
    ['Type', (b) => b.type],
    ['Inside', (b) => (b.data?.parentId ? (state.blocks[b.data.parentId]?.name ?? '—') : '—')],
    ['Enabled', (b) => (b.enabled === false ? badge('disabled') : 'yes')],
  ], blocks);
  return section(
    'Graph',
    blocks.length ? drawGraph(state, show) : el('p', { text: 'This workflow has no blocks yet.' }),
    details,
    el('details', {}, el('summary', { text: `All ${blocks.length} blocks` }), list),
  );
}

function runSection() {
  const input = el('textarea', { id: 'run-input', rows: 4, spellcheck: false, value: '{}' });
  const button = el('button', { type: 'submit', text: 'Run' });
  const status = statusLine();
  const events = el('ol', { class: 'events', 'aria-live': 'polite' });
  const form = el(
    'form',
    { class: 'run-form' },
    el('label', { for: 'run-input', text: 'Input (JSON)' }),
    input,
    el('div', { class: 'actions' }, button),
    status,
    events,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let body;
    try {
      body = JSON.parse(input.value || '{}');
    } catch (err) {
      return status.set(`The input is not valid JSON: ${err.message}`, true);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return status.set('The input must be a JSON object.', true);
    button.disabled = true;
    events.replaceChildren();
    status.set('Starting…');
    try {
      await followRun(body, status, events);
    } catch (err) {
      status.set(err.message, true);
    } finally {
      button.disabled = false;
    }
  });
  return section('Run', form);
}

/** Runs the draft's deployment with `input`, reading the SSE frames as they come. */
async function followRun(input, status, events) {
  const res = await api('POST', `${wfPath()}/execute`, { input, stream: true }, { raw: true, headers: { accept: 'text/event-stream' } });
  if (res.status >= 300) {
    const body = await res.json().catch(() => undefined);
    throw new Error(body?.error?.message ?? `The server answered ${res.status}.`);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let runId = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (!data || data === '[DONE]') continue;
      let f;
      try {
        f = JSON.parse(data);
      } catch {
        continue;
      }
      runId ??= f.runId ?? null;
      const label = (f.blockName ?? 'Block') + (f.iteration?.length ? ` [${f.iteration.join('.')}]` : '');
      const key = `${f.blockId ?? ''}:${(f.iteration ?? []).join('.')}`;
      if (f.event === 'run_started') status.set('Running…');
      else if (f.event === 'block_started') events.append(el('li', { class: 'running', dataset: { block: key }, text: `${label}: running` }));
      else if (f.event === 'block_completed' || f.event === 'block_failed') {
        const failed = f.event === 'block_failed';
        const li = [...events.children].reverse().find((x) => x.dataset.block === key && x.classList.contains('running'));
        const text = `${label}: ${failed ? `failed${f.error?.message ? ` (${f.error.message})` : ''}` : 'done'}${typeof f.durationMs === 'number' ? ` in ${duration(f.durationMs)}` : ''}`;
        if (li) {
          li.className = failed ? 'failed' : 'done';
          li.textContent = text;
        } else events.append(el('li', { class: failed ? 'failed' : 'done', text }));
      } else if (f.event === 'final') {
        const d = f.data ?? {};
        runId ??= d.runId;
        status.set(`Run ${d.status ?? (d.success ? 'completed' : 'failed')}${d.error ? `: ${typeof d.error === 'string' ? d.error : d.error.message}` : ''}`, d.success === false);
        if (runId) events.after(el('p', {}, el('a', { href: wsPath('w', page.workflowId, 'runs', runId), text: 'Open this run' })));
      } else if (f.event === 'error') status.set(f.error ?? 'The run failed on the server.', true);
    }
  }
}

function runsSection() {
  const filter = el(
    'select',
    { id: 'runs-status' },
    ['', 'queued', 'running', 'paused', 'completed', 'failed', 'cancelled'].map((s) => el('option', { value: s, text: s || 'Any status' })),
  );
  const t = table('Runs', [
    ['Run', (r) => el('a', { href: wsPath('w', page.workflowId, 'runs', r.runId), text: r.runId.slice(0, 12) })],
    ['Status', (r) => badge(r.status)],
    ['Trigger', (r) => r.trigger],
    ['Started', (r) => when(r.startedAt)],
    ['Duration', (r) => duration(r.durationMs)],
    ['Cost', (r) => money(r.cost?.total)],
  ]);
  const p = pager(t.body, (cursor) => api('GET', `${wfPath()}/runs${query({ status: filter.value, limit: RUN_PAGE, cursor })}`), (items) => t.rowsOf(items), { empty: 'No runs.', moreLabel: 'Older runs' });
  filter.addEventListener('change', () => p.reset());
  p.reset();
  return section('Runs', el('div', { class: 'filters' }, el('label', { for: 'runs-status', text: 'Status' }), filter), el('div', { class: 'scroll' }, t), p.controls);
}

function deploymentSection() {
  const summary = el('div', {}, statusLine('Loading…'));
  const t = table('Versions', [
    ['Version', (v) => String(v.version)],
    ['Name', (v) => v.name ?? '—'],
    ['Active', (v) => (v.isActive ? badge('active') : '')],
    ['Created', (v) => when(v.createdAt)],
  ]);
  api('GET', `${wfPath()}/deployment`)
    .then((r) => {
      const d = r.data;
      fill(
        summary,
        el('p', {}, d.isDeployed ? ['Deployed ', when(d.deployedAt), d.activeDeployment ? ` · version ${d.activeDeployment.version}` : ''] : 'Not deployed.'),
        d.warnings?.length ? el('ul', { class: 'warnings' }, d.warnings.map((w) => el('li', { text: w }))) : null,
      );
    })
    .catch((err) => fill(summary, el('p', { class: 'error', text: err.message })));
  const p = pager(t.body, (cursor) => api('GET', `${wfPath()}/versions${query({ limit: 20, cursor })}`), (items) => t.rowsOf(items), { empty: 'No versions yet.', moreLabel: 'Older versions' });
  p.reset();
  return section('Deployment', summary, el('div', { class: 'scroll' }, t), p.controls);
}

function lintSection(state) {
  const out = el('div', {});
  if (!canWrite) {
    fill(out, el('p', { class: 'sub', text: 'The draft is checked by a dry-run write, which needs the write role. The deployment warnings above cover the live version.' }));
    return section('Lint findings', out);
  }
  fill(out, statusLine('Checking the draft…'));
  // Containers are recomputed from the blocks' parent ids, so only blocks and edges are sent.
  const body = { blocks: state.blocks, edges: state.edges };
  api('PUT', `${wfPath()}/state?dryRun=true`, body)
    .then((r) => {
      const lint = r.data.lint ?? {};
      const findings = r.data.warnings ?? [];
      const notes = Array.isArray(lint.notes) ? lint.notes : [];
      fill(
        out,
        findings.length
          ? el('ul', { class: 'findings' }, findings.map((f) => el('li', { class: 'warning' }, badge('warning'), ' ', f)))
          : el('p', { text: 'No findings: the draft looks runnable.' }),
        notes.length ? el('ul', { class: 'notes' }, notes.map((n) => el('li', { text: typeof n === 'string' ? n : (n.message ?? json(n)) }))) : null,
        r.data.needsRedeployment ? el('p', { text: 'The draft differs from the deployment: deploy it for runs to see the changes.' }) : null,
      );
    })
    .catch((err) => fill(out, el('p', { class: 'error', text: err.message })));
  return section('Lint findings', out);
}

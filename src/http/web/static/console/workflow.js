// A workflow's page: its graph, deployment and versions (with a diff between two), the draft's lint findings, "Run" with a JSON input
// (writers; followed live on the execute call's SSE stream) and its runs, filtered by status and paged.
import { api, badge, canWrite, duration, el, fill, heading, json, main, money, page, pager, query, section, statusLine, table, when, wsPath, showError } from './core.js';
import { drawGraph } from './graph.js';
import { blockEvents } from './live.js';
import { diffStates } from './diff.js';

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
  main.append(runsSection(), deploymentSection(), lintSection());
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
  const events = blockEvents();
  const form = el(
    'form',
    { class: 'run-form' },
    el('label', { for: 'run-input', text: 'Input (JSON)' }),
    input,
    el('div', { class: 'actions' }, button),
    status,
    events.list,
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
    events.list.replaceChildren();
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
      if (f.event === 'run_started') status.set('Running…');
      else if (String(f.event).startsWith('block_')) events.show(f);
      else if (f.event === 'final') {
        const d = f.data ?? {};
        runId ??= d.runId;
        status.set(`Run ${d.status ?? (d.success ? 'completed' : 'failed')}${d.error ? `: ${typeof d.error === 'string' ? d.error : d.error.message}` : ''}`, d.success === false);
        if (runId) events.list.after(el('p', {}, el('a', { href: wsPath('w', page.workflowId, 'runs', runId), text: 'Open this run' })));
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
  const compare = el('div', {});
  let newest = null;
  const p = pager(
    t.body,
    (cursor) => api('GET', `${wfPath()}/versions${query({ limit: 20, cursor })}`),
    (items) => {
      // The first page is newest first: two or more versions make a comparison worth offering.
      if (newest === null && items.length) {
        newest = items[0].version;
        if (newest > 1) fill(compare, compareForm(newest));
      }
      return t.rowsOf(items);
    },
    { empty: 'No versions yet.', moreLabel: 'Older versions' },
  );
  p.reset();
  return section('Deployment', summary, el('div', { class: 'scroll' }, t), p.controls, compare);
}

/** Each kind of lint finding: its heading and how one finding reads. */
const FINDINGS = [
  ['orphanBlocks', 'Blocks nothing leads to', (f) => `${f.blockName ?? f.blockId} (${f.blockType})`],
  ['emptyOutgoingPorts', 'Branches that lead nowhere', (f) => `${f.blockName ?? f.blockId}: ${f.label ?? f.handle}`],
  ['invalidBranchPorts', 'Invalid branch ports', (f) => `${f.blockName ?? f.blockId} ${f.sourceHandle}: ${f.reason}`],
  ['invalidConnectionTargets', 'Invalid connections', (f) => `${f.sourceBlockName ?? f.sourceBlockId} → ${f.targetBlockId}: ${f.reason}`],
  ['fieldIssues', 'Block settings', (f) => `${f.blockName ?? f.blockId}: ${[f.missingRequiredFields?.length ? `missing ${f.missingRequiredFields.join(', ')}` : '', f.inactiveModeValues?.length ? `values of an inactive mode in ${f.inactiveModeValues.join(', ')}` : ''].filter(Boolean).join('; ')}`],
  ['unresolvedReferences', 'Unresolved references', (f) => `${f.blockName ?? f.blockId} ${f.field}: ${f.value} (${f.reason})`],
  ['tableFieldIssues', 'Table fields', (f) => `${f.blockName ?? f.blockId} ${f.field}: ${f.reason ?? f.tableName ?? ''}`],
  ['notes', 'Notes', (f) => (typeof f === 'string' ? f : (f.message ?? json(f)))],
];

/** The draft's lint findings, from the read operation every member may call (GET …/lint). */
function lintSection() {
  const out = el('div', {}, statusLine('Checking the draft…'));
  api('GET', `${wfPath()}/lint`)
    .then((r) => {
      const lint = r.data.lint ?? {};
      const groups = FINDINGS.filter(([key]) => Array.isArray(lint[key]) && lint[key].length > 0);
      fill(
        out,
        groups.length
          ? groups.map(([key, title, line]) =>
              el('div', { class: 'finding-group', dataset: { finding: key } }, el('h3', { text: `${title} (${lint[key].length})` }), el('ul', { class: 'findings' }, lint[key].map((f) => el('li', { class: 'warning' }, badge('warning'), ' ', line(f))))),
            )
          : el('p', { text: 'No findings: the draft looks runnable.' }),
        r.data.needsRedeployment ? el('p', { text: 'The draft differs from the deployment: deploy it for runs to see the changes.' }) : null,
      );
    })
    .catch((err) => fill(out, el('p', { class: 'error', text: err.message })));
  return section('Lint findings', out);
}

/** Two deployment versions side by side: pick them by number, see what the later one changed. */
function compareForm(latest) {
  const from = el('input', { id: 'diff-from', type: 'number', min: 1, step: 1, required: true, value: latest > 1 ? latest - 1 : 1 });
  const to = el('input', { id: 'diff-to', type: 'number', min: 1, step: 1, required: true, value: latest });
  const status = statusLine();
  const out = el('div', { class: 'diff', 'aria-live': 'polite' });
  const form = el(
    'form',
    { class: 'filters compare' },
    el('label', { for: 'diff-from', text: 'From version' }),
    from,
    el('label', { for: 'diff-to', text: 'To version' }),
    to,
    el('button', { type: 'submit', class: 'secondary', text: 'Compare' }),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    status.set('Comparing…');
    out.replaceChildren();
    try {
      const [a, b] = await Promise.all([from.value, to.value].map((v) => api('GET', `${wfPath()}/versions/${encodeURIComponent(v)}`)));
      status.set('');
      fill(out, diffView(a.data, b.data));
    } catch (err) {
      status.set(err.message, true);
    }
  });
  return el('div', {}, el('h3', { text: 'Compare versions' }), form, status, out);
}

const short = (v) => {
  const text = v === undefined ? '(none)' : typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
};

function diffView(a, b) {
  const d = diffStates(a.state, b.state);
  const count = d.addedBlocks.length + d.removedBlocks.length + d.changedBlocks.length + d.addedEdges.length + d.removedEdges.length;
  const edge = (e) => `${e.sourceName}${e.sourceHandle && e.sourceHandle !== 'source' ? ` [${e.sourceHandle}]` : ''} → ${e.targetName}`;
  const group = (key, title, items, line, kind) =>
    items.length ? el('div', { class: `diff-group diff-${kind}`, dataset: { diff: key } }, el('h4', { text: `${title} (${items.length})` }), el('ul', {}, items.map((x) => el('li', {}, line(x))))) : null;
  return [
    el('p', { class: 'sub', text: count ? `Version ${a.version} → version ${b.version}: ${count} change${count === 1 ? '' : 's'}.` : `Versions ${a.version} and ${b.version} do the same thing.` }),
    group('blocks-added', 'Blocks added', d.addedBlocks, (x) => `${x.name} (${x.type})`, 'added'),
    group('blocks-removed', 'Blocks removed', d.removedBlocks, (x) => `${x.name} (${x.type})`, 'removed'),
    group('blocks-changed', 'Blocks changed', d.changedBlocks, (c) => [
      el('strong', { text: c.block.name }),
      el('ul', { class: 'changes' }, c.changes.map((ch) => el('li', { dataset: { setting: ch.setting } }, el('code', { text: ch.setting }), ': ', el('del', { text: short(ch.before) }), ' → ', el('ins', { text: short(ch.after) })))),
    ], 'changed'),
    group('edges-added', 'Edges added', d.addedEdges, edge, 'added'),
    group('edges-removed', 'Edges removed', d.removedEdges, edge, 'removed'),
  ];
}

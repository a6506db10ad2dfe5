// One run: status, trigger, timings and cost; its trace as a waterfall of blocks over time (loop iterations and
// parallel branches grouped under their container, failures marked), each block's input and output on click;
// cancel and resume for writers. A run still going is followed live (GET …/events: its status and block events
// as they happen, from whichever server executes it) until it ends, when its trace is drawn.
import { api, badge, canWrite, duration, el, fill, heading, json, main, money, page, section, statusLine, when, wsPath, showError, ApiError } from './core.js';
import { blockEvents } from './live.js';

const ENDED = new Set(['completed', 'failed', 'cancelled']);
const runPath = () => `/api/v2/workflows/${encodeURIComponent(page.workflowId)}/runs/${encodeURIComponent(page.runId)}`;

export async function runPage() {
  let run;
  try {
    run = (await api('GET', runPath())).data;
  } catch (err) {
    return showError(err);
  }
  const summary = el('div', {});
  const controls = el('div', { class: 'actions' });
  const status = statusLine();
  const trace = el('div', {});
  fill(
    main,
    heading(`Run ${page.runId}`, [el('a', { href: wsPath('w', page.workflowId), text: 'Back to the workflow' })]),
    section('Summary', summary, controls, status),
    section('Trace', trace),
  );
  const render = (r) => {
    fill(
      summary,
      el(
        'dl',
        { class: 'facts' },
        fact('Status', badge(r.status)),
        fact('Trigger', r.trigger),
        fact('Started', when(r.startedAt)),
        fact('Ended', when(r.endedAt)),
        fact('Duration', duration(r.durationMs)),
        fact('Cost', money(r.cost?.total)),
        r.error ? fact('Error', el('span', { class: 'error', text: `${r.error.blockName ? `${r.error.blockName}: ` : ''}${r.error.message}` })) : null,
      ),
    );
    fill(controls);
    if (!canWrite) return;
    if (!ENDED.has(r.status)) controls.append(el('button', { type: 'button', class: 'secondary', text: 'Cancel run', onclick: () => act('cancel', undefined) }));
    if (r.status === 'paused' && r.paused) {
      const input = el('textarea', { id: 'resume-input', rows: 3, value: '{}' });
      controls.append(
        el('form', { class: 'resume', onsubmit: (e) => (e.preventDefault(), resume(input.value, r.paused.contextId)) }, el('label', { for: 'resume-input', text: 'Resume input (JSON)' }), input, el('button', { type: 'submit', text: 'Resume' })),
      );
    }
  };
  async function act(what, body) {
    status.set(`${what === 'cancel' ? 'Cancelling' : 'Resuming'}…`);
    try {
      // Cancel takes no body at all (an empty object is refused); resume takes its contextId and input.
      await api('POST', `${runPath()}/${what}`, body);
      status.set(what === 'cancel' ? 'Cancel requested.' : 'Resumed.');
      refresh();
    } catch (err) {
      status.set(err.message, true);
    }
  }
  function resume(text, contextId) {
    let input;
    try {
      input = JSON.parse(text || '{}');
    } catch (err) {
      return status.set(`The input is not valid JSON: ${err.message}`, true);
    }
    act('resume', { contextId, input });
  }
  async function refresh() {
    try {
      run = (await api('GET', runPath())).data;
    } catch (err) {
      return status.set(err.message, true);
    }
    show(run);
  }
  let live = null;
  /** Draws the run as it is now; one still going is followed on its event stream, one that ended gets its trace. */
  function show(r) {
    render(r);
    if (ENDED.has(r.status)) {
      live?.source.close();
      live = null;
      return loadTrace(trace);
    }
    if (live) return;
    const events = blockEvents();
    fill(trace, el('p', { class: 'status', text: 'The run is going on: its blocks appear as they run, its trace when it ends.' }), events.list);
    // EventSource reconnects by itself after a dropped connection; the stream starts with the run as it is then.
    const source = new EventSource(`${runPath()}/events`);
    live = { source };
    source.onmessage = (m) => {
      let f;
      try {
        f = JSON.parse(m.data);
      } catch {
        return;
      }
      if (f === '[DONE]') return source.close();
      if (f.event === 'status' || f.event === 'final') {
        run = f.data;
        show(run);
      } else if (String(f.event).startsWith('block_')) events.show(f);
    };
    addEventListener('pagehide', () => source.close(), { once: true });
  }
  show(run);
}

const fact = (k, v) => [el('dt', { text: k }), el('dd', {}, v)];

async function loadTrace(into) {
  let log;
  try {
    log = (await api('GET', `/api/v2/logs/${encodeURIComponent(page.runId)}`)).data;
  } catch (err) {
    return fill(into, el('p', { class: err instanceof ApiError && err.status === 404 ? 'status' : 'error', text: err instanceof ApiError && err.status === 404 ? 'No trace was recorded for this run.' : err.message }));
  }
  fill(into, waterfall(log.traceSpans ?? [], log.totalDurationMs ?? null));
}

/** The spans as rows with a bar each, positioned on one time axis; children indented under their parent. */
export function waterfall(spans) {
  const flat = [];
  const walk = (list, depth) => {
    for (const s of list) {
      flat.push({ s, depth });
      if (s.children?.length) walk(s.children, depth + 1);
    }
  };
  walk(spans, 0);
  const base = Math.min(...flat.map(({ s }) => startOf(s)).filter(Number.isFinite), 0);
  const end = Math.max(1, ...flat.map(({ s }) => startOf(s) - base + (s.durationMs ?? s.duration ?? 0)));
  const details = el('div', { class: 'span-details', 'aria-live': 'polite' });
  const rows = el('ol', { class: 'waterfall', 'aria-label': `Trace: ${flat.length} spans over ${duration(end)}` });
  for (const { s, depth } of flat) {
    const failed = s.status === 'error' || s.status === 'failed' || Boolean(s.errorMessage);
    const group = s.children?.length > 0;
    const start = startOf(s) - base;
    const d = s.durationMs ?? s.duration ?? 0;
    const bar = el('span', { class: 'bar' });
    bar.style.left = `${(start / end) * 100}%`;
    bar.style.width = `${Math.max(0.5, (d / end) * 100)}%`;
    const button = el(
      'button',
      {
        type: 'button',
        class: 'span-row',
        onclick: () => showSpan(details, s),
      },
      el('span', { class: 'span-name' }, s.name, el('span', { class: 'visually-hidden', text: ` (${s.type}${failed ? ', failed' : ''}, from ${duration(start)})` })),
      el('span', { class: 'track' }, bar),
      el('span', { class: 'span-time', text: duration(d) }),
    );
    button.querySelector('.span-name').style.paddingLeft = `${depth * 1.1}rem`;
    rows.append(el('li', { class: ['span', failed ? 'failed' : '', group ? 'group' : '', `type-${s.type}`].filter(Boolean).join(' '), dataset: { spanName: s.name } }, button));
  }
  return el('div', {}, rows, details);
}

const startOf = (s) => (typeof s.relativeStartMs === 'number' ? s.relativeStartMs : s.startTime ? Date.parse(s.startTime) : 0);

function showSpan(into, s) {
  fill(
    into,
    el('h3', { text: `${s.name} · ${s.type}` }),
    el('p', {}, `Status ${s.status ?? '—'} · ${duration(s.durationMs ?? s.duration)}`, s.cost?.total !== undefined ? ` · ${money(s.cost.total)}` : ''),
    s.errorMessage ? el('p', { class: 'error', role: 'alert', text: s.errorMessage }) : null,
    el('h4', { text: 'Input' }),
    el('pre', { class: 'json', text: json(s.input ?? null) }),
    el('h4', { text: 'Output' }),
    el('pre', { class: 'json', text: json(s.output ?? null) }),
  );
}

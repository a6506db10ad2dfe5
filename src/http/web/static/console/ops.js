// Operations: the queue depth now (queued and running runs, the oldest queued run's wait; re-read every few
// seconds and plotted while the page is open), runs per minute and the failure rate over the last hour, from the
// logs' statistics (one bucket a minute), as small inline SVG plots.
import { api, duration, el, fill, heading, main, page, query, section, svg, showError } from './core.js';

const QUEUE_EVERY_MS = 5000;
const QUEUE_SAMPLES = 60;

const W = 480;
const H = 90;

export async function operationsPage() {
  const end = new Date();
  const start = new Date(end.getTime() - 3600_000);
  let stats, queue;
  try {
    [stats, queue] = await Promise.all([
      api('GET', `/api/v2/logs/stats${query({ workspaceId: page.workspaceId, startDate: start.toISOString(), endDate: end.toISOString(), segmentCount: 60, includeEmpty: true })}`),
      readQueue(),
    ]);
    stats = stats.data;
  } catch (err) {
    return showError(err);
  }
  const segments = stats.aggregateSegments ?? [];
  const perMinute = segments.map((s) => s.totalExecutions);
  const failureRate = segments.map((s) => (s.totalExecutions ? (s.totalExecutions - s.successfulExecutions) / s.totalExecutions : 0));
  fill(
    main,
    heading('Operations', [`The last hour, ${stats.totalRuns ?? 0} runs, ${stats.totalErrors ?? 0} failed`]),
    queueSection(queue),
    section('Runs per minute', plot(perMinute, 'Runs per minute over the last hour', (v) => String(v))),
    section('Failure rate', plot(failureRate, 'Share of failed runs per minute over the last hour', (v) => `${Math.round(v * 100)}%`, 1)),
  );
}

const readQueue = () => api('GET', `/api/v2/workspaces/${encodeURIComponent(page.workspaceId)}/queue`).then((r) => r.data);

/** The queue now, re-read every few seconds while the page is open; the queued count plotted over those reads. */
function queueSection(first) {
  const facts = el('dl', { class: 'facts queue' });
  const chart = el('div', {});
  const samples = [];
  const show = (q) => {
    samples.push(q.queued);
    if (samples.length > QUEUE_SAMPLES) samples.shift();
    fill(
      facts,
      el('dt', { text: 'Queued' }),
      el('dd', { dataset: { queue: 'queued' }, text: String(q.queued) }),
      el('dt', { text: 'Running' }),
      el('dd', { dataset: { queue: 'running' }, text: String(q.running) }),
      el('dt', { text: 'Oldest queued run waiting' }),
      el('dd', { dataset: { queue: 'oldest' }, text: q.oldestQueuedAgeMs === null ? 'none queued' : duration(q.oldestQueuedAgeMs) }),
    );
    fill(chart, plot(samples, `Queued runs, read every ${QUEUE_EVERY_MS / 1000} s while this page is open`, (v) => String(v), undefined, 'now'));
  };
  show(first);
  const timer = setInterval(() => {
    if (document.hidden) return;
    readQueue().then(show, () => {});
  }, QUEUE_EVERY_MS);
  addEventListener('pagehide', () => clearInterval(timer), { once: true });
  return section('Queue', facts, chart);
}

/** A line over `values` (one per minute), scaled to the largest (or `max`), with its peak and last value. */
function plot(values, label, format, max, lastLabel = 'last minute') {
  const top = max ?? Math.max(1, ...values);
  const step = values.length > 1 ? W / (values.length - 1) : 0;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(H - (v / top) * (H - 6) - 3).toFixed(1)}`).join(' ');
  const last = values.at(-1) ?? 0;
  const peak = Math.max(0, ...values);
  return el(
    'figure',
    { class: 'plot' },
    svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': `${label}: peak ${format(peak)}, ${lastLabel} ${format(last)}` }, svg('polyline', { points, class: 'line' }), values.length ? svg('circle', { cx: ((values.length - 1) * step).toFixed(1), cy: (H - (last / top) * (H - 6) - 3).toFixed(1), r: 3, class: 'dot' }) : null, svg('line', { x1: 0, y1: H - 1, x2: W, y2: H - 1, class: 'axis' })),
    el('figcaption', { text: `Peak ${format(peak)} · ${lastLabel} ${format(last)}` }),
  );
}

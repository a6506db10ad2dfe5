// What every console page shares: the page's facts (from the shell's data attributes), calls to the v2 API with
// the session cookie, small DOM builders, paging on nextCursor, and formatting.

export const page = document.body.dataset;
export const canWrite = page.canWrite === 'true';
export const main = document.getElementById('main');

/** An API error in the documented shape, with the HTTP status. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `The server answered ${status}.`);
    this.status = status;
    this.code = body?.error?.code ?? 'ERROR';
    this.details = body?.error?.details;
  }
}

/** API calls not yet answered: the page's data is drawn once its script has run and none is left (see whenLoaded). */
let inflight = 0;
let settledWaiters = [];

/** Calls the v2 API as the signed-in user; changes carry the page's CSRF token. Answers the parsed body. */
export async function api(method, path, body, init = {}) {
  inflight++;
  try {
    return await call(method, path, body, init);
  } finally {
    // The caller's continuation (which draws the answer) runs before this macrotask looks at the count.
    if (--inflight === 0) setTimeout(() => inflight === 0 && settledWaiters.splice(0).forEach((w) => w()));
  }
}

/** Resolves once no API call is outstanding (the page's first data has been drawn); at once when none is. */
export function whenLoaded() {
  return new Promise((resolve) => (inflight === 0 ? setTimeout(() => (inflight === 0 ? resolve() : settledWaiters.push(resolve))) : settledWaiters.push(resolve)));
}

async function call(method, path, body, init) {
  const headers = { accept: 'application/json', ...(init.headers ?? {}) };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = page.csrf;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', signal: init.signal });
  if (init.raw) return res;
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (res.status === 401) {
    location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
    throw new ApiError(401, parsed);
  }
  if (res.status >= 300) throw new ApiError(res.status, parsed);
  return parsed;
}

/** `?a=1&b=2` from an object, leaving out undefined, null and empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** An element: `attrs` sets properties (`on*` as listeners, `class`, `dataset`, aria-/data- attributes). */
export function el(tag, attrs = {}, ...children) {
  const node = tag.startsWith('svg:') ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'class') node.setAttribute('class', v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'text') node.textContent = v;
    else if (k.includes('-') || node instanceof SVGElement || k === 'for' || k === 'role' || k === 'scope') node.setAttribute(k, v === true ? '' : String(v));
    else node[k] = v;
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export const svg = (tag, attrs, ...children) => el(`svg:${tag}`, attrs, ...children);

/** Replaces the children of `node`. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** A status line (role=status) the page updates; `error` marks it as an error. */
export function statusLine(text = '') {
  const p = el('p', { class: 'status', role: 'status', text });
  p.set = (t, error = false) => {
    p.textContent = t;
    p.classList.toggle('error', error);
  };
  return p;
}

/** Shows an error in `where` (the page's main area by default) instead of throwing it away. */
export function showError(err, where = main) {
  const msg = err instanceof ApiError && err.status === 404 ? 'Not found: it does not exist, was deleted, or you cannot see it.' : err.message;
  fill(where, el('div', { class: 'panel' }, el('h1', { text: err instanceof ApiError && err.status === 404 ? 'Not found' : 'Something went wrong' }), el('p', { class: 'error', role: 'alert', text: msg })));
}

/**
 * A paged list: `load(cursor)` answers `{ data, nextCursor }`; `render(items)` answers nodes appended to `into`.
 * A "Load more" button fetches the next page; `reset()` starts over (after a filter changes).
 */
export function pager(into, load, render, { moreLabel = 'Load more', empty = 'Nothing here yet.' } = {}) {
  const status = statusLine();
  const more = el('button', { type: 'button', class: 'secondary', text: moreLabel, hidden: true });
  let cursor = null;
  let generation = 0;
  let count = 0;
  async function next() {
    const mine = generation;
    more.disabled = true;
    status.set('Loading…');
    try {
      const r = await load(cursor);
      if (mine !== generation) return;
      cursor = r.nextCursor ?? null;
      count += r.data.length;
      append(into, render(r.data));
      status.set(count === 0 ? empty : '');
      more.hidden = !cursor;
    } catch (err) {
      if (mine === generation) status.set(err.message, true);
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', next);
  return {
    controls: el('div', { class: 'pager' }, status, more),
    reset() {
      generation++;
      cursor = null;
      count = 0;
      into.replaceChildren();
      return next();
    },
  };
}

export const wsPath = (...parts) => `/workspace/${encodeURIComponent(page.workspaceId)}${parts.map((p) => `/${encodeURIComponent(p)}`).join('')}`;

/** The path of a `webUrl` (the server's BASE_URL may name another host than the one the browser uses). */
export const localPath = (url) => {
  try {
    return new URL(url, location.origin).pathname;
  } catch {
    return url;
  }
};

export function when(iso) {
  if (!iso) return '—';
  return `${iso.slice(0, 19).replace('T', ' ')} UTC`;
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export const money = (n) => (typeof n === 'number' ? `$${n.toFixed(n < 0.01 && n > 0 ? 5 : 4)}` : '—');

export function json(v) {
  try {
    return JSON.stringify(v, null, 2) ?? 'undefined';
  } catch {
    return String(v);
  }
}

/** A small table: `columns` are [header, cell(item) → node or text]. */
export function table(caption, columns, rows = []) {
  const tbody = el('tbody');
  const t = el(
    'table',
    { class: 'grid' },
    el('caption', { class: caption.visible ? '' : 'visually-hidden', text: caption.text ?? caption }),
    el('thead', {}, el('tr', {}, columns.map(([h]) => el('th', { scope: 'col', text: h })))),
    tbody,
  );
  t.rowsOf = (items) => items.map((item) => el('tr', {}, columns.map(([, cell]) => el('td', {}, cell(item)))));
  append(tbody, t.rowsOf(rows));
  t.body = tbody;
  return t;
}

export const badge = (text, kind = text) => el('span', { class: `badge badge-${String(kind).replace(/[^a-z0-9_-]/gi, '')}`, text });

export function heading(text, sub) {
  return el('header', { class: 'page-head' }, el('h1', { text }), sub ? el('p', { class: 'sub' }, sub) : null);
}

export function section(title, ...children) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return el('section', { class: 'panel', 'aria-labelledby': id }, el('h2', { id, text: title }), ...children);
}

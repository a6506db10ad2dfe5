// The list of the user's workspaces, and a workspace's home: workflows by folder, tables, knowledge bases, files.
import { api, el, fill, main, pager, page, query, section, table, heading, localPath, when, badge, wsPath } from './core.js';

const PAGE_SIZE = 50;
const link = (text, url) => el('a', { href: localPath(url), text });

export async function workspacesPage() {
  const list = el('ul', { class: 'plain-list' });
  const p = pager(
    list,
    (cursor) => api('GET', `/api/v2/workspaces${query({ limit: PAGE_SIZE, cursor })}`),
    (items) => items.map((w) => el('li', {}, el('a', { href: `/workspace/${encodeURIComponent(w.id)}`, text: w.name }))),
    { empty: 'You are not a member of any workspace.' },
  );
  fill(main, heading('Your workspaces'), section('Workspaces', list, p.controls));
  await p.reset();
}

export async function homePage() {
  const name = document.getElementById('nav-workspace')?.textContent ?? 'Workspace';
  fill(main, heading(name, ['Role: ', badge(page.role)]));
  main.append(workflowsSection(), tablesSection(), knowledgeSection(), filesSection());
}

function workflowsSection() {
  const folder = el('select', { id: 'wf-folder' }, el('option', { value: '', text: 'All folders' }));
  const search = el('input', { id: 'wf-search', type: 'search', placeholder: 'Name contains…' });
  const t = table('Workflows', [
    ['Name', (w) => link(w.name, w.webUrl)],
    ['Folder', (w) => w.folderPath ?? '/'],
    ['Deployed', (w) => (w.isDeployed ? badge('deployed') : badge('draft'))],
    ['Runs', (w) => String(w.runCount)],
    ['Last run', (w) => when(w.lastRunAt)],
    ['Updated', (w) => when(w.updatedAt)],
  ]);
  const p = pager(
    t.body,
    (cursor) => api('GET', `/api/v2/workflows${query({ workspaceId: page.workspaceId, folderPath: folder.value, search: search.value.trim(), limit: PAGE_SIZE, cursor })}`),
    (items) => t.rowsOf(items),
    { empty: 'No workflows match.', moreLabel: 'More workflows' },
  );
  // Folders fill the filter; a workspace with very many folders offers the first 100 (the API's largest page).
  api('GET', `/api/v2/workflows/folders${query({ workspaceId: page.workspaceId, limit: 100 })}`)
    .then((r) => folder.append(...r.data.map((f) => el('option', { value: f.path, text: f.path }))))
    .catch(() => {});
  let timer;
  folder.addEventListener('change', () => p.reset());
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => p.reset(), 250);
  });
  const s = section(
    'Workflows',
    el('div', { class: 'filters' }, el('label', { for: 'wf-folder', text: 'Folder' }), folder, el('label', { for: 'wf-search', text: 'Search' }), search),
    el('div', { class: 'scroll' }, t),
    p.controls,
  );
  p.reset();
  return s;
}

function simpleSection(title, path, columns, empty) {
  const t = table(title, columns);
  const p = pager(t.body, (cursor) => api('GET', `${path}${query({ workspaceId: page.workspaceId, limit: PAGE_SIZE, cursor })}`), (items) => t.rowsOf(items), { empty, moreLabel: `More ${title.toLowerCase()}` });
  p.reset();
  return section(title, el('div', { class: 'scroll' }, t), p.controls);
}

const tablesSection = () =>
  simpleSection('Tables', '/api/v2/tables', [
    ['Name', (x) => link(x.name, x.webUrl)],
    ['Rows', (x) => String(x.rowCount)],
    ['Folder', (x) => x.folderPath ?? '/'],
    ['Updated', (x) => when(x.updatedAt)],
  ], 'No tables.');

const knowledgeSection = () =>
  simpleSection('Knowledge bases', '/api/v2/knowledge', [
    ['Name', (x) => link(x.name, x.webUrl)],
    ['Documents', (x) => String(x.docCount ?? x.documentCount ?? '—')],
    ['Updated', (x) => when(x.updatedAt)],
  ], 'No knowledge bases.');

const filesSection = () =>
  simpleSection('Files', '/api/v2/files', [
    ['Name', (x) => link(x.name, x.webUrl)],
    ['Folder', (x) => x.folderPath ?? '/'],
    ['Size', (x) => `${x.size} B`],
    ['Updated', (x) => when(x.updatedAt)],
  ], 'No files.');

export { wsPath };

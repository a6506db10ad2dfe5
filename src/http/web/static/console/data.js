// Data pages: a table as a grid (the query engine's filter and sort, paged on its keyset cursor; writers edit a
// cell in place), a knowledge base's documents with their processing state and a search showing each hit's
// scores, and a file's facts with its download.
import { api, badge, canWrite, el, fill, heading, json, main, page, pager, query, section, statusLine, table, when, showError } from './core.js';

const ROW_PAGE = 50;
const SYSTEM_FIELDS = ['createdAt', 'updatedAt'];

export async function tablePage() {
  let t;
  try {
    t = (await api('GET', `/api/v2/tables/${encodeURIComponent(page.tableId)}${query({ workspaceId: page.workspaceId })}`)).data;
  } catch (err) {
    return showError(err);
  }
  document.title = `${t.name} · Console`;
  const columns = t.schema?.columns ?? [];
  const field = el('select', { id: 'filter-field' }, columns.map((c) => el('option', { value: c.name, text: c.name })));
  const op = el('select', { id: 'filter-op' }, ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'contains', 'ncontains'].map((o) => el('option', { value: o, text: o })));
  const value = el('input', { id: 'filter-value', type: 'text', placeholder: 'value (empty: no filter)' });
  const sortField = el('select', { id: 'sort-field' }, el('option', { value: '', text: 'Table order' }), [...columns.map((c) => c.name), ...SYSTEM_FIELDS].map((n) => el('option', { value: n, text: n })));
  const sortDir = el('select', { id: 'sort-dir' }, el('option', { value: 'asc', text: 'ascending' }), el('option', { value: 'desc', text: 'descending' }));
  const status = statusLine();
  const grid = table({ text: `Rows of ${t.name}` }, [
    ...columns.map((c) => [c.name, (row) => cell(row, c, status)]),
    ['Updated', (row) => when(row.updatedAt)],
  ]);
  const typed = (c, raw) => {
    const col = columns.find((x) => x.name === c);
    if (col?.type === 'number') return Number(raw);
    if (col?.type === 'boolean') return raw === 'true';
    return raw;
  };
  const request = (cursor) => {
    const body = { workspaceId: page.workspaceId, limit: ROW_PAGE };
    if (value.value.trim() !== '' && field.value) body.predicate = { field: field.value, op: op.value, value: typed(field.value, value.value.trim()) };
    if (sortField.value) body.sort = [{ field: sortField.value, direction: sortDir.value }];
    if (cursor) body.cursor = cursor;
    return api('POST', `/api/v2/tables/${encodeURIComponent(page.tableId)}/query`, body);
  };
  const p = pager(grid.body, request, (rows) => grid.rowsOf(rows), { empty: 'No rows match.', moreLabel: 'More rows' });
  const form = el(
    'form',
    { class: 'filters', onsubmit: (e) => (e.preventDefault(), p.reset()) },
    el('label', { for: 'filter-field', text: 'Filter' }), field,
    el('label', { for: 'filter-op', class: 'visually-hidden', text: 'Operator' }), op,
    el('label', { for: 'filter-value', class: 'visually-hidden', text: 'Value' }), value,
    el('label', { for: 'sort-field', text: 'Sort' }), sortField,
    el('label', { for: 'sort-dir', class: 'visually-hidden', text: 'Direction' }), sortDir,
    el('button', { type: 'submit', text: 'Apply' }),
  );
  fill(main, heading(t.name, [`${t.rowCount} rows · ${columns.length} columns`, canWrite ? ' · select a cell to edit it' : '']), section('Rows', form, status, el('div', { class: 'scroll' }, grid), p.controls));
  p.reset();
}

/** A cell: text for readers; for writers a button that turns into an input, saved on Enter or when left. */
function cell(row, column, status) {
  const shown = (v) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  if (!canWrite) return shown(row.data[column.name]);
  const label = () => [shown(row.data[column.name]) || '∅', el('span', { class: 'visually-hidden', text: ` (edit ${column.name})` })];
  const button = el('button', { type: 'button', class: 'cell' }, label());
  button.addEventListener('click', () => {
    const input = el('input', { type: column.type === 'number' ? 'number' : 'text', value: shown(row.data[column.name]), 'aria-label': `${column.name} of row ${row.id}`, class: 'cell-input' });
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      if (save && input.value !== shown(row.data[column.name])) {
        const raw = input.value;
        const v = raw === '' ? null : column.type === 'number' ? Number(raw) : column.type === 'boolean' ? raw === 'true' : column.type === 'json' ? JSON.parse(raw) : raw;
        try {
          const r = await api('PATCH', `/api/v2/tables/${encodeURIComponent(page.tableId)}/rows/${encodeURIComponent(row.id)}`, { workspaceId: page.workspaceId, data: { [column.name]: v } });
          row.data = r.data?.data ?? { ...row.data, [column.name]: v };
          status.set(`Saved ${column.name}.`);
        } catch (err) {
          status.set(err.message, true);
        }
      }
      fill(button, label());
      input.replaceWith(button);
      button.focus();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') finish(true);
      if (e.key === 'Escape') finish(false);
    });
    input.addEventListener('blur', () => finish(true));
    button.replaceWith(input);
    input.focus();
    input.select();
  });
  return button;
}

export async function knowledgePage() {
  let kb;
  try {
    kb = (await api('GET', `/api/v2/knowledge/${encodeURIComponent(page.knowledgeBaseId)}${query({ workspaceId: page.workspaceId })}`)).data;
  } catch (err) {
    return showError(err);
  }
  document.title = `${kb.name} · Console`;
  const docs = table('Documents', [
    ['Document', (d) => d.filename],
    ['State', (d) => badge(d.processingStatus)],
    ['Chunks', (d) => String(d.chunkCount)],
    ['Tokens', (d) => String(d.tokenCount)],
    ['Enabled', (d) => (d.enabled ? 'yes' : badge('disabled'))],
    ['Added', (d) => when(d.createdAt ?? d.uploadedAt)],
  ]);
  const p = pager(docs.body, (cursor) => api('GET', `/api/v2/knowledge/${encodeURIComponent(page.knowledgeBaseId)}/documents${query({ workspaceId: page.workspaceId, limit: 50, cursor })}`), (items) => docs.rowsOf(items), { empty: 'No documents.', moreLabel: 'More documents' });
  const q = el('input', { id: 'kb-query', type: 'search', required: true, placeholder: 'What are you looking for?' });
  const mode = el('select', { id: 'kb-mode' }, el('option', { value: 'hybrid', text: 'hybrid' }), el('option', { value: 'vector', text: 'vector' }));
  const status = statusLine();
  const hits = el('ol', { class: 'hits' });
  const form = el(
    'form',
    { class: 'filters', role: 'search' },
    el('label', { for: 'kb-query', text: 'Search' }), q,
    el('label', { for: 'kb-mode', text: 'Mode' }), mode,
    el('button', { type: 'submit', text: 'Search' }),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    status.set('Searching…');
    hits.replaceChildren();
    try {
      const r = (await api('POST', '/api/v2/knowledge/search', { workspaceId: page.workspaceId, knowledgeBaseIds: page.knowledgeBaseId, query: q.value, topK: 10, searchMode: mode.value })).data;
      status.set(`${r.totalResults} hits (${mode.value}).`);
      hits.append(
        ...r.results.map((h) =>
          el(
            'li',
            { class: 'hit' },
            el('p', { class: 'hit-head' }, el('strong', { text: `#${h.rank} ${h.documentName ?? h.documentId}` }), ` · chunk ${h.chunkIndex}`),
            el('p', { class: 'scores' }, score('rank score', h.rankScore), score('vector similarity', h.similarity), h.rerankerScore !== undefined && h.rerankerScore !== null ? score('reranker', h.rerankerScore) : null),
            el('p', { class: 'hit-text', text: h.content.length > 400 ? `${h.content.slice(0, 400)}…` : h.content }),
          ),
        ),
      );
    } catch (err) {
      status.set(err.message, true);
    }
  });
  fill(
    main,
    heading(kb.name, [kb.description ?? '', ` · ${kb.docCount ?? 0} documents · ${kb.embeddingModel ?? ''}`]),
    section('Search', form, status, hits),
    section('Documents', el('div', { class: 'scroll' }, docs), p.controls),
  );
  p.reset();
}

const score = (label, v) => el('span', { class: 'score' }, `${label} `, el('strong', { text: typeof v === 'number' ? v.toFixed(4) : '—' }));

export async function filePage() {
  let f;
  try {
    // GET /api/v2/files/{id} is the download; the facts are its metadata.
    f = (await api('GET', `/api/v2/files/${encodeURIComponent(page.fileId)}/metadata${query({ workspaceId: page.workspaceId })}`)).data;
  } catch (err) {
    return showError(err);
  }
  document.title = `${f.name} · Console`;
  fill(
    main,
    heading(f.name, [`${f.type} · ${f.size} bytes`]),
    section(
      'File',
      el('dl', { class: 'facts' }, [['Folder', f.folderPath ?? '/'], ['Uploaded by', f.uploadedByEmail ?? '—'], ['Uploaded', when(f.uploadedAt)], ['Updated', when(f.updatedAt)]].map(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })])),
      el('p', {}, el('a', { class: 'button', href: `/api/v2/files/${encodeURIComponent(f.id)}${query({ workspaceId: page.workspaceId })}`, download: f.name, text: 'Download' })),
    ),
  );
}

export { json };

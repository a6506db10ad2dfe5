// Tools over the workspace's own data: query and insert table rows, read and create text files, search
// knowledge bases. They call the domain services directly (no HTTP) and only ever reach the workspace of the
// call context: every lookup is by (workspaceId, id), so another workspace's id fails as "not found".
import { Readable } from 'node:stream';
import type { Config } from '../config.ts';
import type { BlobStore } from '../files/blob-store.ts';
import { checkFileName, folderPathOf, mediaTypeFor, vfsPath } from '../files/names.ts';
import { actorOf, assertNameFree, assertStorageFits, insertNewFile, loadFile, requireFolder } from '../files/service.ts';
import { readPrefix, textKind } from '../files/text.ts';
import type { ContentWorkers } from '../content/index.ts';
import { runSearch } from '../knowledge/search.ts';
import type { KnowledgeService } from '../knowledge/service.ts';
import type { Store } from '../store/index.ts';
import type { StoredRow } from '../store/table-rows.ts';
import type { TagDefinitionRecord } from '../store/knowledge-bases.ts';
import { parsePredicate } from '../tables/predicate.ts';
import { appendKeys, assertRowRoom, assertUniqueFree, assertUnlocked, loadTable, newRowId, rowView, storedCells, uniqueViolation } from '../tables/service.ts';
import type { Tool, ToolCallContext, ToolProvider } from './registry.ts';

export interface WorkspaceDataDeps {
  store: Store;
  blobs: BlobStore;
  config: Config;
  knowledge: KnowledgeService;
  content: ContentWorkers;
}

const MAX_QUERY_ROWS = 1000;
/** Most bytes a file written by a tool may hold (the same bound as inline content through the API). */
const MAX_WRITE_BYTES = 5 * 1024 * 1024;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Domain errors carry a path (`predicate.x`) but no context; name the input field they came from. */
function fail(prefix: string, err: unknown): never {
  throw new Error(`${prefix}: ${message(err)}`, { cause: err });
}

async function workspaceOf(store: Store, call: ToolCallContext) {
  const workspace = await store.workspaces.get(call.workspaceId);
  if (!workspace) throw new Error(`Workspace ${call.workspaceId} not found`);
  return workspace;
}

export function workspaceDataTools(deps: WorkspaceDataDeps): Tool[] {
  const { store, blobs, config, knowledge, content } = deps;

  const tableQuery: Tool = {
    id: 'table_query_rows',
    name: 'Query table rows',
    description: "Reads rows of one of the workspace's tables, optionally filtered by a predicate (the same filter language as the table query API).",
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      properties: {
        tableId: { type: 'string', minLength: 1, description: 'The table to read' },
        filter: { type: 'object', description: 'A predicate, e.g. {"field": "status", "op": "eq", "value": "open"}' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_QUERY_ROWS, default: 100, description: 'Most rows to return' },
      },
      required: ['tableId'],
      additionalProperties: false,
    },
    outputs: {
      rows: { type: 'array', description: 'The matching rows ({id, data, createdAt, updatedAt})' },
      count: { type: 'number', description: 'How many rows were returned' },
    },
    async execute(input, call) {
      const t = await loadTable(store, call.workspaceId, String(input.tableId)).catch((e) => fail('Table', e));
      let where = null;
      if (input.filter !== undefined) {
        try {
          where = parsePredicate(t.columns, input.filter, ['filter']);
        } catch (e) {
          fail('Invalid filter', e);
        }
      }
      const limit = typeof input.limit === 'number' ? input.limit : 100;
      const found = await store.tableRows.query(t.id, t.columns, { where, sort: [], limit, after: null, offset: 0 });
      const rows = found.map((r) => rowView(t.columns, r));
      return { rows, count: rows.length };
    },
  };

  const tableInsert: Tool = {
    id: 'table_insert_row',
    name: 'Insert table row',
    description: "Appends one row to one of the workspace's tables; the row's cells are checked against the table's columns.",
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      properties: {
        tableId: { type: 'string', minLength: 1, description: 'The table to write' },
        data: { type: 'object', description: 'Cell values by column name' },
      },
      required: ['tableId', 'data'],
      additionalProperties: false,
    },
    outputs: { row: { type: 'object', description: 'The inserted row ({id, data, createdAt, updatedAt})' } },
    async execute(input, call) {
      const data = input.data as Record<string, unknown>;
      return store.transaction(async (tx) => {
        const t = await loadTable(tx, call.workspaceId, String(input.tableId)).catch((e) => fail('Table', e));
        try {
          assertUnlocked(t, 'insert');
          assertRowRoom(t, 1);
        } catch (e) {
          fail('Cannot insert', e);
        }
        let cells;
        try {
          cells = storedCells(t.columns, data, 'insert', ['data'], config.tables.maxRowBytes);
        } catch (e) {
          fail('Invalid row', e);
        }
        const [key] = await appendKeys(tx, t.id, 1);
        const now = new Date().toISOString();
        const row: StoredRow = { id: newRowId(), orderKey: key!, createdAt: now, updatedAt: now, cells };
        await assertUniqueFree(tx, t, row.cells, null).catch((e) => fail('Cannot insert', e));
        try {
          await tx.tableRows.insert(t.id, t.columns, [row]);
        } catch (e) {
          try {
            uniqueViolation(e, t);
          } catch (u) {
            fail('Cannot insert', u);
          }
        }
        await tx.userTables.addRowCount(t.id, 1);
        return { row: rowView(t.columns, row) };
      });
    },
  };

  const fileRead: Tool = {
    id: 'file_read_text',
    name: 'Read file text',
    description: "Reads the text of one of the workspace's files (text formats as they are; HTML, PDF and DOCX as extracted text).",
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      properties: { fileId: { type: 'string', minLength: 1, description: 'The file to read' } },
      required: ['fileId'],
      additionalProperties: false,
    },
    outputs: {
      fileId: { type: 'string' },
      name: { type: 'string' },
      path: { type: 'string' },
      text: { type: 'string', description: 'The text content' },
      truncated: { type: 'boolean', description: 'True when only the first part of a large file was read' },
    },
    async execute(input, call) {
      const file = await loadFile(store, call.workspaceId, String(input.fileId)).catch((e) => fail('File', e));
      const toRead = Math.min(file.size, config.files.textMaxBytes);
      const bytes = await readPrefix(blobs.read(file.blobKey), toRead);
      const complete = toRead === file.size;
      const kind = textKind(file.contentType, file.name);
      if (kind === 'unsupported') throw new Error(`File ${file.name} (${file.contentType}) has no text content to read`);
      const extracted = await content.fileText(kind, bytes, complete);
      return { fileId: file.id, name: file.name, path: vfsPath(file.folderPath, file.name), text: extracted.text, truncated: !complete };
    },
  };

  const fileWrite: Tool = {
    id: 'file_write_text',
    name: 'Create text file',
    description: 'Creates a new text file in the workspace (in an existing folder; the name must be free).',
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 255, description: 'File name, e.g. notes.md' },
        content: { type: 'string', description: 'The text content (UTF-8)' },
        folderPath: { type: 'string', description: 'An existing folder, e.g. /reports (default: the root)' },
        contentType: { type: 'string', description: 'Media type (default: guessed from the name)' },
      },
      required: ['name', 'content'],
      additionalProperties: false,
    },
    outputs: {
      fileId: { type: 'string' },
      name: { type: 'string' },
      path: { type: 'string' },
      size: { type: 'number', description: 'Bytes written' },
    },
    async execute(input, call) {
      const workspace = await workspaceOf(store, call);
      let name: string;
      let folderPath: string;
      try {
        name = checkFileName(String(input.name));
        folderPath = folderPathOf(input.folderPath as string | undefined);
      } catch (e) {
        fail('Invalid file name', e);
      }
      const bytes = Buffer.from(String(input.content), 'utf8');
      if (bytes.length > MAX_WRITE_BYTES) throw new Error(`The content may be at most ${MAX_WRITE_BYTES} bytes`);
      const contentType = typeof input.contentType === 'string' ? input.contentType : mediaTypeFor(name);
      await requireFolder(store, workspace.id, folderPath).catch((e) => fail('Folder', e));
      await assertNameFree(store, workspace.id, folderPath, name).catch((e) => fail('Cannot create', e));
      const blob = await blobs.write(Readable.from([bytes]), { expectedSize: bytes.length });
      const file = await store
        .transaction(async (tx) => {
          await requireFolder(tx, workspace.id, folderPath);
          await assertNameFree(tx, workspace.id, folderPath, name);
          await assertStorageFits(tx, workspace, config.files, blob.size);
          const actor = call.userId ? await actorOf(tx, call.userId) : { id: '', email: '' };
          return insertNewFile(tx, { workspaceId: workspace.id, folderPath, name, contentType, blob, actor, source: 'api', now: new Date().toISOString() });
        })
        .catch((e) => fail('Cannot create', e));
      return { fileId: file.id, name: file.name, path: vfsPath(file.folderPath, file.name), size: file.size };
    },
  };

  const knowledgeSearch: Tool = {
    id: 'knowledge_search',
    name: 'Search knowledge base',
    description: "Finds the passages of the workspace's knowledge bases closest to a query (hybrid vector and full-text search).",
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      properties: {
        knowledgeBaseId: { type: 'string', minLength: 1, description: 'The knowledge base to search' },
        query: { type: 'string', minLength: 1, description: 'What to look for' },
        topK: { type: 'integer', minimum: 1, maximum: 100, default: 10, description: 'Most results' },
      },
      required: ['knowledgeBaseId', 'query'],
      additionalProperties: false,
    },
    outputs: {
      results: { type: 'array', description: 'Passages, best first ({documentId, documentName, content, similarity, rank})' },
      totalResults: { type: 'number' },
    },
    async execute(input, call) {
      const kb = await store.knowledgeBases.get(String(input.knowledgeBaseId));
      if (!kb || kb.workspaceId !== call.workspaceId || kb.deletedAt) throw new Error(`Knowledge base ${String(input.knowledgeBaseId)} not found`);
      const provider = knowledge.provider;
      if (kb.embeddingModel !== provider.model || kb.embeddingDimension !== provider.dimension) {
        throw new Error(`Knowledge base ${kb.id} is embedded with ${kb.embeddingModel} (${kb.embeddingDimension}) but this server embeds queries with ${provider.model} (${provider.dimension})`);
      }
      const query = String(input.query).trim();
      if (!query) throw new Error('query must not be blank');
      const topK = typeof input.topK === 'number' ? input.topK : 10;
      const defs = new Map<string, TagDefinitionRecord[]>([[kb.id, await store.knowledgeBases.tags(kb.id)]]);
      const { hits } = await runSearch(store, knowledge, { bases: [kb], query, topK, filters: [], mode: config.knowledge.defaultSearchMode, defs });
      const results = hits.slice(0, topK);
      return { results, totalResults: results.length };
    },
  };

  return [tableQuery, tableInsert, fileRead, fileWrite, knowledgeSearch];
}

/** The provider the registry lists: the same tools in every workspace (each call is scoped by its context). */
export function workspaceDataToolProvider(deps: WorkspaceDataDeps): ToolProvider {
  const tools = workspaceDataTools(deps);
  return {
    name: 'workspace-data',
    list: async () => tools,
    get: async (_workspaceId, toolId) => tools.find((t) => t.id === toolId),
  };
}

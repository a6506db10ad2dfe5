// The generated client must accept a realistic call of every operation that takes a request body, without casts.
// The samples are checked by `npm run typecheck` (a body the generated types refuse, e.g. a free-form object typed
// as `Record<string, never>`, fails it); at run time every operation with a body in generated/operations.ts must
// have a sample, and each sample must reach that operation's method and path with its body.
import { describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '../generated/client.ts';
import { OPERATIONS } from '../generated/operations.ts';

const WS = '7b0c5f0e-1d0a-4d7e-9a55-0a3c2b1d4e5f';
const WF = '3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
const FILE = 'file_01';
const wf = { params: { path: { workflowId: WF } } };
const file = { params: { path: { fileId: FILE } } };
const TBL = 'tbl_0123456789abcdef0123456789abcdef';
const tbl = { params: { path: { tableId: TBL } } };
const KB = 'kb_01';
const kbp = { params: { path: { knowledgeBaseId: KB } } };
const docp = { params: { path: { knowledgeBaseId: KB, documentId: 'kd_1' } } };
const wsp = { params: { path: { workspaceId: WS } } };
const WS2 = '0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a';
const conp = { params: { path: { knowledgeBaseId: KB, connectorId: 'kcn_1' } } };

const block = {
  id: 'start',
  type: 'start_trigger',
  name: 'Start',
  position: { x: 0, y: 0 },
  subBlocks: { inputFormat: { id: 'inputFormat', type: 'input-format', value: [{ name: 'city', type: 'string' }] } },
  outputs: { city: 'string', meta: { nested: true } },
  enabled: true,
};

/** One realistic call per operation with a body, keyed by operationId. */
type Sample = (api: ApiClient) => Promise<unknown>;
const samples = {
  createWorkflow: (api) => api.POST('/api/v2/workflows', { body: { workspaceId: WS, name: 'Weather', description: null, folderPath: '/Ops/Daily' } }),
  moveWorkflows: (api) => api.POST('/api/v2/workflows/move', { body: { workspaceId: WS, workflowIds: [WF], folderPath: '/Archive' } }),
  importWorkflow: (api) =>
    api.POST('/api/v2/workflows/import', {
      body: { workspaceId: WS, workflow: { version: '1.0', state: { blocks: {}, edges: [] } }, name: 'Imported', mappings: [{ from: 'a', to: 'b' }] },
    }),
  previewWorkflowImport: (api) => api.POST('/api/v2/workflows/import/preview', { body: { workspaceId: WS, workflow: '{"version":"1.0"}', folderPath: '/Imports' } }),
  createWorkflowFolder: (api) => api.POST('/api/v2/workflows/folders', { body: { workspaceId: WS, path: '/Ops/Daily' } }),
  relocateWorkflowFolder: (api) => api.PATCH('/api/v2/workflows/folders', { body: { workspaceId: WS, path: '/Ops', destinationPath: '/Team/Ops' } }),
  updateWorkflow: (api) => api.PATCH('/api/v2/workflows/{workflowId}', { ...wf, body: { name: 'Weather v2', description: 'Daily forecast' } }),
  duplicateWorkflow: (api) => api.POST('/api/v2/workflows/{workflowId}/duplicate', { ...wf, body: { name: 'Weather (copy)' } }),
  replaceWorkflowState: (api) =>
    api.PUT('/api/v2/workflows/{workflowId}/state', {
      ...wf,
      body: { blocks: { start: block }, edges: [], loops: { legacy: { id: 'legacy', nodes: [] } }, parallels: {} },
    }),
  applyWorkflowVariables: (api) =>
    api.PATCH('/api/v2/workflows/{workflowId}/variables', {
      ...wf,
      body: { operations: [{ operation: 'add', name: 'limits', type: 'object', value: { max: 3, tags: ['a'] } }, { operation: 'delete', name: 'old' }] },
    }),
  applyWorkflowOperations: (api) =>
    api.POST('/api/v2/workflows/{workflowId}/operations', {
      ...wf,
      body: {
        operations: [{ operation_type: 'add', block_id: 'fn1', params: { type: 'function', name: 'Shape', inputs: { code: 'return { ok: true }' } } }],
        atomic: true,
        setBlockEnabled: [{ block_id: 'fn1', enabled: false }],
      },
    }),
  deployWorkflow: (api) => api.POST('/api/v2/workflows/{workflowId}/deploy', { ...wf, body: { name: 'v3', description: 'Adds retries' } }),
  updateWorkflowPublicApi: (api) => api.PATCH('/api/v2/workflows/{workflowId}/deployment', { ...wf, body: { isPublicApi: true } }),
  rollbackWorkflow: (api) => api.POST('/api/v2/workflows/{workflowId}/rollback', { ...wf, body: { version: 2 } }),
  updateWorkflowVersion: (api) => api.PATCH('/api/v2/workflows/{workflowId}/versions/{version}', { params: { path: { workflowId: WF, version: 2 } }, body: { name: 'stable' } }),
  executeWorkflow: (api) =>
    api.POST('/api/v2/workflows/{workflowId}/execute', {
      ...wf,
      body: { input: { city: 'Lyon', days: 3, units: { temp: 'C' }, tags: ['a', 'b'], when: null }, selectedOutputs: ['forecast.summary'] },
    }),
  resumeWorkflow: (api) =>
    api.POST('/api/v2/workflows/{workflowId}/runs/{runId}/resume', { params: { path: { workflowId: WF, runId: 'run-1' } }, body: { contextId: 'approval', input: { approved: true, note: 'ok' } } }),
  legacyExecuteWorkflow: (api) => api.POST('/api/workflows/{workflowId}/execute', { ...wf, body: { city: 'Lyon', options: { days: 3 } } }),
  createFileUpload: (api) => api.POST('/api/v2/files/uploads', { body: { workspaceId: WS, name: 'report.pdf', contentType: 'application/pdf', size: 52_000, folderPath: '/Reports' } }),
  createFileUploadPartUrls: (api) => api.POST('/api/v2/files/uploads/{uploadId}/parts', { params: { path: { uploadId: 'up_1' }, query: { workspaceId: WS }, header: { 'upload-token': 'tok' } }, body: { partNumbers: [1, 2, 3] } }),
  putFileUploadPart: (api) =>
    api.PUT('/transfers/files/{uploadId}/parts/{partNumber}', {
      params: { path: { uploadId: 'up_1', partNumber: 1 }, query: { expires: 1_900_000_000, signature: 'sig' } },
      body: 'raw bytes of the part',
      bodySerializer: (b: unknown) => b as string,
    }),
  createFile: (api) => api.POST('/api/v2/files', { body: { workspaceId: WS, name: 'notes.md', content: '# Notes', encoding: 'utf-8' } }),
  renameFile: (api) => api.PATCH('/api/v2/files/{fileId}', { ...file, body: { workspaceId: WS, name: 'notes-2024.md' } }),
  updateFileContent: (api) => api.PUT('/api/v2/files/{fileId}/content', { ...file, body: { workspaceId: WS, content: 'aGVsbG8=', encoding: 'base64' } }),
  editFileContent: (api) =>
    api.PATCH('/api/v2/files/{fileId}/content', { ...file, body: { workspaceId: WS, edit: { mode: 'search_replace', search: 'draft', content: 'final', replaceAll: true } } }),
  restoreFile: (api) => api.POST('/api/v2/files/{fileId}/restore', { ...file, body: { workspaceId: WS } }),
  unzipFile: (api) => api.POST('/api/v2/files/{fileId}/unzip', { ...file, body: { workspaceId: WS } }),
  upsertFileShare: (api) => api.PATCH('/api/v2/files/{fileId}/share', { ...file, body: { workspaceId: WS, isActive: true, authType: 'public' } }),
  revertFileVersion: (api) =>
    api.POST('/api/v2/files/{fileId}/versions/{version}/revert', { params: { path: { fileId: FILE, version: 1 } }, body: { workspaceId: WS, expectedCurrentVersion: 3 } }),
  bulkDeleteFiles: (api) => api.POST('/api/v2/files/bulk-delete', { body: { workspaceId: WS, fileIds: [FILE] } }),
  moveFileItems: (api) => api.POST('/api/v2/files/move', { body: { workspaceId: WS, fileIds: [FILE], targetFolderPath: '/Archive' } }),
  createFileFolder: (api) => api.POST('/api/v2/files/folders', { body: { workspaceId: WS, path: '/Reports/2024' } }),
  relocateFileFolder: (api) => api.PATCH('/api/v2/files/folders', { body: { workspaceId: WS, path: '/Reports', destinationPath: '/Archive/Reports' } }),
  restoreFileFolder: (api) => api.POST('/api/v2/files/folders/restore', { body: { workspaceId: WS, path: '/Reports' } }),
  replaceWorkflowChatDeployment: (api) =>
    api.PUT('/api/v2/workflows/{workflowId}/deployments/chat', {
      ...wf,
      body: {
        identifier: 'support-bot',
        title: 'Support',
        customizations: { primaryColor: '#802FFF', welcomeMessage: 'Hi!' },
        authType: 'email',
        allowedEmails: ['@example.com'],
        outputConfigs: [{ blockId: 'agent1', path: 'content' }],
      },
    }),
  pollCliAuth: (api) => api.POST('/api/cli/auth/poll', { body: { request: 'r'.repeat(43), verifier: 'v'.repeat(43) } }),
  createWorkflowMcpServer: (api) => api.POST('/api/v2/workflow-mcp-servers', { body: { workspaceId: WS, name: 'Team tools', isPublic: false, workflowIds: [WF] } }),
  updateWorkflowMcpServer: (api) => api.PATCH('/api/v2/workflow-mcp-servers/{serverId}', { params: { path: { serverId: 'srv_1' } }, body: { description: null, isPublic: true } }),
  deployWorkflowMcpTool: (api) =>
    api.POST('/api/v2/workflow-mcp-servers/{serverId}/tools', {
      params: { path: { serverId: 'srv_1' } },
      body: { workflowId: WF, toolName: 'weather', parameterDescriptions: [{ name: 'city', description: 'Where' }] },
    }),
  postMcpServeMessage: (api) =>
    api.POST('/api/mcp/serve/{serverId}', {
      params: { path: { serverId: 'srv_1' } },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'weather', arguments: { city: 'Lyon', days: 3 } } },
    }),
  postMcpServeMessageAtMcpPath: (api) =>
    api.POST('/api/mcp/serve/{serverId}/mcp', {
      params: { path: { serverId: 'srv_1' } },
      body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    }),
  createMcpServer: (api) =>
    api.POST('/api/v2/mcp-servers', { body: { workspaceId: WS, name: 'Search', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' }, timeout: 10_000 } }),
  updateMcpServer: (api) => api.PATCH('/api/v2/mcp-servers/{mcpServerId}', { params: { path: { mcpServerId: 'mcp_1' } }, body: { workspaceId: WS, enabled: false, oauthClientSecret: null } }),
  createTable: (api) =>
    api.POST('/api/v2/tables', { body: { workspaceId: WS, name: 'leads', description: 'Inbound', folderPath: '/Sales', schema: { columns: [{ name: 'email', type: 'string', unique: true }, { name: 'tier', type: 'select', options: [{ id: 'o1', name: 'Gold' }] }] } } }),
  updateTable: (api) => api.PATCH('/api/v2/tables/{tableId}', { ...tbl, body: { workspaceId: WS, name: 'leads_2024', description: null } }),
  restoreTable: (api) => api.POST('/api/v2/tables/{tableId}/restore', { ...tbl, body: { workspaceId: WS } }),
  bulkDeleteTables: (api) => api.POST('/api/v2/tables/bulk-delete', { body: { workspaceId: WS, tableIds: [TBL], folderPaths: ['/Old'] } }),
  moveTables: (api) => api.POST('/api/v2/tables/move', { body: { workspaceId: WS, tableIds: [TBL], targetFolderPath: '/Archive' } }),
  addTableColumn: (api) => api.POST('/api/v2/tables/{tableId}/columns', { ...tbl, body: { workspaceId: WS, column: { name: 'score', type: 'number', position: 1 } } }),
  updateTableColumn: (api) => api.PATCH('/api/v2/tables/{tableId}/columns', { ...tbl, body: { workspaceId: WS, columnName: 'score', updates: { name: 'points', type: 'currency', currencyCode: 'EUR' } } }),
  deleteTableColumn: (api) => api.DELETE('/api/v2/tables/{tableId}/columns', { ...tbl, body: { workspaceId: WS, columnName: 'points' } }),
  createTableRows: (api) => api.POST('/api/v2/tables/{tableId}/rows', { ...tbl, body: { workspaceId: WS, rows: [{ email: 'a@x.io', meta: { source: 'web' } }] } }),
  updateTableRow: (api) => api.PATCH('/api/v2/tables/{tableId}/rows/{rowId}', { params: { path: { tableId: TBL, rowId: 'row_1' } }, body: { workspaceId: WS, data: { tier: 'Gold' } } }),
  updateRowsByFilter: (api) => api.PATCH('/api/v2/tables/{tableId}/rows', { ...tbl, body: { workspaceId: WS, filter: { field: 'tier', op: 'isEmpty' }, data: { tier: 'Gold' }, limit: 100 } }),
  deleteTableRows: (api) => api.DELETE('/api/v2/tables/{tableId}/rows', { ...tbl, body: { workspaceId: WS, filter: { any: [{ field: 'email', op: 'endsWith', value: '@spam.io' }] } } }),
  bulkUpdateTableRows: (api) => api.POST('/api/v2/tables/{tableId}/rows/bulk-update', { ...tbl, body: { workspaceId: WS, updates: [{ rowId: 'row_1', data: { score: 3 } }] } }),
  upsertTableRow: (api) => api.POST('/api/v2/tables/{tableId}/rows/upsert', { ...tbl, body: { workspaceId: WS, data: { email: 'a@x.io', score: 4 }, conflictTarget: 'email' } }),
  searchTableRows: (api) => api.POST('/api/v2/tables/{tableId}/rows/search', { ...tbl, body: { workspaceId: WS, q: 'gold', sort: [{ field: 'createdAt', direction: 'desc' }] } }),
  queryRows: (api) =>
    api.POST('/api/v2/tables/{tableId}/query', { ...tbl, body: { workspaceId: WS, predicate: { all: [{ field: 'score', op: 'gte', value: 3 }] }, sort: [{ field: 'score', direction: 'desc' }], limit: 50 } }),
  queryRowsCount: (api) => api.POST('/api/v2/tables/{tableId}/query/count', { ...tbl, body: { workspaceId: WS, predicate: { field: 'tier', op: 'eq', value: 'Gold' } } }),
  createTableView: (api) => api.POST('/api/v2/tables/{tableId}/views', { ...tbl, body: { workspaceId: WS, name: 'Gold', config: { filter: { field: 'tier', op: 'eq', value: 'Gold' }, columnWidths: { email: 240 } } } }),
  updateTableView: (api) => api.PATCH('/api/v2/tables/{tableId}/views/{viewId}', { params: { path: { tableId: TBL, viewId: 'view_1' } }, body: { workspaceId: WS, configPatch: { sort: null }, isDefault: true } }),
  createTableImport: (api) =>
    api.POST('/api/v2/tables/imports', { body: { workspaceId: WS, source: { type: 'upload', name: 'leads.csv', contentType: 'text/csv', size: 1024 }, target: { type: 'existing', tableId: TBL, mode: 'append' }, mapping: { Email: 'email', Notes: null }, createColumns: ['City'] } }),
  createTableImportPartUrls: (api) =>
    api.POST('/api/v2/tables/imports/{importId}/parts', { params: { path: { importId: 'imp_1' }, query: { workspaceId: WS }, header: { 'upload-token': 'token' } }, body: { partNumbers: [1, 2] } }),
  createTableExport: (api) => api.POST('/api/v2/tables/{tableId}/exports', { ...tbl, body: { workspaceId: WS, format: 'json' } }),
  createTableFolder: (api) => api.POST('/api/v2/tables/folders', { body: { workspaceId: WS, path: '/Sales/2024' } }),
  relocateTableFolder: (api) => api.PATCH('/api/v2/tables/folders', { body: { workspaceId: WS, path: '/Sales', destinationPath: '/Archive' } }),
  restoreTableFolder: (api) => api.POST('/api/v2/tables/folders/restore', { body: { workspaceId: WS, path: '/Sales' } }),
  addWorkflowGroup: (api) =>
    api.POST('/api/v2/tables/{tableId}/groups', {
      ...tbl,
      body: { workspaceId: WS, group: { workflowId: WF, inputMappings: [{ inputName: 'email', columnName: 'email' }], outputs: [{ blockId: 'fn', path: 'result', columnName: 'company' }] }, outputColumns: [{ name: 'company', type: 'string' }], autoRun: false },
    }),
  updateWorkflowGroup: (api) => api.PATCH('/api/v2/tables/{tableId}/groups', { ...tbl, body: { workspaceId: WS, groupId: 'grp_1', name: 'Company', autoRun: true } }),
  deleteWorkflowGroup: (api) => api.DELETE('/api/v2/tables/{tableId}/groups', { ...tbl, body: { workspaceId: WS, groupId: 'grp_1' } }),
  createTableDispatch: (api) => api.POST('/api/v2/tables/{tableId}/dispatches', { ...tbl, body: { workspaceId: WS, groupIds: ['grp_1'], runMode: 'incomplete', limit: { type: 'rows', max: 10 } } }),
  cancelTableRuns: (api) => api.POST('/api/v2/tables/{tableId}/cancel-runs', { ...tbl, body: { workspaceId: WS, scope: 'all' } }),
  runRowEnrichment: (api) =>
    api.POST('/api/v2/tables/{tableId}/rows/{rowId}/enrichment/{groupId}', { params: { path: { tableId: TBL, rowId: 'row_1', groupId: 'grp_1' } }, body: { workspaceId: WS } }),
  setSecret: (api) => api.PUT('/api/v2/secrets/{name}', { params: { path: { name: 'API_TOKEN' } }, body: { workspaceId: WS, scope: 'workspace', value: 's3cret', description: null, unredacted: false } }),
  createSkill: (api) => api.POST('/api/v2/skills', { body: { workspaceId: WS, name: 'house-style', description: 'Tone of voice', content: 'Answer briefly.' } }),
  updateSkill: (api) => api.PATCH('/api/v2/skills/{skillId}', { params: { path: { skillId: 'sk_1' } }, body: { workspaceId: WS, content: 'Answer very briefly.' } }),
  grantSkillEditor: (api) => api.POST('/api/v2/skills/{skillId}/editors', { params: { path: { skillId: 'sk_1' } }, body: { workspaceId: WS, email: 'ada@example.com' } }),
  createCustomTool: (api) =>
    api.POST('/api/v2/custom-tools', {
      body: { workspaceId: WS, title: 'Adder', schema: { type: 'function', function: { name: 'add', parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] } } }, code: 'return a + 1' },
    }),
  updateCustomTool: (api) => api.PATCH('/api/v2/custom-tools/{customToolId}', { params: { path: { customToolId: 'ct_1' } }, body: { workspaceId: WS, code: 'return a + 2' } }),
  executeTool: (api) => api.POST('/api/v2/tools/{toolId}/execute', { params: { path: { toolId: 'http_request' } }, body: { workspaceId: WS, input: { url: 'https://example.com', headers: { accept: 'text/html' } }, timeoutSeconds: 10 } }),
  createSandbox: (api) => api.POST('/api/v2/sandboxes', { body: { workspaceId: WS, name: 'dates', language: 'javascript', dependencies: ['date-fns@4'], cliTools: ['kubectl@1.36.3-r1'], systemPackages: [] } }),
  updateSandbox: (api) => api.PATCH('/api/v2/sandboxes/{sandboxId}', { params: { path: { sandboxId: 'sb_1' } }, body: { workspaceId: WS, dependencies: ['date-fns@4', 'lodash@4'] } }),
  createServiceAccountCredential: (api) =>
    api.POST('/api/v2/credentials', { body: { workspaceId: WS, type: 'service_account', providerId: 'slack-custom-bot', displayName: 'Bot', credentials: '{"botToken":"xoxb-1","signingSecret":"s"}' } }),
  createCredentialConnection: (api) => api.POST('/api/v2/credentials/connections', { body: { workspaceId: WS, providerId: 'github-repositories', displayName: 'My GitHub' } }),
  updateCredential: (api) => api.PATCH('/api/v2/credentials/{credentialId}', { params: { path: { credentialId: 'cred_1' }, query: { workspaceId: WS } }, body: { displayName: 'Renamed', description: null } }),
  // Knowledge bases
  createKnowledgeBase: (api) => api.POST('/api/v2/knowledge', { body: { workspaceId: WS, name: 'Handbook', chunkingConfig: { maxSize: 800, strategy: 'recursive', strategyOptions: { recipe: 'markdown' } }, folderPath: '/Docs' } }),
  updateKnowledgeBase: (api) => api.PATCH('/api/v2/knowledge/{knowledgeBaseId}', { ...kbp, body: { workspaceId: WS, name: 'Handbook 2', chunkingConfig: { overlap: 50 } } }),
  restoreKnowledgeBase: (api) => api.POST('/api/v2/knowledge/{knowledgeBaseId}/restore', { ...kbp, body: { workspaceId: WS } }),
  uploadKnowledgeDocument: (api) =>
    api.POST('/api/v2/knowledge/{knowledgeBaseId}/documents', { params: { path: { knowledgeBaseId: KB }, query: { workspaceId: WS } }, body: 'multipart bytes', bodySerializer: (b: unknown) => b as string }),
  bulkUpdateKnowledgeDocuments: (api) => api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/documents', { ...kbp, body: { workspaceId: WS, operation: 'disable', selectAll: true, enabledFilter: 'enabled' } }),
  addWorkspaceFilesToKnowledgeBase: (api) => api.POST('/api/v2/knowledge/{knowledgeBaseId}/documents/from-workspace-files', { ...kbp, body: { workspaceId: WS, fileReferences: [FILE] } }),
  createKnowledgeDocumentUpload: (api) =>
    api.POST('/api/v2/knowledge/{knowledgeBaseId}/documents/uploads', { ...kbp, body: { workspaceId: WS, name: 'guide.md', contentType: 'text/markdown', size: 1200, tag1: 'hr', processingOptions: { recipe: 'markdown', lang: 'en' } } }),
  createKnowledgeDocumentUploadPartUrls: (api) =>
    api.POST('/api/v2/knowledge/{knowledgeBaseId}/documents/uploads/{uploadId}/parts', { params: { path: { knowledgeBaseId: KB, uploadId: 'up_1' }, query: { workspaceId: WS }, header: { 'upload-token': 'tok' } }, body: { partNumbers: [1, 2] } }),
  updateKnowledgeDocument: (api) => api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/documents/{documentId}', { ...docp, body: { workspaceId: WS, filename: 'guide-2.md', tag1: 'hr', number1: 3, date1: '2024-05-01', boolean1: true } }),
  createKnowledgeChunk: (api) => api.POST('/api/v2/knowledge/{knowledgeBaseId}/documents/{documentId}/chunks', { ...docp, body: { workspaceId: WS, content: 'A hand-written chunk.', enabled: true } }),
  bulkUpdateKnowledgeChunks: (api) => api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/documents/{documentId}/chunks', { ...docp, body: { workspaceId: WS, operation: 'delete', chunkIds: ['kc_1'] } }),
  updateKnowledgeChunk: (api) =>
    api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/documents/{documentId}/chunks/{chunkId}', { params: { path: { knowledgeBaseId: KB, documentId: 'kd_1', chunkId: 'kc_1' } }, body: { workspaceId: WS, content: 'Edited.' } }),
  createKnowledgeTag: (api) => api.POST('/api/v2/knowledge/{knowledgeBaseId}/tags', { ...kbp, body: { workspaceId: WS, displayName: 'Year', fieldType: 'number', tagSlot: 'number1' } }),
  bulkSaveKnowledgeTagDefinitions: (api) =>
    api.PUT('/api/v2/knowledge/{knowledgeBaseId}/tags', { ...kbp, body: { workspaceId: WS, definitions: [{ tagSlot: 'tag1', displayName: 'Team', fieldType: 'text', originalDisplayName: 'Squad' }] } }),
  updateKnowledgeTag: (api) => api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/tags/{tagId}', { params: { path: { knowledgeBaseId: KB, tagId: 'kt_1' } }, body: { workspaceId: WS, displayName: 'Squad' } }),
  searchKnowledge: (api) =>
    api.POST('/api/v2/knowledge/search', {
      body: { workspaceId: WS, knowledgeBaseIds: [KB], query: 'vacation days', topK: 5, searchMode: 'hybrid', tagFilters: [{ tagName: 'Year', operator: 'between', value: 2020, valueTo: 2024 }] },
    }),
  createKnowledgeFolder: (api) => api.POST('/api/v2/knowledge/folders', { body: { workspaceId: WS, path: '/Docs/HR' } }),
  relocateKnowledgeFolder: (api) => api.PATCH('/api/v2/knowledge/folders', { body: { workspaceId: WS, path: '/Docs', destinationPath: '/Archive' } }),
  restoreKnowledgeFolder: (api) => api.POST('/api/v2/knowledge/folders/restore', { body: { workspaceId: WS, path: '/Docs' } }),
  createKnowledgeConnector: (api) =>
    api.POST('/api/v2/knowledge/{knowledgeBaseId}/connectors', { ...kbp, body: { workspaceId: WS, connectorType: 'web', sourceConfig: { urls: ['https://example.com/a'], maxPages: 10 }, syncIntervalMinutes: 60 } }),
  updateKnowledgeConnector: (api) =>
    api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/connectors/{connectorId}', { ...conp, body: { workspaceId: WS, sourceConfig: { sitemapUrl: 'https://example.com/sitemap.xml' }, status: 'paused' } }),
  syncKnowledgeConnector: (api) => api.POST('/api/v2/knowledge/{knowledgeBaseId}/connectors/{connectorId}/sync', { ...conp, body: { workspaceId: WS, rehydrate: true } }),
  updateKnowledgeConnectorDocuments: (api) =>
    api.PATCH('/api/v2/knowledge/{knowledgeBaseId}/connectors/{connectorId}/documents', { ...conp, body: { workspaceId: WS, operation: 'exclude', documentIds: ['kd_1'] } }),
  setWorkflowCallback: (api) => api.PUT('/api/v2/workflows/{workflowId}/callback', { ...wf, body: { url: 'https://hooks.example.com/runs' } }),
  rotateCallbackSigningSecret: (api) => api.POST('/api/v2/workspaces/{workspaceId}/callback-signing-secret/rotate', { params: { path: { workspaceId: WS } }, body: { previousSecretGraceSeconds: 3600 } }),
  previewWorkspaceFork: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/preview', { ...wsp, body: { name: 'Staging', copy: { tables: [TBL], files: [FILE] } } }),
  forkWorkspace: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork', { ...wsp, body: { name: 'Staging', copy: { knowledgeBases: [KB] }, requestId: 'req-1', previewFingerprint: 'fp' } }),
  previewWorkspacePush: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/push/preview', { ...wsp, body: { otherWorkspaceId: WS2, mappings: [{ resourceType: 'env_var', sourceId: 'A', targetId: 'B' }], dropReferences: [{ kind: 'table', sourceId: TBL }] } }),
  previewWorkspacePull: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/pull/preview', { ...wsp, body: { otherWorkspaceId: WS2, copyResources: { tables: [TBL] } } }),
  pushWorkspace: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/push', { ...wsp, body: { otherWorkspaceId: WS2, requestId: 'req-2', previewFingerprint: 'fp', confirm: true } }),
  pullWorkspace: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/pull', { ...wsp, body: { otherWorkspaceId: WS2, triggerMappings: [{ sourceWorkflowId: WF, sourceBlockId: 'b', adoptPath: null }], requestId: 'req-3', previewFingerprint: 'fp', confirm: true } }),
  updateWorkspaceForkMappings: (api) => api.PUT('/api/v2/workspaces/{workspaceId}/fork/mappings', { ...wsp, body: { otherWorkspaceId: WS2, direction: 'push', mappings: [{ resourceType: 'table', sourceId: TBL, targetId: null }] } }),
  rollbackWorkspaceFork: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/rollback', { ...wsp, body: { otherWorkspaceId: WS2 } }),
  unlinkWorkspaceFork: (api) => api.POST('/api/v2/workspaces/{workspaceId}/fork/unlink', { ...wsp, body: { otherWorkspaceId: WS2 } }),
  updateWorkspaceForkExclusions: (api) => api.PUT('/api/v2/workspaces/{workspaceId}/fork/exclusions', { ...wsp, body: { workflowIds: [WF], forkSyncExcluded: true } }),
  createOrganizationInvitation: (api) => api.POST('/api/v2/organizations/{organizationId}/invitations', { params: { path: { organizationId: 'org_1' } }, body: { email: 'ada@example.com', role: 'admin' } }),
  resendOrganizationInvitation: (api) => api.POST('/api/v2/organizations/{organizationId}/invitations/{invitationId}/resend', { params: { path: { organizationId: 'org_1', invitationId: 'inv_1' } }, body: {} }),
  updateOrganizationMember: (api) => api.PATCH('/api/v2/organizations/{organizationId}/members/{userId}', { params: { path: { organizationId: 'org_1', userId: 'u_1' } }, body: { role: 'admin' } }),
  updateOrganizationMemberUsageLimit: (api) =>
    api.PATCH('/api/v2/organizations/{organizationId}/members/{userId}/usage-limit', { params: { path: { organizationId: 'org_1', userId: 'u_1' } }, body: { creditLimit: 500 } }),
  createWorkspaceInvitations: (api) =>
    api.POST('/api/v2/workspaces/{workspaceId}/invitations', { params: { path: { workspaceId: WS } }, body: { emails: ['ada@example.com', 'bob@example.com'], permission: 'write', membership: 'member' } }),
  listSelector: (api) => api.POST('/api/v2/selectors/list', { body: { workspaceId: WS, selectorKey: 'table.columns', context: { tableId: 'tbl_1' }, search: 'em', limit: 100 } }),
  getSelector: (api) => api.POST('/api/v2/selectors/get', { body: { workspaceId: WS, selectorKey: 'slack.channels', context: { oauthCredential: 'cred_1' }, id: 'C123' } }),
  chat: (api) => api.POST('/api/v2/chat', { body: { workspaceId: WS, message: 'What tables do I have?', conversationId: 'conv_1', effort: 'low' } }),
  // access-control
  createPermissionGroup: (api) =>
    api.POST('/api/v2/organizations/{organizationId}/permission-groups', {
      params: { path: { organizationId: 'org_1' } },
      body: { name: 'Contractors', config: { allowedIntegrations: ['api', 'agent'], deniedTools: ['http_request'], disableSkills: true }, workspaceIds: [WS] },
    }),
  updatePermissionGroup: (api) =>
    api.PATCH('/api/v2/organizations/{organizationId}/permission-groups/{groupId}', { params: { path: { organizationId: 'org_1', groupId: 'pg_1' } }, body: { description: null, config: { allowedModelProviders: null } } }),
  addPermissionGroupMember: (api) => api.POST('/api/v2/organizations/{organizationId}/permission-groups/{groupId}/members', { params: { path: { organizationId: 'org_1', groupId: 'pg_1' } }, body: { userId: 'u_1' } }),
  bulkAddPermissionGroupMembers: (api) =>
    api.POST('/api/v2/organizations/{organizationId}/permission-groups/{groupId}/members/bulk', { params: { path: { organizationId: 'org_1', groupId: 'pg_1' } }, body: { addAllOrganizationMembers: true } }),
  createWorkspaceAccessRequest: (api) =>
    api.POST('/api/v2/workspaces/{workspaceId}/access-requests', { params: { path: { workspaceId: WS } }, body: { target: { kind: 'integration', id: 'function' }, reason: 'Data cleanup' } }),
  createOrganizationAccessRequest: (api) =>
    api.POST('/api/v2/organizations/{organizationId}/access-requests', { params: { path: { organizationId: 'org_1' } }, body: { target: { kind: 'feature', configKey: 'disableSkills' } } }),
  resolveOrganizationAccessRequest: (api) =>
    api.POST('/api/v2/organizations/{organizationId}/access-requests/{requestId}/resolve', { params: { path: { organizationId: 'org_1', requestId: 'ar_1' } }, body: { action: 'decline', reason: 'Not now' } }),
  updateOrganizationAccessRequestSettings: (api) =>
    api.PATCH('/api/v2/organizations/{organizationId}/access-requests/settings', { params: { path: { organizationId: 'org_1' } }, body: { allowRequests: false } }),
} satisfies Record<string, Sample>;

/** Requests this server sends (the spec's `webhooks`, e.g. a run's completion callback), not operations it serves. */
type WebhookOperation = { [W in keyof import('../generated/types.ts').webhooks]: import('../generated/types.ts').webhooks[W] extends { post: infer O } ? O : never }[keyof import('../generated/types.ts').webhooks];
/** Operation ids whose request has a body, read from the generated types: a missing sample fails the type check. */
type WithBody = {
  [K in keyof import('../generated/types.ts').operations]: import('../generated/types.ts').operations[K] extends WebhookOperation
    ? never
    : import('../generated/types.ts').operations[K] extends { requestBody?: infer B }
      ? ([B] extends [never | undefined] ? never : K)
      : never;
}[keyof import('../generated/types.ts').operations];
const complete: Record<WithBody, Sample> = samples;
void complete;

describe('generated client accepts a realistic body for every operation that takes one', () => {
  const withBody = Object.values(OPERATIONS).filter((o) => o.bodyContentTypes !== null);

  it('has a sample for each operation with a body in generated/operations.ts, and no stale ones', () => {
    const missing = withBody.map((o) => o.operationId).filter((id) => !(id in samples));
    expect(missing, 'add a compile sample to test/client-bodies.test.ts for these operations').toEqual([]);
    const stale = Object.keys(samples).filter((id) => !withBody.some((o) => o.operationId === id));
    expect(stale).toEqual([]);
  });

  it.each(withBody.map((o) => [o.operationId, o] as const))('%s sends its body to its own method and path', async (id, op) => {
    const seen: { method: string; path: string; body: string }[] = [];
    const api = createApiClient({
      baseUrl: 'http://client.test',
      apiKey: 'sk-owa-sample',
      maxRetries: 0,
      fetch: async (input, init) => {
        const req = input instanceof Request ? input : new Request(input, init);
        seen.push({ method: req.method, path: new URL(req.url).pathname, body: await req.text() });
        return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    await (samples as Record<string, Sample>)[id]!(api);
    expect(seen).toHaveLength(1);
    const pattern = new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    expect(seen[0]!.method).toBe(op.method.toUpperCase());
    expect(seen[0]!.path).toMatch(pattern);
    expect(seen[0]!.body.length).toBeGreaterThan(1);
  });
});

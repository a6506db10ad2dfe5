// Workspace forks end to end through HTTP: a workspace whose deployed workflow references a table, a file, a
// knowledge base and a secret is forked, changed in the child, pushed, pulled and rolled back, and every step is
// checked by reading the resources back; then the refusals the facts name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { createApiKey, setWorkspacePlan } from '../src/identity/admin.ts';
import { newOrganization } from './support/organizations.ts';

let s: TestServer;
let parent: string;
const ids = {} as { table: string; file: string; kb: string; workflow: string; draft: string; child: string; childWorkflow: string; pushedVersion: string };

const agentState = (p: { tableId: string; fileId: string; knowledgeBaseId: string; prompt: string }) => {
  const start = apiBlock('start_trigger', 'Start');
  const agent = apiBlock('agent', 'Assistant', {
    userPrompt: p.prompt,
    model: 'gpt-4o',
    tools: [
      { toolId: 'table_query_rows', params: { tableId: p.tableId } },
      { toolId: 'file_read_text', params: { fileId: p.fileId } },
      { toolId: 'knowledge_search', params: { knowledgeBaseId: p.knowledgeBaseId } },
    ],
  });
  return { blocks: [start, agent], edges: [link(start, agent)] };
};

async function stateOf(workflowId: string) {
  const w = await s.ok('GET', `/api/v2/workflows/${workflowId}`);
  const agent = Object.values(w.state?.blocks ?? (await s.ok('GET', `/api/v2/workflows/${workflowId}/state`)).blocks).find((b: any) => b.type === 'agent') as any;
  return { w, agent, tools: agent.subBlocks.tools.value as any[], prompt: agent.subBlocks.userPrompt.value as string };
}

async function workflowsOf(workspaceId: string) {
  return (await s.call('GET', `/api/v2/workflows?workspaceId=${workspaceId}`)).body.data as any[];
}

async function deployment(workflowId: string) {
  return (await s.call('GET', `/api/v2/workflows/${workflowId}/deployment`)).body.data;
}

async function preview(workspaceId: string, direction: 'push' | 'pull', body: Record<string, unknown>) {
  return s.ok('POST', `/api/v2/workspaces/${workspaceId}/fork/${direction}/preview`, body);
}

async function sync(workspaceId: string, direction: 'push' | 'pull', body: Record<string, unknown>, requestId: string) {
  const p = await preview(workspaceId, direction, body);
  return s.call('POST', `/api/v2/workspaces/${workspaceId}/fork/${direction}`, { ...body, requestId, previewFingerprint: p.previewFingerprint, confirm: true });
}

beforeAll(async () => {
  s = await startTestServer();
  parent = s.workspaceId;
  await setWorkspacePlan(s.services.store, parent, 'enterprise');
  await s.ok('PUT', '/api/v2/secrets/API_TOKEN', { workspaceId: parent, scope: 'workspace', value: 'parent-token' });
  const table = await s.ok('POST', '/api/v2/tables', { workspaceId: parent, name: 'contacts', schema: { columns: [{ name: 'name', type: 'string' }] } });
  await s.ok('POST', `/api/v2/tables/${table.id}/rows`, { workspaceId: parent, rows: [{ name: 'Ada' }, { name: 'Grace' }] });
  const file = await s.ok('POST', '/api/v2/files', { workspaceId: parent, name: 'notes.txt', content: 'Forks copy files by reference to their bytes.' });
  const kb = await s.ok('POST', '/api/v2/knowledge', { workspaceId: parent, name: 'Handbook' });
  await s.ok('POST', `/api/v2/knowledge/${kb.id}/documents/from-workspace-files`, { workspaceId: parent, fileReferences: [file.id] });
  Object.assign(ids, { table: table.id, file: file.id, kb: kb.id });
  const g = agentState({ tableId: table.id, fileId: file.id, knowledgeBaseId: kb.id, prompt: 'Use token {{API_TOKEN}}' });
  ids.workflow = (await buildWorkflow(s, 'Lookup', g.blocks, g.edges)).id;
  ids.draft = (await buildWorkflow(s, 'Draft only', [apiBlock('start_trigger', 'Start')], [], { deploy: false })).id;
});

afterAll(async () => {
  await s?.stop();
});

describe('fork', () => {
  it('is available on Enterprise only', async () => {
    expect(await s.ok('GET', `/api/v2/workspaces/${parent}/fork/availability`)).toEqual({ available: true });
    const owner = await s.newUser('free-owner@example.com');
    const free = await s.newWorkspace('Free one', owner.userId);
    expect((await s.call('GET', `/api/v2/workspaces/${free}/fork/availability`, undefined, owner.key)).body.data).toEqual({ available: false });
    const refused = await s.call('POST', `/api/v2/workspaces/${free}/fork/preview`, {}, owner.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.details.code).toBe('PLAN_UPGRADE_REQUIRED');
  });

  it('copies the deployed workflow as a draft with its table, file and knowledge base, and keeps the secret name', async () => {
    const copy = { tables: [ids.table], files: [ids.file], knowledgeBases: [ids.kb] };
    const p = await s.ok('POST', `/api/v2/workspaces/${parent}/fork/preview`, { name: 'Staging', copy });
    expect(p).toMatchObject({ sourceWorkspaceId: parent, workflows: [{ sourceWorkflowId: ids.workflow, name: 'Lookup' }], selectedResourceCount: 3, draftOnly: true });
    const r = await s.call('POST', `/api/v2/workspaces/${parent}/fork`, { name: 'Staging', copy, requestId: ' fork-1 ', previewFingerprint: p.previewFingerprint });
    expect(r.status, r.text).toBe(200);
    const receipt = r.body.data;
    expect(receipt).toMatchObject({ requestId: 'fork-1', workspaceId: parent, kind: 'workspace_fork', applied: true, status: 'completed', issues: [] });
    const child = receipt.resourceIds[0];
    ids.child = child;
    expect(receipt.idMap[parent]).toBe(child);
    expect((await s.ok('GET', `/api/v2/workspaces/${child}`)).name).toBe('Staging');

    // The copies exist in the child, with their content.
    const childTable = receipt.idMap[ids.table];
    const childFile = receipt.idMap[ids.file];
    const childKb = receipt.idMap[ids.kb];
    expect((await s.ok('GET', `/api/v2/tables/${childTable}?workspaceId=${child}`)).rowCount).toBe(2);
    const rows = await s.ok('GET', `/api/v2/tables/${childTable}/rows?workspaceId=${child}`);
    expect((Array.isArray(rows) ? rows : rows.rows).map((x: any) => x.data.name).sort()).toEqual(['Ada', 'Grace']);
    const content = await s.request(`/api/v2/files/${childFile}/versions/1/content?workspaceId=${child}`);
    expect(await content.text()).toBe('Forks copy files by reference to their bytes.');
    expect((await s.ok('GET', `/api/v2/knowledge/${childKb}?workspaceId=${child}`)).name).toBe('Handbook');
    const docs = await s.call('GET', `/api/v2/knowledge/${childKb}/documents?workspaceId=${child}`);
    expect(docs.body.data.length).toBe(1);

    // Only the deployed workflow came over, undeployed, its references remapped to the copies.
    const flows = await workflowsOf(child);
    expect(flows.map((w) => w.name)).toEqual(['Lookup']);
    ids.childWorkflow = receipt.idMap[ids.workflow];
    expect(flows[0].id).toBe(ids.childWorkflow);
    expect((await deployment(ids.childWorkflow)).isDeployed).toBe(false);
    const { tools, prompt } = await stateOf(ids.childWorkflow);
    expect(tools.map((t) => Object.values(t.params)[0])).toEqual([childTable, childFile, childKb]);
    expect(prompt).toBe('Use token {{API_TOKEN}}');
    // The parent's secret was not copied.
    const secrets = await s.call('GET', `/api/v2/secrets?workspaceId=${child}`);
    expect(secrets.body.data.map((x: any) => x.name)).not.toContain('API_TOKEN');

    // Lineage, children, saved mappings, and the receipt read back by id and by request id.
    expect(await s.ok('GET', `/api/v2/workspaces/${child}/fork/lineage`)).toEqual({ current: { id: child, name: 'Staging', organizationId: null }, parent: { id: parent, name: expect.any(String), organizationId: null } });
    expect((await s.ok('GET', `/api/v2/workspaces/${parent}/fork/children`)).map((c: any) => c.id)).toEqual([child]);
    const maps = await s.ok('GET', `/api/v2/workspaces/${child}/fork/mappings?otherWorkspaceId=${parent}&direction=push`);
    expect(maps.map((m: any) => [m.resourceType, m.sourceId, m.targetId]).sort()).toEqual(
      [['file', childFile, ids.file], ['knowledge_base', childKb, ids.kb], ['table', childTable, ids.table]].sort(),
    );
    expect(await s.ok('GET', `/api/v2/workspaces/${parent}/operations/${receipt.operationId}`)).toEqual(receipt);
    expect(await s.ok('GET', `/api/v2/workspaces/${parent}/operations?requestId=fork-1`)).toEqual([receipt]);

    // An identical retry answers the same receipt; the same request id with other inputs is a 409.
    const again = await s.call('POST', `/api/v2/workspaces/${parent}/fork`, { name: 'Staging', copy, requestId: 'fork-1', previewFingerprint: p.previewFingerprint });
    expect(again.body.data).toEqual(receipt);
    const reused = await s.call('POST', `/api/v2/workspaces/${parent}/fork`, { name: 'Other', requestId: 'fork-1', previewFingerprint: p.previewFingerprint });
    expect(reused.status).toBe(409);
    expect((await s.ok('GET', `/api/v2/workspaces/${parent}/fork/children`)).length).toBe(1);
  });

  it("makes the fork of an organization's workspace part of that organization, and lineage names it", async () => {
    const org = await newOrganization(s, { name: 'Forking org', workspaces: ['Org parent'] });
    const orgParent = org.workspaces[0]!;
    const p = await s.ok('POST', `/api/v2/workspaces/${orgParent}/fork/preview`, { name: 'Org child' });
    const r = await s.call('POST', `/api/v2/workspaces/${orgParent}/fork`, { name: 'Org child', requestId: 'fork-org', previewFingerprint: p.previewFingerprint });
    expect(r.status).toBe(200);
    const child = r.body.data.resourceIds[0];
    const lineage = await s.ok('GET', `/api/v2/workspaces/${child}/fork/lineage`);
    expect(lineage.current).toEqual({ id: child, name: 'Org child', organizationId: org.id });
    expect(lineage.parent).toEqual({ id: orgParent, name: 'Org parent', organizationId: org.id });
    expect((await s.ok('GET', `/api/v2/workspaces/${orgParent}/fork/children`))[0]).toMatchObject({ id: child, organizationId: org.id });
    const owned = (await s.call('GET', `/api/v2/organizations/${org.id}/workspaces`)).body.data.map((w: { id: string }) => w.id);
    expect(owned).toContain(child);
  });

  it('refuses a stale preview with a 409', async () => {
    const p = await s.ok('POST', `/api/v2/workspaces/${parent}/fork/preview`, {});
    const r = await s.call('POST', `/api/v2/workspaces/${parent}/fork`, { name: 'Changed', requestId: 'fork-stale', previewFingerprint: p.previewFingerprint });
    expect(r.status).toBe(409);
    expect((await s.call('GET', `/api/v2/workspaces/${parent}/operations?requestId=fork-stale`)).body.data).toEqual([]);
  });
});

describe('push, pull and rollback', () => {
  it('pushes a change made in the child back to the parent, remapping references to the parent resources', async () => {
    const { w } = await stateOf(ids.childWorkflow);
    const g = agentState({ tableId: (await stateOf(ids.childWorkflow)).tools[0].params.tableId, fileId: (await stateOf(ids.childWorkflow)).tools[1].params.fileId, knowledgeBaseId: (await stateOf(ids.childWorkflow)).tools[2].params.knowledgeBaseId, prompt: 'Changed in staging {{API_TOKEN}}' });
    await s.ok('PUT', `/api/v2/workflows/${w.id}/state`, { blocks: Object.fromEntries(g.blocks.map((b) => [b.id, b])), edges: g.edges });
    await s.ok('POST', `/api/v2/workflows/${w.id}/deploy`, {});
    const before = await deployment(ids.workflow);

    const p = await preview(ids.child, 'push', { otherWorkspaceId: parent });
    expect(p).toMatchObject({ sourceWorkspaceId: ids.child, targetWorkspaceId: parent, ready: true, workflows: [{ action: 'replace', sourceWorkflowId: ids.childWorkflow, targetWorkflowId: ids.workflow, name: 'Lookup' }], unresolvedBindings: [] });
    const r = await s.call('POST', `/api/v2/workspaces/${ids.child}/fork/push`, { otherWorkspaceId: parent, requestId: 'push-1', previewFingerprint: p.previewFingerprint, confirm: true });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ kind: 'workspace_push', workspaceId: ids.child, requestId: 'push-1', applied: true, status: 'completed', resourceIds: [ids.workflow] });

    const after = await stateOf(ids.workflow);
    expect(after.prompt).toBe('Changed in staging {{API_TOKEN}}');
    expect(after.tools.map((t) => Object.values(t.params)[0])).toEqual([ids.table, ids.file, ids.kb]);
    const dep = await deployment(ids.workflow);
    expect(dep.isDeployed).toBe(true);
    expect(dep.activeDeployment?.version).not.toEqual(before.activeDeployment?.version);
    ids.pushedVersion = String(dep.activeDeployment?.version);
    expect(await s.ok('GET', `/api/v2/workspaces/${ids.child}/operations/${r.body.data.operationId}`)).toEqual(r.body.data);
  });

  it('refuses a sync that would leave a reference empty, writing nothing; copying the resource lets it through; rollback undoes it', async () => {
    // The child's workflow now also reads a table only the child has.
    const leads = await s.ok('POST', '/api/v2/tables', { workspaceId: ids.child, name: 'leads', schema: { columns: [{ name: 'email', type: 'string' }] } });
    await s.ok('POST', `/api/v2/tables/${leads.id}/rows`, { workspaceId: ids.child, rows: [{ email: 'a@example.com' }] });
    const current = await stateOf(ids.childWorkflow);
    const blocks = (await s.ok('GET', `/api/v2/workflows/${ids.childWorkflow}/state`)).blocks;
    const agent = Object.values(blocks).find((b: any) => b.type === 'agent') as any;
    agent.subBlocks.tools.value = [...current.tools, { toolId: 'table_insert_row', params: { tableId: leads.id } }];
    await s.ok('PUT', `/api/v2/workflows/${ids.childWorkflow}/state`, { blocks, edges: (await s.ok('GET', `/api/v2/workflows/${ids.childWorkflow}/state`)).edges });
    await s.ok('POST', `/api/v2/workflows/${ids.childWorkflow}/deploy`, {});

    const parentState = JSON.stringify((await stateOf(ids.workflow)).tools);
    const parentDeployment = await deployment(ids.workflow);
    const parentTables = (await s.call('GET', `/api/v2/tables?workspaceId=${parent}`)).body.data.length;
    const p = await preview(ids.child, 'push', { otherWorkspaceId: parent });
    expect(p.ready).toBe(false);
    expect(p.unresolvedBindings).toEqual([expect.objectContaining({ kind: 'table', sourceId: leads.id, blockName: 'Assistant' })]);
    const refused = await s.call('POST', `/api/v2/workspaces/${ids.child}/fork/push`, { otherWorkspaceId: parent, requestId: 'push-2', previewFingerprint: p.previewFingerprint, confirm: true });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.unresolvedBindings[0]).toMatchObject({ kind: 'table', sourceId: leads.id });
    // Nothing was written: the parent's workflow, its deployment, its tables, and no receipt.
    expect(JSON.stringify((await stateOf(ids.workflow)).tools)).toBe(parentState);
    expect(await deployment(ids.workflow)).toEqual(parentDeployment);
    expect((await s.call('GET', `/api/v2/tables?workspaceId=${parent}`)).body.data.length).toBe(parentTables);
    expect((await s.call('GET', `/api/v2/workspaces/${ids.child}/operations?requestId=push-2`)).body.data).toEqual([]);

    const ok = await sync(ids.child, 'push', { otherWorkspaceId: parent, copyResources: { tables: [leads.id] } }, 'push-3');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.copyProgress).toEqual({ status: 'completed', copied: 2, failed: 0 });
    const parentLeads = (await s.call('GET', `/api/v2/tables?workspaceId=${parent}`)).body.data.find((t: any) => t.name === 'leads');
    expect(parentLeads.rowCount).toBe(1);
    expect((await stateOf(ids.workflow)).tools[3].params.tableId).toBe(parentLeads.id);

    // Rolling back in the parent restores the version the first push deployed, and keeps the copied table.
    const rolled = await s.ok('POST', `/api/v2/workspaces/${parent}/fork/rollback`, { otherWorkspaceId: ids.child });
    expect(rolled).toEqual({ restored: 1, archived: 0, unarchived: 0, skipped: 0, pendingActivations: [] });
    const back = await stateOf(ids.workflow);
    expect(back.tools.length).toBe(3);
    expect(back.prompt).toBe('Changed in staging {{API_TOKEN}}');
    const dep = await deployment(ids.workflow);
    expect(String(dep.activeDeployment?.version)).toBe(ids.pushedVersion);
    expect((await s.call('GET', `/api/v2/tables?workspaceId=${parent}`)).body.data.some((t: any) => t.name === 'leads')).toBe(true);
    // Only the newest sync can be undone, once.
    expect((await s.call('POST', `/api/v2/workspaces/${parent}/fork/rollback`, { otherWorkspaceId: ids.child })).status).toBe(404);
  });

  it('pulls the parent into the child once the secret is mapped to one the child has', async () => {
    const blocks = (await s.ok('GET', `/api/v2/workflows/${ids.workflow}/state`)).blocks;
    const agent = Object.values(blocks).find((b: any) => b.type === 'agent') as any;
    agent.subBlocks.userPrompt.value = 'Changed in production {{API_TOKEN}}';
    await s.ok('PUT', `/api/v2/workflows/${ids.workflow}/state`, { blocks, edges: (await s.ok('GET', `/api/v2/workflows/${ids.workflow}/state`)).edges });
    await s.ok('POST', `/api/v2/workflows/${ids.workflow}/deploy`, {});

    const blocked = await preview(ids.child, 'pull', { otherWorkspaceId: parent });
    expect(blocked.ready).toBe(false);
    expect(blocked.unresolvedBindings).toEqual([expect.objectContaining({ kind: 'env-var', sourceId: 'API_TOKEN' })]);
    // A mapping to a secret the child does not have is refused; to one it has, saved.
    const missing = await s.call('PUT', `/api/v2/workspaces/${ids.child}/fork/mappings`, { otherWorkspaceId: parent, direction: 'pull', mappings: [{ resourceType: 'env_var', sourceId: 'API_TOKEN', targetId: 'STAGING_TOKEN' }] });
    expect(missing.status).toBe(400);
    await s.ok('PUT', '/api/v2/secrets/STAGING_TOKEN', { workspaceId: ids.child, scope: 'workspace', value: 'staging-token' });
    expect(await s.ok('PUT', `/api/v2/workspaces/${ids.child}/fork/mappings`, { otherWorkspaceId: parent, direction: 'pull', mappings: [{ resourceType: 'env_var', sourceId: 'API_TOKEN', targetId: 'STAGING_TOKEN' }] })).toEqual({ updated: 1 });

    const r = await sync(ids.child, 'pull', { otherWorkspaceId: parent }, 'pull-1');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ kind: 'workspace_pull', workspaceId: ids.child, resourceIds: [ids.childWorkflow] });
    const pulled = await stateOf(ids.childWorkflow);
    expect(pulled.prompt).toBe('Changed in production {{STAGING_TOKEN}}');
    const childTables = (await s.call('GET', `/api/v2/tables?workspaceId=${ids.child}`)).body.data;
    expect(pulled.tools[0].params.tableId).toBe(childTables.find((t: any) => t.name === 'contacts').id);
    expect((await deployment(ids.childWorkflow)).isDeployed).toBe(true);
  });

  it('leaves excluded workflows alone and lists them', async () => {
    expect(await s.ok('PUT', `/api/v2/workspaces/${ids.child}/fork/exclusions`, { workflowIds: [ids.childWorkflow, 'not-here'], forkSyncExcluded: true })).toEqual({ updated: 1 });
    const p = await preview(ids.child, 'pull', { otherWorkspaceId: parent });
    expect(p.workflows).toEqual([]);
    expect(p.excludedTargets).toEqual([{ id: ids.childWorkflow, name: 'Lookup' }]);
    expect(await s.ok('PUT', `/api/v2/workspaces/${ids.child}/fork/exclusions`, { workflowIds: [ids.childWorkflow], forkSyncExcluded: false })).toEqual({ updated: 1 });
  });
});

describe('refusals', () => {
  it('refuses workspace keys on fork operations and accepts them on operation reads', async () => {
    const key = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: parent })).key;
    const refused = await s.call('GET', `/api/v2/workspaces/${parent}/fork/lineage`, undefined, key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.details.code).toBe('WORKSPACE_KEY_NOT_ALLOWED');
    expect((await s.call('POST', `/api/v2/workspaces/${parent}/fork/preview`, {}, key)).status).toBe(403);
    const list = await s.call('GET', `/api/v2/workspaces/${parent}/operations`, undefined, key);
    expect(list.status).toBe(200);
    expect(list.body.data.length).toBeGreaterThan(0);
    // One receipt a page, newest first, reaches the same receipts through the cursor.
    const paged: unknown[] = [];
    let cursor: string | null = null;
    do {
      const page = await s.call('GET', `/api/v2/workspaces/${parent}/operations?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, undefined, key);
      expect(page.status).toBe(200);
      paged.push(...page.body.data);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(list.body.data);
  });

  it('needs admin: a writer gets 403, a stranger 404; an unknown workspace or operation is 404', async () => {
    const writer = await s.newUser('writer@example.com', { [parent]: 'write' });
    const r = await s.call('POST', `/api/v2/workspaces/${parent}/fork/preview`, {}, writer.key);
    expect(r.status).toBe(403);
    expect(r.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
    const stranger = await s.newUser('stranger@example.com');
    expect((await s.call('GET', `/api/v2/workspaces/${parent}/fork/lineage`, undefined, stranger.key)).status).toBe(404);
    expect((await s.call('GET', '/api/v2/workspaces/nope/fork/availability')).status).toBe(404);
    expect((await s.call('GET', `/api/v2/workspaces/${parent}/operations/nope`)).status).toBe(404);
    // A push needs admin on the other side too.
    const adminHere = await s.newUser('half@example.com', { [ids.child]: 'admin' as const, [parent]: 'write' as const });
    expect((await s.call('POST', `/api/v2/workspaces/${ids.child}/fork/push/preview`, { otherWorkspaceId: parent }, adminHere.key)).status).toBe(403);
  });

  it('syncs only along a direct edge, and unlinks for good', async () => {
    const other = await s.newWorkspace('Unrelated');
    await setWorkspacePlan(s.services.store, other, 'enterprise');
    const r = await s.call('POST', `/api/v2/workspaces/${parent}/fork/push/preview`, { otherWorkspaceId: other });
    expect(r.status).toBe(400);
    expect((await s.call('POST', `/api/v2/workspaces/${parent}/fork/rollback`, { otherWorkspaceId: other })).status).toBe(400);
    expect(await s.ok('POST', `/api/v2/workspaces/${ids.child}/fork/unlink`, { otherWorkspaceId: parent })).toEqual({ unlinked: true });
    expect((await s.ok('GET', `/api/v2/workspaces/${ids.child}/fork/lineage`)).parent).toBeNull();
    expect(await s.ok('GET', `/api/v2/workspaces/${parent}/fork/children`)).toEqual([]);
    expect((await s.call('POST', `/api/v2/workspaces/${ids.child}/fork/unlink`, { otherWorkspaceId: parent })).status).toBe(400);
    // Both workspaces stay.
    expect((await workflowsOf(ids.child)).length).toBe(1);
  });
});

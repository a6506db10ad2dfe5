// Workflow pages come from indexes: the query plan of every list query (each sort, both directions, with and
// without a folder) searches an index in sort order, never scans the table or sorts in a temporary b-tree.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type Store } from '../src/store/index.ts';
import { WORKFLOW_SORT_COLUMNS, WorkflowRepository } from '../src/store/workflows.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';

let store: Store;
let dir: string;
let ws: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-plan-'));
  store = await openSqliteStore(path.join(dir, 'db.sqlite'));
  ws = (await bootstrapIfEmpty(store, { apiKey: null }))!.workspace.id;
  await store.transaction(async (tx) => {
    for (let i = 0; i < 500; i++) {
      const at = new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString();
      await tx.workflows.insert({
        id: randomUUID(), workspaceId: ws, name: `w${i}`, description: null, folderPath: `/f${i % 10}`, position: i, archived: i % 7 === 0, archivedAt: null,
        locked: false, isDeployed: false, deployedAt: null, activeVersionId: null, isPublicApi: false, runCount: i % 13, lastRunAt: null, state: '{}',
        stateSavedAt: at, createdBy: null, createdAt: at, updatedAt: at,
      });
    }
  });
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function assertIndexed(plan: string[]): void {
  const text = plan.join('\n');
  expect(text).toMatch(/USING (COVERING )?INDEX workflows_(by|in_folder_by)_/);
  expect(text).not.toMatch(/TEMP B-TREE/);
  expect(plan.some((line) => /^SCAN workflows$/.test(line.trim()))).toBe(false);
}

/** The plan of the exact query a list page runs, on a page after the first (the keyset condition included). */
const query = () => ({ workspaceId: ws, archived: false, folderPath: null as string | null, deployedOnly: false, search: null, sortBy: 'position' as const, sortOrder: 'asc' as const, after: ['x', 'y'] as const, limit: 51 });
function explain(q: Parameters<WorkflowRepository['listQuery']>[0]): Promise<string[]> {
  const { sql, params } = store.workflows.listQuery(q);
  return store.workflows.explain(sql, params);
}

describe('workflow list query plans', () => {
  for (const sortBy of Object.keys(WORKFLOW_SORT_COLUMNS) as (keyof typeof WORKFLOW_SORT_COLUMNS)[]) {
    for (const order of ['asc', 'desc'] as const) {
      it(`sortBy=${sortBy} ${order} uses an index, with and without a folder`, async () => {
        const plain = await explain({ ...query(), sortBy, sortOrder: order });
        assertIndexed(plain);
        const inFolder = await explain({ ...query(), sortBy, sortOrder: order, folderPath: '/f1' });
        assertIndexed(inFolder);
        expect(inFolder.join('\n')).toMatch(/workflows_in_folder_by_/);
      });
    }
  }

  it('the default sort reads the position index from the workspace prefix', async () => {
    const plan = (await explain(query())).join('\n');
    expect(plan).toMatch(/SEARCH workflows USING INDEX workflows_by_position \(workspace_id=\? AND archived=\?/);
  });

  it('the query the repository runs returns the page the plan describes', async () => {
    const page = await store.workflows.list({ workspaceId: ws, archived: false, folderPath: null, deployedOnly: false, search: null, sortBy: 'position', sortOrder: 'asc', after: null, limit: 3 });
    expect(page.map((w) => w.position)).toEqual([1, 2, 3]);
  });
});

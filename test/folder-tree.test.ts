// The shared folder tree on its own: one table keyed by kind, mkdir -p, mv semantics, archive and restore by
// batch (recreating parents or returning to the root, refusing or renaming on a conflict), kinds kept apart.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type Store } from '../src/store/index.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { FolderTree, FolderTreeError, rebase } from '../src/domain/folder-tree.ts';

let store: Store;
let dir: string;
let ws: string;
const at = '2026-01-01T00:00:00.000Z';
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-tree-'));
  store = await openSqliteStore(path.join(dir, 'db.sqlite'));
  ws = (await bootstrapIfEmpty(store, { apiKey: null }))!.workspace.id;
});
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const reason = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof FolderTreeError) return err.reason;
    throw err;
  }
  return 'ok';
};

describe('folder tree', () => {
  it('keeps kinds apart and creates missing ancestors', async () => {
    await store.transaction(async (tx) => {
      const tables = new FolderTree(tx.tableFolders);
      const created = await tables.ensure(ws, '/a/b/c', at);
      expect(created.map((f) => f.path)).toEqual(['/a', '/a/b', '/a/b/c']);
      expect(await tables.ensure(ws, '/a/b', at)).toEqual([]);
      expect(await tx.knowledgeFolders.getActive(ws, '/a')).toBeUndefined();
      expect(await tx.workflowFolders.countActive(ws)).toBe(0);
      expect(await reason(tables.create(ws, '/a/b', at))).toBe('EXISTS');
    });
  });

  it('moves with mv semantics and refuses a move into itself', async () => {
    await store.transaction(async (tx) => {
      const tree = new FolderTree(tx.tableFolders);
      await tree.ensure(ws, '/dest', at);
      const plan = await tree.planMove(ws, '/a', '/dest');
      expect(plan.to).toBe('/dest/a');
      await tree.move(ws, '/a', plan.to, at);
      expect((await tx.tableFolders.getActive(ws, '/dest/a/b/c'))?.parentPath).toBe('/dest/a/b');
      expect(await reason(tree.planMove(ws, '/dest', '/dest/a/x'))).toBe('INTO_ITSELF');
      expect(await reason(tree.planMove(ws, '/nope', '/x'))).toBe('NOT_FOUND');
    });
  });

  it('restores a batch, at the root when its parent is archived, renaming on a conflict', async () => {
    await store.transaction(async (tx) => {
      const tree = new FolderTree(tx.tableFolders);
      const inner = await tree.archive(ws, '/dest/a', at);
      expect(inner.folders).toBe(3);
      await tree.archive(ws, '/dest', at);
      await tree.ensure(ws, '/a', at); // takes the name the restore would use at the root
      const back = await tree.restore(ws, '/dest/a', at, { archivedParent: 'root', onConflict: 'rename' });
      expect(back.to).toBe('/a (2)');
      expect(back.folders).toBe(3);
      expect((await tx.tableFolders.getActive(ws, '/a (2)/b/c'))?.name).toBe('c');
      expect(await reason(tree.restore(ws, '/never', at, { archivedParent: 'root', onConflict: 'rename' }))).toBe('NOT_ARCHIVED');
      expect(rebase('/dest/a/b', '/dest/a', '/a (2)')).toBe('/a (2)/b');
    });
  });
});

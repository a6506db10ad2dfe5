// Tables as a whole: list, create, update, archive and restore, and the bulk delete and move of tables and
// folders. The rules: plan limits on tables and rows, names unique among the active tables of a workspace,
// locks, folders created as needed. Each change works inside the caller's transaction and records its audit
// event there; `guard` lets the caller check the table it read (an If-Match) before anything is written.
import type { Repositories } from '../store/index.ts';
import { tableNameTaken, type TableListQuery, type UserTableRecord } from '../store/user-tables.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError } from '../domain/errors.ts';
import { isWithin, parentFolderPath } from '../domain/folder-paths.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';
import { type Column, ColumnError, defineColumn, MAX_COLUMNS } from './columns.ts';
import { SYSTEM_FIELDS } from './predicate.ts';
import { assertUnlocked, asBadRequest, DEFAULT_VIEW_NAME, loadTable, newTableId, newViewId } from './service.ts';
import { tableTree, withTableTree } from './folders.ts';
import { assertAccess } from '../access-control/policy.ts';

/** Checks the table a change read before it writes (e.g. the request's If-Match); throws to refuse. */
export type Guard = (current: UserTableRecord) => void;

const nowIso = () => new Date().toISOString();

/** The email of a user, as tables and views record their creator. */
export async function actorEmail(repos: Repositories, userId: string): Promise<string> {
  return (await repos.users.get(userId))?.email ?? '';
}

/** Checks a list of column definitions: names distinct (and not a system field), at most MAX_COLUMNS. */
export function defineColumns(inputs: Parameters<typeof defineColumn>[0][], path: (string | number)[]): Column[] {
  if (inputs.length > MAX_COLUMNS) throw new DomainError('invalid', `A table has at most ${MAX_COLUMNS} columns.`);
  const columns: Column[] = [];
  try {
    for (const [i, input] of inputs.entries()) {
      const c = defineColumn(input, [i]);
      if (columns.some((x) => x.name === c.name)) throw new ColumnError(`Two columns are named "${c.name}".`, [i, 'name']);
      if ((SYSTEM_FIELDS as readonly string[]).includes(c.name)) throw new ColumnError(`"${c.name}" is a system field; name the column differently.`, [i, 'name']);
      columns.push(c);
    }
  } catch (err) {
    asBadRequest(err, path);
  }
  return columns;
}

/** A page of tables; a folder that does not exist (or is archived) holds none. */
export async function listTables(repos: Repositories, q: TableListQuery): Promise<UserTableRecord[]> {
  if (q.folderPath === null) return repos.userTables.list(q);
  const tree = tableTree(repos);
  await withTableTree(() => tree.assertSize(q.workspaceId));
  const folderPath = await tree.resolveExisting(q.workspaceId, q.folderPath);
  return folderPath === null ? [] : repos.userTables.list({ ...q, folderPath });
}

export interface NewTable {
  workspaceId: string;
  name: string;
  description: string | null;
  folderPath: string;
  columns: Column[];
  ownerId: string;
  limits: { tables: number; rowsPerTable: number };
}

/** Creates a table with its row storage and its default view, within the plan's number of tables. */
export async function createTable(tx: Repositories, audit: Audit, input: NewTable): Promise<UserTableRecord> {
  const { workspaceId, limits } = input;
  await assertAccess(tx, { workspaceId, userId: input.ownerId }, { kind: 'feature', key: 'disableTableCreation', action: 'Creating tables' });
  if ((await tx.userTables.countActive(workspaceId)) >= limits.tables) {
    throw new DomainError('forbidden', `This workspace's plan allows ${limits.tables} tables.`, { code: 'PLAN_LIMIT', limit: limits.tables });
  }
  if (await tx.userTables.activeByName(workspaceId, input.name)) throw tableNameTaken(input.name);
  const now = nowIso();
  await withTableTree(() => tableTree(tx).ensure(workspaceId, input.folderPath, now));
  const t: UserTableRecord = {
    id: newTableId(),
    workspaceId,
    name: input.name,
    description: input.description,
    folderPath: input.folderPath,
    columns: input.columns,
    ownerId: input.ownerId,
    ownerEmail: await actorEmail(tx, input.ownerId),
    rowCount: 0,
    maxRows: limits.rowsPerTable,
    locks: { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false },
    job: null,
    archivedAt: null,
    archiveBatch: null,
    createdAt: now,
    updatedAt: now,
  };
  await tx.userTables.insert(t);
  await tx.tableRows.createTable(t.id, input.columns);
  await tx.tableViews.insert({ id: newViewId(), tableId: t.id, name: DEFAULT_VIEW_NAME, config: {}, isDefault: true, createdByEmail: t.ownerEmail, createdAt: now, updatedAt: now });
  await audit({ action: 'table.created', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { columns: input.columns.length, folderPath: folderPathToWire(input.folderPath) } });
  return t;
}

/** Renames (schema lock), redescribes or moves a table; unchanged fields write nothing. */
export async function updateTable(
  tx: Repositories, audit: Audit, workspaceId: string, tableId: string,
  change: { name?: string; description?: string | null; folderPath?: string }, guard: Guard,
): Promise<UserTableRecord> {
  const t = await loadTable(tx, workspaceId, tableId);
  guard(t);
  const now = nowIso();
  const changes: Partial<UserTableRecord> = {};
  if (change.name !== undefined && change.name !== t.name) {
    assertUnlocked(t, 'schema');
    if (await tx.userTables.activeByName(workspaceId, change.name)) throw tableNameTaken(change.name);
    changes.name = change.name;
  }
  if (change.description !== undefined) changes.description = change.description;
  const folderPath = change.folderPath;
  if (folderPath !== undefined && folderPath !== t.folderPath) {
    await withTableTree(() => tableTree(tx).ensure(workspaceId, folderPath, now));
    changes.folderPath = folderPath;
  }
  if (Object.keys(changes).length === 0) return t;
  await tx.userTables.update(t.id, { ...changes, updatedAt: now });
  await audit({ action: 'table.updated', resourceType: 'table', resourceId: t.id, resourceName: changes.name ?? t.name, metadata: { fields: Object.keys(changes) } });
  return { ...t, ...changes, updatedAt: now };
}

/** Archives a table (unless delete-locked). */
export async function archiveTable(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, guard: Guard): Promise<void> {
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'delete');
  guard(t);
  const now = nowIso();
  await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: null, updatedAt: now });
  await audit({ action: 'table.deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name });
}

/** The name an archived table comes back under: its own, or the first free `name_<n>`. */
async function freeName(tx: Repositories, workspaceId: string, name: string): Promise<string> {
  if (!(await tx.userTables.activeByName(workspaceId, name))) return name;
  for (let n = 2; n < 1000; n++) {
    const candidate = `${name.slice(0, 128 - String(n).length - 1)}_${n}`;
    if (!(await tx.userTables.activeByName(workspaceId, candidate))) return candidate;
  }
  throw tableNameTaken(name);
}

/** Brings an archived table back (to the root when its folder is gone); an active one is returned as it is. */
export async function restoreTable(tx: Repositories, audit: Audit, workspaceId: string, tableId: string): Promise<UserTableRecord> {
  const t = await loadTable(tx, workspaceId, tableId, 'also');
  if (t.archivedAt === null) return t;
  const name = await freeName(tx, workspaceId, t.name);
  const folderPath = (await tableTree(tx).resolveExisting(workspaceId, t.folderPath)) ?? '/';
  const now = nowIso();
  const changes = { name, folderPath, archivedAt: null, archiveBatch: null, updatedAt: now };
  await tx.userTables.update(t.id, changes);
  await audit({ action: 'table.restored', resourceType: 'table', resourceId: t.id, resourceName: name, metadata: { renamed: name !== t.name, folderPath: folderPathToWire(folderPath) } });
  return { ...t, ...changes };
}

type BatchItem = { kind: 'table' | 'folder'; id: string; name: string };
type Missing = { kind: 'table' | 'folder'; id: string };
/** A folder of a batch: `wire` is how the request named it (and how the answer names it), `path` canonical. */
export type FolderRef = readonly [wire: string, path: string];

/** Archives tables and folders (with the tables inside); each item is reported, none fails the whole batch. */
export async function bulkDelete(tx: Repositories, audit: Audit, workspaceId: string, tableIds: string[], folderPaths: FolderRef[]) {
  const out = { deleted: [] as BatchItem[], skipped: [] as BatchItem[], notFound: [] as Missing[], failed: [] as (BatchItem & { reason: string })[] };
  const counts = { tables: 0, folders: 0 };
  const now = nowIso();
  for (const id of new Set(tableIds)) {
    const t = await tx.userTables.get(id);
    if (!t || t.workspaceId !== workspaceId) out.notFound.push({ kind: 'table', id });
    else if (t.archivedAt !== null) out.skipped.push({ kind: 'table', id, name: t.name });
    else if (t.locks.deleteLocked) out.failed.push({ kind: 'table', id, name: t.name, reason: 'The table is delete-locked.' });
    else {
      await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: null, updatedAt: now });
      out.deleted.push({ kind: 'table', id, name: t.name });
      counts.tables++;
    }
  }
  const tree = tableTree(tx);
  for (const [wire, path] of folderPaths) {
    if (path === '/' || !(await tx.tableFolders.getActive(workspaceId, path))) {
      out.notFound.push({ kind: 'folder', id: wire });
      continue;
    }
    const tables = await tx.userTables.activeInSubtree(workspaceId, path);
    const locked = tables.find((t) => t.locks.deleteLocked);
    if (locked) {
      out.failed.push({ kind: 'folder', id: wire, name: path.slice(path.lastIndexOf('/') + 1), reason: `The table "${locked.name}" inside is delete-locked.` });
      continue;
    }
    const { batch, folders } = await withTableTree(() => tree.archive(workspaceId, path, now));
    for (const t of tables) await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: batch, updatedAt: now });
    out.deleted.push({ kind: 'folder', id: wire, name: path.slice(path.lastIndexOf('/') + 1) });
    counts.folders += folders;
    counts.tables += tables.length;
  }
  if (counts.tables + counts.folders > 0) await audit({ action: 'table.bulk_deleted', resourceType: 'table', metadata: counts });
  return { ...out, deletedItems: counts };
}

/** Moves tables and folders into `target` (created as needed); each item is reported, none fails the batch. */
export async function bulkMove(tx: Repositories, audit: Audit, workspaceId: string, target: string, tableIds: string[], folderPaths: FolderRef[]) {
  const out = { moved: [] as BatchItem[], skipped: [] as BatchItem[], notFound: [] as Missing[], failed: [] as (BatchItem & { reason: string })[] };
  const tree = tableTree(tx);
  const now = nowIso();
  await withTableTree(async () => {
    await tree.assertSize(workspaceId);
    await tree.ensure(workspaceId, target, now);
  });
  for (const id of new Set(tableIds)) {
    const t = await tx.userTables.get(id);
    if (!t || t.workspaceId !== workspaceId || t.archivedAt !== null) out.notFound.push({ kind: 'table', id });
    else if (t.folderPath === target) out.skipped.push({ kind: 'table', id, name: t.name });
    else {
      await tx.userTables.update(t.id, { folderPath: target, updatedAt: now });
      out.moved.push({ kind: 'table', id, name: t.name });
    }
  }
  for (const [wire, from] of folderPaths) {
    const name = from.slice(from.lastIndexOf('/') + 1);
    if (from === '/' || !(await tx.tableFolders.getActive(workspaceId, from))) {
      out.notFound.push({ kind: 'folder', id: wire });
      continue;
    }
    const to = target === '/' ? `/${name}` : `${target}/${name}`;
    if (to === from || parentFolderPath(from) === target) {
      out.skipped.push({ kind: 'folder', id: wire, name });
      continue;
    }
    if (isWithin(target, from)) {
      out.failed.push({ kind: 'folder', id: wire, name, reason: 'A folder cannot be moved into itself.' });
      continue;
    }
    if (await tx.tableFolders.getActive(workspaceId, to)) {
      out.failed.push({ kind: 'folder', id: wire, name, reason: `The folder ${folderPathToWire(to)} already exists.` });
      continue;
    }
    await withTableTree(() => tree.move(workspaceId, from, to, now));
    await tx.userTables.relocateSubtree(workspaceId, from, to, now);
    out.moved.push({ kind: 'folder', id: wire, name });
  }
  if (out.moved.length > 0) await audit({ action: 'table.moved', resourceType: 'table', metadata: { moved: out.moved.length, target: folderPathToWire(target) } });
  return out;
}

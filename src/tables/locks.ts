// Setting a table's four lock flags: an operator's verb (the v2 API cannot change locks), recorded in the audit
// trail. Presets: none, append-only (update and delete locked), read-only (all four locked).
import type { Store } from '../store/index.ts';
import type { TableLocks } from '../store/user-tables.ts';
import { recordAudit } from '../audit/recorder.ts';

export class TableLockError extends Error {}

export const LOCK_PRESETS: Record<string, TableLocks> = {
  none: { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false },
  'append-only': { schemaLocked: false, insertLocked: false, updateLocked: true, deleteLocked: true },
  'read-only': { schemaLocked: true, insertLocked: true, updateLocked: true, deleteLocked: true },
};

/** Applies a preset (if any), then the individual flags given, and returns the table's locks. */
export async function setTableLocks(store: Store, tableId: string, change: { preset?: string; flags: Partial<TableLocks> }): Promise<{ tableId: string; locks: TableLocks }> {
  if (change.preset !== undefined && !(change.preset in LOCK_PRESETS)) throw new TableLockError(`--preset must be one of ${Object.keys(LOCK_PRESETS).join(', ')}`);
  return store.transaction(async (tx) => {
    const t = await tx.userTables.get(tableId);
    if (!t) throw new TableLockError(`No table ${tableId}`);
    const locks: TableLocks = { ...(change.preset ? LOCK_PRESETS[change.preset]! : t.locks), ...change.flags };
    await tx.userTables.setLocks(t.id, locks, new Date().toISOString());
    await recordAudit(tx, null, t.workspaceId, { action: 'table.locks_changed', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { ...locks } });
    return { tableId: t.id, locks };
  });
}

// Groups with autoRun run on the rows a write inserted or changed: the write records a dispatch in mode `new`
// (in its own transaction), and the group runner picks it up once the caller pokes it after the commit.
import type { Repositories } from '../store/index.ts';
import type { DispatchRecord } from '../store/table-groups.ts';
import type { UserTableRecord } from '../store/user-tables.ts';
import { newDispatchId } from './group-runs.ts';

/**
 * After rows are inserted or changed: groups with autoRun run on those rows whose dependency columns are now
 * filled and that have not run yet. Returns whether a dispatch was created.
 */
export async function autoDispatch(tx: Repositories, t: UserTableRecord, userId: string, rowIds: string[]): Promise<boolean> {
  const groups = (t.groups ?? []).filter((g) => g.autoRun);
  if (groups.length === 0 || rowIds.length === 0) return false;
  const d: DispatchRecord = {
    id: newDispatchId(), tableId: t.id, workspaceId: t.workspaceId, userId, status: 'pending', processedCount: 0,
    requestedAt: new Date().toISOString(), completedAt: null, canceledAt: null,
    mode: 'new', scope: { groupIds: groups.map((g) => g.id), rowIds }, filter: null, limit: null, isManualRun: false,
  };
  await tx.tableGroupRuns.insertDispatch(d);
  return true;
}

// Fork edges between workspaces and what each edge remembers: resource mappings (child-oriented pairs),
// workflow counterparts, sync exclusions and the undo point of the latest sync into each side.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface ForkEdge {
  childWorkspaceId: string;
  parentWorkspaceId: string;
  createdBy: string;
  createdAt: string;
}

export interface ForkMappingRecord {
  id: string;
  childWorkspaceId: string;
  resourceType: string;
  parentResourceId: string;
  childResourceId: string;
  createdAt: string;
  updatedAt: string;
}

export interface ForkUndoPoint {
  childWorkspaceId: string;
  targetWorkspaceId: string;
  sourceWorkspaceId: string;
  operationId: string;
  undo: string;
  createdAt: string;
}

interface EdgeRow {
  child_workspace_id: string;
  parent_workspace_id: string;
  created_by: string;
  created_at: string;
}
const toEdge = (r: EdgeRow): ForkEdge => ({ childWorkspaceId: r.child_workspace_id, parentWorkspaceId: r.parent_workspace_id, createdBy: r.created_by, createdAt: r.created_at });

interface MappingRow {
  id: string;
  child_workspace_id: string;
  resource_type: string;
  parent_resource_id: string;
  child_resource_id: string;
  created_at: string;
  updated_at: string;
}
const toMapping = (r: MappingRow): ForkMappingRecord => ({
  id: r.id,
  childWorkspaceId: r.child_workspace_id,
  resourceType: r.resource_type,
  parentResourceId: r.parent_resource_id,
  childResourceId: r.child_resource_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface UndoRow {
  child_workspace_id: string;
  target_workspace_id: string;
  source_workspace_id: string;
  operation_id: string;
  undo: string;
  created_at: string;
}
const toUndo = (r: UndoRow): ForkUndoPoint => ({
  childWorkspaceId: r.child_workspace_id,
  targetWorkspaceId: r.target_workspace_id,
  sourceWorkspaceId: r.source_workspace_id,
  operationId: r.operation_id,
  undo: r.undo,
  createdAt: r.created_at,
});

export class WorkspaceForkRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  // ---- edges

  async insertEdge(e: ForkEdge): Promise<void> {
    await this.db.run('INSERT INTO workspace_fork_edges (child_workspace_id, parent_workspace_id, created_by, created_at) VALUES (?, ?, ?, ?)', [
      e.childWorkspaceId,
      e.parentWorkspaceId,
      e.createdBy,
      e.createdAt,
    ]);
  }

  async parentEdge(childWorkspaceId: string): Promise<ForkEdge | undefined> {
    const r = await this.db.get<EdgeRow>('SELECT * FROM workspace_fork_edges WHERE child_workspace_id = ?', [childWorkspaceId]);
    return r && toEdge(r);
  }

  /** The edge between two workspaces, whichever is the parent; undefined when they are not a direct parent and child. */
  async edgeBetween(a: string, b: string): Promise<ForkEdge | undefined> {
    const r = await this.db.get<EdgeRow>(
      'SELECT * FROM workspace_fork_edges WHERE (child_workspace_id = ? AND parent_workspace_id = ?) OR (child_workspace_id = ? AND parent_workspace_id = ?)',
      [a, b, b, a],
    );
    return r && toEdge(r);
  }

  /** Children of a workspace, newest first. */
  async children(parentWorkspaceId: string, after: readonly [SqlValue, string] | null, limit: number): Promise<ForkEdge[]> {
    const page = keyset({ column: 'created_at', idColumn: 'child_workspace_id', order: 'desc', after, limit });
    const rows = await this.db.all<EdgeRow>(
      `SELECT * FROM workspace_fork_edges WHERE parent_workspace_id = ? AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(limit)}`,
      [parentWorkspaceId, ...page.whereParams],
    );
    return rows.map(toEdge);
  }

  /** Removes an edge and, by cascade, everything it remembers; false when it was already gone. */
  async deleteEdge(childWorkspaceId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM workspace_fork_edges WHERE child_workspace_id = ?', [childWorkspaceId])).changes > 0;
  }

  // ---- resource mappings

  async mappings(childWorkspaceId: string): Promise<ForkMappingRecord[]> {
    const rows = await this.db.all<MappingRow>('SELECT * FROM workspace_fork_mappings WHERE child_workspace_id = ? ORDER BY id', [childWorkspaceId]);
    return rows.map(toMapping);
  }

  async mappingsPage(childWorkspaceId: string, afterId: string | null, limit: number): Promise<ForkMappingRecord[]> {
    const rows = await this.db.all<MappingRow>(
      `SELECT * FROM workspace_fork_mappings WHERE child_workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR id > ?) ORDER BY id ${limitClause(limit)}`,
      [childWorkspaceId, afterId, afterId],
    );
    return rows.map(toMapping);
  }

  /** Removes the pairings that hold either id on its side. */
  async unpair(childWorkspaceId: string, resourceType: string, side: 'parent' | 'child', resourceId: string): Promise<number> {
    const column = side === 'parent' ? 'parent_resource_id' : 'child_resource_id';
    return (await this.db.run(`DELETE FROM workspace_fork_mappings WHERE child_workspace_id = ? AND resource_type = ? AND ${column} = ?`, [childWorkspaceId, resourceType, resourceId])).changes;
  }

  /** Pairs two resources, replacing any pairing either of them had. */
  async pair(m: ForkMappingRecord): Promise<void> {
    await this.unpair(m.childWorkspaceId, m.resourceType, 'parent', m.parentResourceId);
    await this.unpair(m.childWorkspaceId, m.resourceType, 'child', m.childResourceId);
    await this.db.run(
      `INSERT INTO workspace_fork_mappings (id, child_workspace_id, resource_type, parent_resource_id, child_resource_id, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [m.id, m.childWorkspaceId, m.resourceType, m.parentResourceId, m.childResourceId, m.createdAt, m.updatedAt],
    );
  }

  // ---- workflow counterparts

  async workflowPairs(childWorkspaceId: string): Promise<{ parentWorkflowId: string; childWorkflowId: string }[]> {
    const rows = await this.db.all<{ parent_workflow_id: string; child_workflow_id: string }>(
      'SELECT parent_workflow_id, child_workflow_id FROM workspace_fork_workflow_pairs WHERE child_workspace_id = ?',
      [childWorkspaceId],
    );
    return rows.map((r) => ({ parentWorkflowId: r.parent_workflow_id, childWorkflowId: r.child_workflow_id }));
  }

  async pairWorkflows(childWorkspaceId: string, parentWorkflowId: string, childWorkflowId: string): Promise<void> {
    await this.db.run('DELETE FROM workspace_fork_workflow_pairs WHERE child_workspace_id = ? AND (parent_workflow_id = ? OR child_workflow_id = ?)', [
      childWorkspaceId,
      parentWorkflowId,
      childWorkflowId,
    ]);
    await this.db.run('INSERT INTO workspace_fork_workflow_pairs (child_workspace_id, parent_workflow_id, child_workflow_id) VALUES (?, ?, ?)', [
      childWorkspaceId,
      parentWorkflowId,
      childWorkflowId,
    ]);
  }

  // ---- exclusions

  async excludedIds(workspaceId: string): Promise<Set<string>> {
    const rows = await this.db.all<{ workflow_id: string }>('SELECT workflow_id FROM workspace_fork_exclusions WHERE workspace_id = ?', [workspaceId]);
    return new Set(rows.map((r) => r.workflow_id));
  }

  async exclude(workspaceId: string, workflowId: string, at: string): Promise<boolean> {
    const r = await this.db.run(
      'INSERT INTO workspace_fork_exclusions (workflow_id, workspace_id, created_at) SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM workspace_fork_exclusions WHERE workflow_id = ?)',
      [workflowId, workspaceId, at, workflowId],
    );
    return r.changes > 0;
  }

  async include(workflowId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM workspace_fork_exclusions WHERE workflow_id = ?', [workflowId])).changes > 0;
  }

  // ---- undo points

  async putUndoPoint(u: ForkUndoPoint): Promise<void> {
    await this.db.run('DELETE FROM workspace_fork_undo_points WHERE child_workspace_id = ? AND target_workspace_id = ?', [u.childWorkspaceId, u.targetWorkspaceId]);
    await this.db.run(
      `INSERT INTO workspace_fork_undo_points (child_workspace_id, target_workspace_id, source_workspace_id, operation_id, undo, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
      [u.childWorkspaceId, u.targetWorkspaceId, u.sourceWorkspaceId, u.operationId, u.undo, u.createdAt],
    );
  }

  async undoPoint(childWorkspaceId: string, targetWorkspaceId: string): Promise<ForkUndoPoint | undefined> {
    const r = await this.db.get<UndoRow>('SELECT * FROM workspace_fork_undo_points WHERE child_workspace_id = ? AND target_workspace_id = ?', [childWorkspaceId, targetWorkspaceId]);
    return r && toUndo(r);
  }

  /** The undo point of the newest sync into a workspace, over all its edges. */
  async newestUndoInto(targetWorkspaceId: string): Promise<ForkUndoPoint | undefined> {
    const r = await this.db.get<UndoRow>(`SELECT * FROM workspace_fork_undo_points WHERE target_workspace_id = ? ORDER BY operation_id DESC ${limitClause(1)}`, [targetWorkspaceId]);
    return r && toUndo(r);
  }

  async deleteUndoPoint(childWorkspaceId: string, targetWorkspaceId: string): Promise<void> {
    await this.db.run('DELETE FROM workspace_fork_undo_points WHERE child_workspace_id = ? AND target_workspace_id = ?', [childWorkspaceId, targetWorkspaceId]);
  }
}

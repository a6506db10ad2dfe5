// Deployment versions (immutable state snapshots) and the activation attempts that made one live.
import type { SqlExecutor, SqlValue } from './database.ts';
import { limitClause } from './keyset.ts';

export interface WorkflowVersionRecord {
  id: string;
  workflowId: string;
  version: number;
  name: string | null;
  description: string | null;
  state: string;
  deployedBy: string | null;
  createdAt: string;
}

export interface DeploymentAttemptRecord {
  id: string;
  workflowId: string;
  seq: number;
  versionId: string;
  version: number;
  action: 'deploy' | 'activate';
  status: 'preparing' | 'activating' | 'active' | 'failed' | 'superseded';
  requestedAt: string;
  activatedAt: string | null;
}

interface VersionRow {
  id: string;
  workflow_id: string;
  version: number;
  name: string | null;
  description: string | null;
  state: string;
  deployed_by: string | null;
  created_at: string;
}

interface AttemptRow {
  id: string;
  workflow_id: string;
  seq: number;
  version_id: string;
  version: number;
  action: 'deploy' | 'activate';
  status: DeploymentAttemptRecord['status'];
  requested_at: string;
  activated_at: string | null;
}

const toVersion = (r: VersionRow): WorkflowVersionRecord => ({
  id: r.id,
  workflowId: r.workflow_id,
  version: Number(r.version),
  name: r.name,
  description: r.description,
  state: r.state,
  deployedBy: r.deployed_by,
  createdAt: r.created_at,
});

const toAttempt = (r: AttemptRow): DeploymentAttemptRecord => ({
  id: r.id,
  workflowId: r.workflow_id,
  seq: Number(r.seq),
  versionId: r.version_id,
  version: Number(r.version),
  action: r.action,
  status: r.status,
  requestedAt: r.requested_at,
  activatedAt: r.activated_at,
});

export class WorkflowVersionRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async nextVersion(workflowId: string): Promise<number> {
    const r = await this.db.get<{ v: number | null }>('SELECT MAX(version) AS v FROM workflow_versions WHERE workflow_id = ?', [workflowId]);
    return Number(r?.v ?? 0) + 1;
  }

  async insert(v: WorkflowVersionRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO workflow_versions (id, workflow_id, version, name, description, state, deployed_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [v.id, v.workflowId, v.version, v.name, v.description, v.state, v.deployedBy, v.createdAt],
    );
  }

  async get(workflowId: string, version: number): Promise<WorkflowVersionRecord | undefined> {
    const r = await this.db.get<VersionRow>('SELECT * FROM workflow_versions WHERE workflow_id = ? AND version = ?', [workflowId, version]);
    return r && toVersion(r);
  }

  async getById(id: string): Promise<WorkflowVersionRecord | undefined> {
    const r = await this.db.get<VersionRow>('SELECT * FROM workflow_versions WHERE id = ?', [id]);
    return r && toVersion(r);
  }

  /** Newest first; `after` is the last version number of the previous page. */
  async list(workflowId: string, after: readonly [SqlValue, string] | null, limit: number): Promise<(WorkflowVersionRecord & { latestStatus: DeploymentAttemptRecord['status'] | null })[]> {
    const rows = await this.db.all<VersionRow & { latest_status: DeploymentAttemptRecord['status'] | null }>(
      `SELECT v.id, v.workflow_id, v.version, v.name, v.description, '' AS state, v.deployed_by, v.created_at,
         (SELECT a.status FROM workflow_deployment_attempts a WHERE a.version_id = v.id ORDER BY a.seq DESC LIMIT 1) AS latest_status
       FROM workflow_versions v WHERE v.workflow_id = ? ${after ? 'AND v.version < ?' : ''} ORDER BY v.version DESC ${limitClause(limit)}`,
      after ? [workflowId, after[0]] : [workflowId],
    );
    return rows.map((r) => ({ ...toVersion(r), latestStatus: r.latest_status }));
  }

  async updateLabel(id: string, changes: { name?: string; description?: string | null }): Promise<void> {
    const sets: string[] = [];
    const params: SqlValue[] = [];
    if (changes.name !== undefined) {
      sets.push('name = ?');
      params.push(changes.name);
    }
    if (changes.description !== undefined) {
      sets.push('description = ?');
      params.push(changes.description);
    }
    if (sets.length > 0) await this.db.run(`UPDATE workflow_versions SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  /** Records that a version became live; the attempt that was live before is superseded. */
  async recordActivation(a: Omit<DeploymentAttemptRecord, 'seq' | 'status'>): Promise<DeploymentAttemptRecord> {
    await this.db.run("UPDATE workflow_deployment_attempts SET status = 'superseded' WHERE workflow_id = ? AND status = 'active'", [a.workflowId]);
    const r = await this.db.get<{ s: number | null }>('SELECT MAX(seq) AS s FROM workflow_deployment_attempts WHERE workflow_id = ?', [a.workflowId]);
    const attempt: DeploymentAttemptRecord = { ...a, seq: Number(r?.s ?? 0) + 1, status: 'active' };
    await this.db.run(
      `INSERT INTO workflow_deployment_attempts (id, workflow_id, seq, version_id, version, action, status, requested_at, activated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [attempt.id, attempt.workflowId, attempt.seq, attempt.versionId, attempt.version, attempt.action, attempt.status, attempt.requestedAt, attempt.activatedAt],
    );
    return attempt;
  }

  /** Marks the live attempt superseded (undeploy). */
  async deactivate(workflowId: string): Promise<void> {
    await this.db.run("UPDATE workflow_deployment_attempts SET status = 'superseded' WHERE workflow_id = ? AND status = 'active'", [workflowId]);
  }

  async latestAttempt(workflowId: string): Promise<DeploymentAttemptRecord | undefined> {
    const r = await this.db.get<AttemptRow>('SELECT * FROM workflow_deployment_attempts WHERE workflow_id = ? ORDER BY seq DESC LIMIT 1', [workflowId]);
    return r && toAttempt(r);
  }

  /** The version that was live before the current one: the newest earlier activation of a different version. */
  async previousActiveVersion(workflowId: string, currentVersionId: string | null): Promise<number | undefined> {
    const r = await this.db.get<{ version: number }>(
      `SELECT version FROM workflow_deployment_attempts WHERE workflow_id = ? AND version_id IS DISTINCT FROM ?
         AND seq < COALESCE((SELECT MAX(seq) FROM workflow_deployment_attempts WHERE workflow_id = ? AND version_id IS NOT DISTINCT FROM ?), 1e18)
       ORDER BY seq DESC LIMIT 1`,
      [workflowId, currentVersionId, workflowId, currentVersionId],
    );
    return r ? Number(r.version) : undefined;
  }
}

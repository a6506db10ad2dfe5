// Sandboxes: a workspace's named dependency sets for function blocks, with the state of their build.
import type { SqlExecutor, SqlValue } from './database.ts';
import { workspacePage } from './keyset.ts';

export type BuildStatus = 'pending' | 'building' | 'ready' | 'failed';

export interface SandboxRecord {
  id: string;
  workspaceId: string;
  name: string;
  language: 'javascript' | 'python';
  dependencies: string[];
  cliTools: string[];
  systemPackages: string[];
  /** Content address of what gets built (language and sorted lists); equal specs share one build. */
  specHash: string;
  buildStatus: BuildStatus | null;
  errorCode: string | null;
  errorMessage: string | null;
  errorDetail: string | null;
  builtAt: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  language: 'javascript' | 'python';
  dependencies: string;
  cli_tools: string;
  system_packages: string;
  spec_hash: string;
  build_status: BuildStatus | null;
  error_code: string | null;
  error_message: string | null;
  error_detail: string | null;
  built_at: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): SandboxRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  language: r.language,
  dependencies: JSON.parse(r.dependencies),
  cliTools: JSON.parse(r.cli_tools),
  systemPackages: JSON.parse(r.system_packages),
  specHash: r.spec_hash,
  buildStatus: r.build_status,
  errorCode: r.error_code,
  errorMessage: r.error_message,
  errorDetail: r.error_detail,
  builtAt: r.built_at,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SORT_COLUMN = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export interface BuildState {
  buildStatus: BuildStatus;
  errorCode: string | null;
  errorMessage: string | null;
  errorDetail: string | null;
  builtAt: string | null;
}

export class SandboxRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(workspaceId: string, id: string): Promise<SandboxRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM sandboxes WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return r && toRecord(r);
  }

  async getByName(workspaceId: string, name: string): Promise<SandboxRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM sandboxes WHERE workspace_id = ? AND name = ?', [workspaceId, name]);
    return r && toRecord(r);
  }

  async list(q: { workspaceId: string; search?: string; sortBy: keyof typeof SORT_COLUMN; sortOrder: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number }): Promise<SandboxRecord[]> {
    const rows = await workspacePage<Row>(this.db, 'sandboxes', { ...q, searchColumn: 'name', sortColumn: SORT_COLUMN[q.sortBy], order: q.sortOrder });
    return rows.map(toRecord);
  }

  /** Sandboxes whose build did not finish (a restart re-queues them). */
  async unfinished(): Promise<SandboxRecord[]> {
    return (await this.db.all<Row>(`SELECT * FROM sandboxes WHERE build_status IN ('pending', 'building')`)).map(toRecord);
  }

  async insert(s: SandboxRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO sandboxes (id, workspace_id, name, language, dependencies, cli_tools, system_packages, spec_hash, build_status, error_code, error_message, error_detail, built_at, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [s.id, s.workspaceId, s.name, s.language, JSON.stringify(s.dependencies), JSON.stringify(s.cliTools), JSON.stringify(s.systemPackages), s.specHash, s.buildStatus, s.errorCode, s.errorMessage, s.errorDetail, s.builtAt, s.createdBy, s.createdAt, s.updatedAt],
    );
  }

  async update(s: SandboxRecord): Promise<void> {
    await this.db.run(
      `UPDATE sandboxes SET name = ?, language = ?, dependencies = ?, cli_tools = ?, system_packages = ?, spec_hash = ?, build_status = ?, error_code = ?,
         error_message = ?, error_detail = ?, built_at = ?, updated_at = ? WHERE id = ?`,
      [s.name, s.language, JSON.stringify(s.dependencies), JSON.stringify(s.cliTools), JSON.stringify(s.systemPackages), s.specHash, s.buildStatus, s.errorCode, s.errorMessage, s.errorDetail, s.builtAt, s.updatedAt, s.id],
    );
  }

  /** Records a build's state on every sandbox with this spec (builds are shared by content address). */
  async setBuildState(specHash: string, state: BuildState): Promise<void> {
    await this.db.run(
      'UPDATE sandboxes SET build_status = ?, error_code = ?, error_message = ?, error_detail = ?, built_at = ? WHERE spec_hash = ?',
      [state.buildStatus, state.errorCode, state.errorMessage, state.errorDetail, state.builtAt, specHash],
    );
  }

  /** How many sandboxes (in any workspace) use the build with this spec hash. */
  async countByHash(specHash: string): Promise<number> {
    return Number((await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM sandboxes WHERE spec_hash = ?', [specHash]))?.n ?? 0);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM sandboxes WHERE id = ?', [id])).changes > 0;
  }
}

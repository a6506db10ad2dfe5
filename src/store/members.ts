import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';
import type { WorkspaceRole } from './workspaces.ts';

export interface Member {
  workspaceId: string;
  userId: string;
  email: string;
  name: string;
  image: string | null;
  role: WorkspaceRole;
  joinedAt: string;
}

interface MemberRow {
  workspace_id: string;
  user_id: string;
  email: string;
  name: string;
  image: string | null;
  role: WorkspaceRole;
  joined_at: string;
}

const toMember = (r: MemberRow): Member => ({
  workspaceId: r.workspace_id,
  userId: r.user_id,
  email: r.email,
  name: r.name,
  image: r.image,
  role: r.role,
  joinedAt: r.joined_at,
});

export class MemberRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** Adds the member, or changes the role of an existing one. */
  async upsert(workspaceId: string, userId: string, role: WorkspaceRole, joinedAt: string): Promise<void> {
    await this.db.run(
      `INSERT INTO workspace_members (workspace_id, user_id, role, joined_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role`,
      [workspaceId, userId, role, joinedAt],
    );
  }

  async remove(workspaceId: string, userId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM workspace_members WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId])).changes > 0;
  }

  async role(workspaceId: string, userId: string): Promise<WorkspaceRole | undefined> {
    const r = await this.db.get<{ role: WorkspaceRole }>('SELECT role FROM workspace_members WHERE workspace_id = ? AND user_id = ?', [
      workspaceId,
      userId,
    ]);
    return r?.role;
  }

  /** Every workspace the user belongs to. */
  async workspaceIdsOf(userId: string): Promise<string[]> {
    return (await this.db.all<{ workspace_id: string }>('SELECT workspace_id FROM workspace_members WHERE user_id = ? ORDER BY workspace_id', [userId])).map(
      (r) => r.workspace_id,
    );
  }

  async list(workspaceId: string, after: readonly [SqlValue, string] | null, limit: number): Promise<Member[]> {
    const page = keyset({ column: 'm.joined_at', idColumn: 'm.user_id', order: 'asc', after, limit });
    const rows = await this.db.all<MemberRow>(
      `SELECT m.workspace_id, m.user_id, m.role, m.joined_at, u.email, u.name, u.image
       FROM workspace_members m JOIN users u ON u.id = m.user_id
       WHERE m.workspace_id = ? AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(limit)}`,
      [workspaceId, ...page.whereParams],
    );
    return rows.map(toMember);
  }
}

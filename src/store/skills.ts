// Skills of a workspace and the members granted editing of each.
import type { SqlExecutor } from './database.ts';

export interface SkillRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string;
  content: string;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface SkillEditorRecord {
  userId: string;
  email: string;
  name: string;
  image: string | null;
  role: string | null;
  grantedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  content: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): SkillRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  content: r.content,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SkillRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(workspaceId: string, id: string): Promise<SkillRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM skills WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return r && toRecord(r);
  }

  async getByName(workspaceId: string, name: string): Promise<SkillRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM skills WHERE workspace_id = ? AND name = ?', [workspaceId, name]);
    return r && toRecord(r);
  }

  /** Every skill of the workspace without content (skills are few per workspace; the handler merges built-ins and pages). */
  async listAll(workspaceId: string, search?: string): Promise<SkillRecord[]> {
    const rows = await this.db.all<Row>(
      `SELECT id, workspace_id, name, description, '' AS content, created_by, created_at, updated_at FROM skills
       WHERE workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR ${this.db.dialect.contains('lower(name)', 'lower(?)')})`,
      [workspaceId, search ?? null, search ?? null],
    );
    return rows.map(toRecord);
  }

  async insert(s: SkillRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO skills (id, workspace_id, name, description, content, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [s.id, s.workspaceId, s.name, s.description, s.content, s.createdBy, s.createdAt, s.updatedAt],
    );
  }

  async update(s: SkillRecord): Promise<void> {
    await this.db.run('UPDATE skills SET name = ?, description = ?, content = ?, updated_at = ? WHERE id = ?', [s.name, s.description, s.content, s.updatedAt, s.id]);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM skills WHERE id = ?', [id])).changes > 0;
  }

  /** Editors with their user details and current workspace role (null once they left the workspace). */
  async editors(skillId: string, workspaceId: string): Promise<SkillEditorRecord[]> {
    return (
      await this.db.all<{ user_id: string; email: string; name: string; image: string | null; role: string | null; granted_at: string }>(
        `SELECT e.user_id, u.email, u.name, u.image, m.role, e.granted_at FROM skill_editors e
         JOIN users u ON u.id = e.user_id
         LEFT JOIN workspace_members m ON m.workspace_id = ? AND m.user_id = e.user_id
         WHERE e.skill_id = ?`,
        [workspaceId, skillId],
      )
    ).map((r) => ({ userId: r.user_id, email: r.email, name: r.name, image: r.image, role: r.role, grantedAt: r.granted_at }));
  }

  async isEditor(skillId: string, userId: string): Promise<boolean> {
    return !!(await this.db.get('SELECT 1 AS x FROM skill_editors WHERE skill_id = ? AND user_id = ?', [skillId, userId]));
  }

  async grant(skillId: string, userId: string, grantedBy: string, at: string): Promise<void> {
    await this.db.run('INSERT INTO skill_editors (skill_id, user_id, granted_by, granted_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [skillId, userId, grantedBy, at]);
  }

  async revoke(skillId: string, userId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM skill_editors WHERE skill_id = ? AND user_id = ?', [skillId, userId])).changes > 0;
  }
}

// Permission groups of an organization, the workspaces each targets and its explicit members. The config is
// stored as JSON text; src/access-control/ reads it (defaults for anything unknown) and holds every rule.
import type { SqlExecutor } from './database.ts';

export interface PermissionGroupRecord {
  id: string;
  organizationId: string;
  name: string;
  description: string | null;
  /** The PermissionConfig as stored (JSON). */
  config: string;
  isDefault: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface PermissionGroupMemberRecord {
  id: string;
  groupId: string;
  organizationId: string;
  userId: string;
  assignedBy: string;
  assignedAt: string;
  userName: string | null;
  userEmail: string | null;
  userImage: string | null;
}

interface GroupRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  config: string;
  is_default: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const toGroup = (r: GroupRow): PermissionGroupRecord => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  description: r.description,
  config: r.config,
  isDefault: Number(r.is_default) === 1,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface MemberRow {
  id: string;
  group_id: string;
  organization_id: string;
  user_id: string;
  assigned_by: string;
  assigned_at: string;
  user_name: string | null;
  user_email: string | null;
  user_image: string | null;
}

const toMember = (r: MemberRow): PermissionGroupMemberRecord => ({
  id: r.id,
  groupId: r.group_id,
  organizationId: r.organization_id,
  userId: r.user_id,
  assignedBy: r.assigned_by,
  assignedAt: r.assigned_at,
  userName: r.user_name,
  userEmail: r.user_email,
  userImage: r.user_image,
});

const MEMBER_SELECT = `SELECT m.id, m.group_id, m.organization_id, m.user_id, m.assigned_by, m.assigned_at, u.name AS user_name, u.email AS user_email, u.image AS user_image
  FROM permission_group_members m LEFT JOIN users u ON u.id = m.user_id`;

export class PermissionGroupRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(g: PermissionGroupRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO permission_groups (id, organization_id, name, description, config, is_default, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [g.id, g.organizationId, g.name, g.description, g.config, g.isDefault ? 1 : 0, g.createdBy, g.createdAt, g.updatedAt],
    );
  }

  async update(id: string, change: { name: string; description: string | null; config: string; isDefault: boolean; updatedAt: string }): Promise<void> {
    await this.db.run('UPDATE permission_groups SET name = ?, description = ?, config = ?, is_default = ?, updated_at = ? WHERE id = ?', [
      change.name,
      change.description,
      change.config,
      change.isDefault ? 1 : 0,
      change.updatedAt,
      id,
    ]);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM permission_groups WHERE id = ?', [id])).changes > 0;
  }

  async get(id: string): Promise<PermissionGroupRecord | undefined> {
    const r = await this.db.get<GroupRow>('SELECT * FROM permission_groups WHERE id = ?', [id]);
    return r && toGroup(r);
  }

  /** Every group of the organization (organizations hold few; lists page them in memory). */
  async listForOrganization(organizationId: string): Promise<PermissionGroupRecord[]> {
    return (await this.db.all<GroupRow>('SELECT * FROM permission_groups WHERE organization_id = ? ORDER BY created_at, id', [organizationId])).map(toGroup);
  }

  async defaultOf(organizationId: string): Promise<PermissionGroupRecord | undefined> {
    const r = await this.db.get<GroupRow>('SELECT * FROM permission_groups WHERE organization_id = ? AND is_default = 1', [organizationId]);
    return r && toGroup(r);
  }

  async nameTaken(organizationId: string, name: string, exceptId: string | null): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM permission_groups WHERE organization_id = ? AND name = ? AND id <> ?', [organizationId, name, exceptId ?? ''])) !== undefined;
  }

  // ---- workspaces

  async workspaceIds(groupId: string): Promise<string[]> {
    return (await this.db.all<{ workspace_id: string }>('SELECT workspace_id FROM permission_group_workspaces WHERE group_id = ? ORDER BY workspace_id', [groupId])).map(
      (r) => r.workspace_id,
    );
  }

  async setWorkspaces(groupId: string, workspaceIds: readonly string[]): Promise<void> {
    await this.db.run('DELETE FROM permission_group_workspaces WHERE group_id = ?', [groupId]);
    for (const workspaceId of workspaceIds) {
      await this.db.run('INSERT INTO permission_group_workspaces (group_id, workspace_id) VALUES (?, ?)', [groupId, workspaceId]);
    }
  }

  /** The non-default groups that target a workspace. */
  async groupsTargeting(workspaceId: string): Promise<PermissionGroupRecord[]> {
    return (
      await this.db.all<GroupRow>(
        `SELECT g.* FROM permission_groups g JOIN permission_group_workspaces w ON w.group_id = g.id
         WHERE w.workspace_id = ? AND g.is_default = 0 ORDER BY g.created_at, g.id`,
        [workspaceId],
      )
    ).map(toGroup);
  }

  // ---- members

  async addMember(m: { id: string; groupId: string; organizationId: string; userId: string; assignedBy: string; assignedAt: string }): Promise<void> {
    await this.db.run('INSERT INTO permission_group_members (id, group_id, organization_id, user_id, assigned_by, assigned_at) VALUES (?, ?, ?, ?, ?, ?)', [
      m.id,
      m.groupId,
      m.organizationId,
      m.userId,
      m.assignedBy,
      m.assignedAt,
    ]);
  }

  async removeMember(groupId: string, userId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM permission_group_members WHERE group_id = ? AND user_id = ?', [groupId, userId])).changes > 0;
  }

  async members(groupId: string): Promise<PermissionGroupMemberRecord[]> {
    return (await this.db.all<MemberRow>(`${MEMBER_SELECT} WHERE m.group_id = ? ORDER BY m.assigned_at, m.id`, [groupId])).map(toMember);
  }

  async memberIds(groupId: string): Promise<string[]> {
    return (await this.db.all<{ user_id: string }>('SELECT user_id FROM permission_group_members WHERE group_id = ? ORDER BY user_id', [groupId])).map((r) => r.user_id);
  }

  async memberCount(groupId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM permission_group_members WHERE group_id = ?', [groupId]);
    return Number(r?.n ?? 0);
  }

  async isMember(groupId: string, userId: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM permission_group_members WHERE group_id = ? AND user_id = ?', [groupId, userId])) !== undefined;
  }

  /** The groups of the organization `userId` is an explicit member of. */
  async groupsOfMember(organizationId: string, userId: string): Promise<PermissionGroupRecord[]> {
    return (
      await this.db.all<GroupRow>(
        `SELECT g.* FROM permission_groups g JOIN permission_group_members m ON m.group_id = g.id
         WHERE g.organization_id = ? AND m.user_id = ? ORDER BY g.created_at, g.id`,
        [organizationId, userId],
      )
    ).map(toGroup);
  }
}

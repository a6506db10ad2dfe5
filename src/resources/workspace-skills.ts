// Changing workspace skills: create, update, delete, and grant or revoke the editors of one. The rules: built-in
// skills (src/resources/skills.ts) never change and their names are reserved; names are unique in a workspace;
// workspace admins, a skill's creator and its granted editors may change it, and only admins and the creator
// manage its editors. Each change works inside the caller's transaction and records its audit event there;
// `guard` lets the caller check the skill it read (an If-Match) before anything is written. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import type { SkillEditorRecord, SkillRecord } from '../store/skills.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { builtinSkill, isBuiltinSkillId } from './skills.ts';
import { assertAccess } from '../access-control/policy.ts';

/** Who changes a skill: the user, and their role in the skill's workspace. */
export interface SkillActor {
  userId: string;
  role: string | null;
}

/** Checks the skill a change read before it writes (e.g. the request's If-Match); throws to refuse. */
export type Guard = (current: SkillRecord) => void;

const nowIso = () => new Date().toISOString();
const skillNameTaken = (name: string) => new DomainError('conflict', `A skill named "${name}" already exists in this workspace.`, { code: 'SKILL_NAME_TAKEN' });

/** Refuses any change to a built-in skill (an unknown built-in id is not found). */
export function assertChangeable(skillId: string): void {
  if (!isBuiltinSkillId(skillId)) return;
  if (!builtinSkill(skillId)) throw domainNotFound('Skill');
  throw new DomainError('forbidden', `The built-in skill ${skillId} is read-only.`, { code: 'SKILL_READ_ONLY' });
}

export async function findSkill(repos: Pick<Repositories, 'skills'>, workspaceId: string, id: string): Promise<SkillRecord> {
  const skill = await repos.skills.get(workspaceId, id);
  if (!skill) throw domainNotFound('Skill');
  return skill;
}

/** Admins, the creator and granted editors may change a skill; only admins and the creator may manage its editors. */
async function requireEditor(tx: Pick<Repositories, 'skills'>, actor: SkillActor, skill: SkillRecord, grant = false): Promise<void> {
  if (actor.role === 'admin' || skill.createdBy === actor.userId) return;
  if (!grant && (await tx.skills.isEditor(skill.id, actor.userId))) return;
  throw new DomainError('forbidden', grant ? 'Only workspace admins and the skill\'s creator may manage its editors.' : 'Only workspace admins, the skill\'s creator and its editors may change it.', {
    code: 'NOT_SKILL_EDITOR',
  });
}

async function assertNameFree(tx: Pick<Repositories, 'skills'>, workspaceId: string, name: string, exceptId?: string): Promise<void> {
  if (builtinSkill(name)) throw new DomainError('conflict', `"${name}" is the name of a built-in skill.`, { code: 'SKILL_NAME_RESERVED' });
  const other = await tx.skills.getByName(workspaceId, name);
  if (other && other.id !== exceptId) throw skillNameTaken(name);
}

/** The editors of a skill (none for a built-in one). */
export async function listEditors(repos: Repositories, workspaceId: string, skillId: string): Promise<SkillEditorRecord[]> {
  if (isBuiltinSkillId(skillId)) {
    if (!builtinSkill(skillId)) throw domainNotFound('Skill');
    return [];
  }
  const skill = await findSkill(repos, workspaceId, skillId);
  return repos.skills.editors(skill.id, workspaceId);
}

export async function createSkill(tx: Repositories, audit: Audit, actor: SkillActor, input: { workspaceId: string; name: string; description: string; content: string }): Promise<SkillRecord> {
  await assertAccess(tx, { workspaceId: input.workspaceId, userId: actor.userId }, { kind: 'feature', key: 'disableSkills', action: 'Creating skills' });
  await assertNameFree(tx, input.workspaceId, input.name);
  const now = nowIso();
  const record: SkillRecord = {
    id: randomUUID(),
    workspaceId: input.workspaceId,
    name: input.name,
    description: input.description,
    content: input.content,
    createdBy: actor.userId,
    createdAt: now,
    updatedAt: now,
  };
  await onUniqueViolation(tx.skills.insert(record), 'skills', ['workspace_id', 'name'], () => skillNameTaken(record.name));
  await audit({ action: 'skill.created', resourceType: 'skill', resourceId: record.id, resourceName: record.name });
  return record;
}

export interface SkillChange {
  name?: string;
  description?: string;
  content?: string;
  /** The fields the request named (the audit event lists them). */
  fields: string[];
}

export async function updateSkill(tx: Repositories, audit: Audit, actor: SkillActor, workspaceId: string, skillId: string, change: SkillChange, guard: Guard): Promise<SkillRecord> {
  assertChangeable(skillId);
  const current = await findSkill(tx, workspaceId, skillId);
  await requireEditor(tx, actor, current);
  await assertAccess(tx, { workspaceId, userId: actor.userId }, { kind: 'feature', key: 'disableSkills', action: 'Changing skills' });
  guard(current);
  if (change.name !== undefined && change.name !== current.name) await assertNameFree(tx, workspaceId, change.name, current.id);
  const next: SkillRecord = {
    ...current,
    name: change.name ?? current.name,
    description: change.description ?? current.description,
    content: change.content ?? current.content,
    updatedAt: nowIso(),
  };
  await onUniqueViolation(tx.skills.update(next), 'skills', ['workspace_id', 'name'], () => skillNameTaken(next.name));
  await audit({ action: 'skill.updated', resourceType: 'skill', resourceId: next.id, resourceName: next.name, metadata: { fields: change.fields } });
  return next;
}

export async function deleteSkill(tx: Repositories, audit: Audit, actor: SkillActor, workspaceId: string, skillId: string, guard: Guard): Promise<void> {
  assertChangeable(skillId);
  const current = await findSkill(tx, workspaceId, skillId);
  await requireEditor(tx, actor, current);
  guard(current);
  await tx.skills.delete(current.id);
  await audit({ action: 'skill.deleted', resourceType: 'skill', resourceId: current.id, resourceName: current.name });
}

/** Makes a member of the workspace an editor of the skill; returns them as the editor list shows them. */
export async function grantEditor(tx: Repositories, audit: Audit, actor: SkillActor, workspaceId: string, skillId: string, email: string) {
  assertChangeable(skillId);
  const skill = await findSkill(tx, workspaceId, skillId);
  await requireEditor(tx, actor, skill, true);
  const user = await tx.users.getByEmail(email.trim());
  const role = user && (await tx.members.role(workspaceId, user.id));
  if (!user || !role) throw domainNotFound(`Workspace member ${email}`);
  await tx.skills.grant(skill.id, user.id, actor.userId, nowIso());
  await audit({ action: 'skill.editor_granted', resourceType: 'skill', resourceId: skill.id, resourceName: skill.name, metadata: { userId: user.id } });
  return { email: user.email, name: user.name || null, image: user.image ?? null, isWorkspaceAdmin: role === 'admin' };
}

export async function revokeEditor(tx: Repositories, audit: Audit, actor: SkillActor, workspaceId: string, skillId: string, email: string): Promise<void> {
  assertChangeable(skillId);
  const skill = await findSkill(tx, workspaceId, skillId);
  await requireEditor(tx, actor, skill, true);
  const user = await tx.users.getByEmail(email.trim());
  if (!user || !(await tx.skills.revoke(skill.id, user.id))) throw domainNotFound(`Skill editor ${email}`);
  await audit({ action: 'skill.editor_revoked', resourceType: 'skill', resourceId: skill.id, resourceName: skill.name, metadata: { userId: user.id } });
}

// Handlers for the Skills operations. Built-in skills are listed and readable everywhere and never change;
// workspace skills may be changed by workspace admins, their creator and the editors granted on them.
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { conflict, forbidden, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { tagOf } from '../http/conditional.ts';
import { BUILTIN_SKILLS, builtinSkill, isBuiltinSkillId, skillView, type SkillView } from '../resources/skills.ts';
import type { Repositories } from '../store/index.ts';
import { pageInMemory } from './list-support.ts';
import type { SkillEditorRecord, SkillRecord } from '../store/skills.ts';
import { onUniqueViolation } from '../store/errors.ts';

const summary = ({ content: _c, ...rest }: SkillView) => rest;

const readOnly = (id: string) =>
  forbidden(`The built-in skill ${id} is read-only.`, { code: 'SKILL_READ_ONLY' });

async function findSkill(tx: Pick<Repositories, 'skills'>, workspaceId: string, id: string): Promise<SkillRecord> {
  const skill = await tx.skills.get(workspaceId, id);
  if (!skill) throw notFound('Skill');
  return skill;
}

/** Admins, the creator and granted editors may change a skill. */
async function requireEditor(ctx: RequestContext, tx: Pick<Repositories, 'skills'>, skill: SkillRecord, grant = false): Promise<void> {
  if (ctx.workspace!.role === 'admin' || skill.createdBy === ctx.principal.userId) return;
  if (!grant && (await tx.skills.isEditor(skill.id, ctx.principal.userId))) return;
  throw forbidden(grant ? 'Only workspace admins and the skill\'s creator may manage its editors.' : 'Only workspace admins, the skill\'s creator and its editors may change it.', {
    code: 'NOT_SKILL_EDITOR',
  });
}

async function nameTaken(tx: Pick<Repositories, 'skills'>, workspaceId: string, name: string, exceptId?: string): Promise<void> {
  if (builtinSkill(name)) throw conflict(`"${name}" is the name of a built-in skill.`, { code: 'SKILL_NAME_RESERVED' });
  const other = await tx.skills.getByName(workspaceId, name);
  if (other && other.id !== exceptId) throw skillNameTaken(name);
}
const skillNameTaken = (name: string) => conflict(`A skill named "${name}" already exists in this workspace.`, { code: 'SKILL_NAME_TAKEN' });

const SORT = { name: (s: SkillView) => s.name, createdAt: (s: SkillView) => s.createdAt, updatedAt: (s: SkillView) => s.updatedAt };

export const listSkills: Handler<'listSkills'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, search: query.search, sortBy, sortOrder };
  const search = query.search?.toLowerCase();
  const all = [
    ...BUILTIN_SKILLS.filter((s) => !search || s.name.includes(search)),
    ...(await ctx.services.store.skills.listAll(query.workspaceId, query.search)).map(skillView),
  ];
  const rows = pageInMemory(all, (s) => [SORT[sortBy](s), s.id], sortOrder, readCursor(ctx, query.cursor, binding), limit);
  return { status: 200, body: toPage(ctx, rows, limit, binding, (s) => [SORT[sortBy](s), s.id], summary) };
};

export const createSkill: Handler<'createSkill'> = async ({ body, ctx }) => {
  const skill = await ctx.mutate(async (tx, audit) => {
    await nameTaken(tx, body.workspaceId, body.name);
    const now = new Date().toISOString();
    const record: SkillRecord = {
      id: randomUUID(),
      workspaceId: body.workspaceId,
      name: body.name,
      description: body.description,
      content: body.content,
      createdBy: ctx.principal.userId,
      createdAt: now,
      updatedAt: now,
    };
    await onUniqueViolation(tx.skills.insert(record), 'skills', ['workspace_id', 'name'], () => skillNameTaken(record.name));
    audit({ action: 'skill.created', resourceType: 'skill', resourceId: record.id, resourceName: record.name });
    return record;
  });
  return { status: 200, body: { data: skillView(skill) } };
};

export const getSkill: Handler<'getSkill'> = async ({ params, query, ctx }) => {
  const builtin = builtinSkill(params.skillId);
  // A skill's entity tag is the hash of its answer (built-in skills never change).
  const data = builtin && isBuiltinSkillId(params.skillId) ? builtin : skillView(await findSkill(ctx.services.store, query.workspaceId, params.skillId));
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const updateSkill: Handler<'updateSkill'> = async ({ params, body, ctx }) => {
  if (isBuiltinSkillId(params.skillId)) {
    if (!builtinSkill(params.skillId)) throw notFound('Skill');
    throw readOnly(params.skillId);
  }
  if (body.name === undefined && body.description === undefined && body.content === undefined) {
    throw invalidField(['body'], 'Send at least one of name, description or content.');
  }
  const skill = await ctx.mutate(async (tx, audit) => {
    const current = await findSkill(tx, body.workspaceId, params.skillId);
    await requireEditor(ctx, tx, current);
    ctx.precondition(() => tagOf(skillView(current)));
    if (body.name !== undefined && body.name !== current.name) await nameTaken(tx, body.workspaceId, body.name, current.id);
    const next: SkillRecord = {
      ...current,
      name: body.name ?? current.name,
      description: body.description ?? current.description,
      content: body.content ?? current.content,
      updatedAt: new Date().toISOString(),
    };
    await onUniqueViolation(tx.skills.update(next), 'skills', ['workspace_id', 'name'], () => skillNameTaken(next.name));
    audit({ action: 'skill.updated', resourceType: 'skill', resourceId: next.id, resourceName: next.name, metadata: { fields: Object.keys(body).filter((k) => k !== 'workspaceId') } });
    return next;
  });
  const data = skillView(skill);
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const deleteSkill: Handler<'deleteSkill'> = async ({ params, query, ctx }) => {
  if (isBuiltinSkillId(params.skillId)) {
    if (!builtinSkill(params.skillId)) throw notFound('Skill');
    throw readOnly(params.skillId);
  }
  await ctx.mutate(async (tx, audit) => {
    const current = await findSkill(tx, query.workspaceId, params.skillId);
    await requireEditor(ctx, tx, current);
    ctx.precondition(() => tagOf(skillView(current)));
    await tx.skills.delete(current.id);
    audit({ action: 'skill.deleted', resourceType: 'skill', resourceId: current.id, resourceName: current.name });
  });
  return { status: 200, body: { data: { id: params.skillId, deleted: true as const } } };
};

const editorView = (e: SkillEditorRecord) => ({ email: e.email, name: e.name || null, image: e.image, isWorkspaceAdmin: e.role === 'admin' });

export const listSkillEditors: Handler<'listSkillEditors'> = async ({ params, query, ctx }) => {
  const sortBy = query.sortBy ?? 'email';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, skillId: params.skillId, sortBy, sortOrder };
  let editors: SkillEditorRecord[] = [];
  if (isBuiltinSkillId(params.skillId)) {
    if (!builtinSkill(params.skillId)) throw notFound('Skill');
  } else {
    const skill = await findSkill(ctx.services.store, query.workspaceId, params.skillId);
    editors = await ctx.services.store.skills.editors(skill.id, query.workspaceId);
  }
  const key = (e: SkillEditorRecord): [string, string] => [sortBy === 'email' ? e.email.toLowerCase() : e.name, e.userId];
  const rows = pageInMemory(editors, key, sortOrder, readCursor(ctx, query.cursor, binding), limit);
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, editorView) };
};

export const grantSkillEditor: Handler<'grantSkillEditor'> = async ({ params, body, ctx }) => {
  if (isBuiltinSkillId(params.skillId)) {
    if (!builtinSkill(params.skillId)) throw notFound('Skill');
    throw readOnly(params.skillId);
  }
  const editor = await ctx.mutate(async (tx, audit) => {
    const skill = await findSkill(tx, body.workspaceId, params.skillId);
    await requireEditor(ctx, tx, skill, true);
    const user = await tx.users.getByEmail(body.email.trim());
    const role = user && (await tx.members.role(body.workspaceId, user.id));
    if (!user || !role) throw notFound(`Workspace member ${body.email}`);
    await tx.skills.grant(skill.id, user.id, ctx.principal.userId, new Date().toISOString());
    audit({ action: 'skill.editor_granted', resourceType: 'skill', resourceId: skill.id, resourceName: skill.name, metadata: { userId: user.id } });
    return { email: user.email, name: user.name || null, image: user.image ?? null, isWorkspaceAdmin: role === 'admin' };
  });
  return { status: 200, body: { data: editor } };
};

export const revokeSkillEditor: Handler<'revokeSkillEditor'> = async ({ params, query, ctx }) => {
  if (isBuiltinSkillId(params.skillId)) {
    if (!builtinSkill(params.skillId)) throw notFound('Skill');
    throw readOnly(params.skillId);
  }
  await ctx.mutate(async (tx, audit) => {
    const skill = await findSkill(tx, query.workspaceId, params.skillId);
    await requireEditor(ctx, tx, skill, true);
    const user = await tx.users.getByEmail(query.email.trim());
    if (!user || !(await tx.skills.revoke(skill.id, user.id))) throw notFound(`Skill editor ${query.email}`);
    audit({ action: 'skill.editor_revoked', resourceType: 'skill', resourceId: skill.id, resourceName: skill.name, metadata: { userId: user.id } });
  });
  return { status: 200, body: { data: { email: query.email, revoked: true as const } } };
};

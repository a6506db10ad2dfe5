// Handlers for the Skills operations. Built-in skills are listed and readable everywhere and never change;
// workspace skills may be changed by workspace admins, their creator and the editors granted on them. The rules
// are src/resources/workspace-skills.ts; here the request is read and the answer shaped.
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { invalidField } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { tagOf } from '../http/conditional.ts';
import { BUILTIN_SKILLS, builtinSkill, isBuiltinSkillId, skillView, type SkillView } from '../resources/skills.ts';
import * as skills from '../resources/workspace-skills.ts';
import { pageInMemory } from './list-support.ts';
import type { SkillEditorRecord, SkillRecord } from '../store/skills.ts';

const summary = ({ content: _c, ...rest }: SkillView) => rest;

const actorOf = (ctx: RequestContext): skills.SkillActor => ({ userId: ctx.principal.userId, role: ctx.workspace?.role ?? null });
/** A skill's entity tag is the hash of its answer; the If-Match check of a write, on the skill the transaction read. */
const ifMatch = (ctx: RequestContext) => (current: SkillRecord) => ctx.precondition(() => tagOf(skillView(current)));

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
  const input = { workspaceId: body.workspaceId, name: body.name, description: body.description, content: body.content };
  const skill = await ctx.mutate((tx, audit) => skills.createSkill(tx, audit, actorOf(ctx), input));
  return { status: 200, body: { data: skillView(skill) } };
};

export const getSkill: Handler<'getSkill'> = async ({ params, query, ctx }) => {
  const builtin = builtinSkill(params.skillId);
  // A skill's entity tag is the hash of its answer (built-in skills never change).
  const data = builtin && isBuiltinSkillId(params.skillId) ? builtin : skillView(await skills.findSkill(ctx.services.store, query.workspaceId, params.skillId));
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const updateSkill: Handler<'updateSkill'> = async ({ params, body, ctx }) => {
  // A built-in skill is refused before the body is looked at.
  skills.assertChangeable(params.skillId);
  if (body.name === undefined && body.description === undefined && body.content === undefined) {
    throw invalidField(['body'], 'Send at least one of name, description or content.');
  }
  const change = { name: body.name, description: body.description, content: body.content, fields: Object.keys(body).filter((k) => k !== 'workspaceId') };
  const skill = await ctx.mutate((tx, audit) => skills.updateSkill(tx, audit, actorOf(ctx), body.workspaceId, params.skillId, change, ifMatch(ctx)));
  const data = skillView(skill);
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const deleteSkill: Handler<'deleteSkill'> = async ({ params, query, ctx }) => {
  await ctx.mutate((tx, audit) => skills.deleteSkill(tx, audit, actorOf(ctx), query.workspaceId, params.skillId, ifMatch(ctx)));
  return { status: 200, body: { data: { id: params.skillId, deleted: true as const } } };
};

const editorView = (e: SkillEditorRecord) => ({ email: e.email, name: e.name || null, image: e.image, isWorkspaceAdmin: e.role === 'admin' });

export const listSkillEditors: Handler<'listSkillEditors'> = async ({ params, query, ctx }) => {
  const sortBy = query.sortBy ?? 'email';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, skillId: params.skillId, sortBy, sortOrder };
  const editors = await skills.listEditors(ctx.services.store, query.workspaceId, params.skillId);
  const key = (e: SkillEditorRecord): [string, string] => [sortBy === 'email' ? e.email.toLowerCase() : e.name, e.userId];
  const rows = pageInMemory(editors, key, sortOrder, readCursor(ctx, query.cursor, binding), limit);
  return { status: 200, body: toPage(ctx, rows, limit, binding, key, editorView) };
};

export const grantSkillEditor: Handler<'grantSkillEditor'> = async ({ params, body, ctx }) => {
  const editor = await ctx.mutate((tx, audit) => skills.grantEditor(tx, audit, actorOf(ctx), body.workspaceId, params.skillId, body.email));
  return { status: 200, body: { data: editor } };
};

export const revokeSkillEditor: Handler<'revokeSkillEditor'> = async ({ params, query, ctx }) => {
  await ctx.mutate((tx, audit) => skills.revokeEditor(tx, audit, actorOf(ctx), query.workspaceId, params.skillId, query.email));
  return { status: 200, body: { data: { email: query.email, revoked: true as const } } };
};

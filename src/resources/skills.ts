// Skills: named instruction documents for agent blocks. The built-in ones live here (read-only, the same in every
// workspace); workspace skills live in the store. No HTTP here.
import type { Store } from '../store/index.ts';
import type { SkillRecord } from '../store/skills.ts';

export const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
export const BUILTIN_PREFIX = 'builtin-';
const BUILTIN_TIME = '2026-01-01T00:00:00.000Z';

export interface SkillView {
  id: string;
  name: string;
  description: string;
  content: string;
  readOnly: boolean;
  createdAt: string;
  updatedAt: string;
}

const builtin = (name: string, description: string, content: string): SkillView => ({
  id: BUILTIN_PREFIX + name,
  name,
  description,
  content,
  readOnly: true,
  createdAt: BUILTIN_TIME,
  updatedAt: BUILTIN_TIME,
});

export const BUILTIN_SKILLS: readonly SkillView[] = [
  builtin(
    'connect-integration',
    'Use when a task needs an outside service the workspace is not connected to yet.',
    [
      'When a step needs a third-party service, first check which credentials the workspace already has.',
      'If none fits, say which provider is needed and ask the user to connect it (an OAuth connection or a service',
      'account); never ask for passwords or tokens in the conversation. Reference stored secrets as {{NAME}}.',
    ].join('\n'),
  ),
  builtin(
    'research',
    'Use for questions that need gathering and weighing information from several sources.',
    [
      'Break the question into parts. For each part, gather evidence with the tools you have, note where each fact',
      'comes from, and prefer primary sources. Say plainly what stays uncertain. Finish with a short answer first,',
      'then the supporting points with their sources.',
    ].join('\n'),
  ),
  builtin(
    'create-table',
    'Use when data should be kept in a workspace table.',
    [
      'Pick a short table name and name the columns in camelCase with fitting types (string, number, boolean, date,',
      'json). Mark columns that identify a row as unique. Create the table before inserting rows, and insert rows in',
      'batches.',
    ].join('\n'),
  ),
  builtin(
    'deploy-workflow',
    'Use when a workflow is ready to be called from outside.',
    [
      'Check the draft for lint findings first, then deploy it to create an immutable version. Share the execute',
      'endpoint and the input fields it expects. To undo, roll back to an earlier version rather than editing the',
      'live one.',
    ].join('\n'),
  ),
];

export const isBuiltinSkillId = (id: string) => id.startsWith(BUILTIN_PREFIX);
export const builtinSkill = (idOrName: string) => BUILTIN_SKILLS.find((s) => s.id === idOrName || s.name === idOrName);

export const skillView = (s: SkillRecord): SkillView => ({
  id: s.id,
  name: s.name,
  description: s.description,
  content: s.content,
  readOnly: false,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

/**
 * The skills an agent block names, in its order: entries may be ids, names, or objects with `skillId`/`id`/`name`
 * (the shapes the editor stores). Unknown ones are reported so the block fails clearly.
 */
export async function resolveSkills(store: Store, workspaceId: string, refs: unknown[]): Promise<{ found: SkillView[]; missing: string[] }> {
  const found: SkillView[] = [];
  const missing: string[] = [];
  for (const ref of refs) {
    const key =
      typeof ref === 'string'
        ? ref
        : ref && typeof ref === 'object'
          ? String((ref as Record<string, unknown>).skillId ?? (ref as Record<string, unknown>).id ?? (ref as Record<string, unknown>).name ?? '')
          : '';
    if (!key) continue;
    const skill = builtinSkill(key) ?? (await store.skills.get(workspaceId, key).then((s) => s && skillView(s))) ?? (await store.skills.getByName(workspaceId, key).then((s) => s && skillView(s)));
    if (skill) found.push(skill);
    else missing.push(key);
  }
  return { found, missing };
}

/** The system-prompt section that carries skills to the model. */
export function skillsInstructions(skills: readonly { name: string; description: string; content: string }[]): string {
  if (skills.length === 0) return '';
  return [
    'You have these skills. Follow a skill\'s instructions whenever its description applies.',
    ...skills.map((s) => `\n<skill name="${s.name}">\nDescription: ${s.description}\n\n${s.content}\n</skill>`),
  ].join('\n');
}

// The one place that decides what Access Control allows a person in a workspace. Domain services (workflow
// drafts and deployments, the tool registry, agent blocks, resource creation) ask it; nothing here knows HTTP.
//
// Who is governed: the caller's organization must own the workspace and be entitled (its billing account is on
// the Enterprise plan). In that workspace the first match governs: a non-default group that targets it and names
// the person as an explicit member; else one that targets it with no members (it governs everyone there); else
// the organization's default group. Personal workspaces, organizations without Enterprise and people no group
// governs are unrestricted.
import type { Repositories } from '../store/index.ts';
import type { PermissionGroupRecord } from '../store/permission-groups.ts';
import type { Organization } from '../store/organizations.ts';
import { DomainError } from '../domain/errors.ts';
import { isOrgAdminRole } from '../organizations/organizations.ts';
import { readConfig, type AuthType, type FeatureKey, type PermissionConfig } from './config.ts';

type Reader = Pick<Repositories, 'organizations' | 'permissionGroups' | 'billingAccounts'>;

/** Access Control is an Enterprise feature: the organization's own billing account decides. */
export async function isEntitled(repos: Pick<Repositories, 'billingAccounts'>, organization: Organization): Promise<boolean> {
  return (await repos.billingAccounts.get(organization.billingAccountId))?.plan === 'enterprise';
}

/** The group that governs `userId` in `workspaceId` of `organizationId` (resolution order above), if any. */
export async function governingGroup(repos: Reader, organizationId: string, workspaceId: string | null, userId: string): Promise<PermissionGroupRecord | null> {
  if (workspaceId) {
    const targeting = await repos.permissionGroups.groupsTargeting(workspaceId);
    for (const g of targeting) if (await repos.permissionGroups.isMember(g.id, userId)) return g;
    for (const g of targeting) if ((await repos.permissionGroups.memberCount(g.id)) === 0) return g;
  }
  return (await repos.permissionGroups.defaultOf(organizationId)) ?? null;
}

export interface EffectiveAccess {
  organization: Organization | null;
  entitled: boolean;
  isOrgAdmin: boolean;
  group: PermissionGroupRecord | null;
  /** null: unrestricted. */
  config: PermissionConfig | null;
}

/** What governs `userId` in a workspace (`workspaceId` null: the organization's default scope). */
export async function effectiveAccess(repos: Reader, scope: { workspaceId: string | null; organizationId?: string }, userId: string): Promise<EffectiveAccess> {
  const orgId = scope.organizationId ?? (scope.workspaceId ? await repos.organizations.organizationOfWorkspace(scope.workspaceId) : null);
  const organization = orgId ? ((await repos.organizations.get(orgId)) ?? null) : null;
  if (!organization) return { organization: null, entitled: false, isOrgAdmin: false, group: null, config: null };
  const role = (await repos.organizations.member(organization.id, userId))?.role;
  const isOrgAdmin = role !== undefined && isOrgAdminRole(role);
  const entitled = await isEntitled(repos, organization);
  if (!entitled) return { organization, entitled, isOrgAdmin, group: null, config: null };
  const group = await governingGroup(repos, organization.id, scope.workspaceId, userId);
  return { organization, entitled, isOrgAdmin, group, config: group ? readConfig(group.config) : null };
}

/** The restrictions on `userId` in `workspaceId`, with the group's name; null when unrestricted. */
async function restrictions(repos: Reader, workspaceId: string, userId: string | null): Promise<{ config: PermissionConfig; groupName: string } | null> {
  if (!userId) return null;
  const access = await effectiveAccess(repos, { workspaceId }, userId);
  return access.config && access.group ? { config: access.config, groupName: access.group.name } : null;
}

/** Block types no group can take away: the start trigger, and the loop and parallel containers (structure, not integrations). */
export const ALWAYS_ALLOWED_BLOCKS: ReadonlySet<string> = new Set(['start_trigger', 'loop', 'parallel']);

/** The integration (block type) a tool belongs to, for the integration allow-list. */
function toolIntegration(toolId: string): string | null {
  if (toolId === 'http_request') return 'api';
  if (toolId.startsWith('mcp_')) return 'mcp';
  return null;
}

const KNOWN_PROVIDERS: [RegExp, string][] = [
  [/^(gpt-|o\d|chatgpt|text-embedding|davinci)/, 'openai'],
  [/^claude/, 'anthropic'],
  [/^gemini/, 'google'],
  [/^grok/, 'xai'],
  [/^(mistral|mixtral|codestral)/, 'mistral'],
  [/^deepseek/, 'deepseek'],
  [/^(llama|qwen|phi|gemma)/, 'ollama'],
];

/** The provider of a model id: the part before `/` when there is one, else what its name says. */
export function providerOfModel(model: string): string {
  const m = model.trim().toLowerCase();
  const slash = m.indexOf('/');
  if (slash > 0) return m.slice(0, slash);
  return KNOWN_PROVIDERS.find(([re]) => re.test(m))?.[1] ?? 'custom';
}

/** What is being done, for the policy to judge. */
export type AccessCheck =
  | { kind: 'blocks'; blocks: Iterable<{ id: string; type: string; name?: string }> }
  | { kind: 'tool'; toolId: string }
  | { kind: 'model'; model: string }
  | { kind: 'feature'; key: FeatureKey; action: string }
  | { kind: 'file_share_auth' | 'chat_deploy_auth'; authType: AuthType }
  | { kind: 'knowledge_connector'; connectorType: string };

/** Why `check` is refused under `config` (null: allowed). Pure: the rules without any lookup. */
export function judge(config: PermissionConfig, check: AccessCheck, groupName: string): string | null {
  const by = `by the permission group "${groupName}"`;
  switch (check.kind) {
    case 'blocks': {
      if (config.allowedIntegrations === null) return null;
      const allowed = new Set(config.allowedIntegrations);
      for (const b of check.blocks) {
        if (ALWAYS_ALLOWED_BLOCKS.has(b.type) || allowed.has(b.type)) continue;
        return `The block "${b.name ?? b.id}" uses the block type "${b.type}", which is not allowed ${by}.`;
      }
      return null;
    }
    case 'tool': {
      const id = check.toolId;
      if (id.startsWith('custom_') && config.disableCustomTools) return `Custom tools are disabled ${by}; the tool "${id}" cannot run.`;
      if (id.startsWith('mcp_') && config.disableMcpTools) return `MCP tools are disabled ${by}; the tool "${id}" cannot run.`;
      const integration = toolIntegration(id);
      if (integration && config.allowedIntegrations !== null && !config.allowedIntegrations.includes(integration)) {
        return `The tool "${id}" belongs to the block type "${integration}", which is not allowed ${by}.`;
      }
      if (config.deniedTools.includes(id)) return `The tool "${id}" is denied ${by}.`;
      return null;
    }
    case 'model': {
      const provider = providerOfModel(check.model);
      if (config.allowedModelProviders !== null && !config.allowedModelProviders.includes(provider)) {
        return `The model "${check.model}" is from the provider "${provider}", which is not allowed ${by}.`;
      }
      if (config.deniedModels.includes(check.model)) return `The model "${check.model}" is denied ${by}.`;
      return null;
    }
    case 'knowledge_connector':
      if (config.allowedKnowledgeConnectors === null || config.allowedKnowledgeConnectors.includes(check.connectorType)) return null;
      return `The knowledge connector "${check.connectorType}" is not allowed ${by}.`;
    case 'feature':
      return config[check.key] ? `${check.action} is disabled ${by} (${check.key}).` : null;
    case 'file_share_auth':
    case 'chat_deploy_auth': {
      const list = check.kind === 'file_share_auth' ? config.allowedFileShareAuthTypes : config.allowedChatDeployAuthTypes;
      if (list === null || list.includes(check.authType)) return null;
      const what = check.kind === 'file_share_auth' ? 'File shares' : 'Chat deployments';
      return `${what} with "${check.authType}" access are not allowed ${by}.`;
    }
  }
}

/** Why the person may not do `check` in the workspace, or null. Anonymous and system actions are not governed. */
export async function accessRefusal(repos: Reader, actor: { workspaceId: string; userId: string | null }, check: AccessCheck): Promise<string | null> {
  const r = await restrictions(repos, actor.workspaceId, actor.userId);
  return r ? judge(r.config, check, r.groupName) : null;
}

export class AccessDenied extends DomainError {
  constructor(message: string) {
    super('forbidden', message, { reason: 'permission_group' });
  }
}

/** accessRefusal as a 403 for the domain services that refuse an operation. */
export async function assertAccess(repos: Reader, actor: { workspaceId: string; userId: string | null }, check: AccessCheck): Promise<void> {
  const refusal = await accessRefusal(repos, actor, check);
  if (refusal) throw new AccessDenied(refusal);
}

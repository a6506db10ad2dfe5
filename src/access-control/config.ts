// A permission group's configuration (PermissionConfig): its 42 keys, their defaults, reading a stored value
// (anything unknown or invalid reads as the default), applying a patch, and the labels people see.
import type { components } from '../../generated/types.ts';

export type PermissionConfig = components['schemas']['PermissionConfig'];
export type PermissionConfigPatch = components['schemas']['PermissionConfigPatch'];
export type PermissionConfigKey = keyof PermissionConfig;
export type FeatureKey = components['schemas']['PermissionFeatureKey'];
export type AuthType = components['schemas']['AccessAuthType'];

/** Allow-lists: null allows everything. */
export const ALLOW_LIST_KEYS = ['allowedIntegrations', 'allowedModelProviders', 'allowedKnowledgeConnectors', 'allowedFileShareAuthTypes', 'allowedChatDeployAuthTypes'] as const;
/** Deny-lists: empty denies nothing. */
export const DENY_LIST_KEYS = ['deniedModels', 'deniedTools'] as const;
export const AUTH_TYPES: readonly AuthType[] = ['public', 'password', 'email', 'sso'];

/** The 35 boolean restrictions, in the order the CLI lists them. */
export const FEATURE_KEYS: readonly FeatureKey[] = [
  'hideTraceSpans', 'hideKnowledgeBaseTab', 'hideTablesTab', 'hideCopilot', 'hideIntegrationsTab', 'hideSecretsTab', 'hideApiKeysTab',
  'hideInboxTab', 'hideFilesTab', 'disableMcpTools', 'disableCustomTools', 'disableSkills', 'disableInvitations', 'disablePublicApi',
  'disablePublicFileSharing', 'hideDeployApi', 'hideDeployMcp', 'hideDeployChatbot', 'disablePersonalApiKeys', 'disableLogExport',
  'hideCostInfo', 'disableKnowledgeBaseCreation', 'disableKnowledgeBaseFileUpload', 'disableTableCreation', 'disableTableExport',
  'disableBulkFileDownload', 'disablePersonalCredentials', 'disableWorkspaceCreation', 'hideOrgMemberDirectory', 'disableCliAccess',
  'disableWebhookTriggers', 'disableToolAutoApproval', 'hideSandboxesTab', 'disableOAuthAppAccess', 'disableKnowledgeBaseExport',
];

/** Every key, in wire order. */
export const CONFIG_KEYS: readonly PermissionConfigKey[] = [
  'allowedIntegrations', 'allowedModelProviders', 'deniedModels', 'deniedTools', ...FEATURE_KEYS.slice(0, 15),
  'allowedFileShareAuthTypes', ...FEATURE_KEYS.slice(15, 18), 'allowedChatDeployAuthTypes', ...FEATURE_KEYS.slice(18, 23),
  'allowedKnowledgeConnectors', ...FEATURE_KEYS.slice(23),
];

const defaultOf = (key: PermissionConfigKey) =>
  (FEATURE_KEYS as readonly string[]).includes(key) ? false : (DENY_LIST_KEYS as readonly string[]).includes(key) ? [] : null;
export const DEFAULT_CONFIG: PermissionConfig = Object.freeze(Object.fromEntries(CONFIG_KEYS.map((k) => [k, defaultOf(k)]))) as unknown as PermissionConfig;

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
const isAuthList = (v: unknown): v is AuthType[] => isStringList(v) && v.every((s) => (AUTH_TYPES as string[]).includes(s));
const unique = <T>(items: T[]) => [...new Set(items)];

/** One key's value if it is valid for that key, else undefined. */
function validValue(key: PermissionConfigKey, value: unknown): unknown {
  if ((FEATURE_KEYS as string[]).includes(key)) return typeof value === 'boolean' ? value : undefined;
  if ((DENY_LIST_KEYS as readonly string[]).includes(key)) return isStringList(value) ? unique(value) : undefined;
  if (value === null) return null;
  if (key === 'allowedFileShareAuthTypes' || key === 'allowedChatDeployAuthTypes') return isAuthList(value) ? unique(value) : undefined;
  return isStringList(value) ? unique(value) : undefined;
}

/** Reads a stored config: every key present, unknown keys dropped, invalid values replaced by the default. */
export function readConfig(stored: string | unknown): PermissionConfig {
  let raw: unknown = stored;
  if (typeof stored === 'string') {
    try {
      raw = JSON.parse(stored);
    } catch {
      raw = {};
    }
  }
  const source = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) {
    const v = key in source ? validValue(key, source[key]) : undefined;
    out[key] = v === undefined ? structuredClone(DEFAULT_CONFIG[key]) : v;
  }
  return out as PermissionConfig;
}

/** `base` with the keys the patch sends replaced (a list sent replaces the whole list). */
export function patchConfig(base: PermissionConfig, patch: PermissionConfigPatch | undefined): PermissionConfig {
  if (!patch) return base;
  return readConfig({ ...base, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) });
}

export const storeConfig = (c: PermissionConfig) => JSON.stringify(c);

/** Words for a key, as an admin reads them in a preview. */
export function configKeyLabel(key: PermissionConfigKey): string {
  const special: Partial<Record<PermissionConfigKey, string>> = {
    allowedIntegrations: 'Allowed blocks',
    allowedModelProviders: 'Allowed model providers',
    allowedKnowledgeConnectors: 'Allowed knowledge connectors',
    allowedFileShareAuthTypes: 'Allowed file share modes',
    allowedChatDeployAuthTypes: 'Allowed chat deployment modes',
    deniedModels: 'Denied models',
    deniedTools: 'Denied tools',
    hideApiKeysTab: 'Hide API keys tab',
    disableMcpTools: 'Disable MCP tools',
    disablePublicApi: 'Disable public API',
    hideDeployApi: 'Hide API deployment',
    hideDeployMcp: 'Hide MCP deployment',
    disablePersonalApiKeys: 'Disable personal API keys',
    disableCliAccess: 'Disable CLI access',
    disableOAuthAppAccess: 'Disable OAuth app access',
  };
  if (special[key]) return special[key]!;
  const words = key.replace(/([A-Z])/g, ' $1').toLowerCase().trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

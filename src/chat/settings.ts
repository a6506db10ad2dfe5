// Hosted chat settings: the rules a chat must satisfy, its public URL and the views the API returns.
// No HTTP here; callers turn a ChatSettingsError into their own error shape.
import type { Config } from '../config.ts';
import type { ChatAuthType, ChatCustomizations, ChatDeployment, ChatOutputConfig } from '../store/chat-deployments.ts';
import { checkOutputPath } from '../workflows/outputs.ts';
import type { WorkflowState } from '../workflows/state.ts';

/** What chat URLs are built from: CHAT_URL and the public URL (BASE_URL, or what a trusted proxy forwarded). */
export type ChatUrlSettings = Pick<Config, 'web' | 'baseUrl'>;

/** Where chat pages live: CHAT_URL, or `{BASE_URL}/chat` (BASE_URL is final only once the port is bound). */
export function chatBaseUrl(config: ChatUrlSettings): string {
  return config.web.chatUrl ?? `${config.baseUrl}/chat`;
}

export const chatPageUrl = (config: ChatUrlSettings, identifier: string) => `${chatBaseUrl(config)}/${encodeURIComponent(identifier)}`;

export function chatView(config: ChatUrlSettings, c: ChatDeployment) {
  return {
    id: c.id,
    workflowId: c.workflowId,
    workspaceId: c.workspaceId,
    identifier: c.identifier,
    url: chatPageUrl(config, c.identifier),
    title: c.title,
    description: c.description,
    isActive: c.isActive,
    authType: c.authType,
    hasPassword: c.passwordHash !== null,
    allowedEmails: c.allowedEmails,
    customizations: c.customizations,
    outputConfigs: c.outputConfigs,
    includeThinking: c.includeThinking,
    includeToolCalls: c.includeToolCalls,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}

export function chatSummaryView(config: ChatUrlSettings, c: ChatDeployment) {
  const { hasPassword: _h, allowedEmails: _a, customizations: _c, ...rest } = chatView(config, c);
  return rest;
}

export class ChatSettingsError extends Error {
  readonly path: string[];
  constructor(path: string[], message: string) {
    super(message);
    this.path = path;
  }
}

export interface ChatSettingsInput {
  authType?: ChatAuthType;
  password?: string;
  allowedEmails?: string[];
  outputConfigs?: ChatOutputConfig[];
  customizations?: ChatCustomizations;
}

/** An output config's dot path as the chat reads it (`items.0.name`: digits index arrays). */
const outputPath = (path: string) => path.split('.').filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p));

/** Checks the rules the schema cannot express; `graph` is the workflow's draft. */
export function checkChatSettings(input: ChatSettingsInput, graph: Pick<WorkflowState, 'blocks' | 'edges'>, workflowId: string): void {
  const authType = input.authType ?? 'public';
  if (authType === 'password') {
    if (input.password === undefined) throw new ChatSettingsError(['body', 'password'], 'A password chat needs a password (15 to 1024 characters).');
    if (input.password.trim() === '') throw new ChatSettingsError(['body', 'password'], 'The password must not be only whitespace.');
  } else if (input.password !== undefined) {
    throw new ChatSettingsError(['body', 'password'], `A password is only accepted with authType "password", not "${authType}".`);
  }
  if ((authType === 'email' || authType === 'sso') && (input.allowedEmails ?? []).length === 0) {
    throw new ChatSettingsError(['body', 'allowedEmails'], `authType "${authType}" needs at least one allowed e-mail address or @domain.`);
  }
  for (const [i, oc] of (input.outputConfigs ?? []).entries()) {
    if (oc.workflowId !== undefined && oc.workflowId !== workflowId) {
      throw new ChatSettingsError(['body', 'outputConfigs', String(i), 'workflowId'], 'An output must come from this workflow.');
    }
    const block = Object.hasOwn(graph.blocks, oc.blockId) ? graph.blocks[oc.blockId] : undefined;
    if (!block) throw new ChatSettingsError(['body', 'outputConfigs', String(i), 'blockId'], `The workflow has no block ${oc.blockId}.`);
    // A path the block never outputs would publish a chat whose every reply is empty.
    const check = checkOutputPath(graph, block, outputPath(oc.path));
    if (!check.ok) throw new ChatSettingsError(['body', 'outputConfigs', String(i), 'path'], `Output path "${oc.path}": ${check.reason}`);
  }
}

/** True when the address is on the list, as itself or through an `@domain` entry (case-insensitive). */
export function emailAllowed(allowed: readonly string[], email: string): boolean {
  const e = email.trim().toLowerCase();
  const at = e.lastIndexOf('@');
  if (at < 1) return false;
  const domain = e.slice(at);
  return allowed.some((entry) => {
    const a = entry.trim().toLowerCase();
    return a.startsWith('@') ? a === domain : a === e;
  });
}

// What every selector source is: the option and page shapes, paging of in-memory lists, and the credential check
// of external sources. Shared by the internal sources (index.ts) and the provider ones (slack.ts, rest.ts).
import type { Config } from '../config.ts';
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import type { EgressPolicy } from '../execution/egress.ts';
import type { WorkspaceCredentials } from '../credentials/service.ts';
import { oauthProvider } from '../credentials/providers.ts';
import type { McpRegistry } from '../mcp/registry.ts';
import type { Store } from '../store/index.ts';

export interface SelectorOption {
  id: string;
  label: string;
  meta?: Record<string, string | number | boolean | null>;
}

/** One page: the options, where the next page starts (null: none), and whether the source held more than is listed. */
export interface SelectorPage {
  options: SelectorOption[];
  next: string | null;
  truncated: boolean;
}

export interface SelectorCall {
  workspaceId: string;
  userId: string;
  context: Record<string, string>;
  signal?: AbortSignal;
}

export interface SelectorSource {
  /** Context keys the selector cannot work without. */
  requires: string[];
  list(call: SelectorCall, page: { search: string | null; after: string | null; limit: number }): Promise<SelectorPage>;
  get(call: SelectorCall, id: string): Promise<SelectorOption | null>;
}

export interface SelectorDeps {
  store: Store;
  mcp: McpRegistry;
  credentials: WorkspaceCredentials;
  egress: EgressPolicy;
  config: Config;
}

/** Most options one selector lists from local data; past it the answer says `truncated`. */
export const MAX_LOCAL_OPTIONS = 10_000;

/** Pages a complete, ordered list held in memory; the position is the offset of the next option. */
export function pageOf(all: SelectorOption[], page: { search: string | null; after: string | null; limit: number }, truncated = false): SelectorPage {
  const needle = page.search?.trim().toLowerCase();
  const matching = needle ? all.filter((o) => o.label.toLowerCase().includes(needle)) : all;
  const start = page.after === null ? 0 : Number(page.after);
  if (!Number.isInteger(start) || start < 0) throw invalidInput(['body', 'cursor'], 'The cursor is not one this selector issued.');
  const options = matching.slice(start, start + page.limit);
  const end = start + options.length;
  return { options, next: end < matching.length ? String(end) : null, truncated };
}

/**
 * The OAuth access token of the workspace credential `context.oauthCredential`, which must be a connection to one
 * of `providers` (the selector's provider family).
 */
export async function credentialToken(deps: SelectorDeps, call: SelectorCall, key: string, providers: string[]): Promise<string> {
  return (await credentialGrant(deps, call, key, providers)).token;
}

/** The access token of `context.oauthCredential` and which of `providers` it is a connection to. */
export async function credentialGrant(deps: SelectorDeps, call: SelectorCall, key: string, providers: string[]): Promise<{ token: string; providerId: string }> {
  const id = call.context.oauthCredential!;
  const record = await deps.store.credentials.get(call.workspaceId, id);
  if (!record) throw domainNotFound('Credential');
  if (record.type !== 'oauth' || !providers.includes(record.providerId)) {
    const names = providers.map((p) => oauthProvider(p)?.name ?? p).join(' or ');
    throw invalidInput(
      ['body', 'context', 'oauthCredential'],
      `The credential ${id} is a ${record.type === 'oauth' ? `${record.providerId} connection` : `${record.providerId} service account`}; ${key} needs an OAuth connection to ${names}.`,
      'wrong_provider',
    );
  }
  try {
    return { token: await deps.credentials.accessToken(call.workspaceId, id), providerId: record.providerId };
  } catch (e) {
    throw new DomainError('invalid', `The credential ${id} cannot be used: ${(e as Error).message}`, [
      { code: 'credential_unusable', keys: [], path: ['body', 'context', 'oauthCredential'], message: (e as Error).message },
    ]);
  }
}

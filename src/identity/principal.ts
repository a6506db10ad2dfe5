import type { WorkspaceRole } from '../store/workspaces.ts';
import type { Plan } from '../store/billing-accounts.ts';

/** `web_session`: a user signed in on this server's sign-in page, calling the API from the web console. */
export type CredentialKind = 'personal' | 'workspace' | 'oauth_access_token' | 'web_session';
export type Scope = 'api:read' | 'api:write' | 'offline_access';

/** Who is calling, as established by their credential. Never holds the secret itself. */
export interface Principal {
  userId: string;
  kind: CredentialKind;
  credentialId: string;
  /** The one workspace a workspace key belongs to; null for personal keys and tokens. */
  workspaceId: string | null;
  scopes: ReadonlySet<Scope>;
  expiresAt: string | null;
  /**
   * The plan that sizes this caller's rate limits: the workspace's for a workspace key, the user's own
   * billing account's otherwise.
   */
  plan: Plan;
  /** Rate-limit subject: the user for personal keys and tokens, the key itself for workspace keys. */
  subject: string;
}

const RANK: Record<WorkspaceRole, number> = { read: 1, write: 2, admin: 3 };

export function roleAtLeast(role: WorkspaceRole, min: WorkspaceRole): boolean {
  return RANK[role] >= RANK[min];
}

/** api:write includes api:read. */
export function hasScope(principal: Principal, scope: 'api:read' | 'api:write'): boolean {
  return principal.scopes.has(scope) || (scope === 'api:read' && principal.scopes.has('api:write'));
}

/** API keys carry every scope; they are narrowed only by membership and role. */
export const API_KEY_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['api:read', 'api:write']);

// The authorization decision for one request, as a pure function of the caller, the operation's declared
// policy (from the spec) and the caller's standing in the workspace the request names. The pipeline and
// ctx.authorizeWorkspace both use it; nothing else decides access.
import type { OperationSpec } from '../../generated/operations.ts';
import { hasScope, roleAtLeast, type Principal } from './principal.ts';
import type { AccessDecision } from './access.ts';

export interface Denial {
  status: 403 | 404;
  message: string;
  details?: Record<string, unknown>;
}

export type PolicyOperation = Pick<OperationSpec, 'scope' | 'rejectsWorkspaceKeys' | 'minRole' | 'plans'>;

/**
 * `workspace` is what the caller can do in the workspace the request names, or undefined when the request
 * names none (then only the credential checks apply). Checks run from the cheapest and least revealing
 * (the credential itself) to the workspace's own rules, so a refusal never says whether a workspace exists.
 */
export function decide(principal: Pick<Principal, 'kind' | 'scopes'>, operation: PolicyOperation, workspace?: AccessDecision): Denial | null {
  if (operation.scope && !hasScope(principal as Principal, operation.scope)) {
    return { status: 403, message: `This operation needs the ${operation.scope} scope.`, details: { code: 'INSUFFICIENT_SCOPE', requiredScope: operation.scope } };
  }
  if (operation.rejectsWorkspaceKeys && principal.kind === 'workspace') {
    return {
      status: 403,
      message: 'Workspace API keys cannot be used for this operation; use a personal API key or an OAuth token.',
      details: { code: 'WORKSPACE_KEY_NOT_ALLOWED' },
    };
  }
  if (!workspace) return null;
  if (!workspace.ok) {
    if (workspace.reason === 'personal_keys_disabled') {
      return {
        status: 403,
        message: 'Personal API keys are disabled in this workspace; use a workspace API key.',
        details: { code: 'PERSONAL_KEYS_DISABLED' },
      };
    }
    return { status: 404, message: 'Workspace not found.' };
  }
  const { role, workspace: ws } = workspace.access;
  if (operation.minRole && !roleAtLeast(role, operation.minRole)) {
    return {
      status: 403,
      message: `This operation needs the ${operation.minRole} role in the workspace; you have ${role}.`,
      details: { code: 'INSUFFICIENT_WORKSPACE_ROLE', requiredRole: operation.minRole, role },
    };
  }
  if (operation.plans && !operation.plans.includes(ws.plan)) {
    return {
      status: 403,
      message: `This operation is available on the ${operation.plans.join(' or ')} plan; the workspace is on ${ws.plan}. Upgrade the plan to use it.`,
      details: { code: 'PLAN_UPGRADE_REQUIRED', requiredPlans: operation.plans, plan: ws.plan },
    };
  }
  return null;
}

// Who may use which workspace, and with what role. Pure rules over the store; no HTTP here.
import type { Store } from '../store/index.ts';
import type { Workspace, WorkspaceRole } from '../store/workspaces.ts';
import type { Principal } from './principal.ts';

export interface WorkspaceAccess {
  workspace: Workspace;
  role: WorkspaceRole;
}

/** Workspace keys act with write access in their own workspace; administration needs a person. */
export const WORKSPACE_KEY_ROLE: WorkspaceRole = 'write';

export type AccessDecision =
  | { ok: true; access: WorkspaceAccess }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'personal_keys_disabled' };

export async function workspaceAccess(store: Store, principal: Principal, workspaceId: string): Promise<AccessDecision> {
  if (principal.kind === 'workspace') {
    if (principal.workspaceId !== workspaceId) return { ok: false, reason: 'not_found' };
    const workspace = await store.workspaces.get(workspaceId);
    return workspace ? { ok: true, access: { workspace, role: WORKSPACE_KEY_ROLE } } : { ok: false, reason: 'not_found' };
  }
  const [workspace, role] = await Promise.all([store.workspaces.get(workspaceId), store.members.role(workspaceId, principal.userId)]);
  if (!workspace || !role) return { ok: false, reason: 'not_found' };
  if (principal.kind === 'personal' && !workspace.allowPersonalKeys) return { ok: false, reason: 'personal_keys_disabled' };
  return { ok: true, access: { workspace, role } };
}

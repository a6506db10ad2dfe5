// Writes audit events. Called only from inside the transaction that makes the change (see ctx.mutate), so an
// event exists exactly when its change does. Metadata is kept small and never carries secret values.
import { sortableId } from '../domain/ids.ts';
import type { Repositories } from '../store/index.ts';
import type { Principal } from '../identity/principal.ts';

export interface AuditEntry {
  /** Dotted verb, e.g. `workflow.created`, `file.deleted`. */
  action: string;
  resourceType: string;
  resourceId?: string | null;
  resourceName?: string | null;
  /** Defaults to the workspace the request named. */
  workspaceId?: string | null;
  description?: string | null;
  /** Small, non-secret facts about the change (ids, names, counts); never secret values or file contents. */
  metadata?: Record<string, unknown>;
}

const SECRET_KEY = /(secret|password|token|api[-_]?key|credential|authorization)/i;
const MAX_METADATA_BYTES = 4096;

/** Redacts secret-looking keys and bounds the size; what the caller passes is not trusted to be small. */
export function sanitizeMetadata(metadata: Record<string, unknown> = {}): Record<string, unknown> {
  const clean = (value: unknown, depth: number): unknown => {
    if (value === null || typeof value !== 'object') return typeof value === 'string' && value.length > 500 ? `${value.slice(0, 500)}…` : value;
    if (depth > 3) return '[nested]';
    if (Array.isArray(value)) return value.slice(0, 50).map((v) => clean(v, depth + 1));
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_KEY.test(k) ? '[redacted]' : clean(v, depth + 1)]),
    );
  };
  const result = clean(metadata, 0) as Record<string, unknown>;
  return JSON.stringify(result).length > MAX_METADATA_BYTES ? { truncated: true } : result;
}

/** `principal` null is an actor without a credential: the operator's admin command unless `anonymousActor` says otherwise. */
export async function recordAudit(
  tx: Repositories,
  principal: Principal | null,
  defaultWorkspaceId: string | null,
  entry: AuditEntry,
  anonymousActor = 'Admin command',
): Promise<void> {
  const user = principal ? await tx.users.get(principal.userId) : undefined;
  await tx.auditEvents.insert({
    id: sortableId(),
    createdAt: new Date().toISOString(),
    workspaceId: entry.workspaceId === undefined ? defaultWorkspaceId : entry.workspaceId,
    actorUserId: principal?.userId ?? null,
    actorName: user?.name ?? (principal ? null : anonymousActor),
    actorEmail: user?.email ?? null,
    credentialKind: principal?.kind ?? (anonymousActor === 'Admin command' ? 'admin_command' : 'anonymous'),
    credentialId: principal?.credentialId ?? null,
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId ?? null,
    resourceName: entry.resourceName ?? null,
    description: entry.description ?? null,
    metadata: sanitizeMetadata(entry.metadata),
  });
}

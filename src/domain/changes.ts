// How a domain service is handed a change to make: the transaction to write in, and the hook that records an
// audit event in that same transaction (in a request, ctx.mutate supplies both and attributes events to the caller).
import { recordAudit, type AuditEntry } from '../audit/recorder.ts';
import type { Principal } from '../identity/principal.ts';
import type { Repositories, Store } from '../store/index.ts';

/** Records one audit event in the transaction the change is written in (awaited when it writes at once). */
export type Audit = (entry: AuditEntry) => void | Promise<void>;

/** Runs `fn` as one change: one transaction, its audit events committed with it or not at all. */
export type Mutate = <T>(fn: (tx: Repositories, audit: Audit) => Promise<T>) => Promise<T>;

/**
 * A change auditing as `actor` in `workspaceId`, for triggers without a request context (hosted chat, MCP tool
 * calls, table workflow groups). `actor` null is a visitor without a credential, named `anonymousActor`.
 */
export function actingAs(store: Store, actor: Principal | null, workspaceId: string, anonymousActor?: string): Mutate {
  return (fn) => store.transaction((tx) => fn(tx, (entry) => recordAudit(tx, actor, workspaceId, entry, anonymousActor)));
}

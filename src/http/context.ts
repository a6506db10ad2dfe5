// What every handler is given besides its validated input.
import type { Logger } from 'pino';
import type { OperationSpec, WorkspaceRole } from '../../generated/operations.ts';
import type { Principal } from '../identity/principal.ts';
import type { WorkspaceAccess } from '../identity/access.ts';
import type { Services } from '../services.ts';
import type { Repositories } from '../store/index.ts';
import type { AuditEntry } from '../audit/recorder.ts';

/** `P` is null for public operations (`security: []`), which have no authenticated caller. */
export interface RequestContext<P extends Principal | null = Principal> {
  readonly requestId: string;
  readonly operation: OperationSpec;
  readonly principal: P;
  readonly services: Services;
  readonly log: Logger;
  /**
   * The workspace the request names (where the spec declares `x-workspace-id`), already checked against the
   * operation's minimum role; null for operations that resolve their workspace from a resource.
   */
  readonly workspace: WorkspaceAccess | null;
  /** The public URL links in the answer are built on (src/http/public-url.ts): BASE_URL, or what a trusted proxy forwarded. */
  readonly baseUrl: string;
  /**
   * A request header the spec cannot declare as a parameter (OpenAPI ignores `Accept`), e.g. for content
   * negotiation of a streamed answer. Declared header parameters arrive validated in the handler's `headers`.
   */
  header(name: string): string | undefined;
  /**
   * For operations that find their workspace through a resource: checks the caller may act there with at
   * least `minRole` (default: the operation's `x-min-role`). An unreachable workspace is a 404 that reads
   * "<resource> not found." (default "Workspace"), so a resource in someone else's workspace is
   * indistinguishable from one that does not exist.
   */
  authorizeWorkspace(workspaceId: string, options?: { minRole?: WorkspaceRole; resource?: string }): Promise<WorkspaceAccess>;
  /**
   * Runs a change in one transaction. Every `audit(...)` call inside records one audit event in that same
   * transaction, attributed to the caller; nothing is recorded if the change fails. Reads and dry runs do not
   * call this.
   */
  mutate<T>(fn: (tx: Repositories, audit: (entry: AuditEntry) => void) => Promise<T>): Promise<T>;
  /**
   * Names the resource this request creates, so a retry with the same Idempotency-Key after a crash (or of a
   * streamed answer) is answered from it (see registerReplaySource in src/http/idempotency.ts). Call it before
   * the ctx.mutate that creates it: the name is recorded with the key in that transaction. A no-op without a key.
   */
  createdResource(kind: string, id: string): void;
  /**
   * For operations with `x-etag: write` (src/http/conditional.ts): throws 412 PRECONDITION_FAILED unless the
   * request's If-Match accepts the document's current tag (null when there is no document) and its
   * If-None-Match (where declared) does not; without either header it does nothing. Call it inside the
   * transaction that writes, with the tag of what that transaction read.
   */
  precondition(current: string | null | (() => string | null)): void;
}

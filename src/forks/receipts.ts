// Receipts of committed workspace mutations (workflow import, fork, push, pull): written in the mutation's own
// transaction, so a receipt exists exactly when the mutation committed. A client that lost the answer finds it
// by request id, or retries with the same request id and identical inputs and gets the same receipt back.
import { createHash } from 'node:crypto';
import type { components } from '../../generated/types.ts';
import type { Repositories } from '../store/index.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { DomainError } from '../domain/errors.ts';
import { sortableId } from '../domain/ids.ts';
import { stableStringify } from '../workflows/state.ts';

export type Receipt = components['schemas']['WorkspaceOperation'];
export type ReceiptKind = Receipt['kind'];

export const newOperationId = () => sortableId();

/** A digest of what a request asked for, to tell an identical retry from a reused request id. */
export function inputFingerprint(kind: ReceiptKind, input: unknown): string {
  return createHash('sha256').update(stableStringify({ kind, input })).digest('base64url');
}

const reusedRequestId = (requestId: string) =>
  new DomainError('conflict', `The request id "${requestId}" was already used for a different request in this workspace; send a new request id.`, { requestId });

/**
 * The receipt already recorded for this request id, when the retry asks for the same thing (undefined when
 * the request id is new); a request id used for something else is a 409.
 */
export async function priorReceipt(repos: Repositories, workspaceId: string, requestId: string, kind: ReceiptKind, fingerprint: string): Promise<Receipt | undefined> {
  const prior = await repos.workspaceOperations.byRequest(workspaceId, requestId);
  if (!prior) return undefined;
  if (prior.kind !== kind || prior.inputFingerprint !== fingerprint) throw reusedRequestId(requestId);
  return JSON.parse(prior.receipt) as Receipt;
}

/** Stores a receipt in the mutation's transaction; a concurrent request with the same request id loses with a 409. */
export async function recordReceipt(tx: Repositories, receipt: Receipt, fingerprint: string): Promise<Receipt> {
  const at = new Date().toISOString();
  await onUniqueViolation(
    tx.workspaceOperations.insert({
      id: receipt.operationId,
      workspaceId: receipt.workspaceId,
      requestId: receipt.requestId,
      kind: receipt.kind,
      status: receipt.status,
      inputFingerprint: fingerprint,
      receipt: JSON.stringify(receipt),
      createdAt: at,
      updatedAt: at,
    }),
    'workspace_operations',
    ['workspace_id', 'request_id'],
    () => new DomainError('conflict', `A request with the request id "${receipt.requestId}" is already being applied; read its receipt by request id.`, { requestId: receipt.requestId }),
  );
  return receipt;
}

export const parseReceipt = (stored: string): Receipt => JSON.parse(stored) as Receipt;

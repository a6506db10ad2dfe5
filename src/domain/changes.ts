// How a domain service is handed a change to make: the transaction to write in, and the hook that records an
// audit event in that same transaction (in a request, ctx.mutate supplies both and attributes events to the caller).
import type { AuditEntry } from '../audit/recorder.ts';
import type { Repositories } from '../store/index.ts';

/** Records one audit event in the transaction the change is written in. */
export type Audit = (entry: AuditEntry) => void;

/** Runs `fn` as one change: one transaction, its audit events committed with it or not at all. */
export type Mutate = <T>(fn: (tx: Repositories, audit: Audit) => Promise<T>) => Promise<T>;

// The one shape of claimed work: a queue row records who holds it (`lease_owner`) and until when
// (`lease_until`). The holder renews the lease while it works and writes its outcome only while it still holds
// it; an item whose lease expired is reclaimed by whichever process polls next, so no process ever resets
// another's work at start-up. This module owns the holder's side: who "we" are, and the renewal timer.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';

/** This process's lease owner id: host, pid and a random tag (a restarted process with a reused pid differs). */
export const PROCESS_OWNER = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** An ISO timestamp `ms` from now (leases are stored as ISO text, like every other time in the store). */
export const leaseUntil = (ms: number, from = Date.now()): string => new Date(from + ms).toISOString();

export interface Lease {
  owner: string;
  until: string;
}

/**
 * Renews one held lease every `renewMs` until stopped. When a renewal finds the lease gone (expired and taken
 * by another process, or the item cancelled), `signal` aborts so the work stops and its outcome is dropped.
 * A renewal that throws (the database briefly unavailable) is retried at the next tick; the lease stays
 * valid until its expiry.
 */
export class LeaseKeeper {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private renewing = false;

  private readonly renew: () => Promise<boolean>;
  private readonly logger: Logger | undefined;

  constructor(renew: () => Promise<boolean>, renewMs: number, logger?: Logger) {
    this.renew = renew;
    this.logger = logger;
    this.timer = setInterval(() => void this.tick(), renewMs);
    this.timer.unref();
  }

  /** Aborts (reason `lease lost`) once a renewal finds the lease no longer held. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get lost(): boolean {
    return this.controller.signal.aborted;
  }

  private async tick(): Promise<void> {
    if (this.renewing || this.lost) return;
    this.renewing = true;
    try {
      if (!(await this.renew())) {
        clearInterval(this.timer);
        this.controller.abort(new Error('lease lost'));
      }
    } catch (err) {
      this.logger?.warn({ err }, 'renewing a lease failed; retrying at the next tick');
    } finally {
      this.renewing = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

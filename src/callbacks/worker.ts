// The completion-callback delivery worker: sends due outbox rows (./outbox.ts) as signed POSTs through the egress
// policy, at least once. 2xx is delivered; any other answer, a timeout or a refused connection is retried with
// exponential backoff and jitter until CALLBACK_MAX_DELIVERY_SECONDS after the run settled, then `failed`.
// Each attempt is claimed with a lease first (src/workers/lease.ts), long enough for the attempt's timeout, so a
// delivery is never sent twice at once, and its outcome is written only while the lease is held. One whose
// process died is due again once its lease runs out, for whichever process polls next (receivers de-duplicate
// on X-Sim-Delivery); nothing is given back at start. No HTTP server here.
import type { Logger } from 'pino';
import type { CallbackSettings } from '../config.ts';
import type { Store } from '../store/index.ts';
import type { DeliveryRecord, DeliveryStatus } from '../store/run-callbacks.ts';
import type { SecretVault } from '../secrets/vault.ts';
import { EgressError, type EgressPolicy } from '../execution/egress.ts';
import { inSpan, storedTraceContext, tracingEnabled } from '../ops/spans.ts';
import { signatureFor } from './signing.ts';
import { PROCESS_OWNER } from '../workers/lease.ts';

const USER_AGENT = 'open-workspace-automation-callbacks/1';
const iso = (ms: number) => new Date(ms).toISOString();

/** The delay before retry number `attempt` (1-based): doubling from the base, capped, half of it random. */
export function retryDelayMs(settings: Pick<CallbackSettings, 'retryBaseMs' | 'retryMaxMs'>, attempt: number, random: () => number = Math.random): number {
  const full = Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.min(30, attempt - 1));
  return Math.round(full / 2 + (random() * full) / 2);
}

export class CallbackWorker {
  private readonly store: Store;
  private readonly vault: SecretVault;
  private readonly egress: EgressPolicy;
  private readonly settings: CallbackSettings;
  private readonly logger: Logger;
  private readonly attemptObservers = new Set<(outcome: 'delivered' | 'retry' | 'failed') => void>();
  private readonly sending = new Map<string, { done: Promise<void>; controller: AbortController }>();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;

  constructor(deps: { store: Store; vault: SecretVault; egress: EgressPolicy; settings: CallbackSettings; logger: Logger }) {
    this.store = deps.store;
    this.vault = deps.vault;
    this.egress = deps.egress;
    this.settings = deps.settings;
    this.logger = deps.logger;
  }

  /** Starts sending. */
  async start(): Promise<void> {
    this.stopping = false;
    // Another server with no free sending slot hands its due deliveries on through a wake-up.
    this.stopListening ??= this.store.wakes.on('callbacks', () => this.lookNow());
    this.loop ??= this.run();
  }

  private stopListening: (() => void) | null = null;

  /**
   * Looks for due deliveries now (a run just settled). When every sending slot here is taken, the other servers
   * sharing the database are asked to look too, rather than the delivery waiting for a slot here.
   */
  notify(): void {
    this.lookNow();
    if (this.sending.size >= this.settings.concurrency && !this.stopping) this.store.wakes.announce('callbacks');
  }

  private lookNow(): void {
    this.wake?.();
  }

  /** Stops taking deliveries; attempts in flight are cut off and become due again at once. */
  async close(graceMs = 2000): Promise<void> {
    this.stopping = true;
    this.stopListening?.();
    this.stopListening = null;
    this.lookNow();
    const pending = () => Promise.all([...this.sending.values()].map((s) => s.done));
    await Promise.race([pending(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    for (const s of this.sending.values()) s.controller.abort();
    await Promise.race([pending(), new Promise((r) => setTimeout(r, 5000).unref())]);
    await this.loop;
    this.loop = null;
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.settings.pollMs);
      timer.unref();
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.wake === done) self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        const free = this.settings.concurrency - this.sending.size;
        if (free > 0) {
          const now = Date.now();
          const ids = (await this.store.runCallbacks.dueIds(iso(now), free + this.sending.size)).filter((id) => !this.sending.has(id)).slice(0, free);
          for (const id of ids) {
            const lease = now + this.settings.attemptTimeoutMs + 5000;
            const d = await this.store.transaction((tx) => tx.runCallbacks.claim(id, iso(now), PROCESS_OWNER, iso(lease)));
            if (!d) continue;
            const controller = new AbortController();
            const done = this.send(d, controller.signal)
              .catch((err: unknown) => this.logger.error({ err, deliveryId: d.id }, 'recording a callback attempt failed'))
              .finally(() => {
                this.sending.delete(d.id);
                this.lookNow();
              });
            this.sending.set(d.id, { done, controller });
          }
        }
      } catch (err) {
        if (this.stopping) return;
        this.logger.error({ err }, 'looking for due callback deliveries failed');
      }
      if (!this.stopping) await this.idle();
    }
  }

  /** One attempt, traced as part of the run's trace (the trace of the request that started the run). */
  private async send(d: DeliveryRecord, signal: AbortSignal): Promise<void> {
    if (!tracingEnabled()) return this.attempt(d, signal);
    const parent = storedTraceContext((await this.store.workflowRuns.get(d.runId))?.traceContext);
    const attributes = { 'owa.callback.delivery_id': d.id, 'owa.callback.event': d.event, 'owa.callback.attempt': d.attempts, 'owa.workspace.id': d.workspaceId };
    await inSpan('callback.delivery', { attributes, parent }, () => this.attempt(d, signal));
  }

  /** One attempt: POST, then the outcome and the delivery's next state in one transaction. */
  private async attempt(d: DeliveryRecord, signal: AbortSignal): Promise<void> {
    const started = new Date();
    let statusCode: number | null = null;
    let error: string | null = null;
    const signature = await signatureFor(this.store, this.vault, d.workspaceId, started, d.payload);
    if (!signature) error = 'The workspace has no callback signing secret; rotate one to sign deliveries.';
    else {
      try {
        const res = await this.egress.request({
          url: d.url,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': USER_AGENT,
            'x-sim-event': d.event,
            'x-sim-delivery': d.id,
            'x-sim-delivery-attempt': String(d.attempts),
            'x-sim-signature': signature,
          },
          body: d.payload,
          timeoutMs: this.settings.attemptTimeoutMs,
          signal,
          followRedirects: false,
        });
        statusCode = res.status;
      } catch (err) {
        error = err instanceof EgressError ? err.message : `Request failed: ${(err as Error).message}`;
        if (signal.aborted) error = 'The server shut down during this attempt; the delivery is sent again.';
      }
    }
    const ended = Date.now();
    const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300;
    let status: DeliveryStatus = delivered ? 'delivered' : 'pending';
    let next: string | null = null;
    if (!delivered) {
      const deadline = Date.parse(d.createdAt) + this.settings.maxDeliveryMs;
      if (signal.aborted) next = iso(ended);
      else if (ended >= deadline) status = 'failed';
      else next = iso(Math.min(deadline, ended + retryDelayMs(this.settings, d.attempts)));
    }
    const kept = await this.store.transaction((tx) =>
      tx.runCallbacks.recordAttempt(
        {
          deliveryId: d.id,
          attempt: d.attempts,
          startedAt: started.toISOString(),
          durationMs: ended - started.getTime(),
          statusCode,
          error,
          outcome: status === 'pending' ? 'retry' : status,
          nextAttemptAt: next,
        },
        status,
        PROCESS_OWNER,
      ),
    );
    if (!kept) {
      this.logger.warn({ deliveryId: d.id, attempt: d.attempts }, 'a callback attempt outlived its lease; its outcome is dropped');
      return;
    }
    if (status === 'failed') this.logger.warn({ deliveryId: d.id, runId: d.runId, attempts: d.attempts }, 'a callback delivery failed for good');
    for (const observer of this.attemptObservers) observer(status === 'pending' ? 'retry' : status);
  }

  /** Observes the outcome of each recorded delivery attempt (metrics); returns the function that stops observing. */
  observeAttempts(observer: (outcome: 'delivered' | 'retry' | 'failed') => void): () => void {
    this.attemptObservers.add(observer);
    return () => this.attemptObservers.delete(observer);
  }
}

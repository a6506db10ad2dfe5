// Waiting on conditions, not on the clock: a test polls until what it expects holds. The deadline is only a
// guard against a test that would otherwise hang, so it is generous: on a busy shared machine a step that
// takes milliseconds when idle can take seconds, and that must not fail a test.
import { setTimeout as delay } from 'node:timers/promises';

/** Long enough for any single condition on a machine many times busier than an idle one. */
export const PATIENCE_MS = 60_000;

/**
 * Calls `check` until it returns something other than false, null or undefined, and returns that. Past the
 * deadline it throws, naming `what` and the last value seen (or the last error `check` threw).
 */
export async function waitUntil<T>(what: string, check: () => T | Promise<T>, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<Exclude<T, false | null | undefined>> {
  const until = Date.now() + (options.timeoutMs ?? PATIENCE_MS);
  const interval = options.intervalMs ?? 20;
  let last: unknown;
  for (;;) {
    try {
      last = await check();
      if (last !== false && last !== null && last !== undefined) return last as Exclude<T, false | null | undefined>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) {
      const seen = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out waiting for ${what} (last seen: ${seen})`);
    }
    await delay(interval);
  }
}

/** A latch a test holds shut and opens when it chooses: for steps that must stay in progress until then. */
export class Gate {
  private release!: () => void;
  readonly opened = new Promise<void>((r) => (this.release = r));
  open(): void {
    this.release();
  }
}

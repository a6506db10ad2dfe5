// What servers sharing one database tell each other beside their rows: token buckets every server draws from
// (rate limits), and wake-ups (work was queued; look now rather than at the next poll). An engine that one
// process owns (SQLite, under the data directory's lock) needs neither: its rate limits stay in memory and its
// workers are woken in process. Domain code reaches these only through the store (store.wakes,
// store.tokenBuckets), never through an engine's driver.

/** A kind of queued work whose workers may be idle on another server. */
export type WakeTopic = 'runs' | 'knowledge' | 'callbacks';

/** A kind of small fact servers tell each other as it happens (a run's progress, for whoever follows the run). */
export type NoteTopic = 'run-progress';

export interface Wakes {
  /** Tells the other servers that work of `topic` was queued (committed); best effort, polling stays the fallback. */
  announce(topic: WakeTopic): void;
  /** Calls `listener` when another server announces `topic` (or when missed announcements may have been lost); returns the unsubscribe. */
  on(topic: WakeTopic, listener: () => void): () => void;
  /**
   * Tells the other servers a note of `topic`: one line of text (no newline) under 2,000 bytes. Best effort and
   * never durable: a listener that must not miss anything also re-reads the database now and then.
   */
  tell(topic: NoteTopic, note: string): void;
  /** Calls `listener` with each note of `topic` another server tells; returns the unsubscribe. */
  hear(topic: NoteTopic, listener: (note: string) => void): () => void;
  /** Resolves once this server hears the others (at once when there are none, or when listening failed: polling covers it). */
  listening(): Promise<void>;
}

/** One process: nothing to tell anyone (what happens here is delivered in process). */
export const localWakes: Wakes = {
  announce: () => undefined,
  on: () => () => undefined,
  tell: () => undefined,
  hear: () => () => undefined,
  listening: () => Promise.resolve(),
};

/** A token bucket's state after a take: whether a token was taken and how many are left (fractional). */
export interface BucketTake {
  allowed: boolean;
  tokens: number;
}

/** Token buckets shared by every server of one database, each `capacity` tokens refilled evenly over a minute. */
export interface TokenBuckets {
  take(key: string, capacity: number, nowMs: number): Promise<BucketTake>;
  /** The tokens in the bucket now, without taking one. */
  peek(key: string, capacity: number, nowMs: number): Promise<number>;
}

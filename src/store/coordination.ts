// What servers sharing one database tell each other beside their rows: token buckets every server draws from
// (rate limits), and wake-ups (work was queued; look now rather than at the next poll). An engine that one
// process owns (SQLite, under the data directory's lock) needs neither: its rate limits stay in memory and its
// workers are woken in process. Domain code reaches these only through the store (store.wakes,
// store.tokenBuckets), never through an engine's driver.

/** A kind of queued work whose workers may be idle on another server. */
export type WakeTopic = 'runs' | 'knowledge' | 'callbacks';

export interface Wakes {
  /** Tells the other servers that work of `topic` was queued (committed); best effort, polling stays the fallback. */
  announce(topic: WakeTopic): void;
  /** Calls `listener` when another server announces `topic` (or when missed announcements may have been lost); returns the unsubscribe. */
  on(topic: WakeTopic, listener: () => void): () => void;
}

/** One process: nothing to tell anyone (its own workers are woken in process). */
export const localWakes: Wakes = {
  announce: () => undefined,
  on: () => () => undefined,
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

// Rate-limit buckets and wake-ups shared by the servers of one Postgres database (see ./coordination.ts).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { BucketTake, NoteTopic, TokenBuckets, WakeTopic, Wakes } from './coordination.ts';

/**
 * One statement takes a token: the row of `key` is created full (less the token taken) or refilled for the time
 * since its last take and, when a whole token is there, one is taken. It runs outside the global write lock of
 * ./postgres.ts on purpose: a single INSERT … ON CONFLICT DO UPDATE is atomic on its own (the conflicting row is
 * locked for the update, so concurrent takes on one key apply one after the other on the row, each seeing the
 * last), and rate limiting every request must not queue behind every write transaction. SET expressions read
 * the row as it was; `updated_ms` never goes back when servers' clocks differ slightly. The table is UNLOGGED
 * (migration 0280): buckets lost in a crash only start full again.
 */
const TAKE_SQL = `
INSERT INTO rate_limit_buckets AS b (key, capacity, tokens, updated_ms, allowed)
VALUES ($1::text, $2::integer, $2::integer - 1, $3::bigint, 1)
ON CONFLICT (key) DO UPDATE SET
  tokens = CASE
    WHEN b.capacity <> excluded.capacity THEN excluded.capacity - 1
    WHEN least(b.capacity, b.tokens + greatest(0, excluded.updated_ms - b.updated_ms) * b.capacity / 60000.0) >= 1
      THEN least(b.capacity, b.tokens + greatest(0, excluded.updated_ms - b.updated_ms) * b.capacity / 60000.0) - 1
    ELSE least(b.capacity, b.tokens + greatest(0, excluded.updated_ms - b.updated_ms) * b.capacity / 60000.0)
  END,
  allowed = CASE
    WHEN b.capacity <> excluded.capacity THEN 1
    WHEN least(b.capacity, b.tokens + greatest(0, excluded.updated_ms - b.updated_ms) * b.capacity / 60000.0) >= 1 THEN 1
    ELSE 0
  END,
  capacity = excluded.capacity,
  updated_ms = greatest(b.updated_ms, excluded.updated_ms)
RETURNING allowed, tokens`;

export class PostgresTokenBuckets implements TokenBuckets {
  private readonly pool: pg.Pool;
  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  async take(key: string, capacity: number, nowMs: number): Promise<BucketTake> {
    // A named prepared statement: this runs on every request.
    const r = await this.pool.query<{ allowed: number; tokens: number }>({ name: 'owa_rate_take', text: TAKE_SQL, values: [key, capacity, Math.floor(nowMs)] });
    const row = r.rows[0]!;
    return { allowed: Number(row.allowed) === 1, tokens: Math.max(0, Number(row.tokens)) };
  }

  async peek(key: string, capacity: number, nowMs: number): Promise<number> {
    const r = await this.pool.query<{ capacity: number; tokens: number; updated_ms: number }>('SELECT capacity, tokens, updated_ms FROM rate_limit_buckets WHERE key = $1', [key]);
    const b = r.rows[0];
    if (!b || Number(b.capacity) !== capacity) return capacity;
    return Math.min(capacity, Number(b.tokens) + Math.max(0, nowMs - Number(b.updated_ms)) * (capacity / 60_000));
  }
}

/** The channel every server listens on; a payload is `<topic>:<sender>`. */
const CHANNEL = 'owa_wake';
/** The channel of notes; a payload is `<topic>:<sender>:` then the notes told meanwhile, one a line. */
const NOTE_CHANNEL = 'owa_note';
/** Notes told within this long go out in one notification (a run's block events come in bursts). */
const NOTE_BATCH_MS = 15;
/** Postgres refuses a payload of 8,000 bytes or more; a batch stays well under it. */
const NOTE_PAYLOAD_BYTES = 7000;
/** How long a lost listening connection waits before connecting again. */
const RECONNECT_MS = 1000;

/**
 * LISTEN on one dedicated connection (a pooled one could be handed to a transaction), NOTIFY through the pool.
 * A server ignores its own announcements (its workers were woken in process). While the listening connection is
 * down (the database restarted, or a transaction-pooling PgBouncer in front, through which LISTEN never hears
 * anything) the workers' polling still finds the work; when it comes back every listener is woken once, for
 * what was announced meanwhile. Announcements of one topic that overlap are sent once more, not once each: a
 * burst of 2,000 queued runs is a handful of notifications.
 */
export class PostgresWakes implements Wakes {
  private readonly url: string;
  private readonly pool: pg.Pool;
  private readonly sender = randomUUID().slice(0, 8);
  private readonly listeners = new Map<WakeTopic, Set<() => void>>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly sending = new Map<WakeTopic, 'sending' | 'again'>();
  private readonly noteListeners = new Map<NoteTopic, Set<(note: string) => void>>();
  private readonly outbox = new Map<NoteTopic, string[]>();
  private flushing: NodeJS.Timeout | null = null;

  constructor(url: string, pool: pg.Pool) {
    this.url = url;
    this.pool = pool;
  }

  announce(topic: WakeTopic): void {
    if (this.closed) return;
    const state = this.sending.get(topic);
    if (state) {
      this.sending.set(topic, 'again');
      return;
    }
    this.sending.set(topic, 'sending');
    const send = (): void => {
      this.pool
        .query('SELECT pg_notify($1, $2)', [CHANNEL, `${topic}:${this.sender}`])
        .catch(() => undefined) // best effort: the other servers' polling finds the work
        .finally(() => {
          if (this.sending.get(topic) === 'again' && !this.closed) {
            this.sending.set(topic, 'sending');
            send();
          } else this.sending.delete(topic);
        });
    };
    send();
  }

  on(topic: WakeTopic, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    void this.listen();
    return () => set.delete(listener);
  }

  tell(topic: NoteTopic, note: string): void {
    if (this.closed || note.includes('\n') || Buffer.byteLength(note) > 2000) return;
    let queued = this.outbox.get(topic);
    if (!queued) this.outbox.set(topic, (queued = []));
    queued.push(note);
    this.flushing ??= setTimeout(() => this.flushNotes(), NOTE_BATCH_MS);
  }

  hear(topic: NoteTopic, listener: (note: string) => void): () => void {
    let set = this.noteListeners.get(topic);
    if (!set) this.noteListeners.set(topic, (set = new Set()));
    set.add(listener);
    void this.listen();
    return () => set.delete(listener);
  }

  listening(): Promise<void> {
    return this.listen();
  }

  /** Sends the notes told since the last flush, as few notifications as fit under Postgres's payload limit. */
  private flushNotes(): void {
    this.flushing = null;
    for (const [topic, notes] of this.outbox) {
      const prefix = `${topic}:${this.sender}:`;
      let payload = '';
      const send = (text: string) => void this.pool.query('SELECT pg_notify($1, $2)', [NOTE_CHANNEL, prefix + text]).catch(() => undefined);
      for (const note of notes) {
        if (payload && Buffer.byteLength(payload) + Buffer.byteLength(note) + 1 > NOTE_PAYLOAD_BYTES) {
          send(payload);
          payload = '';
        }
        payload += (payload ? '\n' : '') + note;
      }
      if (payload) send(payload);
    }
    this.outbox.clear();
  }

  private hearNotes(payload: string): void {
    const first = payload.indexOf(':');
    const second = payload.indexOf(':', first + 1);
    if (first < 0 || second < 0 || payload.slice(first + 1, second) === this.sender) return;
    const set = this.noteListeners.get(payload.slice(0, first) as NoteTopic);
    if (!set?.size) return;
    for (const note of payload.slice(second + 1).split('\n')) for (const l of [...set]) l(note);
  }

  private wake(topic: WakeTopic | null): void {
    for (const [t, set] of this.listeners) {
      if (topic !== null && t !== topic) continue;
      for (const l of [...set]) l();
    }
  }

  private listen(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.url });
      const lost = () => {
        if (this.client !== client) return;
        this.client = null;
        client.end().catch(() => undefined);
        this.reconnectLater();
      };
      client.on('error', lost);
      client.on('end', lost);
      client.on('notification', (n) => {
        if (n.channel === NOTE_CHANNEL) return this.hearNotes(n.payload ?? '');
        const [topic, sender] = (n.payload ?? '').split(':');
        if (sender !== this.sender) this.wake(topic as WakeTopic);
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${CHANNEL}; LISTEN ${NOTE_CHANNEL}`);
        if (this.closed) {
          await client.end();
          return;
        }
        const reconnected = this.everListened;
        this.client = client;
        this.everListened = true;
        // Announcements made while nobody listened here were missed: look once.
        if (reconnected) this.wake(null);
      } catch {
        client.end().catch(() => undefined);
        this.reconnectLater();
      }
    })().finally(() => (this.connecting = null));
    return this.connecting;
  }
  /** The listening connection has been up before (so coming back up may have missed announcements). */
  private everListened = false;

  private reconnectLater(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.listen();
    }, RECONNECT_MS);
    this.retry.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.flushing) clearTimeout(this.flushing);
    this.flushing = null;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    await this.connecting;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}

// Both engines run one transaction at a time per connection (SQLite: its one connection; Postgres: the writers of
// this process, before they take a pooled connection), so the queue lives once here.

/** One transaction at a time: each waits for the one before it to settle, whether it succeeded or failed. */
export class TransactionQueue {
  private tail: Promise<unknown> = Promise.resolve();
  enqueue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.tail.then(work, work);
    this.tail = next.catch(() => undefined);
    return next;
  }
  idle(): Promise<unknown> {
    return this.tail;
  }
}

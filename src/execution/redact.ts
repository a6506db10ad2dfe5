// Replaces secret values wherever they appear in what leaves the engine (events, trace spans, errors, results).
export const REDACTED = '[REDACTED]';

/** Secrets shorter than this are not redacted: replacing every "a" or "1" would destroy the output and hide nothing. */
const MIN_SECRET_LENGTH = 3;

export class Redactor {
  private values: string[] = [];

  add(value: string): void {
    if (value.length < MIN_SECRET_LENGTH || this.values.includes(value)) return;
    this.values.push(value);
    // Longest first, so a secret containing another is replaced whole.
    this.values.sort((a, b) => b.length - a.length);
  }

  get active(): boolean {
    return this.values.length > 0;
  }

  text(s: string): string {
    let out = s;
    for (const v of this.values) if (out.includes(v)) out = out.split(v).join(REDACTED);
    return out;
  }

  /** A deep copy with every string redacted (object keys too). */
  value<T>(v: T): T {
    if (!this.active) return v;
    return this.walk(v, new WeakSet()) as T;
  }

  private walk(v: unknown, seen: WeakSet<object>): unknown {
    if (typeof v === 'string') return this.text(v);
    if (v === null || typeof v !== 'object') return v;
    if (seen.has(v)) return '[Circular]';
    seen.add(v);
    if (Array.isArray(v)) return v.map((x) => this.walk(x, seen));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[this.text(k)] = this.walk(x, seen);
    return out;
  }
}

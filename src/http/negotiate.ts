// Content negotiation for answers that exist in more than one form (a streamed run: SSE, NDJSON or one JSON
// document). Reads the Accept header by RFC 9110 rules (media ranges with q-values; q=0 refuses a type).

export interface MediaRange {
  type: string;
  q: number;
}

/** The media ranges of an Accept header, in the order sent; malformed entries are skipped. */
export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header) return [];
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [rawType = '', ...params] = part.split(';');
    const type = rawType.trim().toLowerCase();
    if (!/^[a-z0-9!#$&^_.+*-]+\/[a-z0-9!#$&^_.+*-]+$/.test(type)) continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) q = Math.min(1, Math.max(0, Number(m[1]) || 0));
    }
    out.push({ type, q });
  }
  return out;
}

/**
 * Picks one of `offered` (server preference order) that the client named explicitly with the highest q; null when
 * it named none of them (only wildcards, or no Accept at all), so the caller applies its default.
 */
export function explicitChoice<T extends string>(header: string | undefined, offered: Record<T, string[]>): T | null {
  const ranges = parseAccept(header);
  let best: { choice: T; q: number } | null = null;
  for (const [choice, types] of Object.entries(offered) as [T, string[]][]) {
    for (const r of ranges) {
      if (r.q > 0 && types.includes(r.type) && (!best || r.q > best.q)) best = { choice, q: r.q };
    }
  }
  return best?.choice ?? null;
}

export type RunStreamFormat = 'sse' | 'ndjson' | 'json';

/**
 * The form of an answer to `stream: true`:
 * - `text/event-stream` named in Accept: Server-Sent Events (what `sim workflows run --follow` reads);
 * - `application/x-ndjson` (or `application/jsonl`): NDJSON events ending with a `final` line;
 * - `application/json`: one JSON document, the same `{data: <run result>}` as a synchronous run;
 * - only wildcards or no Accept: NDJSON, except for HTTP clients that read a whole body as one JSON document
 *   (the platform's Python SDK, on `python-requests`, calls `response.json()` on the answer), which get JSON.
 * The choice depends on both headers, so such answers carry `Vary: Accept, User-Agent`.
 */
export function runStreamFormat(accept: string | undefined, userAgent: string | undefined): RunStreamFormat {
  const named = explicitChoice<RunStreamFormat>(accept, {
    sse: ['text/event-stream'],
    ndjson: ['application/x-ndjson', 'application/ndjson', 'application/jsonl', 'application/x-jsonlines'],
    json: ['application/json'],
  });
  if (named) return named;
  return WHOLE_BODY_JSON_CLIENTS.some((re) => re.test(userAgent ?? '')) ? 'json' : 'ndjson';
}

/** User agents of clients known to parse a streamed answer as one JSON document. */
const WHOLE_BODY_JSON_CLIENTS = [/^python-requests\//i];

export const RUN_STREAM_VARY = 'Accept, User-Agent';

// Highlights of a search hit: where the query's words (and their typo alternatives) occur in the chunk, as
// ranges of UTF-16 code units into `content`, and a short snippet around the densest run of them with each
// match wrapped in <mark></mark> and everything else HTML-escaped. A word matches when its Porter stem equals a
// query word's (the full-text index stems the same way), so "refunds" marks "refunded".
import { stemmer } from 'stemmer';
import { WORD, foldWord } from './typos.ts';

export interface Highlight {
  start: number;
  end: number;
}

const SNIPPET_CHARS = 200;

const stemOf = (word: string) => stemmer(foldWord(word));

/** The stems a chunk's words are compared with. */
export function highlightStems(words: Iterable<string>): Set<string> {
  return new Set(Array.from(words, stemOf));
}

export function highlightRanges(content: string, stems: ReadonlySet<string>): Highlight[] {
  if (stems.size === 0) return [];
  const out: Highlight[] = [];
  for (const m of content.matchAll(WORD)) if (stems.has(stemOf(m[0]))) out.push({ start: m.index, end: m.index + m[0].length });
  return out;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&${({ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": '#39' } as Record<string, string>)[c]};`);

/** About SNIPPET_CHARS characters around the window holding the most matches; the whole chunk when shorter. */
export function snippet(content: string, ranges: readonly Highlight[]): string {
  let from = 0;
  if (content.length > SNIPPET_CHARS && ranges.length) {
    let best = 0;
    let bestCount = 0;
    for (let i = 0, j = 0; i < ranges.length; i++) {
      while (j < ranges.length && ranges[j]!.end - ranges[i]!.start <= SNIPPET_CHARS) j++;
      if (j - i > bestCount) [best, bestCount] = [i, j - i];
    }
    const span = ranges[best + bestCount - 1]!.end - ranges[best]!.start;
    from = Math.max(0, Math.min(content.length - SNIPPET_CHARS, ranges[best]!.start - Math.floor((SNIPPET_CHARS - span) / 2)));
    // Start and end on word boundaries.
    while (from > 0 && /[\p{L}\p{N}]/u.test(content[from - 1]!)) from--;
  }
  let to = Math.min(content.length, from + SNIPPET_CHARS);
  while (to < content.length && /[\p{L}\p{N}]/u.test(content[to]!)) to++;
  let out = from > 0 ? '…' : '';
  let at = from;
  for (const r of ranges) {
    if (r.start < from || r.end > to) continue;
    out += `${escapeHtml(content.slice(at, r.start))}<mark>${escapeHtml(content.slice(r.start, r.end))}</mark>`;
    at = r.end;
  }
  out += escapeHtml(content.slice(at, to));
  return to < content.length ? `${out}…` : out;
}

// Typo tolerance for the full-text leg: each base's vocabulary (the words of its chunks, folded as the full-text
// index folds them) is kept in memory per store, read once and then only the chunks added since (by `seq`);
// a query word that is not in the vocabulary of the searched bases is matched by the vocabulary words within
// one edit (words of 5 to 8 letters) or two (9 or more): insertions, deletions, substitutions and swaps of two
// neighbouring letters. Words stay in the vocabulary after their chunks are deleted (a stale word matches no
// chunk, so it costs nothing); a word that only a hand-edited chunk holds joins on the next start.
import type { Store } from '../store/index.ts';

/** Lower case without diacritics, as the full-text index tokenizes (unicode61); for a word or a whole text. */
export function foldWord(word: string): string {
  const lower = word.toLowerCase();
  // Plain ASCII (most text) has nothing to decompose.
  return /^[\x00-\x7f]*$/.test(lower) ? lower : lower.normalize('NFD').replace(/\p{M}+/gu, '');
}

export const WORD = /[\p{L}\p{N}]+/gu;
/** The words of a folded text (a quicker pattern for plain ASCII, where letters and digits are all there is). */
export function wordsOf(folded: string): string[] {
  return (/^[\x00-\x7f]*$/.test(folded) ? folded.match(/[a-z0-9]+/g) : folded.match(WORD)) ?? [];
}

/** How many edits a query word of this length may be away from an indexed word. */
export function editsAllowed(word: string): number {
  if (/^\p{N}+$/u.test(word)) return 0;
  return word.length >= 9 ? 2 : word.length >= 5 ? 1 : 0;
}

// Rows of the distance table, reused (words are short; longer ones get fresh rows).
let rows = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/** Optimal string alignment distance, or `max + 1` as soon as it must exceed `max`. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const n = b.length;
  if (rows[0]!.length <= n) rows = [new Int32Array(n + 1), new Int32Array(n + 1), new Int32Array(n + 1)];
  let [prev2, prev, cur] = rows as [Int32Array, Int32Array, Int32Array];
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2]! + 1);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[n]!;
}

interface Vocabulary {
  /** Chunks up to this `seq` have been read. */
  seq: number;
  /** How many chunks hold each word. */
  counts: Map<string, number>;
  /** The last chunk each word was counted for. */
  lastSeq: Map<string, number>;
  /** The words by length, for the neighbour scan. */
  byLength: Map<number, string[]>;
  loading: Promise<void> | null;
}

const vocabularies = new WeakMap<Store, Map<string, Vocabulary>>();

async function vocabularyOf(store: Store, knowledgeBaseId: string): Promise<Vocabulary> {
  let perStore = vocabularies.get(store);
  if (!perStore) vocabularies.set(store, (perStore = new Map()));
  let v = perStore.get(knowledgeBaseId);
  if (!v) perStore.set(knowledgeBaseId, (v = { seq: 0, counts: new Map(), lastSeq: new Map(), byLength: new Map(), loading: null }));
  const vocab = v;
  // One reader at a time; a search arriving meanwhile waits for it, then reads what came after.
  while (vocab.loading) await vocab.loading;
  vocab.loading = (async () => {
    for (;;) {
      const page = await store.knowledgeChunks.contentsAfter(knowledgeBaseId, vocab.seq, 2000);
      for (const row of page) {
        vocab.seq = Math.max(vocab.seq, row.seq);
        for (const word of wordsOf(foldWord(row.content))) {
          if (vocab.lastSeq.get(word) === row.seq) continue;
          vocab.lastSeq.set(word, row.seq);
          const n = vocab.counts.get(word);
          vocab.counts.set(word, (n ?? 0) + 1);
          if (n === undefined) {
            const list = vocab.byLength.get(word.length);
            if (list) list.push(word);
            else vocab.byLength.set(word.length, [word]);
          }
        }
      }
      if (page.length < 2000) break;
    }
  })().finally(() => {
    vocab.loading = null;
  });
  await vocab.loading;
  return vocab;
}

/**
 * For each query word no searched base holds, the indexed words within its allowed edits, closest first (then
 * the most frequent), at most `limit` of them. Words the bases hold, and short words, get none.
 */
export async function typoAlternatives(store: Store, knowledgeBaseIds: readonly string[], words: readonly string[], limit = 5): Promise<Map<string, string[]>> {
  const vocabs = [];
  for (const id of knowledgeBaseIds) vocabs.push(await vocabularyOf(store, id));
  const out = new Map<string, string[]>();
  for (const word of new Set(words)) {
    const folded = foldWord(word);
    const max = editsAllowed(folded);
    if (max === 0 || vocabs.some((v) => v.counts.has(folded))) continue;
    const found = new Map<string, { distance: number; count: number }>();
    for (const v of vocabs) {
      for (let len = folded.length - max; len <= folded.length + max; len++) {
        for (const candidate of v.byLength.get(len) ?? []) {
          const d = editDistance(folded, candidate, max);
          if (d > max) continue;
          const prev = found.get(candidate);
          found.set(candidate, { distance: d, count: (prev?.count ?? 0) + v.counts.get(candidate)! });
        }
      }
    }
    const best = [...found].sort((a, b) => a[1].distance - b[1].distance || b[1].count - a[1].count || (a[0] < b[0] ? -1 : 1)).slice(0, limit);
    if (best.length) out.set(word, best.map(([w]) => w));
  }
  return out;
}

// Splits a document's text into chunks by the base's chunking configuration. Every strategy first cuts the
// text into pieces at its own boundaries (paragraphs, separators, sentences, words, regex matches, structured
// records), cuts any piece still over the token budget at finer boundaries, then packs neighbouring pieces
// into chunks of at most `maxSize` tokens. Chunks shorter than `minSize` characters join a neighbour; each
// chunk after the first starts up to `overlap` characters early. Offsets are positions in the text.
// Token counts come from the cl100k_base tokenizer (gpt-tokenizer), the one OpenAI's embedding models use.
import { createRequire } from 'node:module';
import type { countTokens as CountTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { parse as parseYaml } from 'yaml';
import type { ChunkingConfig, ChunkRecipe } from './chunking-config.ts';
import { compileUserRegex } from './user-regex.ts';

export interface Chunk {
  content: string;
  start: number;
  end: number;
  tokens: number;
}

/** What the text is, as far as the auto strategy cares. */
export type ContentKind = 'text' | 'markdown' | 'code' | 'json' | 'jsonl' | 'yaml' | 'csv';

/**
 * Runs of this many non-space characters or more are counted a slice at a time: byte-pair encoding of one long
 * run (a line of brackets, a repeated character) takes time quadratic in its length, so a one-megabyte "word"
 * would hold a worker for minutes. Sliced, a run counts within a token or so per slice of the exact count.
 */
const LONG_RUN = 256;

// The tokenizer's tables (about 8 MB of heap) are loaded with the first count, not by every server at start.
let counter: typeof CountTokens | null = null;
const countTokens = (text: string): number =>
  (counter ??= (createRequire(import.meta.url)('gpt-tokenizer/encoding/cl100k_base') as { countTokens: typeof CountTokens }).countTokens)(text);

const LONG_RUNS = new RegExp(`\\S{${LONG_RUN},}`, 'g');

export function tokenCount(text: string): number {
  if (text.length === 0) return 0;
  let total = 0;
  let prev = 0;
  for (const m of text.matchAll(LONG_RUNS)) {
    if (m.index > prev) total += countTokens(text.slice(prev, m.index));
    for (let i = 0; i < m[0].length; i += LONG_RUN) total += countTokens(m[0].slice(i, i + LONG_RUN));
    prev = m.index + m[0].length;
  }
  return prev === 0 ? countTokens(text) : total + (prev < text.length ? countTokens(text.slice(prev)) : 0);
}

interface Span {
  start: number;
  end: number;
  tokens: number;
}

type Separator = string | RegExp;

const RECIPES: Record<ChunkRecipe, Separator[]> = {
  plain: ['\n\n', '\n', /(?<=[.!?])\s+/g, ' '],
  markdown: [/\n(?=#{1,2} )/g, /\n(?=#{3,6} )/g, /\n(?=```)/g, '\n\n', '\n', /(?<=[.!?])\s+/g, ' '],
  code: [/\n(?=(?:export |async |public |private |static )*(?:class|function|def|fn|func|interface|type|impl|struct|enum) )/g, '\n\n', '\n', ' '],
};
const SENTENCES: Separator[] = [/(?<=[.!?][)\]"'’”]?)\s+/g, '\n', ' '];
const WORDS: Separator[] = [/\s+/g];

export function chunkText(text: string, config: ChunkingConfig, kind: ContentKind, recipeOverride?: ChunkRecipe): Chunk[] {
  if (text.trim() === '') return [];
  const overlapTokens = Math.ceil(config.overlap / 4);
  const budget = Math.max(20, config.maxSize - overlapTokens);
  const strategy = config.strategy ?? 'auto';
  const options = config.strategyOptions ?? {};
  let pieces: Span[];
  let strict = false;
  let header: string | null = null;
  switch (strategy) {
    case 'regex': {
      if (!options.pattern) {
        pieces = splitRecursive(text, 0, text.length, RECIPES.plain, budget);
        break;
      }
      const re = compileUserRegex(options.pattern);
      const cuts = re.matches(text).map((m) => m.start).filter((p) => p > 0);
      const spans: Span[] = [];
      let prev = 0;
      for (const c of [...new Set(cuts)].sort((a, b) => a - b)) {
        if (c > prev) spans.push({ start: prev, end: c, tokens: -1 });
        prev = c;
      }
      spans.push({ start: prev, end: text.length, tokens: -1 });
      pieces = spans.flatMap((s) => splitRecursive(text, s.start, s.end, RECIPES.plain, budget));
      strict = options.strictBoundaries === true;
      if (strict) {
        // Each regex piece is its own chunk (cut further only when over the budget).
        return finish(text, spans.flatMap((s) => pack(text, splitRecursive(text, s.start, s.end, RECIPES.plain, budget), budget)), config, null, false);
      }
      break;
    }
    case 'sentence':
      pieces = splitRecursive(text, 0, text.length, SENTENCES, budget, true);
      break;
    case 'token':
      pieces = splitRecursive(text, 0, text.length, WORDS, budget, true);
      break;
    case 'recursive': {
      const seps = options.separators?.length ? options.separators : RECIPES[options.recipe ?? recipeOverride ?? recipeFor(kind)];
      pieces = splitRecursive(text, 0, text.length, seps, budget);
      break;
    }
    case 'text':
      pieces = splitRecursive(text, 0, text.length, RECIPES[recipeOverride ?? 'plain'], budget);
      break;
    default: {
      const structured = structuredPieces(text, kind, budget);
      if (structured) {
        pieces = structured.pieces;
        header = structured.header;
      } else {
        pieces = splitRecursive(text, 0, text.length, RECIPES[options.recipe ?? recipeOverride ?? recipeFor(kind)], budget);
      }
    }
  }
  return finish(text, pack(text, pieces, budget), config, header, strict);
}

function recipeFor(kind: ContentKind): ChunkRecipe {
  return kind === 'markdown' ? 'markdown' : kind === 'code' ? 'code' : 'plain';
}

/** Cuts [start, end) at `seps` (coarsest first) until every piece fits the budget. */
function splitRecursive(text: string, start: number, end: number, seps: Separator[], budget: number, always = false): Span[] {
  const tokens = tokenCount(text.slice(start, end));
  if (!always && tokens <= budget) return [{ start, end, tokens }];
  if (seps.length === 0) return tokens <= budget ? [{ start, end, tokens }] : hardSplit(text, start, end, budget);
  const [sep, ...rest] = seps;
  const cuts = cutPositions(text, start, end, sep!);
  if (cuts.length === 0) return splitRecursive(text, start, end, rest, budget, always);
  const out: Span[] = [];
  let prev = start;
  for (const c of [...cuts, end]) {
    if (c > prev) out.push(...splitRecursive(text, prev, c, rest, budget));
    prev = c;
  }
  return out;
}

/** Positions (after the separator) where [start, end) may be cut. */
function cutPositions(text: string, start: number, end: number, sep: Separator): number[] {
  const slice = text.slice(start, end);
  const cuts: number[] = [];
  if (typeof sep === 'string') {
    for (let i = slice.indexOf(sep); i !== -1; i = slice.indexOf(sep, i + sep.length)) {
      const at = start + i + sep.length;
      if (at < end) cuts.push(at);
    }
  } else {
    const re = new RegExp(sep.source, sep.flags.includes('g') ? sep.flags : sep.flags + 'g');
    for (const m of slice.matchAll(re)) {
      const at = start + m.index + m[0].length;
      if (at > start && at < end) cuts.push(at);
    }
  }
  return cuts;
}

/** Last resort for a piece with no usable boundary: cut by characters until each part fits. */
function hardSplit(text: string, start: number, end: number, budget: number): Span[] {
  const out: Span[] = [];
  let pos = start;
  while (pos < end) {
    let len = Math.min(end - pos, budget * 4);
    let tokens = tokenCount(text.slice(pos, pos + len));
    while (tokens > budget && len > 1) {
      len = Math.max(1, Math.floor((len * budget) / tokens * 0.95));
      tokens = tokenCount(text.slice(pos, pos + len));
    }
    out.push({ start: pos, end: pos + len, tokens });
    pos += len;
  }
  return out;
}

/** Packs neighbouring pieces into spans of at most `budget` tokens (piece counts added, then re-counted). */
function pack(text: string, pieces: Span[], budget: number): Span[] {
  const out: Span[] = [];
  let cur: Span | null = null;
  for (const p of pieces) {
    const t = p.tokens >= 0 ? p.tokens : tokenCount(text.slice(p.start, p.end));
    if (cur && cur.tokens + t <= budget) {
      cur.end = p.end;
      cur.tokens += t;
    } else {
      if (cur) out.push(cur);
      cur = { start: p.start, end: p.end, tokens: t };
    }
  }
  if (cur) out.push(cur);
  return out;
}

/** Trims, merges chunks under minSize into a neighbour, adds overlap and the structured header, counts tokens. */
function finish(text: string, spans: Span[], config: ChunkingConfig, header: string | null, strict: boolean): Chunk[] {
  const trimmed = spans
    .map((s) => {
      let a = s.start;
      let b = s.end;
      while (a < b && /\s/.test(text[a]!)) a++;
      while (b > a && /\s/.test(text[b - 1]!)) b--;
      return { start: a, end: b, tokens: s.tokens };
    })
    .filter((s) => s.end > s.start);
  const merged: Span[] = [];
  for (const s of trimmed) {
    const prev = merged.at(-1);
    const small = s.end - s.start < config.minSize;
    if (!strict && prev && (small || prev.end - prev.start < config.minSize) && prev.tokens + s.tokens <= config.maxSize) {
      prev.end = s.end;
      prev.tokens += s.tokens;
    } else merged.push({ ...s });
  }
  return merged.map((s, i) => {
    let start = s.start;
    if (i > 0 && config.overlap > 0 && !strict) {
      const floor = Math.max(merged[i - 1]!.start + 1, s.start - config.overlap);
      start = floor;
      // Start the overlap at a word boundary.
      while (start < s.start && !/\s/.test(text[start - 1] ?? ' ')) start++;
      while (start < s.start && /\s/.test(text[start]!)) start++;
    }
    let content = text.slice(start, s.end);
    if (header && i > 0 && !content.startsWith(header)) content = `${header}\n${content}`;
    return { content, start, end: s.end, tokens: tokenCount(content) };
  });
}

/** Record-level pieces for JSON, JSON Lines, YAML and CSV (with the CSV header repeated in every chunk). */
function structuredPieces(text: string, kind: ContentKind, budget: number): { pieces: Span[]; header: string | null } | null {
  const lineStarts = (test: (line: string, index: number) => boolean): number[] => {
    const cuts: number[] = [];
    let pos = 0;
    let i = 0;
    for (const line of text.split('\n')) {
      if (pos > 0 && test(line, i)) cuts.push(pos);
      pos += line.length + 1;
      i++;
    }
    return cuts;
  };
  const fromCuts = (cuts: number[], from = 0): Span[] => {
    const out: Span[] = [];
    let prev = from;
    for (const c of [...cuts.filter((c) => c > from), text.length]) {
      if (c > prev) out.push(...splitRecursive(text, prev, c, RECIPES.plain, budget));
      prev = c;
    }
    return out;
  };
  switch (kind) {
    case 'jsonl':
      return { pieces: fromCuts(lineStarts((l) => l.trim() !== '')), header: null };
    case 'json': {
      try {
        JSON.parse(text);
      } catch {
        return null;
      }
      // Top-level members or elements: lines indented by exactly one level of the document's indentation.
      const indent = /\n([ \t]+)\S/.exec(text)?.[1];
      if (!indent) return null;
      return { pieces: fromCuts(lineStarts((l) => l.startsWith(indent) && !/^\s/.test(l.slice(indent.length)) && !/^[\]}]/.test(l.slice(indent.length)))), header: null };
    }
    case 'yaml': {
      try {
        parseYaml(text);
      } catch {
        return null;
      }
      return { pieces: fromCuts(lineStarts((l) => /^(?:- |[^\s#-][^:]*:)/.test(l))), header: null };
    }
    case 'csv': {
      const firstBreak = text.indexOf('\n');
      if (firstBreak === -1) return null;
      const header = text.slice(0, firstBreak).replace(/\r$/, '');
      // Sheets extracted from workbooks start with a "## Sheet" line; each starts a piece.
      return { pieces: fromCuts(lineStarts((l) => l.trim() !== ''), 0), header: header.startsWith('## ') ? null : header };
    }
    default:
      return null;
  }
}

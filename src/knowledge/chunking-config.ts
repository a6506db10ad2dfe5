// A knowledge base's chunking configuration: defaults applied on every path, and the rules between fields
// that the schema cannot state. Ranges (maxSize 100–4000 tokens, minSize 1–2000 characters, overlap 0–500
// characters, pattern length, separators) are checked by the spec before this runs.
import { invalidInput } from '../domain/errors.ts';
import { compileUserRegex, UserRegexError } from './user-regex.ts';

export type ChunkStrategy = 'auto' | 'text' | 'regex' | 'recursive' | 'sentence' | 'token';
export type ChunkRecipe = 'plain' | 'markdown' | 'code';

export interface ChunkingConfig {
  maxSize: number;
  minSize: number;
  overlap: number;
  strategy?: ChunkStrategy;
  strategyOptions?: {
    pattern?: string;
    separators?: string[];
    recipe?: ChunkRecipe;
    strictBoundaries?: boolean;
  };
}

export const CHUNKING_DEFAULTS = { maxSize: 1024, minSize: 100, overlap: 200, strategy: 'auto' as ChunkStrategy };

/** Fills in defaults and checks the cross-field rules; `base` is the stored config an update starts from. */
export function normalizeChunkingConfig(input: Partial<ChunkingConfig> | undefined, field: (string | number)[], base?: ChunkingConfig): ChunkingConfig {
  const merged: ChunkingConfig = {
    maxSize: input?.maxSize ?? base?.maxSize ?? CHUNKING_DEFAULTS.maxSize,
    minSize: input?.minSize ?? base?.minSize ?? CHUNKING_DEFAULTS.minSize,
    overlap: input?.overlap ?? base?.overlap ?? CHUNKING_DEFAULTS.overlap,
    strategy: input?.strategy ?? base?.strategy ?? CHUNKING_DEFAULTS.strategy,
  };
  const options = input?.strategyOptions ?? (input?.strategy === undefined ? base?.strategyOptions : undefined);
  if (options && Object.keys(options).length > 0) merged.strategyOptions = { ...options };
  if (merged.minSize >= merged.maxSize * 4) {
    throw invalidInput([...field, 'minSize'], `minSize (${merged.minSize} characters) must be less than maxSize × 4 (${merged.maxSize * 4}).`);
  }
  if (merged.overlap >= merged.maxSize) {
    throw invalidInput([...field, 'overlap'], `overlap (${merged.overlap}) must be less than maxSize (${merged.maxSize}).`);
  }
  const pattern = merged.strategyOptions?.pattern;
  if (pattern !== undefined) {
    try {
      compileUserRegex(pattern);
    } catch (err) {
      if (err instanceof UserRegexError) throw invalidInput([...field, 'strategyOptions', 'pattern'], err.message);
      throw err;
    }
  }
  if (merged.strategyOptions?.strictBoundaries !== undefined && merged.strategy !== 'regex') {
    throw invalidInput([...field, 'strategyOptions', 'strictBoundaries'], 'strictBoundaries applies to the regex strategy only.');
  }
  return merged;
}

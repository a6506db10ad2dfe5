// User-supplied regular expressions of the regex chunking strategy, on the shared linear-time engine
// (src/domain/safe-regex.ts, re2js), so no pattern can make the server backtrack for ever.
import { compileUserPattern, UserPatternError } from '../domain/safe-regex.ts';

export class UserRegexError extends Error {}

export interface UserRegex {
  /** Every match as [start, end) offsets in `text`; empty matches are skipped. */
  matches(text: string): { start: number; end: number }[];
}

export function compileUserRegex(pattern: string): UserRegex {
  try {
    const compiled = compileUserPattern(pattern, { multiline: true, maxLength: 500 });
    return { matches: (text) => compiled.findAll(text).map((m) => ({ start: m.index, end: m.index + m.match.length })) };
  } catch (err) {
    if (err instanceof UserPatternError) throw new UserRegexError(err.message);
    throw err;
  }
}

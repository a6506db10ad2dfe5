// User-supplied regular expressions (the regex chunking strategy) run on a linear-time engine (re2js, a port
// of RE2), so no pattern can make the server backtrack for ever. This is the one place that knows the engine:
// swap it here for a shared safe-regex module when one exists.
import { RE2JS } from 're2js';

export class UserRegexError extends Error {}

export interface UserRegex {
  /** Every match as [start, end) offsets in `text`; empty matches are skipped. */
  matches(text: string): { start: number; end: number }[];
}

export function compileUserRegex(pattern: string): UserRegex {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern, RE2JS.MULTILINE);
  } catch (err) {
    throw new UserRegexError(`The pattern is not a valid regular expression for the linear-time engine (no backreferences or lookaround): ${(err as Error).message}`);
  }
  return {
    matches(text) {
      const out: { start: number; end: number }[] = [];
      const m = compiled.matcher(text);
      while (m.find()) {
        const start = m.start();
        const end = m.end();
        if (end > start) out.push({ start, end });
      }
      return out;
    },
  };
}

// User-supplied regular expressions, run on a linear-time engine. JavaScript's RegExp backtracks, so a pattern
// like `(a+)+$` can take exponential time on a short line; every pattern that comes from a request goes through
// here instead, onto RE2's automata (the pure-JS `re2js` port), whose matching time grows linearly with the text.
// RE2 has no backreferences or lookaround; such patterns are refused with a message saying so. No HTTP here:
// callers turn UserPatternError into their own 400.
import { RE2JS } from 're2js';

export type UserPatternProblem = 'invalid' | 'unsupported' | 'too-long';

export class UserPatternError extends Error {
  readonly problem: UserPatternProblem;
  constructor(problem: UserPatternProblem, message: string) {
    super(message);
    this.name = 'UserPatternError';
    this.problem = problem;
  }
}

export interface UserPatternOptions {
  /** Match the text literally (no metacharacters). */
  literal?: boolean;
  caseInsensitive?: boolean;
  /** `^` and `$` match at line breaks inside the text. */
  multiline?: boolean;
  /** `.` also matches line breaks. */
  dotAll?: boolean;
  /** Longest pattern accepted (characters); default 1000. */
  maxLength?: number;
}

/** A compiled user pattern: safe to run on any text a request can bring. */
export interface UserPattern {
  readonly source: string;
  /** Whether the pattern matches somewhere in `text`. */
  test(text: string): boolean;
  /** The first match (its text and UTF-16 index), or null. */
  find(text: string): { match: string; index: number } | null;
  /** Splits `text` around every match, keeping trailing empty strings (like String.prototype.split). */
  split(text: string): string[];
  /** Every non-empty match in order, with its UTF-16 index (one linear pass). */
  findAll(text: string): { match: string; index: number }[];
}

/** Syntax the linear-time engine cannot run, with what to say about it. */
const UNSUPPORTED: [RegExp, string][] = [
  [/\(\?<?[=!]/, 'lookahead and lookbehind assertions ((?=…), (?!…), (?<=…), (?<!…))'],
  [/\\[1-9]|\\k</, 'backreferences (\\1, \\k<name>)'],
];

/** Compiles a pattern from a request. Throws UserPatternError for anything that is not a runnable pattern. */
export function compileUserPattern(source: string, options: UserPatternOptions = {}): UserPattern {
  const maxLength = options.maxLength ?? 1000;
  if (source.length > maxLength) throw new UserPatternError('too-long', `The pattern is longer than ${maxLength} characters.`);
  let flags = 0;
  if (options.caseInsensitive) flags |= RE2JS.CASE_INSENSITIVE;
  if (options.multiline) flags |= RE2JS.MULTILINE;
  if (options.dotAll) flags |= RE2JS.DOTALL;
  let re: RE2JS;
  if (options.literal) re = RE2JS.compile(RE2JS.quote(source), flags);
  else {
    for (const [pattern, what] of UNSUPPORTED) {
      if (pattern.test(stripClassesAndEscapedParens(source))) {
        throw new UserPatternError('unsupported', `Unsupported regular expression syntax: ${what}. Patterns run on a linear-time engine (RE2 syntax), which has no backtracking features.`);
      }
    }
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(source), flags);
    } catch (err) {
      throw new UserPatternError('invalid', `Not a valid regular expression: ${describe(err)}`);
    }
  }
  return {
    source,
    test: (text) => re.test(text),
    find(text) {
      const m = re.matcher(text);
      return m.find() ? { match: m.group() ?? '', index: m.start() } : null;
    },
    split: (text) => re.split(text, -1),
    findAll(text) {
      const m = re.matcher(text);
      const out: { match: string; index: number }[] = [];
      while (m.find()) if (m.end() > m.start()) out.push({ match: m.group() ?? '', index: m.start() });
      return out;
    },
  };
}

/** Escaped parentheses and character classes cannot start a group; drop them before looking for `(?=` etc. */
function stripClassesAndEscapedParens(source: string): string {
  return source.replace(/\\\\/g, '').replace(/\\[()[\]]/g, '').replace(/\[(?:\\.|[^\]\\])*\]/g, '');
}

function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^error parsing regexp:\s*/i, '');
}

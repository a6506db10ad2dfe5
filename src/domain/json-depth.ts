// Nesting bound of JSON request bodies, checked on the raw bytes before they are parsed: a body nested
// thousands of levels deep parses, but overflows the stack of every recursive walk after it (serializing,
// validation, the engine's reference resolution). The HTTP pipeline checks every JSON body with it (bound:
// BODY_MAX_DEPTH); a JSON document carried inside a body as a string (a workflow import) is checked here too.

/** The bound for JSON carried as a string inside a body (the same as BODY_MAX_DEPTH's default). */
export const EMBEDDED_JSON_MAX_DEPTH = 100;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

export class JsonTooDeepError extends Error {
  readonly type = 'entity.too.deep';
  readonly status = 400;
  constructor(maxDepth: number) {
    super(`The request body is nested more than ${maxDepth} levels deep.`);
    this.name = 'JsonTooDeepError';
  }
}

/** Throws JsonTooDeepError when objects and arrays in `buf` nest deeper than `maxDepth`. Strings are skipped. */
export function assertJsonDepth(input: Uint8Array | string, maxDepth: number): void {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) throw new JsonTooDeepError(maxDepth);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
}

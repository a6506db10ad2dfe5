// Run-time references inside block inputs: `<blockName.path.to.value>`, `<variable.name>`, `<loop.index>`,
// `<loop.currentItem>`, `<parallel.currentItem>`, `<start.field>`, and secrets written `{{SECRET_NAME}}`.
// How a value is spliced in depends on where the text is going: plain text gets the value's text; JSON gets a
// JSON literal (or escaped text inside a JSON string); JavaScript gets an index into a values array passed to the
// sandbox beside the code (or escaped text inside a string literal), so values are never re-parsed as code.
import { Script } from 'node:vm';

export type ResolveMode = 'text' | 'json' | 'code';

const TOKEN = /<([A-Za-z_][^<>\s]*\.[^<>\s]*)>|\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const SECRET = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const WHOLE_REFERENCE = /^<([A-Za-z_][^<>\s]*\.[^<>\s]*)>$/;

export class UnresolvedReference extends Error {}

/** How a block or variable name is matched in a reference: case and whitespace do not count (`<My Agent.x>` = `<myagent.x>`). */
export const normalizeName = (name: string): string => name.toLowerCase().replace(/\s+/g, '');

export interface ReferenceSource {
  /** The value a reference body such as `agent.content` or `loop.index` names; throws UnresolvedReference. */
  lookup(body: string): unknown;
  /** Whether a reference root (`agent`, `loop`, `variable`…) names something; code mode leaves others alone. */
  knows(root: string): boolean;
  /** Secret values fetched beforehand (see collectSecretNames). */
  secrets: Map<string, string>;
}

/** Splits `a.b[0].c` into ['a', 'b', 0, 'c']. */
export function parsePath(body: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const part of body.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) throw new UnresolvedReference(`Malformed reference <${body}>`);
    if (m[1]) out.push(m[1]);
    for (const idx of m[2]!.matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  if (out.length === 0 || out.some((s) => s === '')) throw new UnresolvedReference(`Malformed reference <${body}>`);
  return out;
}

/** Follows a path into a value; `undefined` when a step is missing. */
export function walkPath(value: unknown, path: (string | number)[]): { found: boolean; value: unknown } {
  let cur = value;
  for (const step of path) {
    if (cur === null || cur === undefined) return { found: false, value: undefined };
    if (typeof cur === 'string' && typeof step === 'number') {
      cur = cur[step];
      continue;
    }
    if (typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, step)) {
      if (step === 'length' && (Array.isArray(cur) || typeof cur === 'string')) {
        cur = (cur as unknown[]).length;
        continue;
      }
      return { found: false, value: undefined };
    }
    cur = (cur as Record<string | number, unknown>)[step];
  }
  return { found: true, value: cur };
}

/** Every secret name used anywhere in a value (so they can be fetched before resolution). */
export function collectSecretNames(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value === 'string') for (const m of value.matchAll(SECRET)) out.add(m[1]!);
  else if (Array.isArray(value)) for (const v of value) collectSecretNames(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectSecretNames(v, out);
  return out;
}

function secretValue(source: ReferenceSource, name: string): string {
  const v = source.secrets.get(name);
  if (v === undefined) throw new UnresolvedReference(`Unresolvable secret {{${name}}}: no secret with that name`);
  return v;
}

function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Resolves references in plain values: strings anywhere inside objects and arrays. */
export function resolveValue(value: unknown, source: ReferenceSource): unknown {
  if (typeof value === 'string') return resolveText(value, source);
  if (Array.isArray(value)) return value.map((v) => resolveValue(v, source));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveValue(v, source);
    return out;
  }
  return value;
}

/** A string that is exactly one reference gives the value itself (typed); otherwise the text with values spliced in. */
export function resolveText(text: string, source: ReferenceSource): unknown {
  const whole = WHOLE_REFERENCE.exec(text);
  if (whole) return source.lookup(whole[1]!);
  return text.replace(TOKEN, (_m, ref: string | undefined, secret: string | undefined) =>
    ref !== undefined ? asText(source.lookup(ref)) : secretValue(source, secret!),
  );
}

/**
 * Resolves references in JSON text and parses it. A string holding a single reference yields its value; text
 * that is not JSON after resolution fails with a message saying so.
 */
export function resolveJson(text: string, source: ReferenceSource, what: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const whole = WHOLE_REFERENCE.exec(trimmed);
  if (whole) return source.lookup(whole[1]!);
  const out = splice(trimmed, source, 'json', []);
  try {
    return JSON.parse(out);
  } catch {
    // Not JSON: treat as text, the way a user typing a plain message into a JSON field means it.
    if (!/^[[{"]/.test(trimmed)) return resolveText(trimmed, source);
    throw new UnresolvedReference(`${what} is not valid JSON after resolving references`);
  }
}

/** How the sandbox runs resolved code: as the body of an async function, or as one expression. */
export type CodeKind = 'body' | 'expression';

/** Whether the code compiles as the sandbox will wrap it. Compiling runs nothing. */
function compiles(code: string, kind: CodeKind): boolean {
  try {
    new Script(kind === 'body' ? `(async function () {\n${code}\n})` : `(async function () { return (${code}\n); })`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves references in JavaScript: returns the code and the values it reads as `__refs[i]`. A `<name.path>`
 * whose name is no block, variable or loop is left alone when the code compiles with it (`a<b.c>d` is a
 * comparison); when it does not compile, that text was meant as a reference, and it fails as an unresolved
 * one (naming it) instead of as a JavaScript syntax error.
 */
export function resolveCode(code: string, source: ReferenceSource, kind: CodeKind = 'body'): { code: string; refs: unknown[] } {
  const refs: unknown[] = [];
  const unknown: string[] = [];
  const out = splice(code, source, 'code', refs, unknown);
  if (unknown.length > 0 && !compiles(out, kind)) {
    source.lookup(unknown[0]!);
    throw new UnresolvedReference(`Unresolvable reference <${unknown[0]}>`);
  }
  return { code: out, refs };
}

/** Tracks whether each position of JSON or JavaScript text is inside a string literal (and which quote). */
function splice(text: string, source: ReferenceSource, mode: 'json' | 'code', refs: unknown[], unknown: string[] = []): string {
  let out = '';
  let pos = 0;
  let quote: string | null = null;
  let comment: 'line' | 'block' | null = null;
  const advance = (to: number) => {
    for (let i = pos; i < to; i++) {
      const c = text[i]!;
      if (comment === 'line') {
        if (c === '\n') comment = null;
      } else if (comment === 'block') {
        if (c === '*' && text[i + 1] === '/') {
          comment = null;
          i++;
        }
      } else if (quote) {
        if (c === '\\') i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || (mode === 'code' && (c === "'" || c === '`'))) quote = c;
      else if (mode === 'code' && c === '/' && text[i + 1] === '/') comment = 'line';
      else if (mode === 'code' && c === '/' && text[i + 1] === '*') comment = 'block';
    }
    out += text.slice(pos, to);
    pos = to;
  };
  for (const m of text.matchAll(TOKEN)) {
    const start = m.index;
    advance(start);
    const [raw, ref, secret] = m;
    if (comment) {
      advance(start + raw.length);
      continue;
    }
    if (ref !== undefined && mode === 'code' && !source.knows(ref.split(/[.[]/)[0]!.toLowerCase())) {
      // In code, `a<b.c>d` may be a comparison rather than a reference to a block that does not exist.
      unknown.push(ref);
      advance(start + raw.length);
      continue;
    }
    const value = ref !== undefined ? source.lookup(ref) : secretValue(source, secret!);
    if (quote) {
      let escaped = JSON.stringify(asText(value)).slice(1, -1);
      if (quote === "'") escaped = escaped.replace(/'/g, "\\'");
      if (quote === '`') escaped = escaped.replace(/`/g, '\\`').replace(/\$\{/g, '\\${');
      out += escaped;
    } else if (mode === 'json') {
      out += JSON.stringify(value === undefined ? null : value);
    } else {
      refs.push(value === undefined ? null : value);
      out += `__refs[${refs.length - 1}]`;
    }
    pos = start + raw.length;
  }
  advance(text.length);
  return out;
}

// The spec's paths as a lookup on the raw (undecoded) request path, for what happens outside a matched
// operation: which error format a request on a path answers in before (or without) its operation being
// resolved, which methods a path allows (405 + Allow), and which path parameter carries a malformed escape.
// Matching follows the generated router: case-insensitive, optional trailing slash, a parameter is one
// non-empty segment, literal segments win over parameters.
import { OPERATIONS, type OperationSpec } from '../../generated/operations.ts';

export type ErrorFormat = OperationSpec['errorFormat'];

interface PathEntry {
  template: string;
  regex: RegExp;
  paramNames: string[];
  /** Lower-case method -> operation. */
  operations: Map<string, OperationSpec>;
  /** Literal-vs-parameter pattern of the segments, for specificity ('0' literal, '1' parameter). */
  rank: string;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function buildEntries(): PathEntry[] {
  const byPath = new Map<string, PathEntry>();
  for (const op of Object.values(OPERATIONS) as OperationSpec[]) {
    let entry = byPath.get(op.path);
    if (!entry) {
      const segments = op.path.split('/').filter(Boolean);
      const paramNames: string[] = [];
      const pattern = segments
        .map((seg) => {
          const m = /^\{(.+)\}$/.exec(seg);
          if (!m) return escapeRegex(seg);
          paramNames.push(m[1]!);
          return '([^/]+)';
        })
        .join('/');
      entry = {
        template: op.path,
        regex: new RegExp(`^/${pattern}/?$`, 'i'),
        paramNames,
        operations: new Map(),
        rank: segments.map((seg) => (seg.startsWith('{') ? '1' : '0')).join(''),
      };
      byPath.set(op.path, entry);
    }
    entry.operations.set(op.method, op);
  }
  return [...byPath.values()].sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
}

let entries: PathEntry[] | null = null;

export interface PathMatch {
  template: string;
  /** Raw (still percent-encoded) parameter values by name. */
  rawParams: Record<string, string>;
  operations: Map<string, OperationSpec>;
}

/** The most specific spec path matching a raw request path (no query string), or null. */
export function matchPath(rawPath: string): PathMatch | null {
  entries ??= buildEntries();
  for (const entry of entries) {
    const m = entry.regex.exec(rawPath);
    if (!m) continue;
    const rawParams: Record<string, string> = {};
    entry.paramNames.forEach((name, i) => (rawParams[name] = m[i + 1]!));
    return { template: entry.template, rawParams, operations: entry.operations };
  }
  return null;
}

/** The methods a path answers, as an `Allow` header value (GET implies HEAD, as the router serves it). */
export function allowedMethods(match: PathMatch): string {
  const methods = new Set([...match.operations.keys()].map((m) => m.toUpperCase()));
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort().join(', ');
}

/**
 * The error format of a request that may not have reached its operation: the operation's own for its method,
 * else the path's (all operations of a path belong to one family), else the v2 format.
 */
export function errorFormatFor(method: string, rawPath: string): ErrorFormat {
  const match = matchPath(rawPath);
  if (!match) return 'standard';
  const op = match.operations.get(method.toLowerCase()) ?? (method.toUpperCase() === 'HEAD' ? match.operations.get('get') : undefined);
  return (op ?? match.operations.values().next().value!).errorFormat;
}

/** The first path parameter whose percent-escapes do not decode, with its raw value; null when all decode. */
export function malformedParam(rawPath: string): { name: string; value: string } | null {
  if (!rawPath.includes('%')) return null;
  const match = matchPath(rawPath);
  if (!match) return null;
  for (const [name, value] of Object.entries(match.rawParams)) {
    try {
      decodeURIComponent(value);
    } catch {
      return { name, value };
    }
  }
  return null;
}

/** The path part of a request target, undecoded. */
export const rawPathOf = (url: string | undefined): string => {
  const target = url ?? '/';
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
};

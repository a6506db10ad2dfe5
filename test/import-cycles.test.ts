// No import cycles in src/: every module sits below the modules that use it, so a shared type or helper lives in
// the module both sides depend on. Type-only imports count too: the layering is the point (the engine ↔ blocks
// circle was type-only), and a type-only edge becomes a runtime one as soon as a value is imported along it.
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

/** Strongly connected groups allowed for now, as directory prefixes every member must sit under. */
const ALLOWED: string[][] = [];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(m|c)?tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Relative module specifiers a file imports or re-exports (static, type-only and dynamic alike). */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) found.push(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((s) => s.startsWith('.'));
}

function resolveImport(from: string, specifier: string): string | null {
  const base = resolve(dirname(from), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile() && c.startsWith(SRC + sep)) ?? null;
}

/** Tarjan's strongly connected components with more than one member (or a file importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || graph.get(v)?.includes(v)) groups.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return groups;
}

/** One concrete circle through a group, for a readable failure: a → b → … → a. */
function circleThrough(group: string[], graph: Map<string, string[]>): string {
  const members = new Set(group);
  const start = group[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start].join(' → ');
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return group.join(', ');
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const name = relative(ROOT, file).split(sep).join('/');
    const targets = specifiers(file)
      .map((s) => resolveImport(file, s))
      .filter((t): t is string => t !== null)
      .map((t) => relative(ROOT, t).split(sep).join('/'));
    graph.set(name, [...new Set(targets)]);
  }
  return graph;
}

describe('import graph of src/', () => {
  it('has no import cycles (type-only imports included)', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(50);
    // The walk resolves the tree's imports (a known edge is there), so an empty result means no circles.
    expect(graph.get('src/execution/index.ts')).toContain('src/execution/blocks.ts');
    const allowed = (group: string[]) => ALLOWED.some((dirs) => group.every((file) => dirs.some((d) => file.startsWith(d))));
    const offending = cycles(graph)
      .filter((group) => !allowed(group))
      .map((group) => circleThrough(group, graph));
    expect(offending).toEqual([]);
  });

  it('finds a circle when there is one (the walk itself works)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
    expect(circleThrough(['a', 'b', 'c'], graph)).toBe('a → b → c → a');
  });
});

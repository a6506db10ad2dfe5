// SQL in src/ must read the same on SQLite and Postgres. One mistake recurred when the Postgres engine arrived: a
// bare placeholder tested for NULL (`? IS NULL`, an optional filter) has no type Postgres can infer, so every such
// query failed there with 42P18 while passing on SQLite. Written `CAST(? AS TEXT) IS NULL`, it works on both.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Lines testing a bare `?` for NULL, as `file:line: text`. */
function untypedNullTests(files: string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    fs.readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (/(^|[^\w)])\?\s+IS\s+(NOT\s+)?NULL/i.test(line.replace(/CAST\(\?\s+AS\s+\w+\)/gi, 'x'))) found.push(`${path.relative(root, file)}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

describe('portable SQL', () => {
  it('never tests a bare placeholder for NULL (Postgres cannot type it)', () => {
    expect(untypedNullTests(sourceFiles(root))).toEqual([]);
  });

  it('the check finds the pattern it guards against', () => {
    const sample = path.join(fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'owa-sql-')), 'sample.ts');
    fs.writeFileSync(sample, "db.all('SELECT 1 WHERE (? IS NULL OR a = ?)');\ndb.all('SELECT 1 WHERE (CAST(? AS TEXT) IS NULL OR a = ?)');\n");
    expect(untypedNullTests([sample])).toHaveLength(1);
  });
});

// User regular expressions run on a linear-time engine: catastrophic patterns finish fast, unsupported and invalid
// syntax is refused clearly, through the module and through file content search.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileUserPattern, UserPatternError } from '../src/domain/safe-regex.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const refusal = (source: string) => {
  try {
    compileUserPattern(source);
  } catch (e) {
    expect(e).toBeInstanceOf(UserPatternError);
    return e as UserPatternError;
  }
  throw new Error(`expected ${source} to be refused`);
};

describe('compileUserPattern', () => {
  it('matches like a regular expression (classes, groups, anchors, named groups, flags)', () => {
    expect(compileUserPattern('^err(or)?:\\s+\\d{3}$').test('error: 404')).toBe(true);
    expect(compileUserPattern('(?<word>[a-z]+)@example\\.com').test('Mail ada@example.com now')).toBe(true);
    expect(compileUserPattern('HELLO', { caseInsensitive: true }).test('say hello')).toBe(true);
    expect(compileUserPattern('a.b', { literal: true }).test('axb')).toBe(false);
    expect(compileUserPattern('a.b', { literal: true }).test('xa.by')).toBe(true);
    expect(compileUserPattern('b+').find('aabbbc')).toEqual({ match: 'bbb', index: 2 });
    expect(compileUserPattern('\\s*,\\s*').split('a , b,c')).toEqual(['a', 'b', 'c']);
  });

  it('runs catastrophic-backtracking patterns in linear time', () => {
    const text = 'a'.repeat(50_000) + '!';
    for (const source of ['(a+)+$', '(a|aa)+$', '(a*)*b', '^(\\w+\\s?)*$']) {
      const started = performance.now();
      expect(compileUserPattern(source).test(text), source).toBe(false);
      expect(performance.now() - started, source).toBeLessThan(1000);
    }
  });

  it('refuses lookaround and backreferences as unsupported, and broken syntax as invalid', () => {
    for (const source of ['(?=a)b', 'a(?!b)', '(?<=x)y', '(?<!x)y', '(a)\\1', '(?<n>a)\\k<n>']) {
      const e = refusal(source);
      expect(e.problem, source).toBe('unsupported');
      expect(e.message).toMatch(/linear-time/);
    }
    // Escaped and bracketed look-alikes are ordinary syntax.
    expect(compileUserPattern('\\(?=x').test('=x')).toBe(true);
    expect(compileUserPattern('[(?=]').test('=')).toBe(true);
    expect(compileUserPattern('\\\\1').test('\\1')).toBe(true);
    for (const source of ['(', 'a{2,1}', '[z-a]', '*a', 'a)']) {
      const e = refusal(source);
      expect(e.problem, source).toBe('invalid');
      expect(e.message).toMatch(/^Not a valid regular expression: /);
    }
    expect(() => compileUserPattern('x'.repeat(11), { maxLength: 10 })).toThrow(/longer than 10/);
  });
});

describe('file content search', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    const create = await s.call('POST', '/api/v2/files', { workspaceId: s.workspaceId, name: 'log.txt', content: `ok line\n${'a'.repeat(30_000)}!\nerror: 500 at 12:00\n` });
    expect(create.status, create.text).toBe(200);
  });
  afterAll(() => s.stop());

  const search = (query: string, mode?: string) =>
    s.call('GET', `/api/v2/files/search?workspaceId=${s.workspaceId}&query=${encodeURIComponent(query)}${mode ? `&mode=${mode}` : ''}`);

  it('answers a catastrophic pattern at once instead of hanging the server', async () => {
    const started = Date.now();
    const r = await search('(a+)+$');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.results).toEqual([]);
    // Backtracking over the 30,000-character line would never end; any bound that a busy machine's request
    // time stays under tells the two apart.
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('finds lines by pattern and by exact text', async () => {
    expect((await search('error: \\d+')).body.data.results).toMatchObject([{ lineNumber: 3, text: 'error: 500 at 12:00' }]);
    expect((await search('12:00', 'exact')).body.data.results).toMatchObject([{ lineNumber: 3 }]);
    expect((await search('(a+', 'exact')).body.data.results).toEqual([]);
  });

  it('answers 400 for invalid and unsupported patterns, saying which', async () => {
    const invalid = await search('(unclosed');
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({ code: 'BAD_REQUEST', details: [{ code: 'invalid_pattern', path: ['query', 'query'] }] });
    expect(invalid.body.error.message).toMatch(/Not a valid regular expression/);
    const unsupported = await search('(?=error)e');
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.details[0]).toMatchObject({ code: 'unsupported_pattern', path: ['query', 'query'] });
    expect(unsupported.body.error.message).toMatch(/lookahead/);
  });
});

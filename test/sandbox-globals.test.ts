// The web globals of function-block code (timers, TextEncoder/TextDecoder, URL/URLSearchParams, atob/btoa,
// structuredClone, crypto, Buffer): each works as on the platform, and none opens a way out of the context.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError, SandboxPool } from '../src/sandbox/pool.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';

let pool: SandboxPool;

beforeAll(async () => {
  pool = new SandboxPool({ size: 1, timeoutMs: 2000, memoryMb: 64 });
  await pool.start();
});
afterAll(() => pool.close());

const run = async (code: string, timeoutMs?: number) => (await pool.run({ code, ...(timeoutMs ? { timeoutMs } : {}) })).value;
const failure = async (code: string, timeoutMs?: number): Promise<SandboxError> => {
  try {
    await pool.run({ code, ...(timeoutMs ? { timeoutMs } : {}) });
  } catch (e) {
    expect(e).toBeInstanceOf(SandboxError);
    return e as SandboxError;
  }
  throw new Error('expected the call to fail');
};

const GLOBALS = ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'queueMicrotask', 'TextEncoder', 'TextDecoder', 'URL', 'URLSearchParams', 'atob', 'btoa', 'structuredClone', 'crypto', 'Buffer'];

describe('function-block globals', () => {
  it('are all defined', async () => {
    expect(await run(`return ${JSON.stringify(GLOBALS)}.map((n) => typeof globalThis[n])`)).toEqual(GLOBALS.map((n) => (n === 'crypto' ? 'object' : 'function')));
  });

  it('timers: setTimeout with arguments, clearTimeout, setInterval until cleared, queueMicrotask order', async () => {
    const value = await run(`
      const order = [];
      await new Promise((resolve) => setTimeout((a, b) => { order.push('timeout ' + a + b); resolve(); }, 5, 'x', 'y'));
      const cancelled = setTimeout(() => order.push('never'), 1);
      clearTimeout(cancelled);
      let ticks = 0;
      await new Promise((resolve) => { const h = setInterval(() => { ticks++; if (ticks === 3) { clearInterval(h); resolve(); } }, 1); });
      queueMicrotask(() => order.push('microtask'));
      order.push('sync');
      await new Promise((r) => setTimeout(r, 2));
      const t = setTimeout(() => {}, 1);
      return { order, ticks, chain: t.unref() === t && t.hasRef(), id: typeof +t };`);
    expect(value).toEqual({ order: ['timeout xy', 'sync', 'microtask'], ticks: 3, chain: true, id: 'number' });
  });

  it('timers are cleared when the call ends: none fires into the next call in the same process', async () => {
    // One warm process: the second call runs where the first left its timers and interval.
    const pids = pool.pids();
    await run('setInterval(() => console.log("leak"), 1); setTimeout(() => { throw new Error("late") }, 20); return 1');
    const r = await pool.run({ code: 'await new Promise((r) => setTimeout(r, 60)); console.log("second"); return 2' });
    expect(r).toEqual({ value: 2, stdout: 'second' });
    expect(pool.pids()).toEqual(pids);
  });

  it('timers are bounded by the call timeout: a long wait is killed at the deadline like any overrun', async () => {
    const e = await failure('await new Promise((r) => setTimeout(r, 60_000)); return 1', 300);
    expect(e.kind).toBe('timeout');
    // A timer due after the deadline is never scheduled: the call that does not wait for it ends normally.
    expect(await run('setTimeout(() => {}, 60_000); return "done"', 300)).toBe('done');
  });

  it('an error thrown by a timer or microtask callback fails the call', async () => {
    expect((await failure('setTimeout(() => { throw new RangeError("in timer") }, 1); await new Promise((r) => setTimeout(r, 20)); return 1')).message).toBe('RangeError: in timer');
    expect((await failure('queueMicrotask(() => { throw new Error("in microtask") }); await new Promise((r) => setTimeout(r, 5)); return 1')).message).toBe('in microtask');
    expect((await failure('setTimeout("code as string", 1)')).message).toMatch(/TypeError/);
  });

  it('TextEncoder / TextDecoder: UTF-8 round trips, replacement, fatal, streaming and BOM', async () => {
    const value = await run(`
      const enc = new TextEncoder();
      const bytes = enc.encode('héllo €𝄞');
      const dec = new TextDecoder();
      const into = new Uint8Array(4);
      const r = enc.encodeInto('a€b', into);
      let fatal = null;
      try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { fatal = e.name; }
      const streamed = new TextDecoder();
      const part = streamed.decode(new Uint8Array([0xe2, 0x82]), { stream: true }) + streamed.decode(new Uint8Array([0xac]));
      let label = null;
      try { new TextDecoder('latin2'); } catch (e) { label = e.name; }
      return { bytes: [...bytes], back: dec.decode(bytes), lone: [...enc.encode('\\ud800')], bad: dec.decode(new Uint8Array([0x61, 0xff, 0x62])),
        into: [r.read, r.written, ...into], fatal, part, bom: dec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), label, encoding: dec.encoding,
        fromBuffer: dec.decode(new Uint8Array([0x68, 0x69]).buffer) };`);
    expect(value).toEqual({
      bytes: [...Buffer.from('héllo €𝄞')],
      back: 'héllo €𝄞',
      lone: [0xef, 0xbf, 0xbd],
      bad: 'a\ufffdb',
      into: [2, 4, 0x61, 0xe2, 0x82, 0xac],
      fatal: 'TypeError',
      part: '€',
      bom: 'A',
      label: 'RangeError',
      encoding: 'utf-8',
      fromBuffer: 'hi',
    });
  });

  it('URL and URLSearchParams parse, resolve, edit and stay linked', async () => {
    const value = await run(`
      const u = new URL('../b/c?x=1&y=a+b#frag', 'https://user:pw@Example.COM:8443/a/z/');
      const p = u.searchParams;
      p.append('z', 'é &=');
      p.set('x', '2');
      const afterParams = u.href;
      u.search = '?q=1';
      u.pathname = '/new path';
      let invalid = null;
      try { new URL('not a url'); } catch (e) { invalid = e.name; }
      const sp = new URLSearchParams({ b: '2', a: '1' });
      sp.sort();
      return { host: u.host, hostname: u.hostname, port: u.port, origin: u.origin, username: u.username, afterParams, afterSearch: p.get('q'), href: u.href,
        json: JSON.stringify({ u }), invalid, canParse: [URL.canParse('https://x.y'), URL.canParse('nope')], sorted: sp.toString(),
        entries: [...new URLSearchParams('?a=1&a=2&b=%E2%82%AC')], all: new URLSearchParams('a=1&a=2').getAll('a'), size: sp.size };`);
    expect(value).toEqual({
      host: 'example.com:8443',
      hostname: 'example.com',
      port: '8443',
      origin: 'https://example.com:8443',
      username: 'user',
      afterParams: 'https://user:pw@example.com:8443/a/b/c?x=2&y=a+b&z=%C3%A9+%26%3D#frag',
      afterSearch: '1',
      href: 'https://user:pw@example.com:8443/new%20path?q=1#frag',
      json: '{"u":"https://user:pw@example.com:8443/new%20path?q=1#frag"}',
      invalid: 'TypeError',
      canParse: [true, false],
      sorted: 'a=1&b=2',
      entries: [['a', '1'], ['a', '2'], ['b', '€']],
      all: ['1', '2'],
      size: 2,
    });
  });

  it('atob / btoa', async () => {
    const value = await run(`
      let bad = null, wide = null;
      try { atob('a'); } catch (e) { bad = e.name; }
      try { btoa('€'); } catch (e) { wide = e.name; }
      return [btoa('hello'), btoa(''), btoa('ab'), atob('aGVsbG8='), atob(' aGk '), atob(btoa('\\u00ff\\u0000x')), bad, wide];`);
    expect(value).toEqual(['aGVsbG8=', '', 'YWI=', 'hello', 'hi', '\u00ff\u0000x', 'InvalidCharacterError', 'InvalidCharacterError']);
  });

  it('structuredClone copies deeply, keeps cycles and types, refuses functions', async () => {
    const value = await run(`
      const src = { d: new Date(5), m: new Map([[1, { a: 1 }]]), s: new Set([1]), t: new Uint16Array([1, 2]), r: /x/gi, list: [1, { b: 2 }] };
      src.self = src;
      const c = structuredClone(src);
      let fn = null;
      try { structuredClone({ f() {} }); } catch (e) { fn = e.name; }
      return { same: c === src, cycle: c.self === c, date: c.d instanceof Date && c.d.getTime(), map: c.m.get(1).a, mapCopied: c.m.get(1) !== src.m.get(1),
        set: c.s.has(1), typed: c.t instanceof Uint16Array && [...c.t], re: c.r.flags, list: c.list[1].b, fn,
        err: structuredClone(new TypeError('t')) instanceof TypeError };`);
    expect(value).toEqual({ same: false, cycle: true, date: 5, map: 1, mapCopied: true, set: true, typed: [1, 2], re: 'gi', list: 2, fn: 'DataCloneError', err: true });
  });

  it('crypto.randomUUID and crypto.getRandomValues', async () => {
    const value = (await run(`
      const a = crypto.getRandomValues(new Uint8Array(32));
      const w = crypto.getRandomValues(new Uint32Array(4));
      let quota = null, type = null;
      try { crypto.getRandomValues(new Uint8Array(65537)); } catch (e) { quota = e.name; }
      try { crypto.getRandomValues(new Float64Array(2)); } catch (e) { type = e.name; }
      return { uuid: crypto.randomUUID(), uuid2: crypto.randomUUID(), distinct: new Set(a).size, words: w.length, quota, type };`)) as Record<string, unknown>;
    expect(value.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(value.uuid).not.toBe(value.uuid2);
    expect(value.distinct).toBeGreaterThan(8);
    expect(value).toMatchObject({ words: 4, quota: 'QuotaExceededError', type: 'TypeMismatchError' });
  });

  it('Buffer: encodings, concat, numbers, JSON', async () => {
    const value = await run(`
      const b = Buffer.from('héllo', 'utf8');
      const n = Buffer.alloc(6);
      n.writeUInt32BE(0xdeadbeef, 0);
      n.writeInt16LE(-2, 4);
      return { hex: b.toString('hex'), b64: b.toString('base64'), back: Buffer.from(b.toString('base64'), 'base64').toString(), len: Buffer.byteLength('€'),
        concat: Buffer.concat([Buffer.from('a'), Buffer.from([0x62])]).toString(), isBuffer: Buffer.isBuffer(b), u8: b instanceof Uint8Array,
        nums: [n.readUInt32BE(0), n.readInt16LE(4)], json: b.subarray(0, 2).toJSON(), eq: Buffer.from('ab').equals(Buffer.from('ab')), same: Buffer === Buffer };`);
    expect(value).toEqual({
      hex: '68c3a96c6c6f',
      b64: 'aMOpbGxv',
      back: 'héllo',
      len: 3,
      concat: 'ab',
      isBuffer: true,
      u8: true,
      nums: [0xdeadbeef, -2],
      json: { type: 'Buffer', data: [0x68, 0xc3] },
      eq: true,
      same: true,
    });
  });
});

describe('the new globals do not open the sandbox', () => {
  // Each global (and an instance or method of it) is tried as a door to the worker's realm: its constructor chain
  // must lead to the context's own Function, which finds no `process`, `require` or host object.
  const doors: Record<string, string> = {
    setTimeout: 'setTimeout',
    setInterval: 'setInterval',
    clearTimeout: 'clearTimeout',
    clearInterval: 'clearInterval',
    queueMicrotask: 'queueMicrotask',
    'a Timeout': 'setTimeout(() => {}, 1)',
    'Timeout.ref': 'setTimeout(() => {}, 1).ref',
    TextEncoder: 'TextEncoder',
    'encoded bytes': 'new TextEncoder().encode("x")',
    TextDecoder: 'TextDecoder',
    'TextDecoder.decode': 'new TextDecoder().decode',
    URL: 'URL',
    'a URL': 'new URL("https://example.com/")',
    'URL.searchParams': 'new URL("https://example.com/?a=1").searchParams',
    URLSearchParams: 'URLSearchParams',
    'URLSearchParams iterator': 'new URLSearchParams("a=1").entries()',
    atob: 'atob',
    btoa: 'btoa',
    structuredClone: 'structuredClone',
    'a clone': 'structuredClone({ a: 1 })',
    crypto: 'crypto',
    'crypto.randomUUID': 'crypto.randomUUID',
    'crypto.getRandomValues': 'crypto.getRandomValues',
    'random bytes': 'crypto.getRandomValues(new Uint8Array(2))',
    Buffer: 'Buffer',
    'a Buffer': 'Buffer.from("x")',
    'Buffer.from': 'Buffer.from',
    'an atob error': '(() => { try { atob("*") } catch (e) { return e } })()',
    'a URL error': '(() => { try { new URL("nope") } catch (e) { return e } })()',
  };

  it.each(Object.entries(doors))('%s: the constructor chain reaches no host object', async (_name, expr) => {
    const value = await run(`
      const x = ${expr};
      const tries = [];
      // A generator's constructor chain ends at GeneratorFunction: run the generator it makes.
      const settle = (r) => (r && typeof r.next === 'function' ? r.next().value : r);
      const attempt = (f) => { try { tries.push(String(settle(f()))); } catch (e) { tries.push('threw ' + (e && e.name)); } };
      attempt(() => x.constructor.constructor('return typeof process')());
      attempt(() => x.constructor.constructor('return typeof require')());
      attempt(() => Object.getPrototypeOf(x).constructor.constructor('return typeof process')());
      attempt(() => x.__proto__.__proto__.constructor.constructor('return typeof process')());
      attempt(() => (x.constructor.constructor instanceof Function) + '');
      return tries;`);
    const tries = value as string[];
    expect(tries.slice(0, 4).every((t) => t === 'undefined' || t.startsWith('threw'))).toBe(true);
    expect(tries[4]).toBe('true');
  });

  it('hostCall and the bootstrap stay out of reach', async () => {
    const value = await run(`
      const seen = [];
      // Every global and everything one level inside it belongs to this context (a host function or object
      // would not be an instance of the context's own Function / Object).
      const ownRealm = (v) => (typeof v === 'function' ? v instanceof Function || v === Function.prototype : v === null || typeof v !== 'object' || v instanceof Object || Object.getPrototypeOf(v) === null);
      for (const name of Object.getOwnPropertyNames(globalThis)) {
        const v = globalThis[name];
        if (!ownRealm(v)) seen.push(name);
        if (v && (typeof v === 'object' || typeof v === 'function')) {
          for (const key of Object.getOwnPropertyNames(v)) {
            let inner;
            try { inner = v[key]; } catch { continue; }
            if (!ownRealm(inner)) seen.push(name + '.' + key);
          }
        }
      }
      let caller = null;
      try { setTimeout(function f() { caller = f.caller; }, 1); await new Promise((r) => setTimeout(r, 5)); } catch (e) { caller = 'threw'; }
      return { seen, caller: caller === null || caller === 'threw' ? 'none' : typeof caller, bufferModule: typeof __bufferModule, buffer: typeof Buffer, after: typeof __bufferModule };`);
    expect(value).toEqual({ seen: [], caller: 'none', bufferModule: 'undefined', buffer: 'function', after: 'undefined' });
  });

  it('stack frames seen from a timer callback or a URL call expose no host function or receiver', async () => {
    const value = await run(`
      const found = [];
      Error.prepareStackTrace = (e, frames) => frames;
      const inspect = () => {
        const frames = new Error('probe').stack;
        if (!Array.isArray(frames)) return;
        for (const f of frames) {
          const fn = f.getFunction && f.getFunction();
          const self = f.getThis && f.getThis();
          if (fn && !(fn instanceof Function)) found.push('function ' + f.getFunctionName());
          if (self && typeof self === 'object' && !(self instanceof Object)) found.push('this ' + f.getFunctionName());
          if (fn) { try { if (fn.constructor('return typeof process')() !== 'undefined') found.push('process via ' + f.getFunctionName()); } catch {} }
        }
      };
      await new Promise((r) => setTimeout(() => { inspect(); r(); }, 1));
      new URL('https://example.com/?a=1').searchParams.forEach(() => inspect());
      queueMicrotask(inspect);
      await null;
      return found;`);
    expect(value).toEqual([]);
  });

  it('a timer callback or URL input cannot make the worker run strings or reach process', async () => {
    const value = await run(`
      const out = [];
      await new Promise((r) => setTimeout(function () { out.push(this === globalThis || this === undefined ? 'context' : 'other', typeof process); r(); }, 1));
      const u = new URL('https://example.com');
      out.push(String(Object.getOwnPropertyNames(u).length));
      try { u.href = { toString() { return 'javascript:process.exit()' } }; out.push(u.protocol); } catch (e) { out.push(e.name); }
      return out;`);
    expect(value).toEqual(['context', 'undefined', '0', 'javascript:']);
    // The process is still the same one (nothing was run in it).
    expect(await run('return 1')).toBe(1);
  });
});

describe('through the API', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 60_000);
  afterAll(() => s?.stop());

  it('a Function block of a deployed workflow uses timers, TextEncoder, URL, crypto and Buffer', async () => {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'text', type: 'string' }] });
    const code = [
      'await new Promise((r) => setTimeout(r, 5));',
      'const bytes = new TextEncoder().encode(<start.text>);',
      'const u = new URL("https://example.com/p"); u.searchParams.set("q", <start.text>);',
      'return { b64: Buffer.from(bytes).toString("base64"), atob: atob(btoa("ok")), url: u.href, uuid: crypto.randomUUID().length, clone: structuredClone({ a: [1] }) };',
    ].join('\n');
    const fn = apiBlock('function', 'Encode', { code });
    const wf = await buildWorkflow(s, 'Globals', [start, fn], [link(start, fn)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, { input: { text: 'hé y' }, selectedOutputs: ['encode.result'] });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.blockOutputs['encode.result']).toEqual({ b64: 'aMOpIHk=', atob: 'ok', url: 'https://example.com/p?q=h%C3%A9+y', uuid: 36, clone: { a: [1] } });
  });

  it('a Function block that builds code from a string fails with the refusal in its error', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Build', { code: 'return new Function("return 1")()' });
    const wf = await buildWorkflow(s, 'Builds code', [start, fn], [link(start, fn)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.body.data, r.text).toMatchObject({
      status: 'failed',
      error: { code: 'BLOCK_EXECUTION_FAILED', blockName: 'Build', message: expect.stringMatching(/^The function failed: EvalError: Code generation from strings disallowed.*the sandbox runs no code built from strings/) },
    });
  });
});

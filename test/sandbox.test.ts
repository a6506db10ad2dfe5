// The function sandbox's walls, each proven by an escape attempt, and the pool's recovery after runaway code.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../src/execution/egress.ts';
import { SandboxError, SandboxPool, sandboxNodeFlags } from '../src/sandbox/pool.ts';

let pool: SandboxPool;
let server: http.Server;
let serverUrl: string;
const secretMarker = 'parent-process-secret-42';

beforeAll(async () => {
  (globalThis as Record<string, unknown>).__parentSecret = secretMarker;
  process.env.SANDBOX_TEST_SECRET = secretMarker;
  server = http.createServer((_req, res) => res.end('reached'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const egress = new EgressPolicy({ allowPrivate: false, allowCidrs: [] });
  pool = new SandboxPool({
    size: 2,
    timeoutMs: 300,
    memoryMb: 48,
    fetch: egress.sandboxFetch(1000),
  });
  await pool.start();
});

afterAll(async () => {
  await pool.close();
  server.close();
  delete process.env.SANDBOX_TEST_SECRET;
});

const run = (code: string, extra: Partial<Parameters<SandboxPool['run']>[0]> = {}) => pool.run({ code, ...extra });
const failure = async (code: string, extra: Partial<Parameters<SandboxPool['run']>[0]> = {}): Promise<SandboxError> => {
  try {
    await run(code, extra);
  } catch (e) {
    expect(e).toBeInstanceOf(SandboxError);
    return e as SandboxError;
  }
  throw new Error('expected the call to fail');
};

describe('sandbox basics', () => {
  it('runs async code, returns JSON, captures console output and reads passed values', async () => {
    const r = await run('console.log("n is", __refs[0]); await null; return { doubled: __refs[0] * 2, when: new Date(0) }', { refs: [21] });
    expect(r).toEqual({ value: { doubled: 42, when: '1970-01-01T00:00:00.000Z' }, stdout: 'n is 21' });
    expect((await run('return undefined')).value).toBeNull();
  });

  it('reports thrown errors and syntax errors as user failures', async () => {
    expect(await failure('throw new RangeError("nope")')).toMatchObject({ kind: 'user', message: 'RangeError: nope' });
    expect((await failure('return (')).message).toMatch(/SyntaxError/);
    expect(await failure('const o = {}; o.self = o; return o')).toMatchObject({ kind: 'user', message: expect.stringMatching(/circular/i) });
  });
});

describe('sandbox walls', () => {
  it('has no require, process, module, import() or file access', async () => {
    expect((await run('return [typeof require, typeof process, typeof module, typeof global, typeof setImmediate]')).value).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined']);
    // Buffer and the timers exist, but as this context's own functions (test/sandbox-globals.test.ts tries each).
    expect((await run('return [Buffer instanceof Function, setTimeout instanceof Function, Buffer.from("x").constructor.constructor === Function]')).value).toEqual([true, true, true]);
    expect((await failure('const fs = await import("node:fs"); return fs.readFileSync("/etc/passwd", "utf8")')).message).toMatch(/import|not supported|callback/i);
  });

  it('cannot reach the host realm through constructors, even with eval-like tricks', async () => {
    const attempts = [
      'return this.constructor.constructor("return typeof process")()',
      'return (function(){}).constructor("return typeof process")()',
      'return Object.getPrototypeOf(async function(){}).constructor("return typeof process")()',
      'return console.log.constructor("return typeof process")()',
      'return typeof __runner === "undefined" ? "no runner" : __runner.start.constructor("return typeof process")()',
      'try { null.x } catch (e) { return e.constructor.constructor("return typeof process")() }',
    ];
    for (const code of attempts) {
      const r = await run(code).catch((e: Error) => ({ value: e.message }));
      expect(r.value, code).not.toBe('object');
      expect(r.value === 'no runner' || /Code generation from strings disallowed/.test(String(r.value)), code).toBe(true);
    }
  });

  it('compiles no code from strings: eval, new Function and every function constructor fail clearly', async () => {
    const attempts = [
      'return eval("1")',
      'return (0, eval)("1")',
      'return new Function("return 1")()',
      'return Function("return 1")()',
      'return (function(){}).constructor("return 1")()',
      'return await (async function(){}).constructor("return 1")()',
      'return (function*(){}).constructor("yield 1")().next().value',
      'return (async function*(){}).constructor("yield 1")',
      'return globalThis.eval("1")',
    ];
    for (const code of attempts) {
      const e = await failure(code);
      expect(e.kind, code).toBe('user');
      expect(e.message, code).toMatch(/^EvalError: Code generation from strings disallowed.*the sandbox runs no code built from strings/);
    }
    // A string timer callback is refused too, never evaluated.
    expect((await failure('setTimeout("globalThis.x = 1", 1); return 1')).message).toMatch(/TypeError: The "callback" argument must be of type function/);
    // Code that catches the refusal goes on; WebAssembly compilation stays off as well.
    expect((await run('try { eval("1"); return "ran" } catch (e) { return e.name }')).value).toBe('EvalError');
    expect((await failure("return new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))")).message).toMatch(/CompileError: .*Wasm code generation disallowed/);
  });

  // What code that escaped its vm context would meet: a process with the sandbox's exact flags, probed directly,
  // because the walls behind the context must hold on their own.
  it('the worker process itself has no file system, child processes, workers or addons (permission model)', async () => {
    const { spawnSync } = await import('node:child_process');
    const probe = `
      const out = {};
      const tryIt = (k, f) => { try { f(); out[k] = 'allowed'; } catch (e) { out[k] = e.code || e.message; } };
      tryIt('fs', () => require('fs').readFileSync('/etc/hostname'));
      tryIt('write', () => require('fs').writeFileSync('/tmp/owa-sandbox-probe', 'x'));
      tryIt('child', () => require('child_process').execSync('id'));
      tryIt('worker', () => new (require('worker_threads').Worker)('1', { eval: true }));
      tryIt('addon', () => process.dlopen({ exports: {} }, '/nonexistent.node'));
      tryIt('binding', () => process.binding('fs'));
      tryIt('codegen', () => Function('return 1')());
      console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, [...sandboxNodeFlags(48), '-e', probe], { encoding: 'utf8', env: {} });
    const out = JSON.parse(r.stdout);
    expect(out).toEqual({ fs: 'ERR_ACCESS_DENIED', write: 'ERR_ACCESS_DENIED', child: 'ERR_ACCESS_DENIED', worker: 'ERR_ACCESS_DENIED', addon: expect.stringMatching(/ERR_ACCESS_DENIED|ERR_DLOPEN_DISABLED/), binding: 'ERR_ACCESS_DENIED', codegen: expect.stringMatching(/Code generation from strings disallowed/) });
  });

  it('cannot see the parent process globals or environment', async () => {
    const r = await run('return [typeof __parentSecret, typeof globalThis.process, JSON.stringify(Object.getOwnPropertyNames(globalThis).filter(n => /secret|env/i.test(n)))]');
    expect(r.value).toEqual(['undefined', 'undefined', '[]']);
    expect(JSON.stringify(await run('return Object.getOwnPropertyNames(globalThis)'))).not.toContain(secretMarker);
  });

  it('prototype pollution and globals do not leak from one call into the next', async () => {
    await run('Object.prototype.polluted = "yes"; Array.prototype.push = () => 0; globalThis.leftover = 1; JSON.stringify = () => "hacked"; return 1');
    for (let i = 0; i < 4; i++) {
      const r = await run('const a = []; a.push(1); return [({}).polluted ?? null, typeof leftover, a.length]');
      expect(r.value).toEqual([null, 'undefined', 1]);
    }
  });

  it('overriding Promise.then or JSON in the context does not hijack result reporting', async () => {
    const r = await run('Promise.prototype.then = function (a) { return a && a.constructor && a.constructor.constructor("return typeof process")() }; JSON.stringify = () => "\\"forged\\""; return "real"');
    expect(r.value).toBe('real');
  });

  it('an infinite loop times out, its process is replaced, and the pool keeps working', async () => {
    const before = pool.replacements;
    const sync = await failure('while (true) {}');
    expect(sync.kind).toBe('timeout');
    const asyncLoop = await failure('await null; for (;;) {}');
    expect(asyncLoop.kind).toBe('timeout');
    const hang = await failure('await new Promise(() => {})');
    expect(hang.kind).toBe('timeout');
    await expect.poll(() => pool.replacements).toBeGreaterThanOrEqual(before + 2);
    const results = await Promise.all([1, 2, 3, 4].map((n) => run('return __refs[0] * 2', { refs: [n] })));
    expect(results.map((r) => r.value)).toEqual([2, 4, 6, 8]);
    expect(pool.size).toBe(2);
  });

  it('a memory bomb is stopped at the memory cap and the pool recovers', async () => {
    const heap = await failure('const keep = []; for (;;) keep.push(new Array(1e5).fill({ a: Math.random() }))');
    expect(['memory', 'timeout']).toContain(heap.kind);
    const buffers = await failure('const keep = []; for (let i = 0; i < 64; i++) { const b = new Uint8Array(16 * 1024 * 1024); b.fill(1); keep.push(b); } return keep.length');
    expect(['memory', 'timeout']).toContain(buffers.kind);
    expect((await run('return "alive"')).value).toBe('alive');
  });

  it('fetch to loopback, private and metadata addresses is refused by the egress policy', async () => {
    for (const url of [serverUrl, 'http://localhost:1/', 'http://10.1.2.3/', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/']) {
      // The refusal, not the pool's short test limit, must end the call: name resolution is slow on a busy machine.
      const e = await failure(`const r = await fetch(${JSON.stringify(url)}); return await r.text()`, { timeoutMs: 10_000 });
      expect(e.message, url).toMatch(/not allowed/);
    }
  });

  it('a cancelled call stops at once and the pool recovers', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await expect(pool.run({ code: 'while (true) {}', signal: controller.signal, timeoutMs: 5000 })).rejects.toMatchObject({ kind: 'cancelled' });
    expect((await run('return 1')).value).toBe(1);
  });

  it('a call cancelled while it waits for a busy worker leaves the queue and never runs', async () => {
    const single = new SandboxPool({ size: 1, timeoutMs: 5000, memoryMb: 48 });
    try {
      await single.start();
      const holder = new AbortController();
      const busy = single.run({ code: 'await new Promise(() => {})', signal: holder.signal });
      const queued = new AbortController();
      const waiting = single.run({ code: 'while (true) {}', signal: queued.signal });
      queued.abort();
      holder.abort();
      await expect(waiting).rejects.toMatchObject({ kind: 'cancelled' });
      await expect(busy).rejects.toMatchObject({ kind: 'cancelled' });
      expect((await single.run({ code: 'return 2' })).value).toBe(2);
    } finally {
      await single.close();
    }
  });
});

describe('sandboxed fetch with an allow-list', () => {
  it('reaches an allowed loopback server through the parent', async () => {
    const egress = new EgressPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32'] });
    const allowed = new SandboxPool({
      size: 1,
      timeoutMs: 1000,
      memoryMb: 48,
      fetch: egress.sandboxFetch(1000),
    });
    try {
      await allowed.start();
      const r = await allowed.run({ code: `const r = await fetch(${JSON.stringify(serverUrl)}); return [r.status, await r.text(), r.headers.get('content-length')]` });
      expect(r.value).toEqual([200, 'reached', '7']);
      const refused = await allowed.run({ code: 'try { await fetch("http://10.0.0.1/"); } catch (e) { return e.message }' });
      expect(refused.value).toMatch(/not allowed/);
    } finally {
      await allowed.close();
    }
  });

  it('without a fetch handler, fetch does not exist in the sandbox', async () => {
    const bare = new SandboxPool({ size: 1, timeoutMs: 1000, memoryMb: 48 });
    try {
      await bare.start();
      expect((await bare.run({ code: 'return typeof fetch' })).value).toBe('undefined');
    } finally {
      await bare.close();
    }
  });
});

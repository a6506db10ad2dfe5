// The sandbox worker: runs inside a child process started with Node's permission model (no file system, no child
// processes, no workers, no addons) and --disallow-code-generation-from-strings, so even code that escapes its
// vm context cannot read files, spawn anything or compile strings in this realm. Passed to `node -e`, so the
// process never needs to read a file. Plain JavaScript because the child cannot load TypeScript.
//
// The walls inside the process:
// - Every call gets a fresh context created with DONT_CONTEXTIFY, so its global is a plain object of that
//   context and none of this realm's objects are reachable from it.
// - Only strings cross between this realm and the context. The single host function a context receives
//   (`hostSend`) is captured in a closure by bootstrap code that runs before the user's code, and it accepts
//   only strings and never throws; nothing the context can touch leads back to a host object.
// - The context itself compiles no strings either (eval, new Function, the function constructors, setTimeout with
//   a string): its code generation is off, and everything it runs is compiled from here with vm.Script.
// - fetch is a context function that asks the parent process, which applies the egress policy.
// - The web globals (timers, TextEncoder/Decoder, URL, atob/btoa, structuredClone, crypto, Buffer) are built inside
//   the context by context-globals.js from the context's own intrinsics; what they need from this process goes
//   through `hostCall`, a second host function captured like hostSend: one string in, one string out.
// - Timers are real timers of this process, tracked per call, never scheduled past the call's deadline and all
//   cleared when the call ends, so none fires into the next call.
'use strict';

const vm = require('node:vm');
const Module = require('node:module');
const path = require('node:path');

// Packages of a built sandbox (src/sandboxes) are loaded with `require` inside the context. Their own code runs in
// this realm, so the modules that reach the network, other processes or the loader itself are refused to them:
// network access goes through the parent's egress policy (fetch), never around it. The permission model
// limits file reads to the sandbox's own directory.
const REFUSED_MODULES = new Set([
  'net', 'tls', 'http', 'https', 'http2', 'dgram', 'dns', 'child_process', 'worker_threads', 'cluster', 'module',
  'vm', 'inspector', 'repl', 'v8', 'wasi', 'trace_events', 'diagnostics_channel',
]);
const originalLoad = Module._load;
Module._load = function (request, parent, isMain) {
  const bare = String(request).replace(/^node:/, '').split('/')[0];
  if (REFUSED_MODULES.has(bare)) throw new Error(`The sandbox does not allow the ${bare} module`);
  return originalLoad.call(this, request, parent, isMain);
};
for (const name of ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest']) {
  try {
    delete globalThis[name];
  } catch {
    /* ignore */
  }
}
const PACKAGE_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(\/[A-Za-z0-9._~-]+)*$/i;

/** `require` for one sandbox directory: bare package names installed there, nothing else. */
function sandboxRequire(dir) {
  const base = Module.createRequire(path.join(dir, 'package.json'));
  const root = path.join(dir, 'node_modules') + path.sep;
  return function require(name) {
    const id = String(name);
    if (Module.isBuiltin(id)) throw new Error(`Node built-in modules are not available in the sandbox: ${id}`);
    if (!PACKAGE_NAME.test(id) || id.split('/').includes('..')) throw new Error(`Only packages installed in the sandbox can be required, not "${id}"`);
    let resolved;
    try {
      resolved = base.resolve(id);
    } catch {
      throw new Error(`The package "${id}" is not installed in this sandbox`);
    }
    if (!resolved.startsWith(root)) throw new Error(`The package "${id}" is not installed in this sandbox`);
    return base(id);
  };
}
const nodeCrypto = require('node:crypto');
const HostURL = URL;

const send = process.send.bind(process);
// Remove the doors a vm escape would look for first; the permission model is the wall behind them.
for (const name of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'mainModule', 'kill']) {
  try {
    delete process[name];
  } catch {
    /* non-configurable: the permission model still guards it */
  }
}
try {
  delete globalThis.require;
  delete globalThis.module;
} catch {
  /* ignore */
}

const MAX_LOG_BYTES = 64 * 1024;

// Runs inside the context before the user's code; captures every intrinsic it relies on so that the user's code
// cannot change how results are reported.
const BOOTSTRAP = `(function (hostSend, allowFetch, refsJson, hostCall, installGlobals) {
  'use strict';
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const apply = Reflect.apply;
  const then = Promise.prototype.then;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const StringCtor = String;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const lines = [];
  let logBytes = 0;
  const show = (v) => {
    if (typeof v === 'string') return v;
    try { const s = stringify(v); return s === undefined ? StringCtor(v) : s; } catch { try { return StringCtor(v); } catch { return '[unprintable]'; } }
  };
  const log = (...args) => {
    if (logBytes > ${MAX_LOG_BYTES}) return;
    let line = '';
    for (let i = 0; i < args.length; i++) line += (i ? ' ' : '') + show(args[i]);
    logBytes += line.length + 1;
    lines[lines.length] = line;
  };
  const includes = String.prototype.includes;
  const describe = (e) => {
    try {
      if (e && typeof e === 'object') {
        const name = typeof e.name === 'string' ? e.name : 'Error';
        let message = typeof e.message === 'string' ? e.message : show(e);
        if (name === 'EvalError' && apply(includes, message, ['Code generation from strings disallowed'])) {
          message += ' (the sandbox runs no code built from strings: eval, new Function and the function constructors are refused)';
        }
        return { name, message };
      }
      return { name: 'Error', message: show(e) };
    } catch { return { name: 'Error', message: 'The code threw an unreadable error' }; }
  };
  let finished = false;
  const finish = (ok, value, error) => {
    if (finished) return;
    finished = true;
    let stdout = '';
    for (let i = 0; i < lines.length; i++) stdout += (i ? '\\n' : '') + lines[i];
    hostSend(stringify({ type: 'done', ok, value, error, stdout }));
  };
  const pending = new MapCtor();
  let nextFetchId = 0;
  function makeResponse(r) {
    const headers = r.headers || {};
    return freeze({
      ok: r.status >= 200 && r.status < 300,
      status: r.status,
      statusText: r.statusText,
      url: r.url,
      headers: freeze({ get: (name) => { const v = headers[StringCtor(name).toLowerCase()]; return v === undefined ? null : v; }, entries: () => Object.entries(headers) }),
      text: () => PromiseCtor.resolve(r.body),
      json: () => new PromiseCtor((resolve) => resolve(parse(r.body))),
    });
  }
  function fetch(input, init) {
    return new PromiseCtor((resolve, reject) => {
      const options = init && typeof init === 'object' ? init : {};
      const headers = {};
      if (options.headers && typeof options.headers === 'object') {
        for (const key of Object.keys(options.headers)) headers[StringCtor(key)] = StringCtor(options.headers[key]);
      }
      const id = ++nextFetchId;
      apply(mapSet, pending, [id, { resolve, reject }]);
      hostSend(stringify({
        type: 'fetch', id,
        url: StringCtor(input),
        method: options.method === undefined ? 'GET' : StringCtor(options.method),
        headers,
        body: options.body === undefined || options.body === null ? null : StringCtor(options.body),
      }));
    });
  }
  let onTimer = null;
  function deliver(message) {
    const m = parse(message);
    if (m.timer !== undefined) {
      if (onTimer) onTimer(m.timer);
      return;
    }
    const entry = apply(mapGet, pending, [m.id]);
    if (!entry) return;
    apply(mapDelete, pending, [m.id]);
    if (m.error) entry.reject(new ErrorCtor(m.error));
    else entry.resolve(makeResponse(m.response));
  }
  function start(fn) {
    let promise;
    try { promise = fn(); } catch (e) { finish(false, null, describe(e)); return; }
    apply(then, promise, [
      (v) => {
        let text;
        try { text = stringify(v === undefined ? null : v); } catch (e) { finish(false, null, describe(e)); return; }
        finish(true, text === undefined ? 'null' : text, null);
      },
      (e) => finish(false, null, describe(e)),
    ]);
  }
  if (installGlobals) onTimer = installGlobals(hostCall, (e) => finish(false, null, describe(e)));
  const console = freeze({ log, info: log, warn: log, error: log, debug: log });
  defineProperty(globalThis, 'console', { value: console, writable: true, configurable: true });
  if (allowFetch) defineProperty(globalThis, 'fetch', { value: fetch, writable: true, configurable: true });
  defineProperty(globalThis, '__refs', { value: parse(refsJson), writable: false, configurable: false });
  defineProperty(globalThis, '__runner', { value: { start }, writable: false, configurable: true });
  return deliver;
})`;

// No code built from strings (eval, new Function, the function constructors) and no WebAssembly inside the
// context: the user's code, the bootstrap and the globals are compiled from this realm with vm.Script, so nothing
// in the context needs either.
const CONTEXT_OPTIONS = { codeGeneration: { strings: false, wasm: false } };
const BOOTSTRAP_SCRIPT = new vm.Script(BOOTSTRAP, { filename: 'sandbox-bootstrap.js' });
// Sent by the parent in its `init` message (this process cannot read files).
let GLOBALS_SCRIPT = null;
const LIBRARIES = new Map(); // name -> vm.Script run in a context on first use
const MAX_TIMERS = 10000;
const URL_PARTS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
const URL_SETTABLE = new Set(['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']);
const urlParts = (u) => {
  const out = {};
  for (const k of URL_PARTS) out[k] = u[k];
  return out;
};

// Creating a context is the most expensive step of a call (~0.4 ms), so a few are made ahead of time, while idle.
// Each is still used for exactly one call.
const WARM_CONTEXTS = 3;
const warm = [];
let warming = false;
function freshContext() {
  return warm.shift() ?? vm.createContext(vm.constants.DONT_CONTEXTIFY, CONTEXT_OPTIONS);
}
function prewarm() {
  warming = false;
  if (current || warm.length >= WARM_CONTEXTS) return;
  warm.push(vm.createContext(vm.constants.DONT_CONTEXTIFY, CONTEXT_OPTIONS));
  schedulePrewarm();
}
function schedulePrewarm() {
  if (warming || warm.length >= WARM_CONTEXTS) return;
  warming = true;
  setImmediate(prewarm);
}

// Compiled user code is stateless and can run in any context, so the same source is compiled once.
const compiled = new Map();
const COMPILE_CACHE = 256;
function compile(code) {
  let script = compiled.get(code);
  if (script) return script;
  const source = `(function (r) { delete globalThis.__runner; r.start(async function () {\n${code}\n}); })(globalThis.__runner)`;
  script = new vm.Script(source, { filename: 'function.js', lineOffset: -1 });
  if (compiled.size >= COMPILE_CACHE) compiled.delete(compiled.keys().next().value);
  compiled.set(code, script);
  return script;
}

let current = null; // { id, deliver }

function run(call) {
  const id = call.id;
  const ctx = freshContext();
  const deadline = Date.now() + (Number(call.timeoutMs) > 0 ? Number(call.timeoutMs) : 10000);
  const timers = new Map(); // context timer id -> this process's timer
  let finished = false;
  const reply = (message) => {
    if (finished) return;
    finished = true;
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
    if (current && current.id === id) current = null;
    send({ ...message, id });
    schedulePrewarm();
  };
  // The one host function the context gets: strings in, nothing out, never throws.
  const hostSend = (text) => {
    try {
      if (typeof text !== 'string' || finished) return;
      const m = JSON.parse(text);
      if (m.type === 'done') {
        reply({ type: 'done', ok: m.ok === true, value: typeof m.value === 'string' ? m.value : null, error: m.error ?? null, stdout: String(m.stdout ?? '') });
      } else if (m.type === 'fetch' && call.allowFetch) {
        send({ type: 'fetch', id, fetchId: m.id, request: { url: m.url, method: m.method, headers: m.headers, body: m.body } });
      }
    } catch {
      /* malformed message from the context: ignore */
    }
  };
  // The second host function: one string in, one string out (JSON), never throws, never returns an object.
  const hostCall = (text) => {
    try {
      if (typeof text !== 'string' || finished) return '{"error":"The call has ended"}';
      return JSON.stringify(hostOperation(JSON.parse(text)));
    } catch (e) {
      return JSON.stringify({ error: e instanceof Error ? e.message : 'failed' });
    }
  };
  const hostOperation = (m) => {
    switch (m.op) {
      case 'setTimer': {
        const timerId = Number(m.id);
        const ms = Math.max(1, Math.min(2147483647, Number(m.ms) || 1));
        const old = timers.get(timerId);
        if (old) clearTimeout(old);
        else if (timers.size >= MAX_TIMERS) return { error: `More than ${MAX_TIMERS} pending timers` };
        // A timer due after the call's deadline could never fire inside the call: it is not scheduled at all.
        if (Date.now() + ms > deadline) {
          timers.delete(timerId);
          return { value: null };
        }
        timers.set(
          timerId,
          setTimeout(() => {
            timers.delete(timerId);
            if (finished || !current || current.id !== id) return;
            try {
              current.deliver(JSON.stringify({ timer: timerId }));
            } catch {
              /* the callback's failure is reported by the context itself */
            }
          }, ms),
        );
        return { value: null };
      }
      case 'clearTimer': {
        const timerId = Number(m.id);
        clearTimeout(timers.get(timerId));
        timers.delete(timerId);
        return { value: null };
      }
      case 'random': {
        const n = Math.max(0, Math.min(65536, Math.floor(Number(m.n) || 0)));
        return { value: nodeCrypto.randomBytes(n).toString('base64') };
      }
      case 'uuid':
        return { value: nodeCrypto.randomUUID() };
      case 'url': {
        const input = String(m.input);
        const u = m.base === null || m.base === undefined ? new HostURL(input) : new HostURL(input, String(m.base));
        return { value: urlParts(u) };
      }
      case 'urlSet': {
        const part = String(m.part);
        if (!URL_SETTABLE.has(part)) return { error: 'Not a settable URL part' };
        const u = new HostURL(String(m.href));
        u[part] = String(m.value);
        return { value: urlParts(u) };
      }
      case 'load': {
        const lib = LIBRARIES.get(String(m.lib));
        if (!lib) return { error: 'Unknown library' };
        lib.runInContext(ctx);
        return { value: null };
      }
      default:
        return { error: 'Unknown operation' };
    }
  };
  try {
    const bootstrap = BOOTSTRAP_SCRIPT.runInContext(ctx);
    const installGlobals = GLOBALS_SCRIPT ? GLOBALS_SCRIPT.runInContext(ctx) : null;
    const deliver = bootstrap(hostSend, call.allowFetch === true, typeof call.refs === 'string' ? call.refs : '[]', hostCall, installGlobals);
    if (typeof call.modulesDir === 'string' && call.modulesDir) {
      Object.defineProperty(ctx, 'require', { value: sandboxRequire(call.modulesDir), writable: false, configurable: false });
    }
    current = { id, deliver };
    // No vm `timeout` here: it starts a watchdog thread per call (~0.4 ms). The parent's wall-clock timer covers
    // synchronous and asynchronous runaways alike by killing this process.
    compile(call.code).runInContext(ctx);
  } catch (e) {
    reply({
      type: 'done',
      ok: false,
      value: null,
      error: { name: e && e.name ? String(e.name) : 'Error', message: e && e.message ? String(e.message) : String(e) },
      stdout: '',
    });
  }
}

let initialized = false;
process.on('message', (m) => {
  if (!m || typeof m !== 'object') return;
  if (m.type === 'init' && !initialized) {
    initialized = true;
    if (typeof m.globals === 'string') GLOBALS_SCRIPT = new vm.Script(m.globals, { filename: 'sandbox-globals.js' });
    for (const [name, source] of Object.entries(m.libraries ?? {})) {
      if (typeof source === 'string') LIBRARIES.set(name, new vm.Script(source, { filename: `${name}.js` }));
    }
    schedulePrewarm();
    send({ type: 'ready' });
  } else if (m.type === 'run') run(m);
  else if (m.type === 'fetchResult' && current && current.id === m.id) {
    try {
      current.deliver(JSON.stringify({ id: m.fetchId, response: m.response ?? null, error: m.error ?? null }));
    } catch {
      /* the context's own code failed; its run reports it */
    }
  }
});
process.on('disconnect', () => process.exit(0));

// Ready once the parent's `init` arrived (see above).

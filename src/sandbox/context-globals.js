// The web-platform globals of function-block code, built inside each call's vm context from that context's own
// intrinsics (so every object, function and prototype a user can reach belongs to the context, never to the
// worker's realm). What needs the worker (timers, randomness, URL parsing, loading Buffer) goes through `hostCall`,
// a host function that takes one string and returns one string; it is captured here and never exposed.
//
// Evaluated by the worker as a script whose completion value is `install(hostCall, fail)`; `install` defines the
// globals and returns the timer dispatcher the worker calls (through the bootstrap) when a timer is due.
// Plain JavaScript: it runs in a bare context, with no modules and no Node APIs.
(function () {
  'use strict';
  return function install(hostCall, fail) {
    const G = globalThis;
    const apply = Reflect.apply;
    const stringify = JSON.stringify;
    const parse = JSON.parse;
    const defineProperty = Object.defineProperty;
    const freeze = Object.freeze;
    const StringCtor = String;
    const NumberCtor = Number;
    const ErrorCtor = Error;
    const TypeErrorCtor = TypeError;
    const RangeErrorCtor = RangeError;
    const MapCtor = Map;
    const U8 = Uint8Array;
    const fromCharCode = String.fromCharCode;
    const fromCodePoint = String.fromCodePoint;
    const isView = ArrayBuffer.isView;
    const mapGet = Map.prototype.get;
    const mapSet = Map.prototype.set;
    const mapDelete = Map.prototype.delete;
    const mapHas = Map.prototype.has;
    const promiseThen = Promise.prototype.then;
    const resolved = Promise.resolve();
    const objectToString = Object.prototype.toString;
    const tagOf = (v) => apply(objectToString, v, []).slice(8, -1);

    const host = (message) => {
      const answer = parse(hostCall(stringify(message)));
      if (answer && answer.error) throw new ErrorCtor(answer.error);
      return answer ? answer.value : undefined;
    };
    const expose = (name, value) => defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });

    /** A group of globals made on first use: most calls touch none of them, and a fresh context is per call. */
    const group = (factory) => {
      let made = null;
      return (create = true) => (made || !create ? made : (made = factory()));
    };
    const lazy = (names, make) => {
      for (const name of names) {
        defineProperty(G, name, {
          configurable: true,
          enumerable: false,
          get() {
            const value = make()[name];
            expose(name, value);
            return value;
          },
          set(value) {
            expose(name, value);
          },
        });
      }
    };
    const domExceptions = group(() => ({
      DOMException: class DOMException extends ErrorCtor {
        constructor(message = '', name = 'Error') {
          super(message);
          defineProperty(this, 'name', { value: StringCtor(name), configurable: true, writable: true });
        }
      },
    }));
    const domError = (message, name) => new (domExceptions().DOMException)(message, name);

    const timerGroup = group(() => {
      const made = {};
      const out = (n, v) => {
        made[n] = v;
      };
      // ---- timers: the worker keeps one real timer per pending one and clears them all when the call ends ----
      const timers = new MapCtor();
      let nextTimerId = 0;
      const TIMEOUT_MAX = 2147483647;
      class Timeout {
        #id;
        constructor(id) {
          this.#id = id;
        }
        ref() {
          return this;
        }
        unref() {
          return this;
        }
        hasRef() {
          return true;
        }
        refresh() {
          const t = apply(mapGet, timers, [this.#id]);
          if (t) arm(this.#id, t.delay);
          return this;
        }
        [Symbol.toPrimitive]() {
          return this.#id;
        }
      }
      function arm(id, delay) {
        host({ op: 'setTimer', id, ms: delay });
      }
      function schedule(callback, ms, args, repeat) {
        if (typeof callback !== 'function') throw new TypeErrorCtor('The "callback" argument must be of type function');
        let delay = NumberCtor(ms);
        if (!(delay >= 1 && delay <= TIMEOUT_MAX)) delay = 1;
        const id = ++nextTimerId;
        apply(mapSet, timers, [id, { callback, args, delay, repeat }]);
        try {
          arm(id, delay);
        } catch (e) {
          apply(mapDelete, timers, [id]);
          throw new RangeErrorCtor(e.message);
        }
        return new Timeout(id);
      }
      function clear(handle) {
        if (handle === null || handle === undefined) return;
        const id = NumberCtor(handle);
        if (!apply(mapHas, timers, [id])) return;
        apply(mapDelete, timers, [id]);
        host({ op: 'clearTimer', id });
      }
      function onTimer(id) {
        const t = apply(mapGet, timers, [id]);
        if (!t) return;
        if (t.repeat) arm(id, t.delay);
        else apply(mapDelete, timers, [id]);
        try {
          apply(t.callback, undefined, t.args);
        } catch (e) {
          fail(e);
        }
      }
      out('setTimeout', function setTimeout(callback, ms, ...args) {
        return schedule(callback, ms, args, false);
      });
      out('setInterval', function setInterval(callback, ms, ...args) {
        return schedule(callback, ms, args, true);
      });
      out('clearTimeout', function clearTimeout(handle) {
        clear(handle);
      });
      out('clearInterval', function clearInterval(handle) {
        clear(handle);
      });
      out('queueMicrotask', function queueMicrotask(callback) {
        if (typeof callback !== 'function') throw new TypeErrorCtor('The "callback" argument must be of type function');
        apply(promiseThen, resolved, [
          () => {
            try {
              callback();
            } catch (e) {
              fail(e);
            }
          },
        ]);
      });

      made.onTimer = onTimer;
      return made;
    });
    lazy(['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'queueMicrotask'], timerGroup);

    // ---- UTF-8 ----
    function bytesOf(input) {
      if (input === undefined) return new U8(0);
      if (isView(input)) return new U8(input.buffer, input.byteOffset, input.byteLength);
      if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && input instanceof SharedArrayBuffer)) return new U8(input);
      throw new TypeErrorCtor('The "input" argument must be an ArrayBuffer or an ArrayBufferView');
    }
    function utf8Encode(str) {
      const out = new U8(str.length * 3);
      let n = 0;
      for (let i = 0; i < str.length; i++) {
        let c = str.charCodeAt(i);
        if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
          const d = str.charCodeAt(i + 1);
          if (d >= 0xdc00 && d <= 0xdfff) {
            c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
            i++;
          }
        }
        if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
        if (c < 0x80) out[n++] = c;
        else if (c < 0x800) {
          out[n++] = 0xc0 | (c >> 6);
          out[n++] = 0x80 | (c & 63);
        } else if (c < 0x10000) {
          out[n++] = 0xe0 | (c >> 12);
          out[n++] = 0x80 | ((c >> 6) & 63);
          out[n++] = 0x80 | (c & 63);
        } else {
          out[n++] = 0xf0 | (c >> 18);
          out[n++] = 0x80 | ((c >> 12) & 63);
          out[n++] = 0x80 | ((c >> 6) & 63);
          out[n++] = 0x80 | (c & 63);
        }
      }
      return out.slice(0, n);
    }
    /** WHATWG UTF-8 decode; `state` carries an incomplete sequence between streamed chunks. */
    function utf8Decode(bytes, fatal, state, flush) {
      let text = '';
      let units = [];
      const push = (cp) => {
        if (cp > 0xffff) {
          cp -= 0x10000;
          units[units.length] = 0xd800 + (cp >> 10);
          units[units.length] = 0xdc00 + (cp & 0x3ff);
        } else units[units.length] = cp;
        if (units.length >= 8192) {
          text += apply(fromCharCode, undefined, units);
          units = [];
        }
      };
      const bad = () => {
        if (fatal) throw new TypeErrorCtor('The encoded data was not valid for encoding utf-8');
        push(0xfffd);
      };
      let { cp, needed, seen, lower, upper } = state;
      for (let i = 0; i < bytes.length; i++) {
        const b = bytes[i];
        if (needed === 0) {
          if (b <= 0x7f) push(b);
          else if (b >= 0xc2 && b <= 0xdf) {
            needed = 1;
            cp = b & 0x1f;
          } else if (b >= 0xe0 && b <= 0xef) {
            if (b === 0xe0) lower = 0xa0;
            if (b === 0xed) upper = 0x9f;
            needed = 2;
            cp = b & 0xf;
          } else if (b >= 0xf0 && b <= 0xf4) {
            if (b === 0xf0) lower = 0x90;
            if (b === 0xf4) upper = 0x8f;
            needed = 3;
            cp = b & 0x7;
          } else bad();
          continue;
        }
        if (b < lower || b > upper) {
          cp = needed = seen = 0;
          lower = 0x80;
          upper = 0xbf;
          bad();
          i--;
          continue;
        }
        lower = 0x80;
        upper = 0xbf;
        cp = (cp << 6) | (b & 0x3f);
        if (++seen === needed) {
          push(cp);
          cp = needed = seen = 0;
        }
      }
      if (flush && needed !== 0) {
        cp = needed = seen = 0;
        lower = 0x80;
        upper = 0xbf;
        bad();
      }
      state.cp = cp;
      state.needed = needed;
      state.seen = seen;
      state.lower = lower;
      state.upper = upper;
      return text + apply(fromCharCode, undefined, units);
    }
    const freshUtf8State = () => ({ cp: 0, needed: 0, seen: 0, lower: 0x80, upper: 0xbf });

    const textGroup = group(() => {
      const made = {};
      const out = (n, v) => {
        made[n] = v;
      };
      class TextEncoder {
        get encoding() {
          return 'utf-8';
        }
        encode(input = '') {
          return utf8Encode(StringCtor(input));
        }
        encodeInto(source, destination) {
          if (!(destination instanceof U8)) throw new TypeErrorCtor('The "dest" argument must be an instance of Uint8Array');
          const str = StringCtor(source);
          let read = 0;
          let written = 0;
          for (let i = 0; i < str.length;) {
            const c = str.charCodeAt(i);
            const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < str.length && str.charCodeAt(i + 1) >= 0xdc00 && str.charCodeAt(i + 1) <= 0xdfff;
            const chunk = utf8Encode(pair ? str.slice(i, i + 2) : str[i]);
            if (written + chunk.length > destination.length) break;
            destination.set(chunk, written);
            written += chunk.length;
            read += pair ? 2 : 1;
            i += pair ? 2 : 1;
          }
          return { read, written };
        }
      }
      const UTF8_LABELS = ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'];
      class TextDecoder {
        #fatal;
        #ignoreBOM;
        #state = freshUtf8State();
        #bomSeen = false;
        constructor(label = 'utf-8', options = {}) {
          const name = StringCtor(label).trim().toLowerCase();
          if (!UTF8_LABELS.includes(name)) throw new RangeErrorCtor(`The "${name}" encoding is not supported here (only utf-8)`);
          this.#fatal = Boolean(options && options.fatal);
          this.#ignoreBOM = Boolean(options && options.ignoreBOM);
        }
        get encoding() {
          return 'utf-8';
        }
        get fatal() {
          return this.#fatal;
        }
        get ignoreBOM() {
          return this.#ignoreBOM;
        }
        decode(input, options = {}) {
          const stream = Boolean(options && options.stream);
          let text;
          try {
            text = utf8Decode(bytesOf(input), this.#fatal, this.#state, !stream);
          } catch (e) {
            this.#state = freshUtf8State();
            this.#bomSeen = false;
            throw e;
          }
          if (!this.#ignoreBOM && !this.#bomSeen && text.length > 0) {
            if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
            this.#bomSeen = true;
          }
          if (!stream) {
            this.#state = freshUtf8State();
            this.#bomSeen = false;
          }
          return text;
        }
      }
      out('TextEncoder', TextEncoder);
      out('TextDecoder', TextDecoder);

      return made;
    });
    lazy(['TextEncoder', 'TextDecoder'], textGroup);

    const base64Group = group(() => {
      const made = {};
      const out = (n, v) => {
        made[n] = v;
      };
      // ---- base64 ----
      const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
      out('btoa', function btoa(data) {
        if (arguments.length === 0) throw new TypeErrorCtor('The "data" argument must be specified');
        const s = StringCtor(data);
        let out = '';
        for (let i = 0; i < s.length; i += 3) {
          const a = s.charCodeAt(i);
          const b = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
          const c = i + 2 < s.length ? s.charCodeAt(i + 2) : 0;
          if (a > 255 || b > 255 || c > 255) throw domError('Invalid character', 'InvalidCharacterError');
          out +=
            B64[a >> 2] + B64[((a & 3) << 4) | (b >> 4)] + (i + 1 < s.length ? B64[((b & 15) << 2) | (c >> 6)] : '=') + (i + 2 < s.length ? B64[c & 63] : '=');
        }
        return out;
      });
      out('atob', function atob(data) {
        if (arguments.length === 0) throw new TypeErrorCtor('The "data" argument must be specified');
        let s = StringCtor(data).replace(/[\t\n\f\r ]/g, '');
        if (s.length % 4 === 0) s = s.replace(/==?$/, '');
        if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw domError('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
        let out = '';
        let bits = 0;
        let value = 0;
        for (let i = 0; i < s.length; i++) {
          value = (value << 6) | B64.indexOf(s[i]);
          bits += 6;
          if (bits >= 8) {
            bits -= 8;
            out += fromCharCode((value >> bits) & 255);
          }
        }
        return out;
      });

      return made;
    });
    lazy(['atob', 'btoa'], base64Group);

    const cloneGroup = group(() => {
      const made = {};
      const out = (n, v) => {
        made[n] = v;
      };
      // ---- structuredClone ----
      const TYPED = {
        Int8Array,
        Uint8Array,
        Uint8ClampedArray,
        Int16Array,
        Uint16Array,
        Int32Array,
        Uint32Array,
        Float32Array,
        Float64Array,
        BigInt64Array,
        BigUint64Array,
      };
      const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
      function cloneValue(value, memo) {
        const type = typeof value;
        if (value === null || (type !== 'object' && type !== 'function' && type !== 'symbol')) return value;
        if (type === 'symbol' || type === 'function')
          throw domError(`${StringCtor(type === 'symbol' ? 'Symbol()' : 'function')} could not be cloned.`, 'DataCloneError');
        if (apply(mapHas, memo, [value])) return apply(mapGet, memo, [value]);
        const tag = tagOf(value);
        let out;
        if (tag === 'Date') out = new Date(value.getTime());
        else if (tag === 'RegExp') out = new RegExp(value.source, value.flags);
        else if (tag === 'Boolean' || tag === 'Number' || tag === 'String' || tag === 'BigInt') out = Object(value.valueOf());
        else if (tag === 'ArrayBuffer') out = value.slice(0);
        else if (tag === 'DataView') {
          const buffer = cloneValue(value.buffer, memo);
          out = new DataView(buffer, value.byteOffset, value.byteLength);
        } else if (isView(value) && TYPED[tag]) {
          const buffer = cloneValue(value.buffer, memo);
          out = new TYPED[tag](buffer, value.byteOffset, value.length);
        } else if (tag === 'Map') {
          out = new MapCtor();
          apply(mapSet, memo, [value, out]);
          for (const [k, v] of value) out.set(cloneValue(k, memo), cloneValue(v, memo));
          return out;
        } else if (tag === 'Set') {
          out = new Set();
          apply(mapSet, memo, [value, out]);
          for (const v of value) out.add(cloneValue(v, memo));
          return out;
        } else if (tag === 'Error') {
          const Ctor = ERRORS[value.name] || ErrorCtor;
          out = new Ctor(StringCtor(value.message));
          if (typeof value.stack === 'string') defineProperty(out, 'stack', { value: value.stack, writable: true, configurable: true });
          apply(mapSet, memo, [value, out]);
          if ('cause' in value) defineProperty(out, 'cause', { value: cloneValue(value.cause, memo), writable: true, configurable: true });
          return out;
        } else if (tag === 'Array') {
          out = new Array(value.length);
          apply(mapSet, memo, [value, out]);
          for (const key of Object.keys(value)) out[key] = cloneValue(value[key], memo);
          return out;
        } else if (tag === 'Object' || tag === 'Arguments') {
          out = {};
          apply(mapSet, memo, [value, out]);
          for (const key of Object.keys(value)) out[key] = cloneValue(value[key], memo);
          return out;
        } else throw domError(`${tag} object could not be cloned.`, 'DataCloneError');
        apply(mapSet, memo, [value, out]);
        return out;
      }
      out('structuredClone', function structuredClone(value) {
        if (arguments.length === 0) throw new TypeErrorCtor('The "value" argument must be specified');
        return cloneValue(value, new MapCtor());
      });

      return made;
    });
    lazy(['structuredClone'], cloneGroup);

    const cryptoGroup = group(() => {
      const made = {};
      const out = (n, v) => {
        made[n] = v;
      };
      // ---- crypto ----
      const INTEGER_ARRAYS = [
        'Int8Array',
        'Uint8Array',
        'Uint8ClampedArray',
        'Int16Array',
        'Uint16Array',
        'Int32Array',
        'Uint32Array',
        'BigInt64Array',
        'BigUint64Array',
      ];
      const crypto = freeze({
        getRandomValues(array) {
          if (!isView(array) || !INTEGER_ARRAYS.includes(tagOf(array)))
            throw domError('The data argument must be an integer-type TypedArray', 'TypeMismatchError');
          if (array.byteLength > 65536)
            throw domError(
              `The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536)`,
              'QuotaExceededError',
            );
          const binary = base64Group().atob(host({ op: 'random', n: array.byteLength }));
          const view = new U8(array.buffer, array.byteOffset, array.byteLength);
          for (let i = 0; i < view.length; i++) view[i] = binary.charCodeAt(i);
          return array;
        },
        randomUUID() {
          return StringCtor(host({ op: 'uuid' }));
        },
      });
      out('crypto', crypto);

      return made;
    });
    lazy(['crypto'], cryptoGroup);

    const urlGroup = group(() => {
      const made = {};
      const out = (n, v) => {
        made[n] = v;
      };
      // ---- URLSearchParams and URL (parsing by the worker's WHATWG parser, over strings) ----
      const FORM_SAFE = /^[*\-._0-9A-Za-z]$/;
      const HEX = '0123456789ABCDEF';
      function formEncode(s) {
        const bytes = utf8Encode(StringCtor(s));
        let out = '';
        for (let i = 0; i < bytes.length; i++) {
          const b = bytes[i];
          const ch = fromCharCode(b);
          if (b === 0x20) out += '+';
          else if (b < 0x80 && FORM_SAFE.test(ch)) out += ch;
          else out += '%' + HEX[b >> 4] + HEX[b & 15];
        }
        return out;
      }
      function formDecode(s) {
        const bytes = [];
        for (let i = 0; i < s.length; i++) {
          const c = s[i];
          if (c === '+') bytes[bytes.length] = 0x20;
          else if (c === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
            bytes[bytes.length] = parseInt(s.slice(i + 1, i + 3), 16);
            i += 2;
          } else {
            const cp = s.codePointAt(i);
            if (cp > 0xffff) i++;
            const enc = utf8Encode(fromCodePoint(cp));
            for (let j = 0; j < enc.length; j++) bytes[bytes.length] = enc[j];
          }
        }
        return utf8Decode(new U8(bytes), false, freshUtf8State(), true);
      }
      function parseForm(query) {
        const list = [];
        for (const part of query.split('&')) {
          if (part === '') continue;
          const at = part.indexOf('=');
          const name = at < 0 ? part : part.slice(0, at);
          const value = at < 0 ? '' : part.slice(at + 1);
          list[list.length] = [formDecode(name), formDecode(value)];
        }
        return list;
      }
      const paramOwner = new WeakMap();
      class URLSearchParams {
        #list = [];
        constructor(init = '') {
          if (init instanceof URLSearchParams) this.#list = init.#list.map(([k, v]) => [k, v]);
          else if (init !== null && typeof init === 'object' && typeof init[Symbol.iterator] === 'function') {
            for (const pair of init) {
              const p = [...pair];
              if (p.length !== 2) throw new TypeErrorCtor('Each query pair must be an iterable [name, value] tuple');
              this.#list.push([StringCtor(p[0]), StringCtor(p[1])]);
            }
          } else if (init !== null && typeof init === 'object') {
            for (const key of Object.keys(init)) this.#list.push([key, StringCtor(init[key])]);
          } else {
            const s = StringCtor(init);
            this.#list = parseForm(s[0] === '?' ? s.slice(1) : s);
          }
        }
        #changed() {
          const owner = paramOwner.get(this);
          if (owner) owner(this.toString());
        }
        static _replace(params, query) {
          params.#list = parseForm(query);
        }
        get size() {
          return this.#list.length;
        }
        append(name, value) {
          this.#list.push([StringCtor(name), StringCtor(value)]);
          this.#changed();
        }
        delete(name, value) {
          const n = StringCtor(name);
          const v = value === undefined ? undefined : StringCtor(value);
          this.#list = this.#list.filter(([k, x]) => !(k === n && (v === undefined || x === v)));
          this.#changed();
        }
        get(name) {
          const n = StringCtor(name);
          const hit = this.#list.find(([k]) => k === n);
          return hit ? hit[1] : null;
        }
        getAll(name) {
          const n = StringCtor(name);
          return this.#list.filter(([k]) => k === n).map(([, v]) => v);
        }
        has(name, value) {
          const n = StringCtor(name);
          const v = value === undefined ? undefined : StringCtor(value);
          return this.#list.some(([k, x]) => k === n && (v === undefined || x === v));
        }
        set(name, value) {
          const n = StringCtor(name);
          const v = StringCtor(value);
          const at = this.#list.findIndex(([k]) => k === n);
          if (at < 0) this.#list.push([n, v]);
          else this.#list = this.#list.filter(([k], i) => k !== n || i === at).map((p, i) => (i === at ? [n, v] : p));
          this.#changed();
        }
        sort() {
          this.#list = this.#list
            .map((p, i) => [p, i])
            .sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]))
            .map(([p]) => p);
          this.#changed();
        }
        forEach(callback, thisArg) {
          for (const [k, v] of this.#list.slice()) apply(callback, thisArg, [v, k, this]);
        }
        *entries() {
          for (const [k, v] of this.#list.slice()) yield [k, v];
        }
        *keys() {
          for (const [k] of this.#list.slice()) yield k;
        }
        *values() {
          for (const [, v] of this.#list.slice()) yield v;
        }
        [Symbol.iterator]() {
          return this.entries();
        }
        toString() {
          return this.#list.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`).join('&');
        }
        get [Symbol.toStringTag]() {
          return 'URLSearchParams';
        }
      }
      const replaceParams = URLSearchParams._replace;
      delete URLSearchParams._replace;

      const parseUrl = (input, base) => {
        const answer = parse(hostCall(stringify({ op: 'url', input: StringCtor(input), base: base === undefined ? null : StringCtor(base) })));
        if (!answer || answer.error) throw new TypeErrorCtor(`Invalid URL${answer && answer.error ? `: ${answer.error}` : ''}`);
        return answer.value;
      };
      class URL {
        #parts;
        #params = null;
        constructor(url, base) {
          if (arguments.length === 0) throw new TypeErrorCtor('The "url" argument must be specified');
          this.#parts = parseUrl(url, base === undefined ? undefined : base instanceof URL ? base.href : base);
        }
        static canParse(url, base) {
          try {
            parseUrl(url, base);
            return true;
          } catch {
            return false;
          }
        }
        static parse(url, base) {
          try {
            return new URL(url, base);
          } catch {
            return null;
          }
        }
        #set(part, value) {
          const answer = parse(hostCall(stringify({ op: 'urlSet', href: this.#parts.href, part, value: StringCtor(value) })));
          if (!answer || answer.error) {
            if (part === 'href') throw new TypeErrorCtor('Invalid URL');
            return;
          }
          this.#parts = answer.value;
          if (this.#params) replaceParams(this.#params, this.#parts.search.slice(1));
        }
        get searchParams() {
          if (!this.#params) {
            this.#params = new URLSearchParams(this.#parts.search);
            paramOwner.set(this.#params, (query) => {
              const answer = parse(hostCall(stringify({ op: 'urlSet', href: this.#parts.href, part: 'search', value: query })));
              if (answer && !answer.error) this.#parts = answer.value;
            });
          }
          return this.#params;
        }
        toString() {
          return this.#parts.href;
        }
        toJSON() {
          return this.#parts.href;
        }
        get [Symbol.toStringTag]() {
          return 'URL';
        }
        get href() {
          return this.#parts.href;
        }
        set href(value) {
          this.#set('href', value);
        }
        get protocol() {
          return this.#parts.protocol;
        }
        set protocol(value) {
          this.#set('protocol', value);
        }
        get username() {
          return this.#parts.username;
        }
        set username(value) {
          this.#set('username', value);
        }
        get password() {
          return this.#parts.password;
        }
        set password(value) {
          this.#set('password', value);
        }
        get host() {
          return this.#parts.host;
        }
        set host(value) {
          this.#set('host', value);
        }
        get hostname() {
          return this.#parts.hostname;
        }
        set hostname(value) {
          this.#set('hostname', value);
        }
        get port() {
          return this.#parts.port;
        }
        set port(value) {
          this.#set('port', value);
        }
        get pathname() {
          return this.#parts.pathname;
        }
        set pathname(value) {
          this.#set('pathname', value);
        }
        get search() {
          return this.#parts.search;
        }
        set search(value) {
          this.#set('search', value);
        }
        get hash() {
          return this.#parts.hash;
        }
        set hash(value) {
          this.#set('hash', value);
        }
        get origin() {
          return this.#parts.origin;
        }
      }
      out('URL', URL);
      out('URLSearchParams', URLSearchParams);

      return made;
    });
    lazy(['URL', 'URLSearchParams'], urlGroup);

    // ---- Buffer: the `buffer` package, evaluated in this context on first use ----
    defineProperty(G, 'Buffer', {
      configurable: true,
      enumerable: false,
      get() {
        host({ op: 'load', lib: 'buffer' });
        const B = G.__bufferModule;
        delete G.__bufferModule;
        expose('Buffer', B);
        return B;
      },
      set(value) {
        expose('Buffer', value);
      },
    });

    return (id) => {
      const timers = timerGroup(false);
      if (timers) timers.onTimer(id);
    };
  };
})();

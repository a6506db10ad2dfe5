// Issue 10: knowledge bases with the embedded default model.
//  1. Ingestion: 1,000 text documents of about 5 KB uploaded (direct multipart) to a server process, timed until
//     every one is completed: documents/s and chunks/s (medians of the rounds).
//  2. Search over 100,000 chunks (seeded straight into the store, embedded with the same model): p50/p99 of
//     hybrid and vector search through HTTP, and of the vector leg, the full-text leg and hybrid in-process
//     (the same search code without HTTP), in the same run. Target: hybrid p50 under 50 ms through HTTP.
//  3. The server's resident memory with those 100,000 chunks' vectors loaded (anonymous and file-backed apart).
// With --dims N (issue 25): synthetic clustered vectors of N dimensions for --chunks chunks instead, served to the
// server by a stand-in embedding endpoint; the exact scan and the quantized index run side by side on the same
// chunks and queries: build, restart, p50/p99 of vector and hybrid search through HTTP, recall@10 of the
// quantized vector leg against the exact scan's top 10, and memory.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { figure, fmt, median, percentile, root, startProcess, tempDir } from '../lib.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { bootstrapIfEmpty } from '../../src/identity/admin.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/http/logging.ts';
import { blobStoreSettings, openBlobStore } from '../../src/files/blob-store.ts';
import { KnowledgeService } from '../../src/knowledge/service.ts';
import { runSearch } from '../../src/knowledge/search.ts';
import { WordVectorProvider, vectorToBlob } from '../../src/knowledge/embeddings.ts';
import { ALL_SLOTS } from '../../src/knowledge/tags.ts';
import { ContentWorkers } from '../../src/content/index.ts';
import { seededRandom } from '../../src/knowledge/vector-index/seeded-random.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';

/**
 * Text is drawn from 5,000 ordinary English words (ranks 150–5,150 of the embedded model's vocabulary, read from
 * its cache), so full-text terms are about as selective as in real prose.
 */
let WORDS: string[] = [];
async function loadWords(): Promise<void> {
  await new WordVectorProvider().embed(['warm up']); // builds the cache if it is missing
  const dir = process.env.KB_EMBEDDING_CACHE_DIR || path.join(root, 'node_modules', '.cache', 'open-workspace-automation');
  const file = fs.readdirSync(dir).find((f) => f.startsWith('wink-sg-100d'))!;
  const data = fs.readFileSync(path.join(dir, file));
  const header = JSON.parse(data.toString('utf8', 4, 4 + data.readUInt32LE(0))) as { words: string[] };
  WORDS = header.words.slice(150, 5150).filter((w) => /^[a-z]+$/.test(w));
}

function paragraph(seed: number, words: number): string {
  let x = seed * 2654435761 >>> 0 || 1;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out.push(WORDS[x % WORDS.length]!);
    if (i % 12 === 11) out.push('.');
  }
  return out.join(' ').replace(/ \./g, '.');
}

/** Resident memory of a process, split: anonymous (heap, typed arrays) and file-backed (mapped database pages, code). */
function memoryOf(pid: number): { anon: number; file: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { anon: kb('RssAnon'), file: kb('RssFile') + kb('RssShmem') };
}
const mb = (bytes: number) => `${fmt(bytes / 1024 / 1024, 0)} MB`;

async function ingestion(rounds: number): Promise<void> {
  const docsPerSecond: number[] = [];
  const chunksPerSecond: number[] = [];
  const processingOnly: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const dataDir = tempDir('owa-bench-kb-ingest-');
    const server = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', KB_PROCESSING_WORKERS: '2' });
    const api = (p: string, init: RequestInit = {}) => fetch(server.url + p, { ...init, headers: { 'X-API-Key': KEY, ...(init.headers as object) } });
    try {
      const ws = ((await (await api('/api/v2/workspaces')).json()) as any).data[0].id as string;
      const kb = ((await (await api('/api/v2/knowledge', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: ws, name: 'Bench' }) })).json()) as any).data;
      const texts = Array.from({ length: 1000 }, (_, i) => paragraph(i + 1, 760));
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < texts.length) {
            const i = next++;
            const form = new FormData();
            form.append('file', new Blob([texts[i]!], { type: 'text/plain' }), `doc-${i}.txt`);
            const r = await api(`/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}`, { method: 'POST', body: form });
            if (r.status !== 200) throw new Error(`upload answered ${r.status}: ${await r.text()}`);
            await r.arrayBuffer();
          }
        }),
      );
      const uploaded = (performance.now() - started) / 1000;
      let chunks = 0;
      for (;;) {
        const base = ((await (await api(`/api/v2/knowledge/${kb.id}?workspaceId=${ws}`)).json()) as any).data;
        const pending = ((await (await api(`/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}&sortBy=processingStatus&sortOrder=desc&limit=1`)).json()) as any).data[0];
        if (base.docCount === 1000 && pending && ['completed', 'failed'].includes(pending.processingStatus)) {
          const stats = ((await (await api(`/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}&limit=100`)).json()) as any).data;
          chunks = Math.round((stats.reduce((n: number, d: any) => n + d.chunkCount, 0) / stats.length) * 1000);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      const seconds = (performance.now() - started) / 1000;
      docsPerSecond.push(1000 / seconds);
      chunksPerSecond.push(chunks / seconds);
      console.log(`  round ${round + 1}: 1000 documents (~5 KB, about ${chunks} chunks) uploaded in ${fmt(uploaded)} s, all processed after ${fmt(seconds)} s`);
      // Processing alone: every document queued again (retryProcessing), timed until all are completed again.
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await (await api(`/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).json();
        ids.push(...page.data.map((d: any) => d.id));
        cursor = page.nextCursor;
      } while (cursor);
      const again = performance.now();
      let k = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (k < ids.length) {
            const id = ids[k++]!;
            const r = await api(`/api/v2/knowledge/${kb.id}/documents/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: ws, retryProcessing: true }) });
            await r.arrayBuffer();
          }
        }),
      );
      for (;;) {
        const left = ((await (await api(`/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}&sortBy=processingStatus&sortOrder=desc&limit=1`)).json()) as any).data[0];
        const pendingLeft = ((await (await api(`/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}&sortBy=processingStatus&sortOrder=asc&limit=1`)).json()) as any).data[0];
        if (!['pending', 'processing'].includes(left.processingStatus) && !['pending', 'processing'].includes(pendingLeft.processingStatus)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const reprocess = (performance.now() - again) / 1000;
      processingOnly.push(1000 / reprocess);
      console.log(`  round ${round + 1}: the same 1000 documents re-processed (no upload) in ${fmt(reprocess)} s`);
    } finally {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`knowledge ingestion (embedded model, 2 workers, upload included): ${fmt(median(docsPerSecond))} documents/s, ${fmt(median(chunksPerSecond))} chunks/s`);
  console.log(`knowledge processing alone (retryProcessing of every document): ${fmt(median(processingOnly))} documents/s`);
  figure('knowledge', 'ingestion', median(docsPerSecond), 'documents/s', 'higher');
  figure('knowledge', 'processing alone', median(processingOnly), 'documents/s', 'higher');
}

/** The embedded model, or synthetic vectors of another width (with the model name the server is told to use). */
interface VectorMaker {
  model: string;
  dimension: number;
  embed(texts: string[], firstChunk: number): Promise<Float32Array[]>;
}

/** Seeds one base with `docs` × `perDoc` chunks straight into the store; returns the workspace and base ids. */
async function seed(dataDir: string, docs: number, perDoc: number, maker?: VectorMaker): Promise<{ ws: string; kbId: string }> {
  const store = await openSqliteStore(path.join(dataDir, 'workspace.sqlite'));
  try {
    const boot = (await bootstrapIfEmpty(store, { apiKey: KEY }))!;
    const ws = boot.workspace.id;
    const kbId = `kb_${randomUUID().replace(/-/g, '')}`;
    const at = new Date().toISOString();
    const words = new WordVectorProvider();
    const provider: VectorMaker = maker ?? { model: words.model, dimension: words.dimension, embed: (texts) => words.embed(texts) };
    await store.transaction(async (tx) => {
      await tx.knowledgeBases.insert({
        id: kbId, workspaceId: ws, name: 'Bench 100k', description: null, folderPath: '/', chunkingConfig: JSON.stringify({ maxSize: 1024, minSize: 100, overlap: 200, strategy: 'auto' }),
        embeddingModel: provider.model, embeddingDimension: provider.dimension, createdBy: boot.user.id, createdAt: at, updatedAt: at, deletedAt: null,
      });
    });
    for (let d = 0; d < docs; d++) {
      const texts = Array.from({ length: perDoc }, (_, i) => paragraph(d * perDoc + i + 7, 60));
      const vectors = await provider.embed(texts, d * perDoc);
      await store.transaction(async (tx) => {
        const docId = `kd_${randomUUID().replace(/-/g, '')}`;
        await tx.knowledgeDocuments.insert({
          id: docId, knowledgeBaseId: kbId, workspaceId: ws, filename: `seed-${d}.txt`, fileSize: 0, mimeType: 'text/plain', blobKey: null, sourceFileId: null,
          processingStatus: 'completed', processingError: null, processingStartedAt: at, processingCompletedAt: at, processingAttempt: 1, processingOptions: null,
          chunkCount: perDoc, tokenCount: 0, characterCount: 0, enabled: true, connectorId: null, connectorType: null, sourceUrl: null, externalId: null,
          contentHash: null, userExcluded: false, tags: Object.fromEntries(ALL_SLOTS.map((s) => [s, null])), uploadedAt: at, updatedAt: at,
        });
        for (let i = 0; i < perDoc; i++) {
          await tx.knowledgeChunks.insert({
            id: `kc_${randomUUID().replace(/-/g, '')}`, documentId: docId, knowledgeBaseId: kbId, chunkIndex: i, content: texts[i]!, tokenCount: 80, enabled: true,
            startOffset: 0, endOffset: texts[i]!.length, embedding: vectorToBlob(vectors[i]!), at,
          });
        }
      });
    }
    return { ws, kbId };
  } finally {
    await store.close();
  }
}

const QUERIES = ['refund policy for travel expenses', 'how do I reset my laptop password', 'quarterly revenue growth forecast', 'onboarding plan for new engineering hires', 'database backup after an outage', 'parking at the office', 'conference training budget', 'customer support ticket about invoices'];

async function search(rounds: number, chunks: number): Promise<void> {
  const perDoc = 100;
  const dataDir = tempDir('owa-bench-kb-search-');
  try {
    let t = performance.now();
    const { ws, kbId } = await seed(dataDir, chunks / perDoc, perDoc);
    console.log(`  seeded ${chunks} chunks in ${fmt((performance.now() - t) / 1000)} s`);
    const server = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, NODE_ENV: 'production' });
    const pid = server.child.pid!;
    const call = (query: string, mode: 'vector' | 'hybrid') =>
      fetch(`${server.url}/api/v2/knowledge/search`, {
        method: 'POST',
        headers: { 'X-API-Key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ workspaceId: ws, knowledgeBaseIds: [kbId], query, topK: 10, searchMode: mode }),
      }).then(async (r) => {
        if (r.status !== 200) throw new Error(`search answered ${r.status}: ${await r.text()}`);
        return r.json();
      });
    const http: Record<'vector' | 'hybrid', number[]> = { vector: [], hybrid: [] };
    let rss = 0;
    try {
      const before = memoryOf(pid);
      t = performance.now();
      await call('warm up', 'vector');
      console.log(`  first search (loads the vectors) ${fmt(performance.now() - t, 0)} ms`);
      const after = memoryOf(pid);
      rss = after.anon + after.file;
      console.log(`  server RSS with ${chunks} chunks loaded: anonymous ${mb(after.anon)}, file-backed ${mb(after.file)} (before the first search: ${mb(before.anon)} + ${mb(before.file)})`);
      for (let r = 0; r < rounds; r++) {
        for (const mode of ['vector', 'hybrid'] as const) {
          for (let i = 0; i < 40; i++) {
            const s = performance.now();
            await call(QUERIES[i % QUERIES.length]!, mode);
            http[mode].push(performance.now() - s);
          }
        }
      }
    } finally {
      await server.stop();
    }
    // The same searches in-process, each leg alone.
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', KB_CONNECTOR_POLL_MS: '0' });
    const store = await openSqliteStore(config.databaseFile);
    // Search only: the content workers are never asked to parse anything here.
    const content = new ContentWorkers(config.content);
    const knowledge = new KnowledgeService({ store, blobs: openBlobStore(blobStoreSettings({ dataDir })), config, logger: createLogger('silent'), content });
    const bases = [(await store.knowledgeBases.get(kbId))!];
    const inProc: Record<'vector' | 'fulltext' | 'hybrid', number[]> = { vector: [], fulltext: [], hybrid: [] };
    try {
      await runSearch(store, knowledge, { bases, query: 'warm up', topK: 10, filters: [], mode: 'vector', defs: new Map() });
      for (let r = 0; r < rounds; r++) {
        for (const mode of ['vector', 'fulltext', 'hybrid'] as const) {
          for (let i = 0; i < 40; i++) {
            const s = performance.now();
            await runSearch(store, knowledge, { bases, query: QUERIES[i % QUERIES.length]!, topK: 10, filters: [], mode, defs: new Map() });
            inProc[mode].push(performance.now() - s);
          }
        }
      }
    } finally {
      await content.close();
      await store.close();
    }
    const line = (xs: number[]) => `p50 ${fmt(percentile(xs, 50))} ms, p99 ${fmt(percentile(xs, 99))} ms`;
    console.log(`knowledge search over ${chunks} chunks, topK 10 (${rounds} rounds × 40 queries each):`);
    console.log(`  HTTP hybrid        ${line(http.hybrid)}   (target p50 < 50 ms)`);
    console.log(`  HTTP vector        ${line(http.vector)}`);
    console.log(`  in-process vector leg    ${line(inProc.vector)}`);
    console.log(`  in-process full-text leg ${line(inProc.fulltext)}`);
    console.log(`  in-process hybrid        ${line(inProc.hybrid)}`);
    figure('knowledge', 'HTTP hybrid p50', percentile(http.hybrid, 50), 'ms', 'lower');
    figure('knowledge', 'HTTP vector p50', percentile(http.vector, 50), 'ms', 'lower');
    figure('knowledge', 'full-text leg p50', percentile(inProc.fulltext, 50), 'ms', 'lower');
    figure('knowledge', 'server RSS with chunks loaded', rss / 1024 / 1024, 'MB', 'lower');
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Clustered synthetic vectors: chunks of one document share the document's direction, documents of one topic
 * the topic's, so nearest neighbours are meaningful (uniform noise would make every vector equally far).
 */
function syntheticVectors(dimension: number, chunks: number, perDoc: number): VectorMaker & { query(chunk: number, seed: number): Float32Array } {
  const topics = Math.max(20, Math.round(chunks / perDoc / 20));
  const noise = (seed: number) => {
    const next = seededRandom((seed * 2654435761) >>> 0);
    return () => next() - 0.5;
  };
  const unit = (v: Float32Array) => {
    let n = 0;
    for (const x of v) n += x * x;
    n = Math.sqrt(n) || 1;
    for (let i = 0; i < v.length; i++) v[i]! /= n;
    return v;
  };
  const direction = (seed: number) => {
    const r = noise(seed);
    return Float32Array.from({ length: dimension }, () => r());
  };
  const topicOf = new Map<number, Float32Array>();
  const docOf = new Map<number, Float32Array>();
  const docVector = (doc: number) => {
    let v = docOf.get(doc);
    if (!v) {
      const t = doc % topics;
      let topic = topicOf.get(t);
      if (!topic) topicOf.set(t, (topic = direction(1_000_003 + t)));
      const own = direction(2_000_003 + doc);
      v = Float32Array.from(topic, (x, k) => x + 0.6 * own[k]!);
      if (docOf.size > 64) docOf.clear();
      docOf.set(doc, v);
    }
    return v;
  };
  const chunkVector = (chunk: number, spread: number, seed: number) => {
    const doc = docVector(Math.floor(chunk / perDoc));
    const r = noise(seed);
    return unit(Float32Array.from(doc, (x) => x + spread * r()));
  };
  return {
    model: 'bench-synthetic',
    dimension,
    embed: async (texts, first) => texts.map((_, i) => chunkVector(first + i, 0.5, 3_000_003 + first + i)),
    query: (chunk, seed) => {
      const v = chunkVector(chunk, 0.5, 3_000_003 + chunk);
      const r = noise(seed);
      return unit(v.map((x) => x + 0.01 * r()));
    },
  };
}

/** A stand-in OpenAI-compatible embedding endpoint answering the bench's queries with their prepared vectors. */
async function embeddingEndpoint(vectors: Map<string, Float32Array>, dimension: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const input = (JSON.parse(body) as { input: string[] }).input;
      const data = input.map((text, index) => ({ index, embedding: Array.from(vectors.get(text) ?? new Float32Array(dimension).fill(1 / Math.sqrt(dimension))) }));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ data }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => new Promise((r) => server.close(() => r())) };
}

/** Issue 25: the exact scan and the quantized index side by side over `chunks` synthetic vectors of `dimension`. */
async function vectorScale(rounds: number, chunks: number, dimension: number): Promise<void> {
  const perDoc = 100;
  const dataDir = tempDir('owa-bench-kb-scale-');
  const copyDir = tempDir('owa-bench-kb-scale-copy-');
  const maker = syntheticVectors(dimension, chunks, perDoc);
  const servers: { stop(): Promise<void> }[] = [];
  let endpoint: { url: string; close(): Promise<void> } | null = null;
  try {
    let t = performance.now();
    const { ws, kbId } = await seed(dataDir, chunks / perDoc, perDoc, maker);
    console.log(`  seeded ${chunks} chunks × ${dimension} dimensions in ${fmt((performance.now() - t) / 1000)} s`);
    // Queries: a few words of a chunk's text, embedded as a near copy of that chunk's vector.
    const queries: string[] = [];
    const vectors = new Map<string, Float32Array>();
    for (let i = 0; i < 40; i++) {
      const chunk = Math.floor(((i * 7919) % 997) / 997 * chunks);
      const text = `${paragraph(chunk + 7, 6)} q${i}`;
      queries.push(text);
      vectors.set(text, maker.query(chunk, i + 1));
    }
    vectors.set('warm up', maker.query(0, 99));
    endpoint = await embeddingEndpoint(vectors, dimension);
    const env = (kind: string, dir: string) => ({
      DATA_DIR: dir, NODE_ENV: 'production', KB_VECTOR_INDEX: kind, KB_EMBEDDING_BASE_URL: endpoint!.url, KB_EMBEDDING_MODEL: maker.model,
      KB_EMBEDDING_DIMENSIONS: String(dimension), KB_CONNECTOR_POLL_MS: '0',
    });
    const start = async (kind: string, dir = dataDir) => {
      const server = await startProcess(path.join(root, 'bin', 'start.js'), env(kind, dir));
      servers.push(server);
      return server;
    };
    const call = (url: string, query: string, mode: 'vector' | 'hybrid') =>
      fetch(`${url}/api/v2/knowledge/search`, {
        method: 'POST',
        headers: { 'X-API-Key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ workspaceId: ws, knowledgeBaseIds: [kbId], query, topK: 10, searchMode: mode }),
      }).then(async (r) => {
        if (r.status !== 200) throw new Error(`search answered ${r.status}: ${await r.text()}`);
        return ((await r.json()) as { data: { results: { documentId: string; chunkIndex: number }[] } }).data.results;
      });
    const float32 = chunks * dimension * 4;
    /** The first search of a server, which may build an index for minutes: asked again until it answers. */
    const warmUp = async (url: string) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await call(url, 'warm up', 'vector');
        } catch (err) {
          if (attempt >= 10) throw err;
        }
      }
    };

    // 1. The quantized index's first start: the first search builds it and writes its file.
    const first = await start('quantized');
    t = performance.now();
    await warmUp(first.url);
    const buildMs = performance.now() - t;
    await first.stop();
    servers.pop();

    // 2. Both side by side: the exact scan (on a copy of the data directory: one server per directory) and the
    //    quantized index restarted from its file.
    fs.cpSync(dataDir, copyDir, { recursive: true });
    type Side = { label: string; url: string; pid: number; firstMs: number; before: { anon: number; file: number }; after: { anon: number; file: number }; times: Record<'vector' | 'hybrid', number[]>; top: string[][] };
    const sides: Side[] = [];
    for (const [label, kind, dir] of [['exact scan', 'exact', copyDir], ['quantized index', 'quantized', dataDir]] as const) {
      const server = await start(kind, dir);
      const pid = server.child.pid!;
      const before = memoryOf(pid);
      t = performance.now();
      await warmUp(server.url);
      sides.push({ label, url: server.url, pid, firstMs: performance.now() - t, before, after: memoryOf(pid), times: { vector: [], hybrid: [] }, top: [] });
    }
    for (const side of sides) side.top = await Promise.all(queries.map(async (q) => (await call(side.url, q, 'vector')).map((h) => `${h.documentId}/${h.chunkIndex}`)));
    for (let r = 0; r < rounds; r++) {
      for (const mode of ['vector', 'hybrid'] as const) {
        for (let i = 0; i < queries.length; i++) {
          for (const side of sides) {
            const s = performance.now();
            await call(side.url, queries[i]!, mode);
            side.times[mode].push(performance.now() - s);
          }
        }
      }
    }
    const [exact, quantized] = sides as [Side, Side];
    let found = 0;
    exact.top.forEach((truth, i) => (found += quantized.top[i]!.filter((h) => truth.includes(h)).length));
    const recall = found / exact.top.reduce((n, t) => n + t.length, 0);
    const line = (xs: number[]) => `p50 ${fmt(percentile(xs, 50))} ms, p99 ${fmt(percentile(xs, 99))} ms`;
    console.log(`knowledge search over ${chunks} chunks × ${dimension} dimensions (float32 vectors: ${mb(float32)}), topK 10, ${rounds} rounds × ${queries.length} queries, servers alternating:`);
    console.log(`  quantized index built on the first search in ${fmt(buildMs / 1000)} s (written to its file)`);
    for (const side of sides) {
      console.log(`  ${side.label.padEnd(16)} first search after a restart ${fmt(side.firstMs, 0)} ms; memory growth anonymous ${mb(side.after.anon - side.before.anon)} (${fmt((side.after.anon - side.before.anon) / float32, 2)}× float32), file-backed ${mb(side.after.file - side.before.file)}`);
      console.log(`  ${side.label.padEnd(16)} HTTP hybrid ${line(side.times.hybrid)}; HTTP vector ${line(side.times.vector)}`);
    }
    const ratio = (mode: 'vector' | 'hybrid', p: number) => percentile(quantized.times[mode], p) / percentile(exact.times[mode], p);
    console.log(`  quantized / exact: hybrid p50 ${fmt(ratio('hybrid', 50), 2)}×, p99 ${fmt(ratio('hybrid', 99), 2)}×; vector p50 ${fmt(ratio('vector', 50), 2)}×; recall@10 of the vector leg against the exact top 10: ${fmt(recall, 3)}`);
    figure('knowledge', `quantized hybrid p50 (${chunks}×${dimension})`, percentile(quantized.times.hybrid, 50), 'ms', 'lower');
    figure('knowledge', `exact hybrid p50 (${chunks}×${dimension})`, percentile(exact.times.hybrid, 50), 'ms', 'lower');
    figure('knowledge', `quantized recall@10 vs exact (${chunks}×${dimension})`, recall, '', 'higher');
    figure('knowledge', `quantized restart to first search (${chunks}×${dimension})`, quantized.firstMs, 'ms', 'lower');
  } finally {
    for (const s of servers) await s.stop();
    await endpoint?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(copyDir, { recursive: true, force: true });
  }
}

export async function knowledge(options: { rounds: number; chunks?: number; dims?: number }): Promise<void> {
  await loadWords();
  if (options.dims !== undefined) {
    await vectorScale(Math.max(1, options.rounds), options.chunks ?? 100_000, options.dims);
    return;
  }
  await ingestion(Math.max(1, Math.min(options.rounds, 3)));
  await search(Math.max(1, options.rounds), options.chunks ?? 100_000);
}


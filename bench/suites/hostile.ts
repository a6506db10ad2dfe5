// Issue 18: hostile documents never stall the server. Four documents built to hold a parser for minutes (500,000
// nested JSON brackets, 3.3 MB of nested <div>s, a PDF whose one Flate stream expands to 512 MiB, a DOCX holding a
// 1 GiB document.xml) are uploaded to a knowledge base together; meanwhile GET /api/v2/meta is called back to back.
// Printed: meta latency idle (the baseline, same server, same run) and while the documents are processed, how long
// each document took to end and how, and the server's peak resident memory against its idle size and the
// configured worker heap caps.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createDeflate } from 'node:zlib';
import yazl from 'yazl';
import { apiCall, figure, fmt, median, percentile, type Proc, root, startProcess, tempDir } from '../lib.ts';

const KEY = 'sk-owa-bench-hostile-key-0000000000';
const MB = 1024 * 1024;
const WORKERS = 2;
const WORKER_MEMORY_MB = 256;

/** `total` bytes of `fill`, produced a megabyte at a time. */
function filler(total: number, fill = 0x20): Readable {
  const chunk = Buffer.alloc(MB, fill);
  let left = total;
  return new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const n = Math.min(left, MB);
      left -= n;
      this.push(n === MB ? chunk : chunk.subarray(0, n));
    },
  });
}

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) parts.push(c);
  return Buffer.concat(parts);
}

async function pdfBomb(): Promise<Buffer> {
  const parts: Buffer[] = [];
  const deflate = createDeflate({ level: 9 });
  const done = collect(deflate).then((b) => parts.push(b));
  await pipeline(filler(512 * MB), deflate);
  await done;
  const data = parts[0]!;
  const head = `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >> endobj\n4 0 obj << /Length ${data.length} /Filter /FlateDecode >>\nstream\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), data, Buffer.from('\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n', 'latin1')]);
}

async function docxBomb(): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from('<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'), '[Content_Types].xml');
  const body = Readable.from(
    (async function* () {
      yield Buffer.from('<w:document><w:body><w:p><w:r><w:t>');
      yield* filler(1024 * MB, 0x61);
      yield Buffer.from('</w:t></w:r></w:p></w:body></w:document>');
    })(),
  );
  zip.addReadStream(body, 'word/document.xml');
  zip.end();
  return collect(zip.outputStream);
}

interface Doc {
  name: string;
  type: string;
  bytes: Buffer;
}

/** The four documents, built once and kept in the system temp directory between runs. */
async function documents(): Promise<Doc[]> {
  const cache = path.join(os.tmpdir(), 'owa-bench-hostile-docs');
  fs.mkdirSync(cache, { recursive: true });
  const cached = async (name: string, make: () => Promise<Buffer> | Buffer) => {
    const file = path.join(cache, name);
    if (!fs.existsSync(file)) fs.writeFileSync(file, await make());
    return fs.readFileSync(file);
  };
  return [
    { name: 'nested.json', type: 'application/json', bytes: await cached('nested.json', () => Buffer.from('['.repeat(500_000) + ']'.repeat(500_000))) },
    { name: 'nested.html', type: 'text/html', bytes: await cached('nested.html', () => Buffer.from('<div>'.repeat(300_000) + 'x' + '</div>'.repeat(300_000))) },
    { name: 'bomb.pdf', type: 'application/pdf', bytes: await cached('bomb.pdf', pdfBomb) },
    { name: 'bomb.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', bytes: await cached('bomb.docx', docxBomb) },
  ];
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

async function metaLatencies(server: Proc, until: () => boolean, atLeast: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < atLeast || !until()) {
    const t = performance.now();
    await apiCall(server, KEY, 'GET', '/api/v2/meta');
    out.push(performance.now() - t);
  }
  return out;
}

export async function hostile(options: { seconds: number; rounds: number }): Promise<void> {
  const docs = await documents();
  const dataDir = tempDir('owa-bench-hostile-');
  const server = await startProcess(path.join(root, 'bin', 'start.js'), {
    DATA_DIR: dataDir,
    BOOTSTRAP_API_KEY: KEY,
    NODE_ENV: 'production',
    CONTENT_WORKERS: String(WORKERS),
    CONTENT_WORKER_MEMORY_MB: String(WORKER_MEMORY_MB),
  });
  const pid = server.child.pid!;
  try {
    const ws = (await apiCall(server, KEY, 'GET', '/api/v2/workspaces')).data[0].id as string;
    await metaLatencies(server, () => true, 200); // warm-up
    const idleRss = rssMb(pid);
    const idle: number[] = [];
    const busy: number[] = [];
    const settleSeconds: Record<string, number[]> = {};
    const outcomes: Record<string, string> = {};
    let peakRss = idleRss;
    for (let round = 0; round < options.rounds; round++) {
      idle.push(...(await metaLatencies(server, () => true, 300)));
      const kb = (await apiCall(server, KEY, 'POST', '/api/v2/knowledge', { workspaceId: ws, name: `Hostile ${round}` })).data.id as string;
      const started = performance.now();
      const pending = new Map<string, { name: string }>();
      for (const d of docs) {
        const created = (await apiCall(server, KEY, 'POST', `/api/v2/knowledge/${kb}/documents/uploads`, { workspaceId: ws, name: d.name, contentType: d.type, size: d.bytes.length })).data;
        const put = await fetch(created.transfer.url, { method: 'PUT', headers: created.transfer.headers, body: d.bytes });
        if (put.status !== 200) throw new Error(`upload of ${d.name}: ${put.status}`);
        const done = await fetch(`${server.url}/api/v2/knowledge/${kb}/documents/uploads/${created.session.id}/complete?workspaceId=${ws}`, {
          method: 'POST',
          headers: { 'X-API-Key': KEY, 'upload-token': created.uploadToken },
        });
        pending.set(((await done.json()) as any).data.document.id, { name: d.name });
      }
      const watcher = (async () => {
        while (pending.size > 0) {
          peakRss = Math.max(peakRss, rssMb(pid));
          for (const [id, d] of [...pending]) {
            const doc = (await apiCall(server, KEY, 'GET', `/api/v2/knowledge/${kb}/documents/${id}?workspaceId=${ws}`)).data;
            if (doc.processingStatus === 'completed' || doc.processingStatus === 'failed') {
              (settleSeconds[d.name] ??= []).push((performance.now() - started) / 1000);
              outcomes[d.name] = doc.processingStatus === 'failed' ? `failed: ${doc.processingError}` : 'completed';
              pending.delete(id);
            }
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      busy.push(...(await metaLatencies(server, () => pending.size === 0, 50)));
      await watcher;
    }
    console.log(`\nhostile: GET /api/v2/meta back to back, idle and while four hostile documents are processed (${options.rounds} rounds)`);
    console.log(`  idle (baseline)      p50 ${fmt(median(idle), 2)} ms   p99 ${fmt(percentile(idle, 99), 2)} ms   (${idle.length} calls)`);
    console.log(`  during processing    p50 ${fmt(median(busy), 2)} ms   p99 ${fmt(percentile(busy, 99), 2)} ms   (${busy.length} calls)`);
    console.log(`  ratio p99 busy/idle  ${fmt(percentile(busy, 99) / percentile(idle, 99), 2)}×`);
    figure('hostile', 'meta p99 busy/idle', percentile(busy, 99) / percentile(idle, 99), 'ratio', 'lower');
    for (const d of docs) {
      console.log(`  ${d.name.padEnd(12)} ${fmt(d.bytes.length / MB, 2).padStart(6)} MB   ended after ${fmt(median(settleSeconds[d.name] ?? [NaN]), 1)} s (median)   ${outcomes[d.name]}`);
    }
    console.log(`  resident memory      idle ${fmt(idleRss, 0)} MB   peak ${fmt(peakRss, 0)} MB   (+${fmt(peakRss - idleRss, 0)} MB; worker heap caps ${WORKERS} × ${WORKER_MEMORY_MB} MB)`);
    figure('hostile', 'peak RSS growth', peakRss - idleRss, 'MB', 'lower');
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// Issue 6: a 200 MB file uploaded (multipart, signed PUTs, complete) and downloaded through the HTTP API,
// against a plain streamed file copy on the same disk in the same run. Also the server's memory: resident
// size sampled every 20 ms during the transfers, against its resident size just before.
// Targets: at least 50% of the copy's throughput; server memory growth under 64 MB.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { figure, fmt, median, root, startProcess, tempDir } from '../lib.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';
const MB = 1024 * 1024;

/** node:http rather than fetch: the client's own stream overhead should not be what is measured. */
function send(url: string, method: string, headers: Record<string, string>, body: Readable | null, sink: NodeJS.WritableStream | null): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      if (sink) pipeline(res, sink).then(() => resolve(res.statusCode ?? 0), reject);
      else {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      }
    });
    req.on('error', reject);
    if (body) pipeline(body, req).catch(reject);
    else req.end();
  });
}

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

async function writeRandomFile(file: string, bytes: number): Promise<void> {
  const chunk = 4 * MB;
  await pipeline(
    Readable.from((function* () {
      for (let left = bytes; left > 0; left -= chunk) yield randomBytes(Math.min(chunk, left));
    })()),
    fs.createWriteStream(file),
  );
}

async function plainCopy(from: string, to: string): Promise<number> {
  const t = performance.now();
  await pipeline(fs.createReadStream(from), fs.createWriteStream(to));
  const ms = performance.now() - t;
  fs.rmSync(to);
  return ms;
}

export async function files(options: { rounds: number; sizeMb?: number }): Promise<void> {
  const size = (options.sizeMb ?? 200) * MB;
  const work = tempDir('owa-bench-files-');
  const dataDir = path.join(work, 'data');
  const source = path.join(work, 'source.bin');
  await writeRandomFile(source, size);
  const server = await startProcess(path.join(root, 'bin', 'start.js'), {
    DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', FILE_PURGE_INTERVAL_SECONDS: '0', BODY_LIMIT: '1mb',
  });
  const pid = server.child.pid!;
  const api = (p: string, init: RequestInit = {}) => fetch(server.url + p, { ...init, headers: { 'X-API-Key': KEY, 'content-type': 'application/json', ...(init.headers as object) } });
  try {
    const workspaceId = ((await (await api('/api/v2/workspaces')).json()) as any).data[0].id as string;
    // Memory is measured from the fresh server, before any transfer: the warm-up is where the peak is reached.
    const baseline = rssOf(pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
    const upload = async (name: string): Promise<{ ms: number; fileId: string }> => {
      const t = performance.now();
      const created = ((await (await api('/api/v2/files/uploads', { method: 'POST', body: JSON.stringify({ workspaceId, name, contentType: 'application/octet-stream', size }) })).json()) as any).data;
      const token = created.uploadToken as string;
      const base = `/api/v2/files/uploads/${created.session.id}`;
      const { partSize, partCount } = created.transfer;
      const numbers = Array.from({ length: partCount }, (_, i) => i + 1);
      const { parts } = ((await (await api(`${base}/parts?workspaceId=${workspaceId}`, { method: 'POST', headers: { 'upload-token': token }, body: JSON.stringify({ partNumbers: numbers }) })).json()) as any).data;
      for (const part of parts) {
        const start = (part.partNumber - 1) * partSize;
        const end = Math.min(start + partSize, size);
        const status = await send(part.url, 'PUT', { ...part.headers, 'content-length': String(end - start) }, fs.createReadStream(source, { start, end: end - 1, highWaterMark: MB }), null);
        if (status !== 200) throw new Error(`part ${part.partNumber}: ${status}`);
      }
      const tParts = performance.now();
      const done = await api(`${base}/complete?workspaceId=${workspaceId}`, { method: 'POST', headers: { 'upload-token': token } });
      const body = (await done.json()) as any;
      if (!done.ok) throw new Error(JSON.stringify(body));
      if (process.env.BENCH_VERBOSE) console.log(`    parts ${fmt(tParts - t, 0)} ms, complete ${fmt(performance.now() - tParts, 0)} ms`);
      return { ms: performance.now() - t, fileId: body.data.file.id };
    };
    const download = async (fileId: string): Promise<number> => {
      const target = path.join(work, 'download.bin');
      const t = performance.now();
      const status = await send(`${server.url}/api/v2/files/${fileId}?workspaceId=${workspaceId}`, 'GET', { 'X-API-Key': KEY }, null, fs.createWriteStream(target));
      if (status !== 200) throw new Error(`download: ${status}`);
      const ms = performance.now() - t;
      if (fs.statSync(target).size !== size) throw new Error('download size mismatch');
      fs.rmSync(target);
      return ms;
    };

    // Warm-up round (JIT, page cache): not counted in the throughput, but in the memory growth.
    await download((await upload('warmup.bin')).fileId);
    const warm = rssOf(pid);
    const warmupPeak = peak;
    peak = warm;
    const copies: number[] = [];
    const uploads: number[] = [];
    const downloads: number[] = [];
    for (let i = 0; i < options.rounds; i++) {
      copies.push(await plainCopy(source, path.join(work, 'copy.bin')));
      const up = await upload(`round-${i}.bin`);
      uploads.push(up.ms);
      downloads.push(await download(up.fileId));
    }
    clearInterval(sampler);
    const mbps = (ms: number) => size / MB / (ms / 1000);
    const copy = mbps(median(copies));
    const up = mbps(median(uploads));
    const down = mbps(median(downloads));
    console.log(`\nfiles: ${size / MB} MB through the HTTP API (median of ${options.rounds} rounds)`);
    console.log(`  plain file copy (stream)   ${fmt(copy).padStart(8)} MB/s`);
    console.log(`  upload (multipart+complete) ${fmt(up).padStart(7)} MB/s   ratio ${fmt((up / copy) * 100)}% of copy (target ≥ 50%)`);
    console.log(`  download                   ${fmt(down).padStart(8)} MB/s   ratio ${fmt((down / copy) * 100)}% of copy (target ≥ 50%)`);
    const overall = Math.max(peak, warmupPeak);
    console.log(`  server RSS fresh ${fmt(baseline / MB)} MB, peak ${fmt(overall / MB)} MB: growth from the fresh server ${fmt((overall - baseline) / MB)} MB (target < 64 MB)`);
    console.log(`    of which the first transfer (warm-up) ${fmt((warmupPeak - baseline) / MB)} MB; measured rounds after it ${fmt((peak - warm) / MB)} MB`);
    figure('files', 'upload', up, 'MB/s', 'higher');
    figure('files', 'download', down, 'MB/s', 'higher');
    figure('files', 'upload/copy', up / copy, 'ratio', 'higher');
    figure('files', 'download/copy', down / copy, 'ratio', 'higher');
    figure('files', 'server RSS growth', (overall - baseline) / MB, 'MB', 'lower');
  } finally {
    await server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

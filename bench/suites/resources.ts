// Issue 11. (1) executeTool over HTTP of a custom tool (code in the function sandbox) and of the HTTP tool against
// a local server, p50/p99, against the bare sandbox call (the same pool, no HTTP) measured in the same run.
// (2) A sandbox build of a small dependency set (is-odd + is-number): time to `ready` from the npm registry with an
// empty npm cache, again with npm's cache warm (the built directory removed), and for an equal spec whose build is
// already on disk (content-addressed: ready at once). The registry numbers depend on the network.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.ts';
import { createServices, startServer } from '../../src/server.ts';
import { createLogger } from '../../src/http/logging.ts';
import { bootstrapIfEmpty, createWorkspace } from '../../src/identity/admin.ts';
import { figure, fmt, median, percentile, tempDir, time } from '../lib.ts';

export async function resources(options: { seconds: number; rounds: number }): Promise<void> {
  const target = http.createServer((_req, res) => res.setHeader('content-type', 'application/json').end('{"ok":true}'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
  const dataDir = tempDir('owa-bench-resources-');
  const npmCache = tempDir('owa-bench-npm-cache-');
  process.env.npm_config_cache = npmCache; // the first build really comes from the registry
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'production', EGRESS_ALLOW_CIDRS: '127.0.0.1/32', RATE_LIMIT_FREE_API: '100000000', SANDBOX_POOL_SIZE: '2' });
  const services = await createServices(config, createLogger('silent'));
  const boot = (await bootstrapIfEmpty(services.store, { apiKey: null }))!;
  const server = await startServer(services);
  const ws = boot.workspace.id;
  const call = async (method: string, p: string, body?: unknown) => {
    const r = await fetch(server.url + p, { method, headers: { 'X-API-Key': boot.key.key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await r.json()) as any;
    if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  try {
    const tool = await call('POST', '/api/v2/custom-tools', {
      workspaceId: ws,
      title: 'Adder',
      schema: { type: 'function', function: { name: 'add', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } } },
      code: 'return a + b',
    });
    const custom = () => call('POST', `/api/v2/tools/custom_${tool.data.id}/execute`, { workspaceId: ws, input: { a: 1, b: 2 } });
    const httpTool = () => call('POST', '/api/v2/tools/http_request/execute', { workspaceId: ws, input: { url: targetUrl } });
    const sandbox = services.engine.options.sandbox;
    await sandbox.start();
    if ((await custom()).data.output !== 3 || (await httpTool()).data.status !== 'succeeded') throw new Error('tool check failed');
    const runs = Math.max(100, Math.round(options.seconds * 40));
    await time(custom, 30);
    await time(httpTool, 30);
    const rounds: { bare: number[]; custom: number[]; http: number[] }[] = [];
    for (let r = 0; r < options.rounds; r++) {
      rounds.push({
        bare: await time(() => sandbox.run({ code: 'const params = __refs[0]; return params.a + params.b', refs: [{ a: 1, b: 2 }] }), runs),
        custom: await time(custom, runs),
        http: await time(httpTool, runs),
      });
    }
    const p = (k: 'bare' | 'custom' | 'http', q: number) => median(rounds.map((r) => percentile(r[k], q)));
    console.log(`\nresources: executeTool over HTTP (median of ${options.rounds} rounds × ${runs} sequential calls)`);
    console.log(`  bare sandbox call        p50 ${fmt(p('bare', 50), 3).padStart(8)} ms   p99 ${fmt(p('bare', 99), 3).padStart(8)} ms`);
    console.log(`  custom tool (execute)    p50 ${fmt(p('custom', 50), 3).padStart(8)} ms   p99 ${fmt(p('custom', 99), 3).padStart(8)} ms   (+${fmt(p('custom', 50) - p('bare', 50), 3)} ms over the bare call)`);
    console.log(`  HTTP tool (execute)      p50 ${fmt(p('http', 50), 3).padStart(8)} ms   p99 ${fmt(p('http', 99), 3).padStart(8)} ms   (local target)`);
    figure('resources', 'custom tool p50', p('custom', 50), 'ms', 'lower');
    figure('resources', 'HTTP tool p50', p('http', 50), 'ms', 'lower');

    const spec = { language: 'javascript', dependencies: ['is-odd@3.0.1', 'is-number@7.0.0'] };
    const until = async (id: string, workspaceId: string) => {
      const started = performance.now();
      for (;;) {
        const r = await call('GET', `/api/v2/sandboxes/${id}?workspaceId=${workspaceId}`);
        if (r.data.buildStatus === 'ready') return performance.now() - started;
        if (r.data.buildStatus === 'failed') throw new Error(`build failed: ${r.data.errorCode} ${r.data.errorMessage}`);
        await new Promise((res) => setTimeout(res, 25));
      }
    };
    const build = async (name: string, workspaceId = ws) => {
      const t0 = performance.now();
      const made = await call('POST', '/api/v2/sandboxes', { workspaceId, name, ...spec });
      await until(made.data.id, workspaceId);
      return performance.now() - t0;
    };
    const cold = await build('cold');
    const dirs = fs.readdirSync(path.join(dataDir, 'sandboxes')).filter((d) => !d.startsWith('.'));
    const other = (await createWorkspace(services.store, { name: 'Other', ownerId: boot.user.id })).id;
    const hit = await build('cached', other);
    fs.rmSync(path.join(dataDir, 'sandboxes', dirs[0]!), { recursive: true, force: true });
    const third = (await createWorkspace(services.store, { name: 'Third', ownerId: boot.user.id })).id;
    const warm = await build('warm-npm-cache', third);
    console.log(`\nresources: sandbox build of ${spec.dependencies.join(' + ')} (time from POST to buildStatus ready)`);
    console.log(`  from the npm registry (empty npm cache)   ${fmt(cold, 0).padStart(6)} ms`);
    console.log(`  npm cache warm, build directory removed   ${fmt(warm, 0).padStart(6)} ms`);
    console.log(`  equal spec already built (content hash)   ${fmt(hit, 1).padStart(6)} ms`);
  } finally {
    await server.close();
    await new Promise((r) => target.close(r));
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(npmCache, { recursive: true, force: true });
  }
}

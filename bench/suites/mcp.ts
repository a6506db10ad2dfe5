// Issue 12, MCP. The round trip of a tools/call through the MCP SDK client against the serve endpoint of a
// workflow MCP server, against a direct synchronous POST /execute of the same deployed workflow on the same
// server, in the same run. The SDK client keeps its connection (initialize once), so the difference is what the
// protocol layer (SDK server per request, JSON-RPC, tool lookup) adds to a run.
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { apiCall, figure, fmt, median, percentile, type Proc, root, startProcess, tempDir, time } from '../lib.ts';
import { threeBlocks } from './runs.ts';

const KEY = 'sk-owa-bench-mcp-00000000000000000000000';
const ENV = {
  BOOTSTRAP_API_KEY: KEY,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  FILE_PURGE_INTERVAL_SECONDS: '0',
  RATE_LIMIT_FREE_API: '100000000',
  RATE_LIMIT_FREE_SYNC: '100000000',
  SANDBOX_POOL_SIZE: '2',
};

const api = (server: Proc, method: string, pathname: string, body?: unknown) => apiCall(server, KEY, method, pathname, body);

export async function mcp(options: { seconds: number; rounds: number }): Promise<void> {
  const server = await startProcess(path.join(root, 'bin', 'start.js'), { ...ENV, DATA_DIR: tempDir('owa-bench-mcp-') });
  let client: Client | null = null;
  try {
    const workspaceId = (await api(server, 'GET', '/api/v2/workspaces')).data[0].id as string;
    const id = (await api(server, 'POST', '/api/v2/workflows', { workspaceId, name: 'Bench increment' })).data.id as string;
    await api(server, 'PUT', `/api/v2/workflows/${id}/state`, threeBlocks());
    await api(server, 'POST', `/api/v2/workflows/${id}/deploy`, {});
    const mcpServer = (await api(server, 'POST', '/api/v2/workflow-mcp-servers', { workspaceId, name: 'Bench', workflowIds: [id] })).data;

    client = new Client({ name: 'bench', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpServer.mcpServerUrl), { requestInit: { headers: { 'X-API-Key': KEY } } }));
    const call = async () => {
      const r = await client!.callTool({ name: 'bench_increment', arguments: { n: 41 } });
      if (r.isError || (r.content as { text: string }[])[0]!.text !== '{"n":42}') throw new Error(`unexpected tool result ${JSON.stringify(r)}`);
    };
    const execute = async () => {
      const r = await api(server, 'POST', `/api/v2/workflows/${id}/execute`, { input: { n: 41 } });
      if (r.data.output?.n !== 42) throw new Error(`unexpected run result ${JSON.stringify(r.data)}`);
    };
    const ping = () => client!.ping();
    const meta = () => api(server, 'GET', '/api/v2/meta');
    await time(call, 30);
    await time(execute, 30);
    const n = Math.max(50, Math.round(options.seconds * 40));
    const rounds: { mcp: number[]; direct: number[]; ping: number[]; meta: number[] }[] = [];
    for (let r = 0; r < options.rounds; r++) {
      // Interleave them so all see the same machine load.
      const round = { mcp: [] as number[], direct: [] as number[], ping: [] as number[], meta: [] as number[] };
      for (let i = 0; i < n; i++) {
        round.mcp.push(...(await time(call, 1)));
        round.direct.push(...(await time(execute, 1)));
        round.ping.push(...(await time(ping, 1)));
        round.meta.push(...(await time(meta, 1)));
      }
      rounds.push(round);
    }
    const p50 = (xs: number[]) => percentile(xs, 50);
    const p99 = (xs: number[]) => percentile(xs, 99);
    const mcpP50 = median(rounds.map((r) => p50(r.mcp)));
    const directP50 = median(rounds.map((r) => p50(r.direct)));
    console.log(`mcp: tools/call round trip vs direct sync execute of the same 3-block workflow (${options.rounds} rounds x ${n} calls each)`);
    console.log(`  tools/call (MCP SDK client)  p50 ${fmt(mcpP50, 2)} ms  p99 ${fmt(median(rounds.map((r) => p99(r.mcp))), 2)} ms`);
    console.log(`  POST /execute (sync)         p50 ${fmt(directP50, 2)} ms  p99 ${fmt(median(rounds.map((r) => p99(r.direct))), 2)} ms`);
    console.log(`  MCP overhead at p50: ${fmt(mcpP50 - directP50, 2)} ms (${fmt((mcpP50 / directP50) * 100, 0)}% of direct)`);
    console.log(`  floors: MCP ping p50 ${fmt(median(rounds.map((r) => p50(r.ping))), 2)} ms, GET /api/v2/meta p50 ${fmt(median(rounds.map((r) => p50(r.meta))), 2)} ms`);
    figure('mcp', 'tools/call p50', mcpP50, 'ms', 'lower');
    figure('mcp', 'tools/call/direct', mcpP50 / directP50, 'ratio', 'lower');
  } finally {
    await client?.close().catch(() => undefined);
    await server.stop();
  }
}

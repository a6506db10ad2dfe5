// A run that stays `running` exactly as long as a test wants: an API block calls this local server, which
// holds each request to a gate path until the test opens that gate. The run's state then depends on the test,
// never on how fast the machine is. The server that runs the workflow needs EGRESS_ALLOW_CIDRS=127.0.0.1/32.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiBlock, type ApiBlock } from './api-workflow.ts';

export class GateServer {
  private server!: http.Server;
  private readonly waiting = new Map<string, http.ServerResponse[]>();
  private readonly open = new Set<string>();
  /** Requests that arrived per gate name, answered or not. */
  readonly arrived = new Map<string, number>();
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      req.resume();
      const name = new URL(req.url ?? '/', 'http://x').pathname.slice(1);
      this.arrived.set(name, (this.arrived.get(name) ?? 0) + 1);
      if (this.open.has(name)) return answer(res);
      this.waiting.set(name, [...(this.waiting.get(name) ?? []), res]);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** An API block that waits at gate `name` (for at most `timeoutMs`, far beyond any test). */
  block(blockName: string, name: string, timeoutMs = 600_000): ApiBlock {
    return apiBlock('api', blockName, { url: `${this.url}/${name}`, method: 'GET', timeout: String(timeoutMs) });
  }

  /** True once a request is held at gate `name`: a run that reached it is `running` until the gate opens. */
  holding(name: string): boolean {
    return (this.waiting.get(name)?.length ?? 0) > 0;
  }

  /** Answers every request held at `name`, and any later one at once. */
  release(name: string): void {
    this.open.add(name);
    for (const res of this.waiting.get(name) ?? []) answer(res);
    this.waiting.delete(name);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

function answer(res: http.ServerResponse): void {
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"released":true}');
}

// A tiny OpenAI-compatible chat-completions server on loopback for agent-block tests. It records every request
// body and answers with what `reply` returns (a plain message by default).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeLlm {
  url: string;
  requests: any[];
  /** Decides each answer's message from the request body (set per test). */
  reply: (body: any) => { content?: string | null; tool_calls?: unknown[] };
  close(): Promise<void>;
}

export async function startFakeLlm(): Promise<FakeLlm> {
  const fake: FakeLlm = {
    url: '',
    requests: [],
    reply: () => ({ content: 'ok' }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}');
      fake.requests.push(body);
      const message = { role: 'assistant', content: null, ...fake.reply(body) };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'cmpl-1', model: body.model, choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

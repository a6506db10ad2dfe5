// Agent chat (POST /api/v2/chat) against a fake OpenAI-compatible model started here: the model first calls the
// table query tool, then answers from what the tool returned, whole or streamed (SSE deltas, tool calls in pieces).
// Checked through HTTP (JSON and NDJSON), the real `sim chat`, conversation continuity, the caller's permissions,
// workspace keys, and the errors: no model configured, the model endpoint down, bad input.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callWithHeaders, startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';

interface ModelRequest {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string | null; tool_calls?: unknown[] }[];
  tools?: { function: { name: string } }[];
  reasoning_effort?: string;
}

let s: TestServer;
let model: http.Server;
let modelUrl: string;
let tableId: string;
let workflowId: string;
const requests: ModelRequest[] = [];
/** Settles when the model's answer to a `hang` message is abandoned by the server (the turn was aborted). */
let hangAbandoned: Promise<void> = new Promise(() => {});

/** The fake model's answer to a conversation: a tool call when the last message is the person's, else a summary. */
function reply(req: ModelRequest): { content: string | null; toolCall?: { name: string; arguments: string } } {
  const last = req.messages.at(-1)!;
  if (last.role === 'user' && last.content?.includes('rows')) return { content: null, toolCall: { name: 'table_query_rows', arguments: JSON.stringify({ tableId }) } };
  if (last.role === 'user' && last.content?.includes('workflow')) return { content: null, toolCall: { name: 'workflow_run', arguments: JSON.stringify({ workflowId }) } };
  if (last.role === 'tool') {
    const result = JSON.parse(last.content!);
    if (result.runId) return { content: `The run ${result.status}: ${JSON.stringify(result.output)}` };
    if (result.error) return { content: `The tool failed: ${result.error}` };
    return { content: `The table has ${result.count} rows: ${result.rows.map((r: any) => r.data.name).join(', ')}.` };
  }
  return { content: `You said: ${last.content}` };
}

beforeAll(async () => {
  model = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions' || req.headers.authorization !== 'Bearer model-key') return res.writeHead(401).end(JSON.stringify({ error: { message: 'bad key' } }));
      const body = JSON.parse(raw) as ModelRequest;
      requests.push(body);
      if (body.messages.at(-1)?.content === 'hang') {
        // Never answers; the server must give up the call when its client goes away.
        hangAbandoned = new Promise((resolve) => res.on('close', () => resolve()));
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return;
      }
      const answer = reply(body);
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      if (!body.stream) {
        const message = answer.toolCall
          ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: answer.toolCall }] }
          : { role: 'assistant', content: answer.content };
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ model: 'fake-model-1', choices: [{ message }], usage }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (answer.toolCall) {
        // The call arrives in pieces, as real endpoints send it.
        const half = Math.floor(answer.toolCall.arguments.length / 2);
        send({ model: 'fake-model-1', choices: [{ delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: answer.toolCall.name, arguments: answer.toolCall.arguments.slice(0, half) } }] } }] });
        send({ model: 'fake-model-1', choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: answer.toolCall.arguments.slice(half) } }] } }] });
      } else {
        const text = answer.content!;
        const cut = Math.floor(text.length / 2);
        send({ model: 'fake-model-1', choices: [{ delta: { content: text.slice(0, cut) } }] });
        send({ model: 'fake-model-1', choices: [{ delta: { content: text.slice(cut) } }] });
      }
      send({ model: 'fake-model-1', choices: [], usage });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => model.listen(0, '127.0.0.1', () => r()));
  modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
  s = await startTestServer({ AGENT_API_BASE_URL: modelUrl, AGENT_API_KEY: 'model-key', AGENT_MODEL: 'fake-model' });
  const t = await s.ok('POST', '/api/v2/tables', { workspaceId: s.workspaceId, name: 'people', schema: { columns: [{ name: 'name', type: 'string' }] } });
  tableId = t.id;
  await s.ok('POST', `/api/v2/tables/${tableId}/rows`, { workspaceId: s.workspaceId, rows: [{ name: 'Ada' }, { name: 'Grace' }] });
  const start = apiBlock('start_trigger', 'Start');
  const fn = apiBlock('function', 'Greet', { code: 'return { greeting: "hello from the workflow" }' });
  workflowId = (await buildWorkflow(s, 'Greeter', [start, fn], [link(start, fn)])).id;
});
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => model.close(r));
});

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}, key?: string) => callWithHeaders(s, 'POST', '/api/v2/chat', { workspaceId: s.workspaceId, ...body }, headers, key);
const ndjson = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l));
const toolNames = (r: ModelRequest) => (r.tools ?? []).map((t) => t.function.name).sort();

describe('agent chat', () => {
  it('JSON: the model calls a workspace tool, then answers from its result', async () => {
    requests.length = 0;
    const r = await chat({ message: 'How many rows are in the people table?' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({
      content: 'The table has 2 rows: Ada, Grace.',
      conversationId: expect.any(String),
      model: 'fake-model-1',
      tokens: { prompt: 20, completion: 10, total: 30 },
      toolCalls: [{ name: 'table_query_rows', arguments: { tableId }, status: 'succeeded', error: null }],
    });
    expect(r.body.data.toolCalls[0].output.count).toBe(2);
    expect(requests).toHaveLength(2);
    expect(requests[0]!.model).toBe('fake-model');
    expect(requests[0]!.stream).toBe(false);
    // An admin's turn offers every workspace tool.
    expect(toolNames(requests[0]!)).toEqual(['file_read_text', 'file_write_text', 'knowledge_search', 'table_insert_row', 'table_query_rows', 'workflow_run', 'workspace_overview']);
  });

  it('a conversation continues with its id: the earlier turns go to the model; another person cannot continue it', async () => {
    const first = await chat({ message: 'Remember the word kumquat.' });
    const conversationId = first.body.data.conversationId;
    requests.length = 0;
    const second = await chat({ message: 'What word?', conversationId });
    expect(second.status, second.text).toBe(200);
    expect(second.body.data.conversationId).toBe(conversationId);
    expect(requests[0]!.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.any(String)],
      ['user', 'Remember the word kumquat.'],
      ['assistant', 'You said: Remember the word kumquat.'],
      ['user', 'What word?'],
    ]);
    // A new id is free to use and starts a conversation under it.
    const chosen = await chat({ message: 'hello', conversationId: 'my-own-id' });
    expect(chosen.body.data.conversationId).toBe('my-own-id');
    const other = await s.newUser('other@example.com', { [s.workspaceId]: 'write' });
    const refused = await chat({ message: 'What word?', conversationId }, {}, other.key);
    expect(refused.status).toBe(404);
    expect(refused.body.error.message).toBe('Conversation not found.');
  });

  it('NDJSON: heartbeat first, chunks with new text only, then final (Accept or x-mothership-execute-stream)', async () => {
    requests.length = 0;
    const r = await chat({ message: 'List the rows please', effort: 'low' }, { accept: 'application/x-ndjson' });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-cache, no-transform');
    const events = ndjson(r.text);
    expect(events[0]).toEqual({ type: 'heartbeat', timestamp: expect.any(String) });
    expect(events.map((e) => e.type).filter((t) => t !== 'heartbeat')).toEqual(['chunk', 'chunk', 'final']);
    const chunks = events.filter((e) => e.type === 'chunk').map((e) => e.content);
    expect(chunks.join('')).toBe('The table has 2 rows: Ada, Grace.');
    const final = events.at(-1);
    expect(final.data).toMatchObject({ content: 'The table has 2 rows: Ada, Grace.', toolCalls: [{ name: 'table_query_rows', status: 'succeeded' }] });
    expect(requests.every((q) => q.stream === true && q.reasoning_effort === 'low')).toBe(true);
    const byHeader = await chat({ message: 'hi' }, { 'x-mothership-execute-stream': 'ndjson' });
    expect(ndjson(byHeader.text).at(-1)).toMatchObject({ type: 'final', data: { content: 'You said: hi' } });
  });

  it('acts with the caller’s permissions: a reader gets only the reading tools; a workspace key may chat', async () => {
    const reader = await s.newUser('reader@example.com', { [s.workspaceId]: 'read' });
    requests.length = 0;
    const r = await chat({ message: 'hi' }, {}, reader.key);
    expect(r.status, r.text).toBe(200);
    expect(toolNames(requests[0]!)).toEqual(['file_read_text', 'knowledge_search', 'table_query_rows', 'workspace_overview']);
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    const viaKey = await chat({ message: 'hi from a key' }, {}, wsKey.key);
    expect(viaKey.status, viaKey.text).toBe(200);
    const stranger = await s.newUser('stranger@example.com');
    expect([403, 404]).toContain((await chat({ message: 'hi' }, {}, stranger.key)).status);
  });

  it('runs a deployed workflow as the caller; a reader is not offered the tool and cannot run it', async () => {
    const r = await chat({ message: 'Please run the greeter workflow' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.toolCalls[0]).toMatchObject({ name: 'workflow_run', status: 'succeeded', output: { status: 'completed' } });
    expect(r.body.data.content).toContain('hello from the workflow');
    const runs = await s.ok('GET', `/api/v2/workflows/${workflowId}/runs`);
    expect(runs.map((x: any) => x.runId ?? x.id)).toContain(r.body.data.toolCalls[0].output.runId);
    const reader = await s.newUser('reader2@example.com', { [s.workspaceId]: 'read' });
    const refused = await chat({ message: 'Please run the greeter workflow' }, {}, reader.key);
    expect(refused.status, refused.text).toBe(200);
    expect(refused.body.data.toolCalls[0]).toMatchObject({ name: 'workflow_run', status: 'failed', error: 'No tool named workflow_run' });
  });

  it('a client that closes the stream aborts the turn (the model call is given up)', async () => {
    const controller = new AbortController();
    const res = await s.request('/api/v2/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' },
      body: JSON.stringify({ workspaceId: s.workspaceId, message: 'hang' }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(JSON.parse(first.split('\n')[0]!).type).toBe('heartbeat');
    // Wait until the model has the request, then leave.
    await expect.poll(() => requests.some((q) => q.messages.at(-1)?.content === 'hang')).toBe(true);
    controller.abort();
    await hangAbandoned;
  });

  it('bad input is a 400', async () => {
    expect((await chat({ message: '' })).status).toBe(400);
    expect((await chat({ message: 'x', effort: 'extreme' })).status).toBe(400);
    expect((await chat({ message: 'x', extra: true })).status).toBe(400);
    expect((await chat({ message: 'x', conversationId: '' })).status).toBe(400);
    expect((await callWithHeaders(s, 'POST', '/api/v2/chat', { message: 'x' })).status).toBe(400);
  });

  it('the real CLI: sim chat streams the reply, prints the conversation id, continues with -c; --output json', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
    const first = await runCli(['chat', 'How many rows are in the table?'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('The table has 2 rows: Ada, Grace.\n');
    const id = /conversation: (\S+)/.exec(first.stderr)?.[1];
    expect(id).toBeTruthy();
    requests.length = 0;
    const again = await runCli(['chat', '-c', id!, 'thanks'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('You said: thanks\n');
    expect(requests[0]!.messages.map((m) => m.content)).toContain('How many rows are in the table?');
    const json = await runCli(['--output', 'json', 'chat', 'hello'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json).toMatchObject({ content: 'You said: hello', model: 'fake-model-1', conversationId: expect.any(String) });
  });
});

describe('agent chat without a working model', () => {
  it('no model configured: a 400 MODEL_NOT_CONFIGURED naming AGENT_API_BASE_URL, through HTTP and the CLI', async () => {
    const bare = await startTestServer();
    try {
      const r = await callWithHeaders(bare, 'POST', '/api/v2/chat', { workspaceId: bare.workspaceId, message: 'hi' });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'BAD_REQUEST', details: [{ code: 'MODEL_NOT_CONFIGURED', path: [] }] });
      expect(r.body.error.message).toContain('set AGENT_API_BASE_URL');
      // Refused before any stream starts, so a streaming client gets the same JSON error.
      const streamed = await callWithHeaders(bare, 'POST', '/api/v2/chat', { workspaceId: bare.workspaceId, message: 'hi' }, { accept: 'application/x-ndjson' });
      expect(streamed.status).toBe(400);
      const viaCli = await runCli(['chat', 'hi'], { endpoint: bare.url, apiKey: bare.key, workspace: bare.workspaceId });
      expect(viaCli.code).not.toBe(0);
      expect(viaCli.stderr).toContain('AGENT_API_BASE_URL');
    } finally {
      await bare.stop();
    }
  });

  it('the model endpoint down: a 503 as JSON, an error event once streaming, and a failing CLI', async () => {
    // A port that was just free and is closed again: nothing listens there.
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const down = await startTestServer({ AGENT_API_BASE_URL: `http://127.0.0.1:${port}/v1` });
    try {
      const r = await callWithHeaders(down, 'POST', '/api/v2/chat', { workspaceId: down.workspaceId, message: 'hi' });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(r.body.error.message).toContain('The agent provider could not be reached');
      const streamed = await callWithHeaders(down, 'POST', '/api/v2/chat', { workspaceId: down.workspaceId, message: 'hi' }, { accept: 'application/x-ndjson' });
      expect(streamed.status).toBe(200);
      const events = ndjson(streamed.text);
      expect(events[0].type).toBe('heartbeat');
      expect(events.at(-1)).toEqual({ type: 'error', error: expect.stringContaining('could not be reached') });
      const viaCli = await runCli(['chat', 'hi'], { endpoint: down.url, apiKey: down.key, workspace: down.workspaceId });
      expect(viaCli.code).not.toBe(0);
      expect(viaCli.stderr).toContain('could not be reached');
    } finally {
      await down.stop();
    }
  });
});

// The one client of the operator's OpenAI-compatible chat-completions endpoint (AGENT_API_BASE_URL): agent blocks
// and the workspace agent chat call it. One round trip, answered whole or streamed (Server-Sent Events with
// `delta`s, assembled here into the same message a whole answer carries). Each round trip is a client span (GenAI
// semantic conventions) whose traceparent the provider receives. No HTTP server concerns here.
import { SpanKind, inSpan, withTraceHeaders, type Span } from '../ops/spans.ts';
import type { AgentProvider, AgentTool } from './options.ts';

export type ModelErrorKind = 'unreachable' | 'timeout' | 'refused' | 'malformed';

export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  constructor(kind: ModelErrorKind, message: string) {
    super(message);
    this.name = 'ModelError';
    this.kind = kind;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What one round trip answers: the assistant message, token usage, and the model that answered. */
export interface Completion {
  message: { content: string | null; tool_calls?: Record<string, unknown>[] };
  usage: { prompt: number; completion: number };
  model: string | null;
}

const endpointOf = (provider: AgentProvider) => new URL(`${provider.baseUrl.replace(/\/+$/, '')}/chat/completions`);

/** Runs one round trip inside its client span, and records the tokens it used on the span. */
function traced(provider: AgentProvider, body: Record<string, unknown>, fn: (span: Span | null) => Promise<Completion>): Promise<Completion> {
  const attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': String(body.model), 'server.address': endpointOf(provider).hostname, 'http.request.method': 'POST' };
  return inSpan(`chat ${String(body.model)}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const answer = await fn(span);
    span?.setAttribute('gen_ai.usage.input_tokens', answer.usage.prompt);
    span?.setAttribute('gen_ai.usage.output_tokens', answer.usage.completion);
    return answer;
  });
}

async function post(provider: AgentProvider, body: Record<string, unknown>, signal: AbortSignal, span: Span | null): Promise<{ res: Response; timeout: AbortSignal }> {
  const timeout = AbortSignal.timeout(provider.timeoutMs);
  try {
    const res = await fetch(endpointOf(provider), {
      method: 'POST',
      headers: withTraceHeaders({ 'content-type': 'application/json', ...(provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {}) }),
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, timeout]),
    });
    span?.setAttribute('http.response.status_code', res.status);
    if (!res.ok) {
      const raw = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(raw);
      } catch {
        /* the text is the message */
      }
      const message = isRecord(json.error) && typeof json.error.message === 'string' ? json.error.message : raw.slice(0, 200);
      throw new ModelError('refused', `The agent provider answered ${res.status}: ${message}`);
    }
    return { res, timeout };
  } catch (e) {
    throw wrap(e, signal, timeout, provider);
  }
}

function wrap(e: unknown, signal: AbortSignal, timeout: AbortSignal, provider: AgentProvider): unknown {
  if (e instanceof ModelError) return e;
  if (signal.aborted) return signal.reason;
  if (timeout.aborted) return new ModelError('timeout', `The agent provider did not answer within ${provider.timeoutMs} ms`);
  return new ModelError('unreachable', `The agent provider could not be reached: ${(e as Error).message}`);
}

function usageOf(json: Record<string, unknown>): Completion['usage'] {
  const usage = isRecord(json.usage) ? json.usage : {};
  return { prompt: Number(usage.prompt_tokens ?? 0) || 0, completion: Number(usage.completion_tokens ?? 0) || 0 };
}

/** One round trip, answered whole. */
export function completeChat(provider: AgentProvider, body: Record<string, unknown>, signal: AbortSignal): Promise<Completion> {
  return traced(provider, body, (span) => completeChatIn(provider, body, signal, span));
}

async function completeChatIn(provider: AgentProvider, body: Record<string, unknown>, signal: AbortSignal, span: Span | null): Promise<Completion> {
  const { res, timeout } = await post(provider, { ...body, stream: false }, signal, span);
  let raw: string;
  try {
    raw = await res.text();
  } catch (e) {
    throw wrap(e, signal, timeout, provider);
  }
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(raw);
  } catch {
    /* reported below */
  }
  const choice = Array.isArray(json.choices) && isRecord(json.choices[0]) ? json.choices[0] : null;
  const message = choice && isRecord(choice.message) ? choice.message : null;
  if (!message) throw new ModelError('malformed', 'The agent provider returned no message');
  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
  return {
    message: { content: typeof message.content === 'string' ? message.content : null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
    usage: usageOf(json),
    model: typeof json.model === 'string' ? json.model : null,
  };
}

/**
 * One round trip, streamed: `onText` sees each new piece of the reply as it arrives; tool calls arrive in pieces
 * too (by index) and are put together. Usage is read from the final chunk when the endpoint sends one
 * (`stream_options.include_usage`).
 */
export function streamChat(provider: AgentProvider, body: Record<string, unknown>, signal: AbortSignal, onText: (text: string) => void): Promise<Completion> {
  return traced(provider, body, (span) => streamChatIn(provider, body, signal, onText, span));
}

async function streamChatIn(provider: AgentProvider, body: Record<string, unknown>, signal: AbortSignal, onText: (text: string) => void, span: Span | null): Promise<Completion> {
  const { res, timeout } = await post(provider, { ...body, stream: true, stream_options: { include_usage: true } }, signal, span);
  if (!/event-stream/i.test(res.headers.get('content-type') ?? '')) {
    // Some endpoints ignore `stream`; their whole answer is read as one.
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(await res.text());
    } catch (e) {
      if (signal.aborted || timeout.aborted) throw wrap(e, signal, timeout, provider);
    }
    const choice = Array.isArray(json.choices) && isRecord(json.choices[0]) ? json.choices[0] : null;
    const message = choice && isRecord(choice.message) ? choice.message : null;
    if (!message) throw new ModelError('malformed', 'The agent provider returned no message');
    if (typeof message.content === 'string' && message.content) onText(message.content);
    const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
    return { message: { content: typeof message.content === 'string' ? message.content : null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }, usage: usageOf(json), model: typeof json.model === 'string' ? json.model : null };
  }
  let content = '';
  let model: string | null = null;
  let usage = { prompt: 0, completion: 0 };
  const calls: { id: string; name: string; arguments: string }[] = [];
  const onEvent = (data: string) => {
    if (data === '[DONE]') return;
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(data);
    } catch {
      throw new ModelError('malformed', 'The agent provider streamed data that is not JSON');
    }
    if (isRecord(json.error)) throw new ModelError('refused', `The agent provider failed: ${String(json.error.message ?? 'unknown error')}`);
    if (typeof json.model === 'string') model = json.model;
    if (isRecord(json.usage)) usage = usageOf(json);
    const choice = Array.isArray(json.choices) && isRecord(json.choices[0]) ? json.choices[0] : null;
    const delta = choice && isRecord(choice.delta) ? choice.delta : null;
    if (!delta) return;
    if (typeof delta.content === 'string' && delta.content) {
      content += delta.content;
      onText(delta.content);
    }
    for (const piece of Array.isArray(delta.tool_calls) ? delta.tool_calls.filter(isRecord) : []) {
      const index = typeof piece.index === 'number' ? piece.index : calls.length;
      const call = (calls[index] ??= { id: '', name: '', arguments: '' });
      if (typeof piece.id === 'string') call.id = piece.id;
      const fn = isRecord(piece.function) ? piece.function : {};
      if (typeof fn.name === 'string') call.name += fn.name;
      if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
    }
  };
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(bytes, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, cut).replace(/\r$/, '');
        buffer = buffer.slice(cut + 1);
        if (line.startsWith('data:')) onEvent(line.slice(5).trim());
      }
    }
    if (buffer.startsWith('data:')) onEvent(buffer.slice(5).trim());
  } catch (e) {
    throw wrap(e, signal, timeout, provider);
  }
  const toolCalls = calls.filter(Boolean).map((c, i) => ({ id: c.id || `call_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  return { message: { content: content || null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }, usage, model };
}

/** One tool call of a model's answer, as the agent block's trace and the agent chat's answer report it. */
export interface ToolCallRecord {
  name: string;
  arguments: Record<string, unknown>;
  status: 'succeeded' | 'failed';
  output: unknown;
  error: string | null;
}

/**
 * Runs the tool calls of one model answer in order, appends each result to `messages` as a `tool` message for the
 * next request, and returns what was called. Arguments that are not a JSON object, an unknown tool or a tool that
 * throws become a failed result the model reads; only an abort through `signal` ends the round.
 */
export async function answerToolCalls(toolCalls: Record<string, unknown>[], tools: readonly AgentTool[], messages: Record<string, unknown>[], signal: AbortSignal): Promise<ToolCallRecord[]> {
  const calls: ToolCallRecord[] = [];
  for (const call of toolCalls) {
    const fn = isRecord(call.function) ? call.function : {};
    const name = String(fn.name ?? '');
    let args: Record<string, unknown> = {};
    let result: Awaited<ReturnType<AgentTool['call']>>;
    try {
      const parsed = typeof fn.arguments === 'string' && fn.arguments.trim() ? JSON.parse(fn.arguments) : (fn.arguments ?? {});
      if (!isRecord(parsed)) throw new Error('the arguments are not a JSON object');
      args = parsed;
      const tool = tools.find((t) => t.name === name);
      result = tool ? await tool.call(args) : { status: 'failed', output: null, error: { message: `No tool named ${name}` } };
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      result = { status: 'failed', output: null, error: { message: (e as Error).message } };
    }
    calls.push({ name, arguments: args, status: result.status, output: result.output, error: result.error?.message ?? null });
    messages.push({ role: 'tool', tool_call_id: String(call.id ?? name), content: JSON.stringify(result.status === 'succeeded' ? result.output : { error: result.error?.message }) });
  }
  return calls;
}

// Agent chat (POST /api/v2/chat): one turn of the workspace agent (src/agent-chat), answered as one JSON document or,
// when the client asks for it, as the NDJSON stream the CLI reads (heartbeat, chunk, then final or error).
import { PassThrough } from 'node:stream';
import type { Handler } from '../../generated/handlers.ts';
import { AgentChat } from '../agent-chat/turn.ts';
import { toApiError } from '../http/errors.ts';
import { explicitChoice } from '../http/negotiate.ts';
import { StreamBody } from '../http/stream-body.ts';
import type { Services } from '../services.ts';

const HEARTBEAT_MS = 15_000;

const byServices = new WeakMap<Services, AgentChat>();
function agentChatOf(services: Services): AgentChat {
  let chat = byServices.get(services);
  if (!chat) {
    const { store, tools, runs, config, logger } = services;
    chat = new AgentChat({ store, tools, runs, syncTimeoutMs: config.runs.syncTimeoutMs, toolTimeoutMs: config.tools.timeoutMs }, config, logger);
    byServices.set(services, chat);
  }
  return chat;
}

export const chat: Handler<'chat'> = async ({ body, headers, principal, ctx }) => {
  const agent = agentChatOf(ctx.services);
  const access = ctx.workspace!;
  const caller = { principal, workspace: access.workspace, role: access.role };
  // Refusals that need no model answer as ordinary errors, before any stream starts.
  agent.provider();
  await agent.checkConversation(caller, body.conversationId);
  const streamed = headers['x-mothership-execute-stream'] === 'ndjson' || explicitChoice(ctx.header('accept'), { ndjson: ['application/x-ndjson'] }) === 'ndjson';
  const request = { caller, message: body.message, conversationId: body.conversationId, effort: body.effort };

  if (!streamed) {
    const data = await agent.turn({ ...request, signal: new AbortController().signal });
    return { status: 200, body: { data } };
  }

  const out = new PassThrough();
  const abort = new AbortController();
  let finished = false;
  let sent = '';
  const send = (event: Record<string, unknown>) => {
    if (!out.destroyed && !out.writableEnded) out.write(`${JSON.stringify(event)}\n`);
  };
  const heartbeat = () => send({ type: 'heartbeat', timestamp: new Date().toISOString() });
  heartbeat();
  const timer = setInterval(heartbeat, HEARTBEAT_MS);
  timer.unref();
  // A client that goes away aborts the turn (the model call and any tool still running).
  out.on('close', () => {
    if (!finished) abort.abort(new Error('The client closed the chat stream.'));
  });
  void agent
    .turn({
      ...request,
      signal: abort.signal,
      onText: (text) => {
        sent += text;
        send({ type: 'chunk', content: text });
      },
    })
    .then((data) => send({ type: 'final', data }))
    .catch((err: unknown) => {
      if (abort.signal.aborted) return;
      const apiError = toApiError(err);
      if (apiError.status >= 500 && apiError.code === 'INTERNAL_ERROR') ctx.log.error({ err }, 'agent chat turn failed');
      const message = apiError.code === 'INTERNAL_ERROR' ? 'The chat turn failed on the server.' : apiError.message;
      send({ type: 'error', error: message, ...(sent ? { content: sent } : {}) });
    })
    .finally(() => {
      finished = true;
      clearInterval(timer);
      if (!out.destroyed) out.end();
    });
  return {
    status: 200,
    body: new StreamBody(out),
    headers: { 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' },
  };
};

// One turn of the workspace agent: the conversation so far plus the new message go to the operator's model
// endpoint with the workspace tools; tool calls run (as the caller) until the model answers in text, which is kept
// with the conversation. Streamed turns hand each new piece of text to `onText` as the model produces it.
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import { sortableId } from '../domain/ids.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { answerToolCalls, completeChat, ModelError, streamChat, type Completion, type ToolCallRecord } from '../execution/chat-completions.ts';
import type { AgentTool } from '../execution/index.ts';
import type { Logger } from 'pino';
import { chatTools, type ChatCaller, type ChatToolDeps } from './tools.ts';

/** Most earlier messages of the conversation sent with a turn. */
const HISTORY_MESSAGES = 40;
/** Most model round trips one turn makes while the model keeps calling tools. */
const MAX_TOOL_ROUNDS = 10;

export type Effort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export type ChatToolCallView = ToolCallRecord;

export interface ChatTurnResult {
  content: string;
  conversationId: string;
  model: string;
  tokens: { prompt: number; completion: number; total: number };
  cost: { input: number; output: number; total: number };
  toolCalls: ChatToolCallView[];
}

export interface ChatTurnRequest {
  caller: ChatCaller;
  message: string;
  conversationId?: string;
  effort?: Effort;
  signal: AbortSignal;
  /** Streamed turns: each new piece of the reply, as it arrives. */
  onText?: (text: string) => void;
}

export const MODEL_SETTING = 'AGENT_API_BASE_URL';

function systemPrompt(caller: ChatCaller): string {
  const access = caller.role === 'read' ? 'read-only access: you can look things up but not change anything' : 'write access';
  return [
    `You are the agent of the workspace "${caller.workspace.name}". You help its members with their tables, files, knowledge bases and workflows.`,
    `You act on behalf of the person you talk to, who has ${access}.`,
    'Use workspace_overview to find the ids of tables, files, knowledge bases and workflows before using the other tools.',
    'Answer concisely; say so when a tool fails rather than guessing.',
  ].join('\n');
}

export class AgentChat {
  private readonly deps: ChatToolDeps;
  private readonly config: Config;
  private readonly logger: Logger;

  constructor(deps: ChatToolDeps, config: Config, logger: Logger) {
    this.deps = deps;
    this.config = config;
    this.logger = logger;
  }

  /** Throws unless a model endpoint is configured (checked before a stream starts). */
  provider() {
    const provider = this.config.agent;
    if (!provider) {
      // Like an OAuth provider that is not configured (PROVIDER_NOT_CONFIGURED): a 400 whose message names the setting.
      const message = `The workspace agent has no model: set ${MODEL_SETTING} (and AGENT_API_KEY, AGENT_MODEL) to an OpenAI-compatible endpoint and restart the server.`;
      throw new DomainError('invalid', message, [{ code: 'MODEL_NOT_CONFIGURED', keys: [], path: [], message }]);
    }
    return provider;
  }

  /** Checks the conversation may be continued by this caller (before a stream starts); a new id is free to use. */
  async checkConversation(caller: ChatCaller, conversationId: string | undefined): Promise<void> {
    if (conversationId === undefined) return;
    const existing = await this.deps.store.agentConversations.get(conversationId);
    if (existing && (existing.workspaceId !== caller.workspace.id || existing.userId !== caller.principal.userId)) throw domainNotFound('Conversation');
  }

  async turn(req: ChatTurnRequest): Promise<ChatTurnResult> {
    const provider = this.provider();
    const { store } = this.deps;
    const conversationId = req.conversationId ?? randomUUID();
    await this.checkConversation(req.caller, req.conversationId);
    const history = req.conversationId ? await store.agentConversations.recentMessages(conversationId, HISTORY_MESSAGES) : [];
    const tools: AgentTool[] = await chatTools(this.deps, req.caller, req.signal);
    const messages: Record<string, unknown>[] = [
      { role: 'system', content: systemPrompt(req.caller) },
      ...history.map((m) => ({ role: m.role, content: m.content })),
      { role: 'user', content: req.message },
    ];
    const body: Record<string, unknown> = {
      model: provider.model,
      messages,
      tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
    };
    // `high` is what endpoints do by default; other levels are asked for (the OpenAI scale stops at high).
    if (req.effort && req.effort !== 'high') body.reasoning_effort = req.effort === 'low' || req.effort === 'medium' ? req.effort : 'high';

    let prompt = 0;
    let completion = 0;
    let model = provider.model;
    const calls: ChatToolCallView[] = [];
    let content = '';
    for (let round = 0; ; round++) {
      let answer: Completion;
      try {
        answer = req.onText ? await streamChat(provider, body, req.signal, req.onText) : await completeChat(provider, body, req.signal);
      } catch (e) {
        if (req.signal.aborted) throw e;
        if (e instanceof ModelError) throw new DomainError('unavailable', e.message, { reason: `model_${e.kind}` });
        throw e;
      }
      prompt += answer.usage.prompt;
      completion += answer.usage.completion;
      if (answer.model) model = answer.model;
      const toolCalls = answer.message.tool_calls ?? [];
      if (toolCalls.length === 0) {
        content = answer.message.content ?? '';
        break;
      }
      if (round >= MAX_TOOL_ROUNDS) throw new DomainError('unavailable', `The model kept calling tools after ${MAX_TOOL_ROUNDS} rounds.`, { reason: 'model_tool_rounds' });
      messages.push({ role: 'assistant', content: answer.message.content, tool_calls: toolCalls });
      calls.push(...(await answerToolCalls(toolCalls, tools, messages, req.signal)));
    }

    const input = (prompt * provider.inputCostPerMTok) / 1e6;
    const output = (completion * provider.outputCostPerMTok) / 1e6;
    const now = new Date().toISOString();
    const { caller } = req;
    await store.transaction(async (tx) => {
      const existing = await tx.agentConversations.get(conversationId);
      if (existing && (existing.workspaceId !== caller.workspace.id || existing.userId !== caller.principal.userId)) throw domainNotFound('Conversation');
      if (!existing) await tx.agentConversations.insert({ id: conversationId, workspaceId: caller.workspace.id, userId: caller.principal.userId, createdAt: now, updatedAt: now });
      await tx.agentConversations.append(conversationId, [{ role: 'user', content: req.message }, { role: 'assistant', content }], now);
      // The turn's model cost is billed to the caller in the workspace, as a chat usage record.
      await tx.usage.recordEvent({
        id: sortableId(),
        billingAccountId: caller.workspace.billingAccountId,
        workspaceId: caller.workspace.id,
        workflowId: null,
        runId: null,
        userId: caller.principal.userId,
        category: 'sim-chat',
        cost: input + output,
        blockExecutions: 0,
        durationMs: 0,
        recordedAt: now,
      });
    });
    this.logger.debug({ conversationId, rounds: calls.length, prompt, completion }, 'agent chat turn');
    return { content, conversationId, model, tokens: { prompt, completion, total: prompt + completion }, cost: { input, output, total: input + output }, toolCalls: calls };
  }
}

// Runs a chat message on the workflow's active deployment through the shared run machinery (trigger `chat`,
// billed to the chat's creator) and reports only the block outputs the chat's outputConfigs allow.
import { acceptRun } from '../runs/lifecycle.ts';
import { actingAs } from '../domain/changes.ts';
import type { Services } from '../services.ts';
import type { ChatDeployment } from '../store/chat-deployments.ts';
import type { RunRecord } from '../store/workflow-runs.ts';

export type ChatFrame =
  | { blockId: string; chunk: string }
  | { event: 'final'; data: { success: boolean; conversationId: string; runId: string; output: Record<string, string> } }
  | { event: 'error'; error: string };

export class ChatUnavailable extends Error {}

function valueAt(output: unknown, path: string): unknown {
  let value = output;
  for (const part of path.split('.').filter(Boolean)) {
    if (value === null || typeof value !== 'object' || !(part in (value as object))) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/**
 * Accepts the run through the one run lifecycle (run row, its log, the workflow's run count and the
 * `workflow_run.started` audit event, as every trigger does); the visitor has no credential, so the event names
 * the chat as its actor.
 */
async function acceptChatRun(services: Services, chat: ChatDeployment, input: unknown): Promise<RunRecord> {
  const { store } = services;
  const w = await store.workflows.get(chat.workflowId);
  if (!w || w.archived || !w.isDeployed || !w.activeVersionId) throw new ChatUnavailable('This chat is not available right now: its workflow is not deployed.');
  const workspace = await store.workspaces.get(w.workspaceId);
  if (!workspace) throw new ChatUnavailable('This chat is not available.');
  return acceptRun(services.runs, actingAs(store, null, w.workspaceId, `Hosted chat ${chat.identifier}`), {
    workflow: w,
    billingAccountId: workspace.billingAccountId,
    mode: 'stream',
    source: 'deployment',
    trigger: 'chat',
    input,
    runId: null,
    triggerBlockId: null,
    timeoutMs: null,
    triggeredBy: chat.createdBy,
  });
}

/**
 * Runs one message. `send` gets a `{blockId, chunk}` frame as each allowed block output is produced, then
 * `final` (or one `error`). Block outputs the chat does not allow, and internal error text, never reach it.
 */
export async function runChatMessage(
  services: Services,
  chat: ChatDeployment,
  message: { input: string; conversationId: string },
  send: (frame: ChatFrame) => void,
): Promise<void> {
  const run = await acceptChatRun(services, chat, { input: message.input, conversationId: message.conversationId, files: [] });
  const allowed = chat.outputConfigs;
  const shown: Record<string, string> = {};
  const result = await services.runs.execute(run, {
    timeoutMs: services.config.runs.syncTimeoutMs,
    onEvent: (event) => {
      if (event.type !== 'block_completed') return;
      for (const oc of allowed) {
        if (oc.blockId !== event.blockId) continue;
        const value = valueAt(event.output, oc.path);
        if (value === undefined || value === null || value === '') continue;
        const text = asText(value);
        shown[`${oc.blockId}.${oc.path}`] = text;
        send({ blockId: oc.blockId, chunk: text });
      }
    },
  });
  if (result.status === 'completed') {
    send({ event: 'final', data: { success: true, conversationId: message.conversationId, runId: run.key, output: shown } });
  } else {
    services.logger.info({ runId: run.id, chatId: chat.id, status: result.status }, 'chat run did not complete');
    send({ event: 'error', error: 'Sorry, something went wrong while answering. Please try again.' });
  }
}

// Handlers for the Hosted Chat operations: one chat per workflow, managed by workspace admins.
import { UniqueViolation } from '../store/errors.ts';
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { conflict, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { tagOf } from '../http/conditional.ts';
import { newId } from '../identity/keys.ts';
import { hashPassword } from '../identity/passwords.ts';
import { ChatSettingsError, chatSummaryView, chatView, checkChatSettings } from '../chat/settings.ts';
import type { ChatDeployment } from '../store/chat-deployments.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import type { WorkflowState } from '../workflows/state.ts';
import { assertAccess } from '../access-control/policy.ts';

async function loadWorkflow(ctx: RequestContext, workflowId: string): Promise<WorkflowRecord> {
  const w = await ctx.services.store.workflows.get(workflowId);
  if (!w) throw notFound('Workflow');
  await ctx.authorizeWorkspace(w.workspaceId, { resource: 'Workflow' });
  if (w.archived) throw notFound('Workflow');
  return w;
}

const noChat = () => notFound('Chat deployment');

/**
 * A chat's entity tag: the hash of its answer (which includes whether it is live, so deploying the workflow
 * changes it) and of its stored password hash, so a new password alone changes the tag too.
 */
/** Chat URLs on the public URL this request sees. */
const chatUrls = (ctx: RequestContext) => ({ web: ctx.services.config.web, baseUrl: ctx.baseUrl });
const chatTag = (ctx: RequestContext, c: ChatDeployment) => tagOf({ chat: chatView(chatUrls(ctx), c), password: c.passwordHash });

/** The draft graph output configs are checked against. */
function graphOf(w: WorkflowRecord): WorkflowState {
  return JSON.parse(w.state) as WorkflowState;
}

const identifierTaken = (identifier: string) =>
  conflict(`The chat identifier "${identifier}" is already used by another chat; choose another one.`, { code: 'IDENTIFIER_TAKEN', identifier });

export const getWorkflowChatDeployment: Handler<'getWorkflowChatDeployment'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const chat = await ctx.services.store.chatDeployments.getByWorkflow(w.id);
  if (!chat) throw noChat();
  return { status: 200, body: { data: chatView(chatUrls(ctx), chat) }, headers: { ETag: chatTag(ctx, chat) } };
};

export const replaceWorkflowChatDeployment: Handler<'replaceWorkflowChatDeployment'> = async ({ params, body, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  try {
    checkChatSettings(body, graphOf(w), w.id);
  } catch (err) {
    if (err instanceof ChatSettingsError) throw invalidField(err.path, err.message);
    throw err;
  }
  // Hash outside the transaction: scrypt is deliberately slow and must not hold the writer.
  const passwordHash = body.password !== undefined ? await hashPassword(body.password) : null;
  const stored = await (async () => {
    try {
      return await ctx.mutate(async (tx, audit) => {
        await assertAccess(tx, { workspaceId: w.workspaceId, userId: ctx.principal.userId }, { kind: 'chat_deploy_auth', authType: body.authType ?? 'public' });
        const existing = await tx.chatDeployments.getByWorkflow(w.id);
        // This write may create the chat: If-Match (even `*`) on a workflow without one is a 412.
        ctx.precondition(() => (existing ? chatTag(ctx, existing) : null));
        const taken = await tx.chatDeployments.getByIdentifier(body.identifier);
        if (taken && taken.workflowId !== w.id) throw identifierTaken(body.identifier);
        const at = new Date().toISOString();
        const chat: ChatDeployment = {
          id: existing?.id ?? newId(),
          workflowId: w.id,
          workspaceId: w.workspaceId,
          identifier: body.identifier,
          title: body.title,
          description: body.description ?? '',
          customizations: body.customizations ?? {},
          authType: body.authType ?? 'public',
          passwordHash,
          allowedEmails: body.allowedEmails ?? [],
          outputConfigs: body.outputConfigs ?? [],
          includeThinking: body.includeThinking ?? false,
          includeToolCalls: body.includeToolCalls ?? false,
          isActive: true,
          createdBy: existing?.createdBy ?? ctx.principal.userId,
          createdAt: existing?.createdAt ?? at,
          updatedAt: at,
        };
        await tx.chatDeployments.upsert(chat);
        audit({
          action: existing ? 'chat.updated' : 'chat.created',
          resourceType: 'chat',
          resourceId: chat.id,
          resourceName: chat.identifier,
          workspaceId: w.workspaceId,
          metadata: { workflowId: w.id, identifier: chat.identifier, authType: chat.authType, passwordChanged: passwordHash !== null },
        });
        // Read back: whether it is live also depends on the workflow's deployment.
        return (await tx.chatDeployments.getByWorkflow(w.id))!;
      });
    } catch (err) {
      // Two requests racing for one identifier: the unique index decides.
      if (err instanceof UniqueViolation && err.is('chat_deployments', 'identifier')) throw identifierTaken(body.identifier);
      throw err;
    }
  })();
  return { status: 200, body: { data: chatView(chatUrls(ctx), stored) }, headers: { ETag: chatTag(ctx, stored) } };
};

export const deleteWorkflowChatDeployment: Handler<'deleteWorkflowChatDeployment'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const id = await ctx.mutate(async (tx, audit) => {
    const chat = await tx.chatDeployments.getByWorkflow(w.id);
    if (!chat) throw noChat();
    ctx.precondition(() => chatTag(ctx, chat));
    await tx.chatDeployments.delete(chat.id);
    audit({ action: 'chat.deleted', resourceType: 'chat', resourceId: chat.id, resourceName: chat.identifier, workspaceId: w.workspaceId, metadata: { workflowId: w.id } });
    return chat.id;
  });
  return { status: 200, body: { data: { id, deleted: true as const } } };
};

const SORT_VALUE = { identifier: (c: ChatDeployment) => c.identifier, createdAt: (c: ChatDeployment) => c.createdAt, updatedAt: (c: ChatDeployment) => c.updatedAt };

export const listChatDeployments: Handler<'listChatDeployments'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const isActive = query.isActive === undefined ? undefined : query.isActive === 'true';
  const binding = { workspaceId: query.workspaceId, workflowId: query.workflowId, isActive: query.isActive, sortBy, sortOrder };
  const rows = await ctx.services.store.chatDeployments.list({
    workspaceId: query.workspaceId,
    workflowId: query.workflowId,
    isActive,
    sortBy,
    sortOrder,
    after: readCursor(ctx, query.cursor, binding),
    limit: limit + 1,
  });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (c) => [SORT_VALUE[sortBy](c), c.id], (c) => chatSummaryView(chatUrls(ctx), c)) };
};

// Workflows handlers: the draft state (read, replace, block operations, variables). A dry run evaluates the
// same rules (src/workflows/service.ts) on committed data without writing.
import type { Handler } from '../../../generated/handlers.ts';
import { tagOfText } from '../../http/conditional.ts';
import type { Block, Edge, Variable } from '../../workflows/state.ts';
import type { BlockOperation } from '../../workflows/operations.ts';
import * as workflows from '../../workflows/service.ts';
import * as drafts from '../../workflows/draft-changes.ts';
import { loadWorkflow, stateTag } from './shared.ts';

const PROVISIONAL_IDS_WARNING = 'Dry run: previewBlockIds are provisional; committing the same batch mints different block ids.';

export const getWorkflowState: Handler<'getWorkflowState'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  return { status: 200, body: { data: workflows.stateOf(w) }, headers: { ETag: stateTag(w) } };
};

/**
 * HEAD answers with the headers a GET would send (type and length of the same JSON), and no body. Express
 * would route HEAD to the GET handler by itself, but the request validator only knows declared methods.
 */
export const headWorkflowState: Handler<'headWorkflowState'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const json = JSON.stringify({ data: workflows.stateOf(w) });
  return { status: 200, body: undefined, headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(json)), ETag: stateTag(w) } };
};

/** The draft's lint findings (an extension): read access is enough, since nothing is written. */
export const getWorkflowLint: Handler<'getWorkflowLint'> = async ({ params, ctx }) => {
  const w = await loadWorkflow(ctx, params.workflowId);
  const evaluated = await drafts.evaluateDraft(ctx.services.store, w);
  return { status: 200, body: { data: { id: w.id, needsRedeployment: evaluated.needsRedeployment, lint: evaluated.lint } } };
};

export const replaceWorkflowState: Handler<'replaceWorkflowState'> = async ({ params, query, body, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  workflows.assertUnlocked(first);
  const warnings: string[] = [];
  if (body.loops !== undefined || body.parallels !== undefined) warnings.push('loops and parallels in the body were ignored: containers are recomputed from the blocks.');
  const input = { blocks: body.blocks as Record<string, Block>, edges: body.edges as Edge[], variables: body.variables as Record<string, Variable> | undefined };
  const dryRun = query.dryRun === true;
  const answer = (id: string, e: Awaited<ReturnType<typeof drafts.evaluateReplacement>>) => ({ id, warnings, needsRedeployment: e.needsRedeployment, lint: e.lint, dryRun });

  if (dryRun) {
    ctx.precondition(() => stateTag(first));
    const evaluated = await drafts.evaluateReplacement(ctx.services.store, first, input, ctx.principal.userId);
    return { status: 200, body: { data: answer(first.id, evaluated) }, headers: { ETag: stateTag(first) } };
  }
  const { w, evaluated, stored } = await ctx.mutate((tx, audit) => drafts.replaceState(tx, audit, first.id, input, (current) => ctx.precondition(() => stateTag(current)), ctx.principal.userId));
  return { status: 200, body: { data: answer(w.id, evaluated) }, headers: { ETag: tagOfText(stored) } };
};

export const applyWorkflowOperations: Handler<'applyWorkflowOperations'> = async ({ params, query, body, ctx }) => {
  const first = await loadWorkflow(ctx, params.workflowId);
  workflows.assertUnlocked(first);
  const dryRun = query.dryRun === true;
  const request = { operations: body.operations as BlockOperation[], setBlockEnabled: body.setBlockEnabled, layout: body.layout ?? ('targeted' as const), atomic: body.atomic === true };
  const answer = (id: string, { outcome, needsRedeployment, lint }: Awaited<ReturnType<typeof drafts.evaluateOperations>>) => ({
    id,
    warnings: dryRun ? [...outcome.warnings, PROVISIONAL_IDS_WARNING] : outcome.warnings,
    needsRedeployment,
    applied: outcome.applied,
    skipped: outcome.skipped,
    deferred: [],
    inputValidationErrors: outcome.inputValidationErrors,
    mintedBlockIds: dryRun ? {} : outcome.minted,
    ...(dryRun ? { previewBlockIds: outcome.minted } : {}),
    lint,
    dryRun,
  });

  if (dryRun) {
    ctx.precondition(() => stateTag(first));
    const evaluated = await drafts.evaluateOperations(ctx.services.store, first, request, ctx.principal.userId);
    return { status: 200, body: { data: answer(first.id, evaluated) }, headers: { ETag: stateTag(first) } };
  }
  const { w, evaluated, stored } = await ctx.mutate((tx, audit) => drafts.applyBlockOperations(tx, audit, first.id, request, (current) => ctx.precondition(() => stateTag(current)), ctx.principal.userId));
  return { status: 200, body: { data: answer(w.id, evaluated) }, headers: { ETag: stored === null ? stateTag(w) : tagOfText(stored) } };
};

export const applyWorkflowVariables: Handler<'applyWorkflowVariables'> = async ({ params, body, ctx }) => {
  await loadWorkflow(ctx, params.workflowId);
  const result = await ctx.mutate((tx, audit) =>
    drafts.applyVariables(tx, audit, params.workflowId, body.operations as drafts.VariableOperation[], (w) => ctx.precondition(() => stateTag(w))),
  );
  return { status: 200, body: { data: { id: result.id, variableCount: result.variableCount, changed: result.changed } }, headers: { ETag: tagOfText(result.stored) } };
};

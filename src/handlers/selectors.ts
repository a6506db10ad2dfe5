// Selectors (listSelector, getSelector): the option lists behind block dropdowns, answered by src/selectors.
import type { Handler } from '../../generated/handlers.ts';
import { cursorFor, readCursor } from '../http/pagination.ts';
import type { Services } from '../services.ts';
import { Selectors } from '../selectors/index.ts';

/** One Selectors per server (its sources hold no state of their own). */
const byServices = new WeakMap<Services, Selectors>();
function selectorsOf(services: Services): Selectors {
  let selectors = byServices.get(services);
  if (!selectors) {
    selectors = new Selectors({ store: services.store, mcp: services.mcp, credentials: services.workspaceCredentials, egress: services.engine.options.egress, config: services.config });
    byServices.set(services, selectors);
  }
  return selectors;
}

export const listSelector: Handler<'listSelector'> = async ({ body, ctx }) => {
  const context = body.context ?? {};
  const search = body.search?.trim() ? body.search : null;
  const limit = body.limit ?? 50;
  // A cursor continues only the same selector, context and search; only limit may change.
  const binding = { workspaceId: body.workspaceId, selectorKey: body.selectorKey, context, search };
  const position = readCursor(ctx, body.cursor, binding);
  const page = await selectorsOf(ctx.services).list(
    body.selectorKey,
    { workspaceId: body.workspaceId, userId: ctx.principal.userId, context },
    { search, after: position === null ? null : String(position[0]), limit },
  );
  return {
    status: 200,
    body: { data: page.options, nextCursor: page.next === null ? null : cursorFor(ctx, [page.next, ''], binding), truncated: page.truncated },
  };
};

export const getSelector: Handler<'getSelector'> = async ({ body, ctx }) => {
  const option = await selectorsOf(ctx.services).get(body.selectorKey, { workspaceId: body.workspaceId, userId: ctx.principal.userId, context: body.context ?? {} }, body.id);
  return { status: 200, body: { data: option } };
};

// Handlers for the Meta operations.
import type { Handler } from '../../generated/handlers.ts';

export const getMeta: Handler<'getMeta'> = async ({ ctx }) => ({
  status: 200,
  body: { data: { v2Enabled: true, keyType: ctx.principal.kind, expiresAt: ctx.principal.expiresAt } },
});

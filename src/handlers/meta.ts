// Handlers for the Meta operations.
import type { Handler } from '../../generated/handlers.ts';

export const getMeta: Handler<'getMeta'> = async ({ principal }) => ({
  status: 200,
  body: { data: { v2Enabled: true, keyType: principal.kind, expiresAt: principal.expiresAt } },
});

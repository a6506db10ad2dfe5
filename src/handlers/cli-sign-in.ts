// Handlers for the CLI Sign-in operations: the pairing handoff's poll (the browser side is in src/http/web).
import type { Handler } from '../../generated/handlers.ts';
import { ApiError } from '../http/errors.ts';
import { PairingError, pollPairing } from '../identity/pairing.ts';

/** POST /api/cli/auth/poll — pending until the user approves, then a new personal API key, once. */
export const pollCliAuth: Handler<'pollCliAuth'> = async ({ body, ctx }) => {
  try {
    return { status: 200, body: await pollPairing(ctx.services.store, body.request, body.verifier) };
  } catch (err) {
    if (err instanceof PairingError) {
      throw new ApiError(err.reason === 'invalid_request' ? 'BAD_REQUEST' : 'FORBIDDEN', err.message, err.reason === 'invalid_request' ? undefined : { reason: err.reason });
    }
    throw err;
  }
};

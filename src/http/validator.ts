// express-openapi-validator, configured once from the bundled spec. Requests are always validated (unknown
// query parameters and body fields rejected); responses are validated in development and tests so a handler
// that breaks its schema fails loudly. Only JSON responses are checked: the validator wraps res.json.
import * as OpenApiValidator from 'express-openapi-validator';
import type { RequestHandler } from 'express';

export function createValidator(spec: object, options: { validateResponses: boolean }): RequestHandler[] {
  return OpenApiValidator.middleware({
    apiSpec: structuredClone(spec) as never,
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true, removeAdditional: false, allErrors: true },
    validateResponses: options.validateResponses ? { removeAdditional: false, coerceTypes: false } : false,
    validateSecurity: false,
    validateFormats: true,
    ignoreUndocumented: false,
    // Routing is ours (generated); never let the validator resolve handlers through require().
    operationHandlers: false,
  }) as RequestHandler[];
}

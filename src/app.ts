// Builds the Express application from the generated router, the shared pipeline and the handlers.
import express, { type Express } from 'express';
import spec from '../generated/openapi.json' with { type: 'json' };
import { mountOperations } from '../generated/router.ts';
import { handlers as registeredHandlers } from '../generated/handler-registry.ts';
import { OPERATIONS } from '../generated/operations.ts';
import type { Handlers } from '../generated/handlers.ts';
import type { Services } from './services.ts';
import { createBinder, type BinderOptions } from './http/pipeline.ts';
import { createValidatorFactory } from './http/validator.ts';
import { clientGoneHandler, requestLogging } from './http/logging.ts';
import { errorHandler } from './http/errors.ts';
import { bodyTimeout, noRoute, privateNoStore } from './http/request-limits.ts';
import { webRoutes } from './http/web/index.ts';
import { traceRequests } from './http/tracing.ts';
import { operationRouter } from './http/operation-router.ts';
import { tracingEnabled } from './ops/spans.ts';

export interface AppOptions extends BinderOptions {
  /** The handlers to mount (tests replace some); the generated registry by default. */
  handlers?: Handlers;
}

/** Operations of the spec without a handler function (a module that lost an export still type-checks at run time). */
export function missingHandlers(handlers: Record<string, unknown>): string[] {
  return Object.keys(OPERATIONS)
    .filter((operationId) => typeof handlers[operationId] !== 'function')
    .sort();
}

/** Refuses to build an app with an operation that has no handler: a start fails at once, naming it. */
export class MissingHandlerError extends Error {
  readonly operationIds: string[];
  constructor(operationIds: string[]) {
    super(`No handler for operation ${operationIds.join(', ')}`);
    this.name = 'MissingHandlerError';
    this.operationIds = operationIds;
  }
}

export function createApp(services: Services, options: AppOptions = {}): Express {
  const { handlers = registeredHandlers, ...binderOptions } = options;
  const missing = missingHandlers(handlers as unknown as Record<string, unknown>);
  if (missing.length > 0) throw new MissingHandlerError(missing);
  const app = express();
  app.disable('x-powered-by');
  // TRUST_PROXY: whose X-Forwarded-For/-Proto/-Host count for req.ip, req.protocol and req.host (off: nobody's).
  app.set('trust proxy', services.config.trustProxy);
  app.use(requestLogging(services.logger));
  // Only when the SDK is running (an OTLP endpoint is configured); otherwise requests pass no tracing code at all.
  if (tracingEnabled()) app.use(traceRequests());
  app.use(privateNoStore, bodyTimeout(services.config.http.bodyTimeoutMs));

  // Chat pages, sign-in, the CLI's OAuth server and pairing: browser protocols outside the OpenAPI document.
  app.use(webRoutes(services));

  const operations = operationRouter();
  const validatorFor = createValidatorFactory(spec, { validateResponses: services.config.validateResponses });
  mountOperations(operations.router, handlers, createBinder(services, validatorFor, binderOptions));
  app.use(operations.handle);

  app.use(noRoute);
  app.use(clientGoneHandler);
  app.use(errorHandler);
  return app;
}

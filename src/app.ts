// Builds the Express application from the generated router, the shared pipeline and the handlers.
import express, { type Express } from 'express';
import spec from '../generated/openapi.json' with { type: 'json' };
import { mountOperations } from '../generated/router.ts';
import { handlers } from '../generated/handler-registry.ts';
import type { Services } from './services.ts';
import { createBinder, type BinderOptions } from './http/pipeline.ts';
import { createValidatorFactory } from './http/validator.ts';
import { requestLogging } from './http/logging.ts';
import { ApiError, errorHandler } from './http/errors.ts';
import { webRoutes } from './http/web/index.ts';

export function createApp(services: Services, options: BinderOptions = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(requestLogging(services.logger));

  // Chat pages, sign-in, the CLI's OAuth server and pairing: browser protocols outside the OpenAPI document.
  app.use(webRoutes(services));

  const router = express.Router({ strict: false });
  const validatorFor = createValidatorFactory(spec, { validateResponses: services.config.validateResponses });
  mountOperations(router, handlers, createBinder(services, validatorFor, options));
  app.use(router);

  app.use((req, _res, next) => next(new ApiError('NOT_FOUND', `No route for ${req.method} ${req.path}.`)));
  app.use(errorHandler);
  return app;
}

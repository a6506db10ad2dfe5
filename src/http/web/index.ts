// The browser-facing routes that are not part of the JSON API: hosted chat pages, sign-in, the OAuth server
// for the CLI and the CLI pairing handoff, the invitation accept page, the web console, plus their static assets.
import path from 'node:path';
import express, { type Router } from 'express';
import type { Services } from '../../services.ts';
import { WEB_ASSETS, chatRoutes } from './chat-routes.ts';
import { authRoutes } from './auth-routes.ts';
import { invitationRoutes } from './invitation-routes.ts';
import { consoleRoutes } from './console-routes.ts';

export function webRoutes(services: Services): Router {
  const router = express.Router();
  router.use(WEB_ASSETS, express.static(path.join(import.meta.dirname, 'static'), { index: false, maxAge: '1h' }));
  router.use(chatRoutes(services));
  router.use(authRoutes(services));
  router.use(invitationRoutes(services));
  router.use(consoleRoutes(services));
  return router;
}

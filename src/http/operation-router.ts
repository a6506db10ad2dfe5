// Where the generated router's routes are mounted. Express tries a router's routes one after another, and the
// spec has about 300 of them: a request for a path late in that list (GET /api/v2/workspaces) walked some 250
// non-matching routes first, a fifth of a plain read's CPU. Here each route is filed under its segment count and
// its first three segments, and a request is offered only to the routes filed under its own; the few routes with
// a parameter among their first three segments are tried after those, in their generated order.
//
// A route matches a request only when the request has as many segments (one trailing slash aside) and the same
// literal segments, case-insensitively, so no route that could match is skipped; within a group and among the
// rest, Express matches exactly as before (same order, parameters, HEAD for GET, automatic OPTIONS).
import express, { type RequestHandler, type Router } from 'express';
import { rawPathOf } from './routes.ts';

const GROUPED_SEGMENTS = 3;

/** The group of a path: its segment count and first segments, lower-cased (matching is case-insensitive). */
function groupKey(segments: string[]): string {
  return `${segments.length} ${segments.slice(0, GROUPED_SEGMENTS).join('/').toLowerCase()}`;
}

/** A request path's segments: after the leading slash, with one trailing slash dropped (routes are not strict). */
function segmentsOf(path: string): string[] {
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  return path.slice(1, end).split('/');
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head'] as const;

export interface OperationRouter {
  /** What the generated `mountOperations` mounts routes on (only the verb methods are used). */
  router: Router;
  /** The middleware that dispatches a request to the routes that can match it. */
  handle: RequestHandler;
}

export function operationRouter(): OperationRouter {
  const groups = new Map<string, Router>();
  const rest = express.Router({ strict: false });
  const routerFor = (template: string): Router => {
    const segments = segmentsOf(template);
    if (segments.slice(0, GROUPED_SEGMENTS).some((segment) => segment.startsWith(':') || segment.includes('*'))) return rest;
    const key = groupKey(segments);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = express.Router({ strict: false })));
    return group;
  };
  const mount: Record<string, unknown> = {};
  for (const method of METHODS) {
    mount[method] = (template: string, ...handlers: RequestHandler[]) => {
      (routerFor(template)[method] as (path: string, ...h: RequestHandler[]) => Router)(template, ...handlers);
      return mount;
    };
  }
  const handle: RequestHandler = (req, res, next) => {
    const group = groups.get(groupKey(segmentsOf(rawPathOf(req.url))));
    if (!group) return rest(req, res, next);
    group(req, res, (err?: unknown) => (err ? next(err) : rest(req, res, next)));
  };
  return { router: mount as unknown as Router, handle };
}

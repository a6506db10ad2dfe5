// The shared path of every operation: authenticate → parse and validate against the spec → authorize by the
// policy the spec declares → call the handler → send its result. The generated router calls `bind` per route.
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { StreamBody } from './stream-body.ts';
import type { OperationSpec, WorkspaceRole } from '../../generated/operations.ts';
import type { BindOperation } from '../../generated/router.ts';
import type { Services } from '../services.ts';
import { hasScope, roleAtLeast, type Principal } from '../identity/principal.ts';
import { workspaceAccess, type WorkspaceAccess } from '../identity/access.ts';
import type { RequestContext } from './context.ts';
import type { ValidatorFactory } from './validator.ts';
import { recordAudit, type AuditEntry } from '../audit/recorder.ts';
import { ApiError, badRequest, forbidden, notFound, unauthorized } from './errors.ts';

interface Locals {
  principal?: Principal;
}

const locals = (res: Response) => res.locals as Locals;

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

function isJson(req: Request): boolean {
  return req.is(['application/json', 'application/*+json']) !== false && req.is(['application/json', 'application/*+json']) !== null;
}

export function authenticate(services: Services): RequestHandler {
  return async (req, res, next) => {
    try {
      const apiKey = req.headers['x-api-key'];
      const authorization = req.headers.authorization;
      let principal: Principal | null = null;
      if (typeof apiKey === 'string' && apiKey.length > 0) {
        principal = await services.credentials.resolveApiKey(apiKey);
        if (!principal) throw unauthorized('The API key is unknown, expired or revoked.');
      } else if (typeof authorization === 'string' && /^bearer\s+/i.test(authorization)) {
        throw unauthorized('The access token is unknown, expired or revoked.');
      } else {
        throw unauthorized('Send an API key in the X-API-Key header.');
      }
      locals(res).principal = principal;
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** Refuses an oversized body, or one the operation does not declare, before reading any of it. */
function bodyGate(operation: OperationSpec, limitBytes: number): RequestHandler {
  return (req, _res, next) => {
    if (Number(req.headers['content-length'] ?? 0) > limitBytes) {
      next(new ApiError('PAYLOAD_TOO_LARGE', `The request body is larger than this server accepts (${limitBytes} bytes).`));
      return;
    }
    if (operation.bodyContentTypes === null && hasBody(req)) {
      if (!isJson(req)) {
        next(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'This operation takes no request body.'));
        return;
      }
      next(badRequest('This operation takes no request body.', [{ code: 'unrecognized_keys', keys: [], path: ['body'], message: 'Unexpected request body' }]));
      return;
    }
    next();
  };
}

function workspaceIdOf(operation: OperationSpec, req: Request): string | undefined {
  switch (operation.workspaceIdIn) {
    case 'path':
      return typeof req.params.workspaceId === 'string' ? req.params.workspaceId : undefined;
    case 'query':
      return typeof req.query.workspaceId === 'string' ? req.query.workspaceId : undefined;
    case 'body':
      return (req.body as { workspaceId?: string } | undefined)?.workspaceId;
    default:
      return undefined;
  }
}

async function authorizeWorkspace(
  services: Services,
  principal: Principal,
  workspaceId: string,
  minRole: WorkspaceRole,
  resource = 'Workspace',
): Promise<WorkspaceAccess> {
  const decision = await workspaceAccess(services.store, principal, workspaceId);
  if (!decision.ok) {
    if (decision.reason === 'personal_keys_disabled') {
      throw forbidden('Personal API keys are disabled in this workspace; use a workspace API key.', { code: 'PERSONAL_KEYS_DISABLED' });
    }
    throw notFound(resource);
  }
  if (!roleAtLeast(decision.access.role, minRole)) {
    throw forbidden(`This operation needs the ${minRole} role in the workspace; you have ${decision.access.role}.`, {
      code: 'INSUFFICIENT_WORKSPACE_ROLE',
      requiredRole: minRole,
      role: decision.access.role,
    });
  }
  return decision.access;
}

function pickHeaders(req: Request, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return out;
}

export function createBinder(services: Services, validatorFor: ValidatorFactory): BindOperation {
  const json = express.json({ limit: services.config.bodyLimitBytes, type: ['application/json', 'application/*+json'] });
  const auth = authenticate(services);

  return (operation, handler) => {
    const invoke = async (req: Request, res: Response, next: NextFunction) => {
      try {
        const principal = locals(res).principal!;
        if (operation.scope && !hasScope(principal, operation.scope)) {
          throw forbidden(`This operation needs the ${operation.scope} scope.`, { code: 'INSUFFICIENT_SCOPE', requiredScope: operation.scope });
        }
        if (operation.rejectsWorkspaceKeys && principal.kind === 'workspace') {
          throw forbidden('Workspace API keys cannot be used for this operation; use a personal API key or an OAuth token.', {
            code: 'WORKSPACE_KEY_NOT_ALLOWED',
          });
        }
        let workspace: WorkspaceAccess | null = null;
        if (operation.workspaceIdIn && operation.minRole) {
          const id = workspaceIdOf(operation, req);
          if (!id) throw badRequest('workspaceId is required.', [{ code: 'invalid_type', keys: [], path: [operation.workspaceIdIn, 'workspaceId'], message: 'Required' }]);
          workspace = await authorizeWorkspace(services, principal, id, operation.minRole);
        }
        const ctx: RequestContext = {
          requestId: String(res.getHeader('x-request-id') ?? ''),
          operation,
          principal,
          services,
          log: req.log,
          workspace,
          authorizeWorkspace: (workspaceId, options = {}) =>
            authorizeWorkspace(services, principal, workspaceId, options.minRole ?? operation.minRole ?? 'read', options.resource),
          mutate: (fn) =>
            services.store.transaction(async (tx) => {
              const entries: AuditEntry[] = [];
              const result = await fn(tx, (entry) => entries.push(entry));
              for (const entry of entries) await recordAudit(tx, principal, workspace?.workspace.id ?? null, entry);
              return result;
            }),
        };
        const result = await handler({
          params: req.params,
          query: req.query,
          headers: pickHeaders(req, operation.headerParams),
          body: req.body,
          ctx,
        });
        for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v as string);
        res.status(result.status);
        if (result.body === undefined) res.end();
        else if (result.body instanceof StreamBody) await pipeline(result.body.stream, res);
        else res.json(result.body);
      } catch (err) {
        next(err);
      }
    };
    return [auth, bodyGate(operation, services.config.bodyLimitBytes), json, validatorFor(operation), invoke];
  };
}

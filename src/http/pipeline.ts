// The shared path of every operation: authenticate → refuse undeclared or oversized bodies → parse JSON →
// rate limit → validate against the spec → authorize by the policy the spec declares → call the handler →
// send its result. The generated router calls `bind` once per route.
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { StreamBody } from './stream-body.ts';
import type { OperationSpec, WorkspaceRole } from '../../generated/operations.ts';
import type { BindOperation } from '../../generated/router.ts';
import type { Services } from '../services.ts';
import type { Principal } from '../identity/principal.ts';
import { workspaceAccess, type WorkspaceAccess } from '../identity/access.ts';
import { decide, type PolicyOperation } from '../identity/policy.ts';
import { recordAudit, type AuditEntry } from '../audit/recorder.ts';
import type { RequestContext } from './context.ts';
import { ApiError, badRequest, forbidden, notFound, unauthorized } from './errors.ts';
import type { ValidatorFactory } from './validator.ts';
import { rateLimit } from './rate-limit.ts';
import { assertJsonDepth } from '../domain/json-depth.ts';
import { assertPrecondition, ifNoneMatchHits, parseTagCondition } from './conditional.ts';
import { SESSION_COOKIE, sessionPrincipal } from '../identity/web-session.ts';
import { readCookie } from './web/cookies.ts';
import { csrfHeaderValid } from './web/csrf.ts';
import { Idempotency, StoredJson } from './idempotency.ts';
import { withContext, type Context } from '../ops/spans.ts';
import { publicBaseUrl } from './public-url.ts';

interface Locals {
  principal?: Principal;
  /** The matched operation; the error handler reads its error format. */
  operation?: OperationSpec;
  /** The request span's context (src/http/tracing.ts), when tracing is on. */
  traceContext?: Context;
}

const principalOf = (res: Response): Principal | null => (res.locals as Locals).principal ?? null;

/** The operation a request matched, once routing got that far (metrics label requests by its id). */
export function matchedOperation(res: { locals?: Record<string, unknown> }): OperationSpec | undefined {
  return (res.locals as Locals | undefined)?.operation;
}

/** Records the request span's context; the handler is called inside it. */
export function setRequestTraceContext(res: Response, ctx: Context): void {
  (res.locals as Locals).traceContext = ctx;
}

const requestTraceContext = (res: Response): Context | undefined => (res.locals as Locals).traceContext;

/** Sets the request's principal; for authenticate replacements. */
export function setPrincipal(res: Response, principal: Principal): void {
  (res.locals as Locals).principal = principal;
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

function isJson(req: Request): boolean {
  return Boolean(req.is(['application/json', 'application/*+json']));
}

/**
 * The caller named by an `X-API-Key` or `Authorization: Bearer` header; null when neither is sent. An unknown,
 * expired or revoked credential is a 401. Public operations that accept an optional credential use this too.
 */
export async function principalFromHeaders(services: Services, apiKey: unknown, authorization: unknown): Promise<Principal | null> {
  if (typeof apiKey === 'string' && apiKey.length > 0) {
    const principal = await services.credentials.resolveApiKey(apiKey);
    if (!principal) throw unauthorized('The API key is unknown, expired or revoked.');
    return principal;
  }
  if (typeof authorization === 'string' && /^bearer\s+\S+/i.test(authorization)) {
    const principal = await services.credentials.resolveAccessToken(authorization.replace(/^bearer\s+/i, '').trim());
    // RFC 6750: the challenge tells OAuth clients (the sim CLI) to refresh and retry once.
    if (!principal) throw new ApiError('UNAUTHORIZED', 'The access token is unknown, expired or revoked.', undefined, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    return principal;
  }
  return null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The web console's caller: the sign-in session cookie, when no key or token is sent. A change must also carry
 * the page's CSRF token (X-CSRF-Token) and come from this server's origin; without it the cookie counts for nothing.
 */
async function principalFromSession(services: Services, req: Request): Promise<Principal | null> {
  const cookie = readCookie(req, SESSION_COOKIE);
  if (!cookie) return null;
  const principal = await sessionPrincipal(services.store, services.signingKey, cookie);
  if (principal && !SAFE_METHODS.has(req.method) && !csrfHeaderValid(services, req)) {
    throw forbidden('A change made with the sign-in session needs the page\'s CSRF token in the X-CSRF-Token header; reload the page.');
  }
  return principal;
}

export function authenticate(services: Services): RequestHandler {
  return async (req, res, next) => {
    try {
      const principal = (await principalFromHeaders(services, req.headers['x-api-key'], req.headers.authorization)) ?? (await principalFromSession(services, req));
      if (!principal) throw unauthorized('Send an API key in the X-API-Key header or an access token as Authorization: Bearer.');
      (res.locals as Locals).principal = principal;
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** Refuses an oversized body, or one the operation does not declare, before reading any of it. */
function bodyGate(operation: OperationSpec, limitBytes: number): RequestHandler {
  return (req, _res, next) => {
    // The size limit is for bodies parsed into memory; a streamed body is bounded by its handler.
    if (!operation.streamBody && Number(req.headers['content-length'] ?? 0) > limitBytes) {
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
  const pick = (v: unknown) => (typeof v === 'string' ? v : undefined);
  switch (operation.workspaceIdIn) {
    case 'path':
      return pick(req.params.workspaceId);
    case 'query':
      return pick(req.query.workspaceId);
    case 'body':
      return pick((req.body as { workspaceId?: unknown } | undefined)?.workspaceId);
    default:
      return undefined;
  }
}

async function authorizeWorkspace(
  services: Services,
  principal: Principal,
  operation: PolicyOperation,
  workspaceId: string,
  resource = 'Workspace',
): Promise<WorkspaceAccess> {
  const access = await workspaceAccess(services.store, principal, workspaceId);
  const denial = decide(principal, operation, access);
  if (denial) throw denial.status === 404 ? notFound(resource) : forbidden(denial.message, denial.details);
  return (access as Extract<typeof access, { ok: true }>).access;
}

function pickHeaders(req: Request, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return out;
}

export interface BinderOptions {
  /** Replaces credential lookup (the benchmark uses this to measure authentication's share). */
  authenticate?: RequestHandler;
}

export function createBinder(services: Services, validatorFor: ValidatorFactory, options: BinderOptions = {}): BindOperation {
  const maxDepth = services.config.http.bodyMaxDepth;
  const json = express.json({
    limit: services.config.bodyLimitBytes,
    type: ['application/json', 'application/*+json'],
    // Bounded before parsing, so nothing after (validation, serializing, the engine) recurses without end.
    verify: (_req, _res, buf) => assertJsonDepth(buf, maxDepth),
  });
  const auth = options.authenticate ?? authenticate(services);
  const idempotency = new Idempotency(services);

  return (operation, handler) => {
    const invoke = async (req: Request, res: Response, next: NextFunction) => {
      try {
        const principal = principalOf(res);
        if (principal) {
          const credentialDenial = decide(principal, operation);
          if (credentialDenial) throw forbidden(credentialDenial.message, credentialDenial.details);
        }
        let workspace: WorkspaceAccess | null = null;
        if (operation.workspaceIdIn && principal) {
          const id = workspaceIdOf(operation, req);
          if (!id) throw badRequest('workspaceId is required.', [{ code: 'invalid_type', keys: [], path: [operation.workspaceIdIn, 'workspaceId'], message: 'Required' }]);
          workspace = await authorizeWorkspace(services, principal, operation, id);
        }
        // Conditional requests (x-etag): the headers are read before any work, so a malformed one is a 400.
        const ifMatch = operation.etag === 'write' ? parseTagCondition(req.get('if-match'), 'if-match') : null;
        const ifNoneMatch = operation.headerParams.includes('if-none-match') ? parseTagCondition(req.get('if-none-match'), 'if-none-match') : null;
        let preconditionChecked = false;
        let handlerRan = false;
        // Idempotency-Key (operations marked x-idempotent): the key is applied in each ctx.mutate transaction.
        const idem = idempotency.begin(operation, req, principal, workspace?.workspace.id ?? null);
        const ctx: RequestContext<Principal | null> = {
          requestId: req.id,
          operation,
          principal,
          services,
          log: req.log,
          workspace,
          baseUrl: publicBaseUrl(req, services.config),
          header: (name) => req.get(name),
          authorizeWorkspace: (workspaceId, options: { minRole?: WorkspaceRole; resource?: string } = {}) => {
            if (!principal) throw new Error(`${operation.operationId} is public: it has no caller to authorize`);
            return authorizeWorkspace(services, principal, { ...operation, minRole: options.minRole ?? operation.minRole ?? 'read' }, workspaceId, options.resource);
          },
          mutate: async (fn) => {
            const result = await services.store.transaction(async (tx) => {
              const entries: AuditEntry[] = [];
              const result = await fn(tx, (entry) => entries.push(entry));
              for (const entry of entries) {
                await recordAudit(tx, principal, workspace?.workspace.id ?? null, entry, principal ? undefined : 'Anonymous (signed link)');
              }
              if (idem) await idem.markApplied(tx);
              return result;
            });
            idem?.committed();
            return result;
          },
          createdResource: (kind, id) => idem?.created(kind, id),
          precondition: (current) => {
            if (operation.etag !== 'write') throw new Error(`${operation.operationId} does not declare x-etag: write`);
            preconditionChecked = true;
            assertPrecondition(ifMatch, ifNoneMatch, current);
          },
        };
        const call = () => {
          handlerRan = true;
          return handler({
            params: req.params,
            query: req.query,
            headers: pickHeaders(req, operation.headerParams),
            body: operation.streamBody ? req : req.body,
            principal,
            ctx,
          });
        };
        // The handler runs in the request's trace context, which stream callbacks (body parsing) do not carry.
        const traced = () => withContext(requestTraceContext(res), call);
        const result = idem ? await idem.run(ctx as RequestContext, traced) : await traced();
        // A replayed answer (Idempotency-Key) never ran the handler, so it checked nothing.
        if ((ifMatch || (operation.etag === 'write' && ifNoneMatch)) && handlerRan && !preconditionChecked && result.status < 300) {
          req.log.error({ operationId: operation.operationId }, 'If-Match was sent but the handler never checked it');
        }
        for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v as string);
        if (operation.etag === 'read' && result.status < 300) {
          const set = res.getHeader('etag');
          const tag = typeof set === 'string' ? set : null;
          if (ifNoneMatch && ifNoneMatchHits(ifNoneMatch, tag)) {
            res.status(304).end();
            return;
          }
          // Where the spec offers no If-None-Match, the tag leaves out parts of the answer (run and row counts):
          // Express's own freshness check must not answer 304 on it.
          if (!ifNoneMatch) delete req.headers['if-none-match'];
        }
        res.status(result.status);
        if (result.body === undefined) res.end();
        else if (result.body instanceof StreamBody) await pipeline(result.body.stream, res);
        else if (result.body instanceof StoredJson) res.type('application/json; charset=utf-8').send(result.body.text);
        else res.json(result.body);
      } catch (err) {
        next(err);
      }
    };
    const matched: RequestHandler = (_req, res, next) => {
      (res.locals as Locals).operation = operation;
      next();
    };
    // Public operations (`security: []`) authorize by a signature or token in their handler; a body that is
    // not JSON is left unread for the handler to stream.
    const chain: RequestHandler[] = [matched];
    if (!operation.public) chain.push(auth);
    chain.push(bodyGate(operation, services.config.bodyLimitBytes));
    if (!operation.streamBody) chain.push(json);
    chain.push(rateLimit(services, operation, principalOf), validatorFor(operation), invoke);
    return chain;
  };
}

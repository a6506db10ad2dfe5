// express-openapi-validator, applied per operation. Requests are always validated (unknown query parameters
// and body fields rejected); responses are validated in development and tests so a handler that breaks its
// schema fails loudly. Only JSON responses are checked: the validator wraps res.json.
//
// Why one validator per operation: the library matches a request by compiling and trying every path of its
// document on every request, which grows with the API (about 220 operations). The generated router already
// knows the operation, so each gets a validator built lazily from a document holding just its own path.
import * as OpenApiValidator from 'express-openapi-validator';
import { parse as legacyUrlParse } from 'node:url';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { OperationSpec } from '../../generated/operations.ts';
import { badRequest, type ValidationIssue } from './errors.ts';
import { BodyIssues, type ValidatorIssue } from './body-issues.ts';

// The library calls the deprecated url.parse() on every request. Called from inside node_modules, Node 24
// captures a stack trace on each call to decide whether to print DEP0169 (about a tenth of a simple request's
// CPU); once a call from outside node_modules has "warned", it stops checking. So warn once, silently, here.
{
  const quiet = process.noDeprecation;
  process.noDeprecation = true;
  legacyUrlParse('/');
  process.noDeprecation = quiet;
}

type Spec = { paths: Record<string, Record<string, unknown>> } & Record<string, unknown>;

/**
 * The document one operation's validator is built from: its own path, and of the components only those its
 * path (or the rest of the document) reaches through references, transitively. The library dereferences and
 * compiles what it is given: with all 200-odd schemas, building one operation's validator took about twice the
 * CPU, paid on each operation's first request after every server start.
 */
export function documentFor(spec: Spec, operation: OperationSpec): Spec {
  const item = spec.paths[operation.path];
  if (!item) throw new Error(`The bundled spec has no path ${operation.path}`);
  const trimmed: Record<string, unknown> = { [operation.method]: item[operation.method] };
  if (item.parameters) trimmed.parameters = item.parameters;
  const all = (spec.components ?? {}) as Record<string, Record<string, unknown>>;
  const reached: Record<string, Record<string, unknown>> = {};
  const seen = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key !== '$ref' || typeof value !== 'string') {
        visit(value);
        continue;
      }
      const [hash, components, kind, name] = value.split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
      if (hash !== '#' || components !== 'components' || !kind || !name || seen.has(`${kind}/${name}`)) continue;
      seen.add(`${kind}/${name}`);
      const target = all[kind]?.[name];
      if (target === undefined) continue;
      (reached[kind] ??= {})[name] = target;
      visit(target);
    }
  };
  visit(trimmed);
  // What the rest of the document (webhooks, say) references stays too, so the document stays whole.
  for (const [key, value] of Object.entries(spec)) if (key !== 'paths' && key !== 'components') visit(value);
  // Security schemes are kept whole: few, small, and named by `security` lists rather than by references.
  const components = Object.fromEntries(Object.keys(all).map((kind) => [kind, kind === 'securitySchemes' ? all[kind] : (reached[kind] ?? {})]));
  return { ...spec, paths: { [operation.path]: trimmed }, components };
}

function runChain(chain: RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let i = 0;
  const next = (err?: unknown): void => {
    if (err) return done(err);
    const mw = chain[i++];
    if (!mw) return done();
    try {
      void mw(req, res, next);
    } catch (e) {
      done(e);
    }
  };
  next();
}

/**
 * Library middlewares that do nothing for this server, each costing a promise hop per request: security
 * checks are ours (validateSecurity is off), and path-parameter hooks are registered with app.param(), which
 * never fires for routes on a Router (the metadata middleware sets req.params itself).
 */
const SKIPPED = new Set(['securityMiddleware', 'pathParamsMiddleware']);

export type ValidatorFactory = (operation: OperationSpec) => RequestHandler;

interface OpenApiMetadata {
  pathParams: Record<string, string>;
  [key: string]: unknown;
}
type WithOpenApi = Request & { openapi?: OpenApiMetadata };

/**
 * The library's metadata middleware looks the request's route up again and compiles the route's path into a
 * regular expression to do so, on every request (a few percent of a simple read's CPU). The generated router
 * has matched the operation and decoded its path parameters already, and the metadata (the operation's
 * schema, its route) is the same for every request of a method: so the first match's is kept and reused,
 * with this request's parameters.
 */
function rememberMetadata(metadata: RequestHandler): RequestHandler {
  const byMethod = new Map<string, Omit<OpenApiMetadata, 'pathParams'>>();
  return (req, res, next) => {
    const known = byMethod.get(req.method);
    if (known) {
      (req as WithOpenApi).openapi = { ...known, pathParams: req.params as Record<string, string> };
      return next();
    }
    void metadata(req, res, (err?: unknown) => {
      const found = (req as WithOpenApi).openapi;
      if (!err && found?.schema) {
        const { pathParams: _params, ...rest } = found;
        byMethod.set(req.method, rest);
      }
      next(err);
    });
  };
}

/**
 * The library coerces "1e309" or "Infinity" in a query or path to ±Infinity and then lets it through integer
 * and range checks. No parameter of this API can be infinite, so such a value is refused here.
 */
function infiniteNumbers(req: Request): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [where, values] of [
    ['query', req.query],
    ['path', req.params],
  ] as const) {
    for (const [key, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
      const items = Array.isArray(value) ? value : [value];
      if (items.some((v) => typeof v === 'number' && !Number.isFinite(v))) {
        issues.push({ code: 'too_big', keys: [], path: [where, key], message: 'must be a finite number' });
      }
    }
  }
  return issues;
}

/** A body the library refused: its report on the body is replaced by the explained one (src/http/body-issues.ts). */
function explainBody(bodyIssues: BodyIssues, operation: OperationSpec, req: Request, err: unknown): void {
  const refusal = err as { status?: number; errors?: ValidatorIssue[] };
  if (refusal?.status !== 400 || !Array.isArray(refusal.errors)) return;
  const onBody = (i: ValidatorIssue) => typeof i.path === 'string' && (i.path === '/body' || i.path.startsWith('/body/'));
  if (!refusal.errors.some(onBody)) return;
  const explained = bodyIssues.explain(operation, req.body);
  if (explained) refusal.errors = [...refusal.errors.filter((i) => !onBody(i)), ...explained];
}

/**
 * Built validators, per spec document and operation: building one compiles its schemas (a few hundred ms of
 * CPU), and they hold no state of the app they serve, so every server in the process (the tests start many)
 * shares them.
 */
const built = new WeakMap<object, Map<string, RequestHandler[]>>();

export function createValidatorFactory(spec: object, options: { validateResponses: boolean }): ValidatorFactory {
  let forSpec = built.get(spec);
  if (!forSpec) built.set(spec, (forSpec = new Map()));
  const cache = forSpec;
  const bodyIssues = new BodyIssues(spec);
  return (operation) => {
    const key = `${operation.operationId} ${options.validateResponses}`;
    let chain: RequestHandler[] | null = null;
    return (req, res, next) => {
      chain ??= cache.get(key) ?? null;
      if (!chain) {
        chain = createValidator(documentFor(spec as Spec, operation), options)
          .filter((mw) => !SKIPPED.has(mw.name))
          .map((mw) => (mw.name === 'metadataMiddleware' ? rememberMetadata(mw) : mw));
        cache.set(key, chain);
      }
      runChain(chain, req, res, (err?: unknown) => {
        if (err) {
          explainBody(bodyIssues, operation, req, err);
          return next(err);
        }
        const issues = infiniteNumbers(req);
        next(issues.length ? badRequest(`Invalid request: ${issues[0]!.path.join('.')} must be a finite number`, issues) : undefined);
      });
    };
  };
}

/** The library's middleware for a whole document (also used directly by the validator tests). */
export function createValidator(spec: object, options: { validateResponses: boolean }): RequestHandler[] {
  return OpenApiValidator.middleware({
    apiSpec: structuredClone(spec) as never,
    // The library always coerces path, query and header strings (they are strings on the wire); this option
    // only governs the JSON body, where a wrong type is a client error, never silently converted.
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, removeAdditional: false, allErrors: true },
    validateResponses: options.validateResponses ? { removeAdditional: false, coerceTypes: false } : false,
    validateSecurity: false,
    validateFormats: true,
    ignoreUndocumented: false,
    // Routing is ours (generated); never let the validator resolve handlers through require().
    operationHandlers: false,
    // No operation takes multipart/form-data (file bytes go to signed transfer URLs); turn multer on with the first one.
    fileUploader: false,
  }) as RequestHandler[];
}

// The one error type handlers throw, and the mapping of every failure to the documented error body.
import type { ErrorRequestHandler } from 'express';
import type { components } from '../../generated/types.ts';
import { errorFormatFor, malformedParam, rawPathOf, type ErrorFormat } from './routes.ts';
import { DomainError, type DomainErrorKind } from '../domain/errors.ts';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ValidationIssue = components['schemas']['ValidationIssue'];

const STATUS_OF: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  LOCKED: 423,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  USAGE_LIMIT_EXCEEDED: 402,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
  PRECONDITION_FAILED: 412,
  IDEMPOTENCY_KEY_REUSED: 422,
};

/** The challenge a 401 carries unless the error names its own: both credentials this API takes. */
export const AUTH_CHALLENGE = 'Bearer realm="api", ApiKey realm="api", header="X-API-Key"';

export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly headers: Record<string, string>;
  constructor(code: ErrorCode, message: string, details?: unknown, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = STATUS_OF[code];
    this.details = details;
    this.headers = headers;
  }
  toBody(): { error: { code: ErrorCode; message: string; details?: unknown } } {
    return { error: { code: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) } };
  }
  /** The pre-v2 shape legacy clients read (`error` is the message). */
  toLegacyBody(): { error: string; code: ErrorCode; details?: unknown } {
    return { error: this.message, code: this.code, ...(this.details === undefined ? {} : { details: this.details }) };
  }
}

export const badRequest = (message: string, details?: ValidationIssue[]) => new ApiError('BAD_REQUEST', message, details);
export const unauthorized = (message = 'A valid API key or access token is required.') => new ApiError('UNAUTHORIZED', message);
export const forbidden = (message: string, details?: unknown) => new ApiError('FORBIDDEN', message, details);
export const notFound = (what = 'Resource') => new ApiError('NOT_FOUND', `${what} not found.`);
export const conflict = (message: string, details?: unknown) => new ApiError('CONFLICT', message, details);
export const notImplemented = (operationId: string) =>
  new ApiError('SERVICE_UNAVAILABLE', `${operationId} is not implemented on this server yet.`);

/** A single validation issue, for handlers that check something the spec cannot express. */
export function invalidField(path: (string | number)[], message: string, code = 'custom'): ApiError {
  return badRequest(message, [{ code, keys: [], path, message }]);
}

interface ValidatorErrorItem {
  path?: string;
  message?: string;
  errorCode?: string;
}

/** express-openapi-validator reports paths like `.query.limit`, `/body/a/0` or `.body.a[0]`. */
function splitPath(raw: string | undefined): (string | number)[] {
  if (!raw) return [];
  return raw
    .replace(/\[(\d+)\]/g, '.$1')
    .split(/[./]/)
    .filter(Boolean)
    .map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
}

const ISSUE_CODES: [RegExp, string][] = [
  [/^additionalProperties/, 'unrecognized_keys'],
  [/^required/, 'invalid_type'],
  [/^type/, 'invalid_type'],
  [/^(minimum|exclusiveMinimum|minLength|minItems|minProperties)/, 'too_small'],
  [/^(maximum|exclusiveMaximum|maxLength|maxItems|maxProperties)/, 'too_big'],
  [/^enum/, 'invalid_enum_value'],
  [/^format/, 'invalid_string'],
  [/^pattern/, 'invalid_string'],
];

export function issueFromValidator(item: ValidatorErrorItem): ValidationIssue {
  const message = item.message ?? 'Invalid value';
  const path = splitPath(item.path);
  // Unknown query parameters come without an errorCode: "Unknown query parameter 'x'".
  const unknownParam = /^Unknown query parameter '(.+)'$/.exec(message);
  if (unknownParam) {
    return { code: 'unrecognized_keys', keys: [unknownParam[1]!], path: ['query'], message: `Unrecognized query parameter: ${unknownParam[1]}` };
  }
  const code = ISSUE_CODES.find(([re]) => re.test(item.errorCode ?? ''))?.[1] ?? 'custom';
  if (code === 'unrecognized_keys') {
    const m = /must NOT have additional properties(?:: '?([^']+)'?)?/.exec(message);
    const key = m?.[1] ?? String(path.at(-1) ?? '');
    const parent = m?.[1] ? path : path.slice(0, -1);
    return { code, keys: key ? [key] : [], path: parent, message: `Unrecognized key: ${key}` };
  }
  if (/must have required property/.test(message) || item.errorCode?.startsWith('required')) {
    return { code: 'invalid_type', keys: [], path, message: `Required: ${message}` };
  }
  return { code, keys: [], path, message };
}

/** The error body in the given format. */
export const errorBody = (error: ApiError, format: ErrorFormat) => (format === 'legacy' ? error.toLegacyBody() : error.toBody());

/** A path parameter whose percent-escapes do not decode (the router's URIError), named when the path is known. */
export function malformedEscape(rawPath: string): ApiError {
  const bad = malformedParam(rawPath);
  const path = bad ? ['path', bad.name] : ['path'];
  const message = bad ? `${bad.name} is not valid percent-encoding` : 'The path is not valid percent-encoding';
  return badRequest(`Invalid request: ${message}`, [{ code: 'invalid_string', keys: [], path, message }]);
}

/**
 * Turns anything thrown into the documented error body, in the format of the request's operation, or, when
 * the failure came before the operation was resolved (routing, a malformed escape, a wrong method), of the
 * operation the path and method name. Unexpected failures are logged, never shown.
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const rawPath = rawPathOf(req.originalUrl);
  // The router's decoding of path parameters throws a URIError marked 400.
  const apiError = err instanceof URIError && (err as { status?: number }).status === 400 ? malformedEscape(rawPath) : toApiError(err);
  if (apiError.status >= 500 && apiError.code === 'INTERNAL_ERROR') {
    req.log?.error({ err }, 'request failed');
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const [k, v] of Object.entries(apiError.headers)) res.setHeader(k, v);
  if (apiError.status === 401 && !res.hasHeader('WWW-Authenticate')) res.setHeader('WWW-Authenticate', AUTH_CHALLENGE);
  const format = (res.locals as { operation?: { errorFormat: ErrorFormat } }).operation?.errorFormat ?? errorFormatFor(req.method, rawPath);
  res.status(apiError.status).json(errorBody(apiError, format));
};

/** How each kind of domain failure reaches a client: the one place domain errors become HTTP errors. */
const CODE_OF_KIND: Record<DomainErrorKind, ErrorCode> = {
  invalid: 'BAD_REQUEST',
  not_found: 'NOT_FOUND',
  forbidden: 'FORBIDDEN',
  conflict: 'CONFLICT',
  too_large: 'PAYLOAD_TOO_LARGE',
  locked: 'LOCKED',
  usage_limit: 'USAGE_LIMIT_EXCEEDED',
  precondition: 'PRECONDITION_FAILED',
  unavailable: 'SERVICE_UNAVAILABLE',
};

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainError) return new ApiError(CODE_OF_KIND[err.kind], err.message, err.details);
  const e = err as { status?: number; statusCode?: number; type?: string; errors?: ValidatorErrorItem[]; message?: string };
  const status = e?.status ?? e?.statusCode;
  // body-parser
  if (e?.type === 'entity.too.large') return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than this server accepts.');
  if (e?.type === 'entity.parse.failed') {
    return badRequest('The request body is not valid JSON.', [{ code: 'invalid_json', keys: [], path: ['body'], message: 'Malformed JSON' }]);
  }
  if (e?.type === 'entity.too.deep') {
    return badRequest(e.message ?? 'The request body is nested too deeply.', [{ code: 'too_big', keys: [], path: ['body'], message: e.message ?? 'Nested too deeply' }]);
  }
  // The client went away (or was cut off) before sending the whole body; nobody reads this answer.
  if (e?.type === 'request.aborted') return badRequest('The request body ended before its declared length.');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The request body encoding is not supported.');
  }
  // express-openapi-validator
  if (Array.isArray(e?.errors)) {
    if (status === 415) return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be sent as application/json.');
    if (status === 413) return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than this server accepts.');
    if (status === 404 || status === 405) return new ApiError('NOT_FOUND', 'No such route.');
    if (status === 400) {
      const details = e.errors.map(issueFromValidator);
      return badRequest(summarize(details), details);
    }
    if (status === 500) return new ApiError('INTERNAL_ERROR', 'The server produced a response that does not match its own API description.');
  }
  return new ApiError('INTERNAL_ERROR', 'An unexpected error occurred.');
}

function summarize(issues: ValidationIssue[]): string {
  const first = issues[0];
  if (!first) return 'Invalid request.';
  const where = first.path.length ? ` at ${first.path.join('.')}` : '';
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return `Invalid request: ${first.message}${where}${more}`;
}

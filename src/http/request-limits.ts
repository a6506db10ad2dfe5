// What the HTTP layer answers when a request never properly arrives: a body that stalls, a request line or
// headers over Node's size limit, a malformed request, or a request/headers timeout. Each gets the documented
// JSON error (in the error format of the operation the path names, when it is known) and the connection is
// closed, instead of Node's bare status line or a reset.
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestHandler } from 'express';
import type { HttpLimits } from '../config.ts';
import { ApiError, errorBody } from './errors.ts';
import { errorFormatFor, matchPath, allowedMethods, rawPathOf, type ErrorFormat } from './routes.ts';

const hasBody = (req: http.IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

const timedOut = () => new ApiError('REQUEST_TIMEOUT', 'The request body stopped arriving before it was complete.');

function sendAndClose(res: http.ServerResponse, error: ApiError, format: ErrorFormat): void {
  const body = JSON.stringify(errorBody(error, format));
  res.statusCode = error.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('Connection', 'close');
  res.end(body, () => res.socket?.destroy());
}

/**
 * Answers 408 when a request body stops arriving for `ms` (a body shorter than its Content-Length would
 * otherwise hold the connection until Node's request timeout). Activity is the socket's byte count, so the
 * body is never read here and nothing changes once it has arrived.
 */
export function bodyTimeout(ms: number): RequestHandler {
  return (req, res, next) => {
    if (ms <= 0 || req.complete || !hasBody(req)) return next();
    const socket = req.socket;
    let seen = socket.bytesRead;
    let idleSince = Date.now();
    const tick = Math.max(10, Math.min(1000, Math.floor(ms / 4)));
    const timer = setInterval(() => {
      if (req.complete || res.headersSent || socket.destroyed) return stop();
      if (socket.bytesRead !== seen) {
        seen = socket.bytesRead;
        idleSince = Date.now();
        return;
      }
      if (Date.now() - idleSince < ms) return;
      stop();
      req.log?.info({ timeoutMs: ms }, 'request body timed out');
      const format = (res.locals as { operation?: { errorFormat: ErrorFormat } }).operation?.errorFormat ?? errorFormatFor(req.method, rawPathOf(req.originalUrl));
      sendAndClose(res, timedOut(), format);
    }, tick);
    timer.unref();
    const stop = () => clearInterval(timer);
    req.once('end', stop);
    req.once('close', stop);
    res.once('close', stop);
    next();
  };
}

/** Fallback for requests no operation took: 405 with `Allow` when the path exists, else 404. */
export const noRoute: RequestHandler = (req, _res, next) => {
  const match = matchPath(rawPathOf(req.originalUrl));
  if (!match) return next(new ApiError('NOT_FOUND', `No route for ${req.method} ${req.path}.`));
  const allow = allowedMethods(match);
  next(new ApiError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${match.template}; use ${allow}.`, { allow: allow.split(', ') }, { Allow: allow }));
};

/** Authenticated (and signed-link) answers are one caller's data: no shared cache may keep them. */
export const privateNoStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'private, no-store');
  next();
};

/** The request line of a raw packet, when it is all there: method and target. */
function requestLineOf(raw: Buffer | undefined): { method: string; target: string } | null {
  if (!raw) return null;
  const head = raw.toString('latin1', 0, Math.min(raw.length, 8192));
  const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r?\n/.exec(head);
  return m ? { method: m[1]!, target: m[2]! } : null;
}

function clientErrorOf(err: NodeJS.ErrnoException): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('HEADERS_TOO_LARGE', 'The request line or headers are larger than this server accepts.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('REQUEST_TIMEOUT', 'The request did not arrive in time.');
    default:
      return new ApiError('BAD_REQUEST', 'The request is not well-formed HTTP.');
  }
}

/**
 * Node's `clientError` (header overflow, request or headers timeout, a parse error): answers the documented
 * JSON error on the socket itself, then closes it. Nothing is written once a response has begun.
 */
export function onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const inflight = (socket as Duplex & { _httpMessage?: http.ServerResponse & { req?: http.IncomingMessage } })._httpMessage;
  if (inflight?.headersSent) {
    socket.destroy();
    return;
  }
  const error = clientErrorOf(err);
  const line = inflight?.req ? { method: inflight.req.method ?? 'GET', target: inflight.req.url ?? '/' } : requestLineOf((err as { rawPacket?: Buffer }).rawPacket);
  const format = line ? errorFormatFor(line.method, rawPathOf(line.target)) : 'standard';
  const body = JSON.stringify(errorBody(error, format));
  socket.end(
    `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\n' +
      'Connection: close\r\n\r\n' +
      body,
    () => socket.destroy(),
  );
}

/** Node's own limits on how long a request may take to arrive, from the configuration. */
export function applyServerTimeouts(server: http.Server, limits: HttpLimits): void {
  server.requestTimeout = limits.requestTimeoutMs;
  server.headersTimeout = limits.headersTimeoutMs;
  server.on('clientError', onClientError);
}

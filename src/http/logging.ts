// One structured log line per request: id, method, path, status, duration. Never a key, token or body.
// A client that goes away (closes a download early, drops the connection mid-body) is not a server error:
// its request still gets its one access line, marked `aborted`, at info level, and nothing at error level.
import { randomUUID } from 'node:crypto';
import pino, { type Logger } from 'pino';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';

declare module 'express-serve-static-core' {
  interface Request {
    log: Logger;
    id: string;
  }
}

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    redact: { paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers["upload-token"]'], censor: '[redacted]' },
  });
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

const ROOT_LOGGER = Symbol('root logger');
const REQUEST_LOGGER = Symbol('request logger');
interface LoggedRequest {
  id: string;
  [ROOT_LOGGER]?: Logger;
  [REQUEST_LOGGER]?: Logger;
}

// `req.log` (the logger with the request's id bound) is made when something first logs through it: most
// requests never do, and a child logger per request was a measurable share of a simple read's CPU.
Object.defineProperty(express.request, 'log', {
  configurable: true,
  get(this: LoggedRequest): Logger {
    return (this[REQUEST_LOGGER] ??= this[ROOT_LOGGER]!.child({ reqId: this.id }));
  },
  set(this: LoggedRequest, log: Logger) {
    this[REQUEST_LOGGER] = log;
  },
});

export function requestLogging(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    req.id = id;
    (req as unknown as LoggedRequest)[ROOT_LOGGER] = logger;
    res.setHeader('X-Request-Id', id);
    // The access line is at info level: below it, a request costs no timing and no listener.
    if (logger.isLevelEnabled('info')) {
      const started = process.hrtime.bigint();
      // 'close' comes once per response, whether it was sent whole ('finish' first) or cut short.
      res.once('close', () => {
        const durationMs = Math.round((Number(process.hrtime.bigint() - started) / 1e6) * 100) / 100;
        // The client's address: the forwarded one when a proxy TRUST_PROXY trusts sent the request. The id
        // first, as the request's own logger writes it.
        const line = { reqId: id, method: req.method, path: req.path, status: res.statusCode, durationMs, client: req.ip };
        if (res.writableFinished) logger.info(line, 'request');
        else logger.info({ ...line, aborted: true, reason: (res.locals as { clientGone?: string }).clientGone ?? 'connection closed' }, 'request aborted by the client');
      });
    }
    next();
  };
}

/** Errors by which a stream or parser reports that the other end went away. */
const CLIENT_GONE_CODES = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

/** True when `err` only says the client disconnected: the request's connection is gone and the error is of that kind. */
export function isClientGone(err: unknown, req: Request, res: Response): boolean {
  const e = err as { code?: string; type?: string; message?: string } | null;
  if (e?.type === 'request.aborted') return true; // body-parser: the client stopped sending mid-body
  const connectionGone = res.destroyed || req.socket?.destroyed === true || req.readableAborted;
  if (!connectionGone) return false;
  return CLIENT_GONE_CODES.has(e?.code ?? '') || e?.message === 'aborted';
}

/**
 * Placed before the error handler: a failure that only means the client left (a streamed download it closed,
 * a body it stopped sending) ends the response quietly; the access line records it. Anything else goes on.
 */
export const clientGoneHandler: ErrorRequestHandler = (err, req, res, next) => {
  if (!isClientGone(err, req, res)) return next(err);
  const e = err as { code?: string; type?: string };
  (res.locals as { clientGone?: string }).clientGone = e?.type === 'request.aborted' ? 'request body aborted' : (e?.code ?? 'connection closed');
  if (!res.destroyed) res.destroy();
};

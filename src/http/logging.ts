// One structured log line per request: id, method, path, status, duration. Never a key, token or body.
import { randomUUID } from 'node:crypto';
import pino, { type Logger } from 'pino';
import type { RequestHandler } from 'express';

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

export function requestLogging(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    req.id = id;
    req.log = logger.child({ reqId: id });
    res.setHeader('X-Request-Id', id);
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      req.log.info({ method: req.method, path: req.path, status: res.statusCode, durationMs: Math.round(durationMs * 100) / 100 }, 'request');
    });
    next();
  };
}

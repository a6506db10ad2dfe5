// Counts and times every request the API listener answers, labelled by the operation the router matched
// ("unmatched" for anything else), so raw paths and ids never become label values.
import type http from 'node:http';
import type { ServerMetrics } from '../ops/metrics.ts';
import { matchedOperation } from './pipeline.ts';
import { rateLimitedBucket } from './rate-limit.ts';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Observes each request on `server`, from its arrival to its response's end (or the client going away). */
export function observeRequests(server: http.Server, metrics: ServerMetrics): void {
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = process.hrtime.bigint();
    res.once('close', () => {
      // Express keeps `locals` on the response itself, so the matched operation is readable here.
      const locals = (res as unknown as { locals?: Record<string, unknown> }).locals;
      const operation = matchedOperation({ locals })?.operationId ?? 'unmatched';
      const method = METHODS.has(req.method ?? '') ? req.method! : 'OTHER';
      const status = res.statusCode;
      metrics.httpRequests.inc({ operation, method, status: String(status) });
      metrics.httpDuration.observe({ operation, method, status_class: `${Math.floor(status / 100)}xx` }, Number(process.hrtime.bigint() - started) / 1e9);
      const bucket = rateLimitedBucket({ locals });
      if (bucket) metrics.rateLimitRejections.inc({ operation, bucket });
    });
  });
}

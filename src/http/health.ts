// Probes for supervisors and load balancers: GET /healthz says the process answers, GET /readyz that it can
// serve (the database answers, every migration is applied, it is not shutting down). They are outside the
// OpenAPI document and answered before the Express app: no key, no rate limit, no access-log line per poll
// (a probe every second would flood the log), and nothing in the body beyond a status word.
import type http from 'node:http';

export type ProbeAnswerer = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

const PROBE_PATHS = new Set(['/healthz', '/readyz']);

/**
 * Answers a GET or HEAD of /healthz or /readyz and returns true; returns false for any other request.
 * `ready` is asked on each /readyz (a throw counts as not ready). `answered` hears of each answer (the server
 * logs it at debug level only).
 */
export function probeAnswerer(ready: () => Promise<boolean>, answered?: (path: string, status: number) => void): ProbeAnswerer {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = (req.url ?? '').split('?', 1)[0]!;
    if (!PROBE_PATHS.has(path)) return false;
    const answer = (status: number) => {
      send(res, status, status === 200 ? 'ok' : 'unavailable');
      answered?.(path, status);
    };
    if (path === '/healthz') answer(200);
    else ready().then((yes) => answer(yes ? 200 : 503), () => answer(503));
    return true;
  };
}

function send(res: http.ServerResponse, status: number, word: string): void {
  if (res.destroyed) return;
  const body = JSON.stringify({ status: word });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

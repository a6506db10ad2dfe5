// Every operation, fed malformed input: random path segments, undeclared or wrongly typed query values and
// random JSON bodies. Whatever arrives, the answer is a 4xx in the documented error shape, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { OPERATIONS } from '../generated/operations.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let workflowId: string;
/** Real resources the schema-shaped fuzz aims at, so handlers past the lookup see its input. */
const real: Record<string, string> = {};
beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '10000000', RATE_LIMIT_FREE_SYNC: '10000000', RATE_LIMIT_FREE_ASYNC: '10000000' });
  const created = await s.call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'fuzz target' });
  workflowId = created.body.data.id;
  real.workflowId = workflowId;
  real.workspaceId = s.workspaceId;
  const file = await s.call('POST', '/api/v2/files', { workspaceId: s.workspaceId, name: 'fuzz.txt', content: 'line one\nline two\n' });
  real.fileId = file.body.data.id;
  await s.call('POST', `/api/v2/workflows/${workflowId}/deploy`, {});
  const run = await s.call('POST', `/api/v2/workflows/${workflowId}/execute`, { input: {} });
  real.runId = run.body.data.runId;
  real.jobId = run.body.data.runId;
  real.version = '1';
  real.blockId = 'function';
});
afterAll(() => s.stop());

/** Percent-escapes that do not decode, sent as they are (not re-encoded): truncated, invalid hex, bad UTF-8. */
const MALFORMED_ESCAPES = ['%E0%A4%A', '%', '%zz', 'a%2', '%C0%AF', '%ED%A0%80', '%FF', 'ok%E2%82'];
const RAW = new Set(MALFORMED_ESCAPES);
const segment = fc.oneof(
  fc.constantFrom(...MALFORMED_ESCAPES),
  fc.constant('00000000-0000-4000-8000-000000000000'),
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
  fc.constant('..'),
  fc.constant('x'.repeat(300)),
);
const queryValue = fc.oneof(fc.string({ maxLength: 30 }), fc.constant('-1'), fc.constant('1e309'), fc.constant('true'), fc.constant(''));
const jsonBody = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.dictionary(fc.constantFrom('workspaceId', 'name', 'limit', 'input', 'path', 'fileIds', 'state', 'x'), fc.jsonValue({ maxDepth: 2 })));

const ops = Object.values(OPERATIONS);

describe('malformed input never reaches a 500', () => {
  it('random path segments, query values and bodies on every operation', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.array(segment, { minLength: 3, maxLength: 3 }), fc.dictionary(fc.constantFrom('workspaceId', 'limit', 'cursor', 'sortBy', 'scope', 'bogus'), queryValue), fc.option(jsonBody), fc.boolean(), async (oi, segments, query, body, realWorkspace) => {
        const op = ops[oi % ops.length]!;
        let i = 0;
        const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
          if (name === 'workspaceId' && realWorkspace) return s.workspaceId;
          if (name === 'workflowId' && realWorkspace) return workflowId;
          const seg = segments[i++ % segments.length]!;
          return RAW.has(seg) ? seg : encodeURIComponent(seg);
        });
        if (realWorkspace && op.workspaceIdIn === 'query') query.workspaceId = s.workspaceId;
        const qs = new URLSearchParams(query).toString();
        const init: RequestInit = { method: op.method.toUpperCase(), headers: {} };
        if (body !== null && op.method !== 'get' && op.method !== 'head') {
          // With a real workspace in the body, handlers get past authorization and meet the rest of the input.
          if (realWorkspace && body && typeof body === 'object' && !Array.isArray(body)) (body as Record<string, unknown>).workspaceId = s.workspaceId;
          init.body = JSON.stringify(body);
          (init.headers as Record<string, string>)['content-type'] = 'application/json';
        }
        const res = await s.request(`${path}${qs ? `?${qs}` : ''}`, init);
        const text = op.method === 'head' ? '' : await res.text();
        expect(`${op.operationId} ${res.status} ${text.slice(0, 300)}`).not.toMatch(/^\S+ 5\d\d/);
        if (res.status >= 400 && op.method !== 'head') {
          const parsed = JSON.parse(text);
          // A legacy operation answers in its own shape; a mangled path may reach no operation at all.
          if (op.errorFormat === 'legacy' && typeof parsed.error === 'string') expect(parsed).toEqual(expect.objectContaining({ code: expect.any(String) }));
          else expect(parsed.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }));
        }
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 600) },
    );
  });
});

import { arbitraryFor, requestSchemas } from './support/schema-arbitrary.ts';

describe('schema-shaped input reaches the handlers and never a 500', () => {
  it('bodies and queries generated from each operation\'s own schemas, against real resources', async () => {
    const statuses = new Map<number, number>();
    const withInput = ops.filter((o) => o.method !== 'head');
    await fc.assert(
      fc.asyncProperty(
        fc.nat().chain((oi) => {
          const op = withInput[oi % withInput.length]!;
          const { body, query } = requestSchemas(op.path, op.method);
          const queryArb = fc.record(
            Object.fromEntries(query.map((q) => [q.name, arbitraryFor(q.schema)])),
            { requiredKeys: query.filter((q) => q.required).map((q) => q.name) as never[] },
          );
          // Now and then one path parameter carries a malformed escape instead of its real value.
          const mangle = fc.option(fc.tuple(fc.nat(), fc.constantFrom(...MALFORMED_ESCAPES)), { freq: 8 });
          return fc.tuple(fc.constant(op), body ? arbitraryFor(body) : fc.constant(undefined), queryArb, mangle);
        }),
        async ([op, body, query, mangle]) => {
          const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
          const mangled = mangle && names.length ? names[mangle[0] % names.length] : undefined;
          const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === mangled ? mangle![1] : encodeURIComponent(real[name] ?? 'x')));
          const q = { ...(query as Record<string, unknown>) };
          if ('workspaceId' in q || op.workspaceIdIn === 'query') q.workspaceId = s.workspaceId;
          const qs = new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString();
          const b = body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as Record<string, unknown>) } : body;
          if (b && typeof b === 'object' && !Array.isArray(b) && 'workspaceId' in (b as object)) (b as Record<string, unknown>).workspaceId = s.workspaceId;
          const init: RequestInit = { method: op.method.toUpperCase() };
          if (b !== undefined) {
            init.body = JSON.stringify(b);
            init.headers = { 'content-type': 'application/json' };
          }
          const res = await s.request(`${path}${qs ? `?${qs}` : ''}`, init);
          const text = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expect(`${op.operationId} ${res.status} ${text.slice(0, 400)}`).not.toMatch(/^\S+ 5\d\d/);
          if (mangled) expect(`${op.operationId} ${res.status}`).toBe(`${op.operationId} 400`);
        },
      ),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 400) },
    );
    // The generated input must get past validation often enough to exercise the handlers.
    const ok = [...statuses].filter(([code]) => code < 300).reduce((n, [, c]) => n + c, 0);
    if (process.env.FUZZ_RUNS) console.info('statuses', Object.fromEntries(statuses));
    expect(ok).toBeGreaterThan(0);
  }, 180_000);
});

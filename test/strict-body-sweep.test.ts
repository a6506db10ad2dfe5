// Strict validation over every operation's JSON body: for each typed property (and each typed property of an
// object property) the spec declares, a value of the wrong type that a coercing validator would convert
// ("true" for a boolean, "7" for a number, 42 for a string) is a 400 invalid_type at that property.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import spec from '../generated/openapi.json' with { type: 'json' };
import { OPERATIONS } from '../generated/operations.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type Schema = Record<string, any>;

function deref(node: any): any {
  let current = node;
  while (current && typeof current.$ref === 'string') {
    current = current.$ref
      .slice(2)
      .split('/')
      .map((seg: string) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((acc: any, key: string) => acc?.[key], spec);
  }
  return current;
}

/** The JSON types a schema allows, or null when it does not say (no type, or an untyped alternative). */
function typesOf(input: Schema): Set<string> | null {
  const schema = deref(input) ?? {};
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) {
    const all = new Set<string>();
    for (const alt of alternatives) {
      const t = typesOf(alt);
      if (!t) return null;
      for (const x of t) all.add(x);
    }
    return all;
  }
  if (schema.type === undefined) return null;
  const types = new Set<string>(Array.isArray(schema.type) ? schema.type : [schema.type]);
  if (types.has('integer')) types.add('number');
  return types;
}

/** A wrongly typed value a coercing validator would have accepted, or null when the schema takes any scalar. */
function wrongValue(types: Set<string>): unknown {
  if (!types.has('string')) return types.has('boolean') && !types.has('number') ? 'true' : '7';
  if (!types.has('number')) return 42;
  if (!types.has('boolean')) return true;
  return null;
}

interface Case {
  operationId: string;
  method: string;
  path: string;
  property: string[];
  body: Record<string, unknown>;
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const op of Object.values(OPERATIONS)) {
    if (op.streamBody || !op.bodyContentTypes?.includes('application/json')) continue;
    const operation = (spec as any).paths[op.path][op.method];
    const schema = deref(deref(operation.requestBody)?.content?.['application/json']?.schema);
    if (!schema?.properties) continue;
    for (const [name, propSchema] of Object.entries<Schema>(schema.properties)) {
      const types = typesOf(propSchema);
      if (types && !types.has('object') && !types.has('array')) {
        const value = wrongValue(types);
        if (value !== null) out.push({ operationId: op.operationId, method: op.method, path: op.path, property: [name], body: { [name]: value } });
        continue;
      }
      // One level down: typed properties of an object property.
      const inner = deref(propSchema);
      if (inner?.type !== 'object' || !inner.properties) continue;
      for (const [sub, subSchema] of Object.entries<Schema>(inner.properties)) {
        const subTypes = typesOf(subSchema);
        if (!subTypes || subTypes.has('object') || subTypes.has('array')) continue;
        const value = wrongValue(subTypes);
        if (value !== null) out.push({ operationId: op.operationId, method: op.method, path: op.path, property: [name, sub], body: { [name]: { [sub]: value } } });
      }
    }
  }
  return out;
}

let s: TestServer;
const real: Record<string, string> = {};
beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '10000000', RATE_LIMIT_FREE_SYNC: '10000000', RATE_LIMIT_FREE_ASYNC: '10000000' });
  const created = await s.call('POST', '/api/v2/workflows', { workspaceId: s.workspaceId, name: 'sweep target' });
  real.workflowId = created.body.data.id;
  real.workspaceId = s.workspaceId;
  const file = await s.call('POST', '/api/v2/files', { workspaceId: s.workspaceId, name: 'sweep.txt', content: 'x' });
  real.fileId = file.body.data.id;
  real.version = '1';
});
afterAll(() => s.stop());

describe('a wrongly typed body property is 400 invalid_type on every operation', () => {
  const all = cases();
  it('the sweep covers the operations with typed bodies', () => {
    expect(new Set(all.map((c) => c.operationId)).size).toBeGreaterThan(20);
  });
  it.each(all.map((c) => [`${c.operationId} ${c.property.join('.')}`, c] as const))('%s', async (_name, c) => {
    const url = c.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(real[name] ?? 'x'));
    const res = await s.call(c.method.toUpperCase(), url, c.body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.details, res.text).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'invalid_type', path: ['body', ...c.property] })]));
  });
});

// fast-check arbitraries for the JSON schemas of the bundled spec: values that mostly satisfy the schema, so
// fuzzing reaches the handlers' own logic rather than stopping at the validator.
import fc from 'fast-check';
import spec from '../../generated/openapi.json' with { type: 'json' };

type Schema = Record<string, any>;

function deref(node: any): any {
  let current = node;
  while (current && typeof current.$ref === 'string') {
    current = current.$ref
      .slice(2)
      .split('/')
      .map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((acc: any, key: string) => acc?.[key], spec);
  }
  return current;
}

const word = fc.constantFrom('a', 'Report', 'x y', 'ünï', '/f1', '/f1/f2', '..', 'wf_x', '0', '💥', 'true', ' ');

function stringOf(schema: Schema): fc.Arbitrary<string> {
  if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'email') return fc.constantFrom('a@example.com', 'fuzz+1@example.org');
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, 60);
  return fc.oneof(word, fc.string({ minLength: min, maxLength: Math.max(min, max) })).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? Infinity));
}

export function arbitraryFor(input: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(input) ?? {};
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((s: Schema) => arbitraryFor(s, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  if (depth > 4) return fc.constant(null);
  switch (type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -5, -1e6), max: Math.min(schema.maximum ?? 1000, 1e6) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(arbitraryFor(schema.items ?? {}, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'object': {
      const props: Record<string, Schema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) record[k] = arbitraryFor(v, depth + 1);
      if (Object.keys(record).length === 0) return fc.dictionary(fc.constantFrom('a', 'b'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 });
      return fc.record(record, { requiredKeys: [...required].filter((k) => k in record) as never[] });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** The JSON request body schema and the query parameters of an operation. */
export function requestSchemas(path: string, method: string): { body: Schema | null; query: { name: string; required: boolean; schema: Schema }[] } {
  const op = (spec as any).paths[path][method];
  const body = op.requestBody ? deref(op.requestBody).content?.['application/json']?.schema ?? null : null;
  const query = (op.parameters ?? [])
    .map((p: any) => deref(p))
    .filter((p: any) => p.in === 'query')
    .map((p: any) => ({ name: p.name, required: Boolean(p.required), schema: p.schema ?? {} }));
  return { body, query };
}

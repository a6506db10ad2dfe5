// The document each operation's request validator is built from (src/http/validator.ts): its own path and
// only the components it reaches, with nothing it references left out.
import { describe, expect, it } from 'vitest';
import spec from '../generated/openapi.json' with { type: 'json' };
import { OPERATIONS } from '../generated/operations.ts';
import { documentFor } from '../src/http/validator.ts';

const operations = Object.values(OPERATIONS);

describe('per-operation validator documents', () => {
  it('resolve every reference they hold, for every operation', () => {
    for (const op of operations) {
      const doc = documentFor(spec as never, op) as any;
      expect(Object.keys(doc.paths)).toEqual([op.path]);
      for (const [, ref] of JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)) {
        const [, , kind, name] = ref!.split('/');
        expect(doc.components[kind!]?.[name!], `${op.operationId}: ${ref}`).toBeDefined();
      }
    }
  });

  it('leave out the schemas an operation never reaches', () => {
    const all = Object.keys((spec as any).components.schemas).length;
    const meta = documentFor(spec as never, operations.find((op) => op.operationId === 'getMeta')!) as any;
    expect(Object.keys(meta.components.schemas).length).toBeLessThan(all / 2);
    expect(meta.components.securitySchemes).toEqual((spec as any).components.securitySchemes);
  });
});

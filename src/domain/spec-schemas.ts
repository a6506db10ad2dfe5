// Checks values against the spec's own component schemas outside a request (ajv, draft 2020-12 as OpenAPI
// 3.1 uses), for data that reaches the store by other paths than a validated request body: an imported
// document after normalization, for instance. One compiled validator per schema, built on first use.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import spec from '../../generated/openapi.json' with { type: 'json' };

export interface SchemaIssue {
  path: (string | number)[];
  message: string;
}

const SPEC_ID = 'urn:workspace-automation:openapi';
let ajv: Ajv2020 | null = null;
const compiled = new Map<string, ValidateFunction>();

function validatorFor(component: string): ValidateFunction {
  let validate = compiled.get(component);
  if (!validate) {
    if (!ajv) {
      // strict off: the document carries OpenAPI keywords (descriptions, x- extensions) that are not JSON Schema.
      ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
      (addFormats as unknown as (a: Ajv2020) => void)(ajv);
      ajv.addSchema({ $id: SPEC_ID, components: (spec as { components: unknown }).components });
    }
    const found = ajv.getSchema(`${SPEC_ID}#/components/schemas/${component}`);
    if (!found) throw new Error(`The spec has no schema ${component}`);
    validate = found;
    compiled.set(component, validate);
  }
  return validate;
}

/** The problems `value` has as an instance of components.schemas[component]; empty when it conforms. */
export function checkAgainstSpec(component: string, value: unknown): SchemaIssue[] {
  const validate = validatorFor(component);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => ({
    path: e.instancePath.split('/').filter(Boolean).map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~'))),
    message: e.keyword === 'additionalProperties' ? `must not have the property "${(e.params as { additionalProperty: string }).additionalProperty}"` : (e.message ?? 'is invalid'),
  }));
}

// Explains why a request body failed its schema in the terms a person needs, where the validator library's own
// report is noise: an alternative (anyOf/oneOf) that fails is reported for the one branch the value is shaped
// like instead of every branch's complaints ("must have required property 'all'" and 9 more); an enum names the
// value it refused; a pattern with an `x-pattern-hint` in the spec answers with that hint instead of the raw
// regular expression. The body is checked again here (ajv, draft 2020-12, the whole spec so $refs resolve)
// only after the library refused it, so the common path costs nothing.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** A failure in the shape the validator library reports (path into `{body, query, ...}`, message, error code). */
export interface ValidatorIssue {
  path: string;
  message: string;
  errorCode: string;
}

type Schema = Record<string, unknown>;
const SPEC_ID = 'urn:workspace-automation:request-bodies';

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const escapeSegment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const within = (path: string, base: string) => path === base || path.startsWith(base + '/');

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function typeFits(declared: unknown, value: unknown): boolean {
  if (declared === undefined) return true;
  const types = Array.isArray(declared) ? declared : [declared];
  const actual = jsonType(value);
  return types.some((t) => t === actual || (t === 'integer' && typeof value === 'number' && Number.isInteger(value)));
}

export class BodyIssues {
  private readonly spec: Schema;
  private ajv: Ajv2020 | null = null;
  /** Where each schema object sits in the spec (a JSON pointer), to find an alternative's branches again. */
  private readonly pointers = new WeakMap<object, string>();
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(spec: object) {
    this.spec = spec as Schema;
  }

  /**
   * The body's failures for the operation at `path` and `method`, each at its path under `/body`; null when the
   * operation has no JSON body schema or this check finds nothing to add (the library's report then stands).
   */
  explain(operation: { path: string; method: string }, body: unknown): ValidatorIssue[] | null {
    const pointer = `/paths/${escapeSegment(operation.path)}/${operation.method}/requestBody/content/application~1json/schema`;
    if (!this.at(pointer)) return null;
    const issues = this.check(pointer, body, '/body');
    return issues.length > 0 ? issues : null;
  }

  private setUp(): Ajv2020 {
    if (this.ajv) return this.ajv;
    // strict off: the document carries OpenAPI keywords (descriptions, x- extensions) that are not JSON Schema.
    const ajv = new Ajv2020({ strict: false, allErrors: true, verbose: true, validateFormats: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    ajv.addSchema({ ...this.spec, $id: SPEC_ID });
    const index = (node: unknown, pointer: string) => {
      if (Array.isArray(node)) node.forEach((child, i) => index(child, `${pointer}/${i}`));
      else if (isObject(node) && !this.pointers.has(node)) {
        this.pointers.set(node, pointer);
        for (const [key, child] of Object.entries(node)) index(child, `${pointer}/${escapeSegment(key)}`);
      }
    };
    index(this.spec, '');
    this.ajv = ajv;
    return ajv;
  }

  private at(pointer: string): Schema | undefined {
    let node: unknown = this.spec;
    for (const raw of pointer.split('/').slice(1)) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      node = Array.isArray(node) ? node[Number(key)] : isObject(node) ? node[key] : undefined;
      if (node === undefined) return undefined;
    }
    return isObject(node) ? node : undefined;
  }

  /** The pointer of the schema a `$ref` chain starting at `pointer` ends on. */
  private deref(pointer: string): string {
    for (let i = 0; i < 32; i++) {
      const ref = this.at(pointer)?.$ref;
      if (typeof ref !== 'string' || !ref.startsWith('#/')) return pointer;
      pointer = ref.slice(1);
    }
    return pointer;
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      const fragment = pointer.split('/').map(encodeURIComponent).join('/');
      validate = this.setUp().getSchema(`${SPEC_ID}#${fragment}`);
      if (!validate) throw new Error(`No schema at ${pointer}`);
      this.validators.set(pointer, validate);
    }
    return validate;
  }

  /**
   * The branch of the alternative at `pointer` that `value` is shaped like: never one of another type or whose
   * constant (discriminator) properties say otherwise; else the one whose required and declared keys it has most.
   */
  private branchFor(pointer: string, keyword: 'anyOf' | 'oneOf', value: unknown): string | undefined {
    const branches = this.at(pointer)?.[keyword];
    if (!Array.isArray(branches)) return undefined;
    let best: { pointer: string; score: number } | undefined;
    branches.forEach((_, i) => {
      const branchPointer = this.deref(`${pointer}/${keyword}/${i}`);
      const branch = this.at(branchPointer);
      if (!branch || !typeFits(branch.type, value)) return;
      let score = 0;
      if (isObject(value)) {
        const declared = isObject(branch.properties) ? branch.properties : {};
        for (const [key, v] of Object.entries(value)) {
          const property = declared[key];
          if (!isObject(property)) {
            if (branch.additionalProperties === false) score -= 1;
            continue;
          }
          const fixed = 'const' in property ? [property.const] : Array.isArray(property.enum) && property.enum.length === 1 ? property.enum : null;
          if (fixed && !fixed.includes(v)) return;
          score += fixed ? 10 : 1;
        }
        const required = Array.isArray(branch.required) ? (branch.required as string[]) : [];
        for (const key of required) score += key in value ? 2 : -2;
      }
      if (!best || score > best.score) best = { pointer: branchPointer, score };
    });
    return best?.pointer;
  }

  private check(pointer: string, value: unknown, at: string): ValidatorIssue[] {
    const validate = this.validator(pointer);
    if (validate(value)) return [];
    let errors: ErrorObject[] = [...(validate.errors ?? [])];
    const explained: ValidatorIssue[] = [];
    // Outermost alternatives first: an inner one is handled inside the branch chosen for its parent.
    const alternatives = errors
      .filter((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && !(e.params as { passingSchemas?: unknown }).passingSchemas)
      .sort((a, b) => a.instancePath.split('/').length - b.instancePath.split('/').length);
    for (const alt of alternatives) {
      if (!errors.includes(alt)) continue;
      const altPointer = this.pointers.get(alt.parentSchema as object);
      const branch = altPointer && this.branchFor(altPointer, alt.keyword as 'anyOf' | 'oneOf', alt.data);
      if (!branch) continue; // no branch fits its shape: every branch's complaint stays
      const inBranch = this.check(branch, alt.data, at + alt.instancePath);
      if (inBranch.length === 0) continue;
      errors = errors.filter((e) => !within(e.instancePath, alt.instancePath));
      explained.push(...inBranch);
    }
    return [...explained, ...errors.map((e) => issueOf(e, at))];
  }
}

function issueOf(e: ErrorObject, at: string): ValidatorIssue {
  const params = e.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[]; pattern?: string };
  const tail = params.missingProperty ?? params.additionalProperty;
  const path = at + e.instancePath + (tail !== undefined ? `/${escapeSegment(tail)}` : '');
  let message = e.message ?? 'is invalid';
  if (e.keyword === 'enum') message = `${JSON.stringify(e.data)} is not one of the allowed values: ${(params.allowedValues ?? []).map(String).join(', ')}`;
  if (e.keyword === 'pattern') {
    const hint = (e.parentSchema as Schema | undefined)?.['x-pattern-hint'];
    if (typeof hint === 'string') message = `${JSON.stringify(e.data)} does not fit: ${hint}`;
  }
  return { path, message, errorCode: `${e.keyword}.openapi.validation` };
}

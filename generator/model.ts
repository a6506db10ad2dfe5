// Reads the bundled OpenAPI document into the flat operation model the templates render.
// Every per-operation policy lives in the spec as an x- extension; this is the one place that reads them.

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head';
const METHODS: HttpMethod[] = ['get', 'head', 'post', 'put', 'patch', 'delete'];
const ROLES = ['read', 'write', 'admin'] as const;
const PLANS = ['free', 'pro', 'team', 'max', 'enterprise'] as const;
const SCOPES = ['api:read', 'api:write'] as const;

export interface ParamModel {
  name: string;
  required: boolean;
}

export interface OperationModel {
  operationId: string;
  method: HttpMethod;
  path: string;
  expressPath: string;
  tag: string;
  module: string;
  summary: string;
  scope: (typeof SCOPES)[number] | null;
  minRole: (typeof ROLES)[number] | null;
  workspaceIdIn: 'path' | 'query' | 'body' | null;
  rejectsWorkspaceKeys: boolean;
  /** `x-idempotent`: an `Idempotency-Key` header makes a retry replay the first answer (POST only). */
  idempotent: boolean;
  rateBucket: 'api' | 'execution';
  /** `x-etag`: the operation reads (answers `ETag`) or conditionally writes (honours `If-Match`) a document. */
  etag: 'read' | 'write' | null;
  errorFormat: 'standard' | 'legacy';
  plans: string[] | null;
  public: boolean;
  pathParams: ParamModel[];
  queryParams: ParamModel[];
  headerParams: ParamModel[];
  headerNames: string[];
  /** `stream`: no JSON media type, so the handler reads the raw request stream. */
  body: { required: boolean; contentTypes: string[]; stream: boolean } | null;
  successStatus: number;
  /** Every 2xx status the operation declares (e.g. 200 and 206 for a ranged download). */
  /** Each success status with what its body may be: JSON, a stream (any other media type), or nothing. */
  successResponses: { status: number; json: boolean; stream: boolean }[];
  successContentType: string | null;
  /** The success response is not JSON (a file or archive): the handler returns a stream. */
  isList: boolean;
}

type Doc = Record<string, any>;

/** Follows a local `#/...` reference inside the bundled document. */
export function deref<T = any>(doc: Doc, node: any): T {
  let current = node;
  const seen = new Set<string>();
  while (current && typeof current === 'object' && typeof current.$ref === 'string') {
    const ref: string = current.$ref;
    if (!ref.startsWith('#/') || seen.has(ref)) throw new Error(`Unresolvable reference ${ref}`);
    seen.add(ref);
    current = ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((acc: any, key) => acc?.[key], doc);
  }
  return current as T;
}

export function tagModule(tag: string): string {
  return tag
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((s) => s.toLowerCase())
    .join('-');
}

/** Collects the problems that make an operation unusable for the generator, one message each. */
export function buildModel(doc: Doc): { operations: OperationModel[]; problems: string[] } {
  const problems: string[] = [];
  const operations: OperationModel[] = [];
  const seenIds = new Set<string>();

  for (const [path, rawItem] of Object.entries<any>(doc.paths ?? {})) {
    const item = deref(doc, rawItem);
    const shared: any[] = item.parameters ?? [];
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const fail = (msg: string) => problems.push(`${where}: ${msg}`);

      const operationId: string = op.operationId;
      if (!operationId || !/^[a-z][A-Za-z0-9]*$/.test(operationId)) fail('needs a camelCase operationId');
      if (seenIds.has(operationId)) fail(`duplicate operationId ${operationId}`);
      seenIds.add(operationId);
      if (!Array.isArray(op.tags) || op.tags.length !== 1) fail('needs exactly one tag');
      if (!op.description) fail('needs a description');

      const security: any[] | undefined = op.security;
      if (!Array.isArray(security)) fail('needs an explicit security list');
      const isPublic = Array.isArray(security) && security.length === 0;
      const oauth = security?.find((s) => s.oauth2)?.oauth2 as string[] | undefined;
      let scope: OperationModel['scope'] = null;
      if (!isPublic) {
        if (!oauth || oauth.length !== 1 || !SCOPES.includes(oauth[0] as any)) {
          fail('security must name exactly one OAuth scope (api:read or api:write)');
        } else scope = oauth[0] as OperationModel['scope'];
        if (!security?.some((s) => s.apiKey)) fail('security must accept apiKey');
      }

      const minRole = op['x-min-role'] ?? null;
      if (minRole !== null && !ROLES.includes(minRole)) fail(`x-min-role must be one of ${ROLES.join(', ')}`);
      const workspaceIdIn = op['x-workspace-id'] ?? null;
      if (workspaceIdIn !== null && !['path', 'query', 'body'].includes(workspaceIdIn)) {
        fail('x-workspace-id must be path, query or body');
      }
      if (workspaceIdIn !== null && minRole === null) fail('x-workspace-id needs x-min-role');
      const rateBucket = op['x-rate-bucket'];
      if (!['api', 'execution'].includes(rateBucket)) fail('x-rate-bucket must be api or execution');
      const plans = op['x-plans'] ?? null;
      if (plans !== null && (!Array.isArray(plans) || plans.some((p: string) => !PLANS.includes(p as any)))) {
        fail(`x-plans must list plans from ${PLANS.join(', ')}`);
      }
      const errorFormat = op['x-error-format'] ?? 'standard';
      if (!['standard', 'legacy'].includes(errorFormat)) fail('x-error-format must be standard or legacy');
      const etag = op['x-etag'] ?? null;
      if (etag !== null && etag !== 'read' && etag !== 'write') fail('x-etag must be read or write');
      const rejects = op['x-rejects-workspace-keys'] ?? false;
      if (typeof rejects !== 'boolean') fail('x-rejects-workspace-keys must be a boolean');

      const params = [...shared, ...(op.parameters ?? [])].map((p) => deref(doc, p));
      const idempotent = op['x-idempotent'] ?? false;
      if (typeof idempotent !== 'boolean') fail('x-idempotent must be a boolean');
      const declaresKey = params.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key');
      if (idempotent === true) {
        if (method !== 'post') fail('x-idempotent applies to POST operations only');
        if (!declaresKey) fail('x-idempotent needs the Idempotency-Key header (components/parameters/IdempotencyKey)');
        for (const s of ['409', '422']) if (!op.responses?.[s]) fail(`x-idempotent needs a ${s} response (request in progress, key reused)`);
      } else if (declaresKey) fail('declares the Idempotency-Key header but not x-idempotent: true');
      const byIn = (where: string): ParamModel[] =>
        params.filter((p) => p.in === where).map((p) => ({ name: p.name, required: Boolean(p.required) }));
      const pathParams = byIn('path');
      const declared = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const name of declared) {
        if (!pathParams.some((p) => p.name === name)) fail(`path parameter {${name}} is not declared`);
      }
      if (workspaceIdIn === 'path' && !pathParams.some((p) => p.name === 'workspaceId')) {
        fail('x-workspace-id is path but there is no workspaceId path parameter');
      }
      if (workspaceIdIn === 'query' && !byIn('query').some((p) => p.name === 'workspaceId' && p.required)) {
        fail('x-workspace-id is query but there is no required workspaceId query parameter');
      }

      let body: OperationModel['body'] = null;
      if (op.requestBody) {
        const rb = deref(doc, op.requestBody);
        const contentTypes = Object.keys(rb.content ?? {}).sort();
        body = { required: Boolean(rb.required), contentTypes, stream: !contentTypes.some((t) => /json$/.test(t)) };
        if (idempotent === true && body.stream) fail('x-idempotent needs a JSON request body (a streamed body cannot be fingerprinted)');
        for (const ct of contentTypes) {
          const schema = deref(doc, rb.content[ct].schema);
          if (ct === 'application/json' && schema?.type === 'object' && !isClosed(schema)) {
            fail('JSON request body must be closed (additionalProperties: false or unevaluatedProperties: false)');
          }
        }
        if (workspaceIdIn === 'body') {
          const schema = deref(doc, rb.content?.['application/json']?.schema);
          if (!schema?.required?.includes('workspaceId')) fail('x-workspace-id is body but workspaceId is not a required body field');
        }
      } else if (workspaceIdIn === 'body') fail('x-workspace-id is body but there is no request body');

      for (const where of emptyObjects(doc, [op.requestBody, ...Object.values(op.responses ?? {})])) {
        fail(`${where}: an object schema with neither properties nor additionalProperties types as an empty object in clients; declare additionalProperties: true for a free-form object`);
      }

      const statuses = Object.keys(op.responses ?? {});
      const success = statuses.filter((s) => /^2\d\d$/.test(s)).sort();
      if (success.length === 0) fail('needs a 2xx response');
      for (const s of statuses) {
        const resp = deref(doc, op.responses[s]);
        // A success may carry no body (204, HEAD, an upload part's 200 with only an ETag), nor may a 304; errors always have one.
        if (!resp.content && !/^2/.test(s) && s !== '304' && method !== 'head') fail(`response ${s} needs a schema`);
      }
      if (etag !== null) {
        const headerNames = params.filter((p) => p.in === 'header').map((p) => String(p.name).toLowerCase());
        const declaresETag = (status: string) => Object.keys(deref(doc, op.responses?.[status] ?? {}).headers ?? {}).some((h) => h.toLowerCase() === 'etag');
        if (etag === 'write') {
          if (!headerNames.includes('if-match')) fail('x-etag: write needs the IfMatch header parameter');
          if (!statuses.includes('412')) fail('x-etag: write needs a 412 response');
          if (method !== 'delete' && !success.every(declaresETag)) fail('x-etag: write needs an ETag header on its success responses');
        } else {
          if (headerNames.includes('if-match')) fail('x-etag: read takes no If-Match');
          if (!success.every(declaresETag)) fail('x-etag: read needs an ETag header on its success responses');
        }
        // On a read a matching If-None-Match is a 304; on a write (create-only with `*`) it is the 412.
        if (etag === 'read' && headerNames.includes('if-none-match') !== statuses.includes('304')) fail('If-None-Match and a 304 response go together');
        if (etag === 'write' && statuses.includes('304')) fail('a write answers no 304');
      } else if (params.some((p) => p.in === 'header' && /^if-(none-)?match$/i.test(String(p.name)))) {
        fail('If-Match and If-None-Match need x-etag');
      }
      for (const s of ['400', '401', '429', '500']) {
        if (!isPublic && !statuses.includes(s)) fail(`needs a ${s} response`);
      }
      const successStatus = Number(success[0] ?? 200);
      const successResp = deref(doc, op.responses[String(successStatus)] ?? {});
      const successContentType = Object.keys(successResp.content ?? {})[0] ?? null;
      const successSchema = successContentType ? deref(doc, successResp.content[successContentType].schema) : null;
      const isList = Boolean(successSchema?.properties?.nextCursor) && deref(doc, successSchema?.properties?.data)?.type === 'array';

      const tag = op.tags?.[0] ?? 'Untagged';
      operations.push({
        operationId,
        method,
        path,
        expressPath: path.replace(/\{([^}]+)\}/g, ':$1'),
        tag,
        module: tagModule(tag),
        summary: op.summary ?? operationId,
        scope,
        minRole,
        workspaceIdIn,
        rejectsWorkspaceKeys: rejects,
        idempotent: idempotent === true,
        rateBucket,
        etag,
        errorFormat,
        plans,
        public: isPublic,
        pathParams,
        queryParams: byIn('query'),
        headerParams: byIn('header'),
        headerNames: byIn('header').map((p) => p.name.toLowerCase()),
        body,
        successStatus,
        successResponses: success.map((status) => {
          const types = Object.keys(deref(doc, op.responses[status]).content ?? {});
          // One JSON document is `application/json` or a `+json` type; NDJSON (`application/x-ndjson`) is a stream.
          const isJson = (t: string) => /[/+]json$/.test(t);
          return { status: Number(status), json: types.some(isJson), stream: types.some((t) => !isJson(t)) };
        }),
        successContentType,
        isList,
      });
    }
  }
  operations.sort((a, b) => (a.operationId < b.operationId ? -1 : a.operationId > b.operationId ? 1 : 0));
  return { operations, problems };
}

/**
 * Where the schemas under `roots` declare `type: object` with no properties, additionalProperties or
 * patternProperties: openapi-typescript renders those as `Record<string, never>`, so no client could send a value.
 */
function emptyObjects(doc: Doc, roots: unknown[]): string[] {
  const found: string[] = [];
  const seen = new Set<unknown>();
  const visit = (node: any, where: string) => {
    if (!node || typeof node !== 'object') return;
    const target = deref(doc, node);
    if (!target || typeof target !== 'object' || seen.has(target)) return;
    seen.add(target);
    if (Array.isArray(target)) return target.forEach((n, i) => visit(n, `${where}[${i}]`));
    const isObject = target.type === 'object' || (Array.isArray(target.type) && target.type.includes('object'));
    if (isObject && !target.properties && target.additionalProperties === undefined && !target.patternProperties && !target.allOf && !target.anyOf && !target.oneOf) {
      found.push(where);
    }
    for (const [key, child] of Object.entries<any>(target)) {
      if (key === 'example' || key === 'examples' || key === 'default' || key === 'enum' || key === 'const') continue;
      visit(child, key === 'properties' ? where : `${where}${where ? '.' : ''}${key}`);
    }
  };
  roots.forEach((r) => visit(r, ''));
  return found;
}

function isClosed(schema: any): boolean {
  return schema.additionalProperties === false || schema.unevaluatedProperties === false;
}

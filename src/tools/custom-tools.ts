// Custom tools: a function declaration checked as such (its parameters must be a JSON Schema ajv can compile),
// and JavaScript run in the function sandbox with the parameters as inputs. Exposed to the registry as
// `custom_<id>`. No HTTP here.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { SandboxError, type SandboxPool } from '../sandbox/pool.ts';
import type { Store } from '../store/index.ts';
import type { CustomToolRecord } from '../store/custom-tools.ts';
import type { Tool, ToolProvider } from './registry.ts';

export const CUSTOM_TOOL_PREFIX = 'custom_';
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(
  'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await arguments eval params'.split(' '),
);

export interface SchemaIssue {
  path: (string | number)[];
  message: string;
}

const checker = new Ajv2020({ strict: false, allErrors: true });

/** Problems with a function declaration, empty when it is one (OpenAI-style `{type:'function', function:{...}}`). */
export function functionSchemaIssues(schema: unknown): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  const at = (path: (string | number)[], message: string) => issues.push({ path: ['body', 'schema', ...path], message });
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObj(schema)) return [{ path: ['body', 'schema'], message: 'schema must be an object' }];
  if (schema.type !== 'function') at(['type'], 'schema.type must be "function"');
  const fn = schema.function;
  if (!isObj(fn)) {
    at(['function'], 'schema.function must be an object with name and parameters');
    return issues;
  }
  if (typeof fn.name !== 'string' || !FUNCTION_NAME.test(fn.name)) at(['function', 'name'], 'schema.function.name must be 1-64 letters, digits, underscores or hyphens, starting with a letter or underscore');
  if (fn.description !== undefined && typeof fn.description !== 'string') at(['function', 'description'], 'schema.function.description must be text');
  const params = fn.parameters;
  if (!isObj(params)) {
    at(['function', 'parameters'], 'schema.function.parameters must be a JSON Schema object');
    return issues;
  }
  if (params.type !== 'object') at(['function', 'parameters', 'type'], 'schema.function.parameters.type must be "object"');
  if (!isObj(params.properties)) at(['function', 'parameters', 'properties'], 'schema.function.parameters.properties must be an object');
  if (params.required !== undefined) {
    if (!Array.isArray(params.required) || params.required.some((r) => typeof r !== 'string')) at(['function', 'parameters', 'required'], 'required must be a list of property names');
    else if (isObj(params.properties)) {
      for (const r of params.required as string[]) if (!(r in params.properties)) at(['function', 'parameters', 'required'], `required names "${r}", which is not among the properties`);
    }
  }
  if (issues.length === 0) {
    try {
      checker.compile(params);
    } catch (e) {
      at(['function', 'parameters'], `schema.function.parameters is not a valid JSON Schema: ${(e as Error).message}`);
    }
  }
  return issues;
}

/** The names a tool's parameters schema declares (its `properties`); none when it declares none. */
function declaredParameterNames(parameters: unknown): string[] {
  const properties = (parameters as { properties?: unknown } | null)?.properties;
  return typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? Object.keys(properties) : [];
}

/**
 * The sandbox program for a tool: the parameters as `params` and, where they are plain identifiers, as variables.
 * Every declared parameter is a variable even when the caller left it out (then it is undefined), so code may test
 * an optional parameter by name instead of failing with a ReferenceError; input keys the schema does not declare
 * (when it allows extra properties) are variables too.
 */
export function toolProgram(code: string, input: Record<string, unknown>, declared: readonly string[] = []): string {
  const names = [...new Set([...declared, ...Object.keys(input)])].filter((k) => IDENTIFIER.test(k) && !RESERVED.has(k));
  return [
    'const params = __refs[0];',
    names.length ? `const { ${names.join(', ')} } = params;` : '',
    'return await (async () => {',
    code,
    '})();',
  ].join('\n');
}

/** Runs a custom tool's code with its input in the sandbox; the code's return value is the output. */
export async function runCustomToolCode(sandbox: SandboxPool, code: string, input: Record<string, unknown>, options: { timeoutMs: number; signal?: AbortSignal; declared?: readonly string[] }): Promise<{ output: unknown; stdout: string }> {
  try {
    // The pool starts lazily (the run service starts it with the first run); starting it again is a no-op.
    await sandbox.start();
    const r = await sandbox.run({ code: toolProgram(code, input, options.declared), refs: [input], timeoutMs: options.timeoutMs, signal: options.signal });
    return { output: r.value ?? null, stdout: r.stdout };
  } catch (e) {
    if (e instanceof SandboxError) {
      if (e.kind === 'timeout') throw new Error(`The tool's code did not finish within ${options.timeoutMs} ms`);
      if (e.kind === 'user') throw new Error(`The tool's code threw: ${e.message}`);
      throw new Error(`The tool's code failed (${e.kind}): ${e.message}`);
    }
    throw e;
  }
}

export function customToolAsTool(record: CustomToolRecord, sandbox: SandboxPool): Tool {
  return {
    id: CUSTOM_TOOL_PREFIX + record.id,
    name: record.title,
    description: record.schema.function.description ?? record.title,
    hostedApiKey: 'none',
    inputSchema: record.schema.function.parameters as Record<string, unknown>,
    outputs: { result: { type: 'any', description: 'What the tool\'s code returned.' } },
    execute: async (input, call) =>
      (await runCustomToolCode(sandbox, record.code, input, { timeoutMs: call.timeoutMs, signal: call.signal, declared: declaredParameterNames(record.schema.function.parameters) })).output,
  };
}

/** The workspace's custom tools as registry tools. */
export function customToolProvider(store: Store, sandbox: SandboxPool): ToolProvider {
  return {
    name: 'custom',
    list: async (workspaceId) => (await store.customTools.all(workspaceId)).map((r) => customToolAsTool(r, sandbox)),
    get: async (workspaceId, toolId) => {
      if (!toolId.startsWith(CUSTOM_TOOL_PREFIX)) return undefined;
      const record = await store.customTools.get(workspaceId, toolId.slice(CUSTOM_TOOL_PREFIX.length));
      return record && customToolAsTool(record, sandbox);
    },
  };
}

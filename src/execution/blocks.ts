// What each block type does when it runs, keyed by the block registry's type ids (src/workflows/blocks.ts on the
// workflows branch): start_trigger, api_trigger, function, condition, router, variables, response, wait,
// human_in_the_loop, api, workflow, agent. Loops and parallels are run by the run itself (run/subflows.ts).
// Adapting to a renamed type or sub-block is a change to this file only.
import type { SandboxPool } from '../sandbox/pool.ts';
import { SandboxError } from '../sandbox/pool.ts';
import { EgressError, type EgressPolicy } from './egress.ts';
import { answerToolCalls, completeChat, ModelError, type Completion, type ToolCallRecord } from './chat-completions.ts';
import type { AgentProvider, AgentTool, ExecutionLimits, McpToolCaller, RunResources } from './options.ts';
import { skillsInstructions } from '../resources/skills.ts';
import { ExecutionError } from './errors.ts';
import { sleep } from './sleep.ts';
import { mcpOutput } from '../mcp/result.ts';
import type { Block, CostSummary, InputField, RunResult, TraceSpan, WorkflowDefinition } from './types.ts';
import type { CodeKind } from './references.ts';

export const TRIGGER_TYPES = new Set(['start_trigger', 'api_trigger', 'starter']);
export const CONTAINER_TYPES = new Set(['loop', 'parallel']);

export interface BlockResult {
  output: unknown;
  /** Source handles the run continues through (condition/router); every non-error handle when absent. */
  handles?: string[];
  /** Pause the run here (human in the loop). */
  pause?: { message: string; inputFormat: InputField[] };
  /** Model usage, for the run's cost. */
  tokens?: { input: number; output: number };
  model?: string;
  /** Spans nested under this block's span (a child workflow's trace). */
  children?: TraceSpan[];
}

/** What a block implementation can use. Sub-block values are read raw and resolved on demand. */
export interface BlockContext {
  block: Block;
  runId: string;
  workflowId: string;
  runInput: unknown;
  signal: AbortSignal;
  depth: number;
  limits: ExecutionLimits;
  sandbox: SandboxPool;
  egress: EgressPolicy;
  agent: AgentProvider | null;
  /** Workspace resources (skills, tools) supplied by the run's starter; undefined in bare engine runs. */
  resources: RunResources | undefined;
  raw(subBlockId: string): unknown;
  /** References resolved in text (a lone reference keeps its type), deep through objects and arrays. */
  resolve(value: unknown): unknown;
  /** JSON text with references resolved, parsed; non-string values are resolved deeply. */
  resolveJson(value: unknown, what: string): unknown;
  /** JavaScript (a function body, or one expression) with references turned into `__refs[i]` reads. */
  resolveCode(code: string, kind?: CodeKind): { code: string; refs: unknown[] };
  setTraceInput(value: unknown): void;
  /** Sets a workflow variable by name to what `compute` returns for it (it may throw to refuse the value). */
  setVariable(name: string, compute: (variable: { name: string; type: string }) => unknown): { name: string; type: string; value: unknown };
  setResponse(response: { data: unknown; status: number; headers: Record<string, string> }): void;
  /** Blocks an outgoing handle of this block leads to. */
  edgeTargets(handle: string): Block[];
  runChild(workflow: WorkflowDefinition, input: unknown): Promise<RunResult>;
  resolveWorkflow: ((workflowId: string) => Promise<WorkflowDefinition | null>) | undefined;
  /** Calls a registered MCP server's tool (the run's workspace); undefined outside the server. */
  mcp: McpToolCaller | undefined;
  addChildCost(cost: CostSummary): void;
}

export type BlockHandler = (ctx: BlockContext) => Promise<BlockResult>;

const fail = (ctx: BlockContext, message: string, code: ExecutionError['code'] = 'BLOCK_EXECUTION_FAILED') => new ExecutionError(code, message, ctx.block);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Sub-block values that hold lists are stored either as arrays or as JSON text. */
function list(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  if (typeof value === 'string' && value.trim() !== '') {
    try {
      const parsed = JSON.parse(value);
      if (Array.isArray(parsed)) return parsed;
    } catch {
      /* not a list */
    }
  }
  return [];
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

const FIELD_TYPES = new Set(['string', 'number', 'boolean', 'object', 'array', 'any']);

/** A start block's (or human-in-the-loop block's) input fields, as the editor stores them. */
export function parseInputFormat(raw: unknown): InputField[] {
  return list(raw)
    .filter((f): f is Record<string, unknown> => isRecord(f) && typeof f.name === 'string' && f.name.trim() !== '')
    .map((f) => {
      const field: InputField = { name: (f.name as string).trim(), type: FIELD_TYPES.has(f.type as string) ? (f.type as InputField['type']) : 'any' };
      if (f.required === true) field.required = true;
      if (typeof f.description === 'string') field.description = f.description;
      return field;
    });
}

function typeOf(v: unknown): string {
  return Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
}

/** Checks an input object against declared fields; returns what is wrong, or null. Undeclared keys pass through. */
export function validateFields(fields: InputField[], input: unknown): string | null {
  if (!isRecord(input)) return `the input must be a JSON object, got ${typeOf(input)}`;
  for (const field of fields) {
    const value = input[field.name];
    if (value === undefined || value === null) {
      if (field.required) return `"${field.name}" is required`;
      continue;
    }
    if (field.type === 'any') continue;
    const actual = typeOf(value);
    const ok = field.type === 'number' ? actual === 'number' && Number.isFinite(value) : actual === field.type;
    if (!ok) return `"${field.name}" must be ${field.type === 'array' || field.type === 'object' ? 'an' : 'a'} ${field.type}, got ${actual}`;
  }
  return null;
}

/** Key/value tables: [{cells: {Key, Value}}], [{key, value}], or a plain object. */
function table(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (isRecord(value)) {
    for (const [k, v] of Object.entries(value)) if (k) out[k] = text(v);
    return out;
  }
  for (const row of list(value)) {
    if (!isRecord(row)) continue;
    const cells = isRecord(row.cells) ? row.cells : row;
    const key = cells.Key ?? cells.key ?? cells.name;
    const val = cells.Value ?? cells.value;
    if (typeof key === 'string' && key.trim() !== '') out[key.trim()] = text(val);
  }
  return out;
}

function sandboxFailure(ctx: BlockContext, e: unknown, what: string): never {
  if (e instanceof SandboxError) {
    if (e.kind === 'cancelled') throw e;
    if (e.kind === 'timeout') throw fail(ctx, `${what} timed out: ${e.message}`, 'TIMEOUT');
    throw fail(ctx, `${what} failed: ${e.message}`);
  }
  throw e;
}

function functionTimeout(ctx: BlockContext): number {
  const requested = Number(ctx.resolve(ctx.raw('timeout')));
  const max = ctx.limits.functionTimeoutMs;
  return Number.isFinite(requested) && requested > 0 ? Math.min(requested, max) : max;
}

/**
 * Evaluates JavaScript expressions in the sandbox, in order, in one call: the index of the first truthy one
 * (-1 for none), or the index and message of the first that throws.
 */
async function firstTrue(ctx: BlockContext, expressions: string[]): Promise<{ index: number; error?: string }> {
  const parts = expressions.map((e) => ctx.resolveCode(e, 'expression'));
  const code = [
    'const __all = __refs;',
    `const __tests = [${parts.map((p) => `(__refs) => (${p.code.trim() === '' ? 'false' : p.code}\n)`).join(',\n')}];`,
    'for (let i = 0; i < __tests.length; i++) {',
    '  let v;',
    '  try { v = __tests[i](__all[i]); } catch (e) { return { index: i, error: String(e && e.message ? e.message : e) }; }',
    '  if (v) return { index: i };',
    '}',
    'return { index: -1 };',
  ].join('\n');
  try {
    const r = await ctx.sandbox.run({ code, refs: parts.map((p) => p.refs), signal: ctx.signal, timeoutMs: ctx.limits.functionTimeoutMs });
    return r.value as { index: number; error?: string };
  } catch (e) {
    return sandboxFailure(ctx, e, 'Evaluating the expressions');
  }
}

function selectedPath(ctx: BlockContext, handle: string) {
  const target = ctx.edgeTargets(handle)[0];
  return target ? { blockId: target.id, blockType: target.type, blockTitle: target.name } : null;
}

const trigger: BlockHandler = async (ctx) => {
  const fields = parseInputFormat(ctx.raw('inputFormat'));
  const input = ctx.runInput ?? {};
  ctx.setTraceInput(input);
  const problem = validateFields(fields, input);
  if (problem) throw fail(ctx, `Invalid input: ${problem}`, 'INVALID_INPUT');
  // `<start.input>` is the whole run input, unless the input has a field of that name: a chat run's input is
  // `{input: message, conversationId, files}`, and there `<start.input>` is the message, as on the platform.
  return { output: { input, ...(input as Record<string, unknown>) } };
};

/** Largest file a block may produce (decoded bytes). */
const MAX_RUN_FILE_BYTES = 25 * 1024 * 1024;

/** `{ name, type | mimeType | contentType, base64 }`: how a function returns a file. */
function fileShape(v: unknown): { name: string; contentType: string; base64: string } | null {
  if (!isRecord(v) || typeof v.name !== 'string' || typeof v.base64 !== 'string') return null;
  const contentType = v.type ?? v.mimeType ?? v.contentType;
  return typeof contentType === 'string' && v.name.trim() ? { name: v.name, contentType, base64: v.base64 } : null;
}

/** Stores every file found in a block's output (depth-limited) and puts its reference in its place. */
async function storeFiles(ctx: BlockContext, value: unknown, depth = 0): Promise<unknown> {
  if (!ctx.resources?.storeFile || depth > 6) return value;
  const file = fileShape(value);
  if (file) {
    const data = Buffer.from(file.base64, 'base64');
    if (data.length > MAX_RUN_FILE_BYTES) throw fail(ctx, `The file "${file.name}" is larger than ${MAX_RUN_FILE_BYTES} bytes`);
    return ctx.resources.storeFile({ name: file.name, contentType: file.contentType, data, blockId: ctx.block.id });
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const v of value) out.push(await storeFiles(ctx, v, depth + 1));
    return out;
  }
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await storeFiles(ctx, v, depth + 1);
    return out;
  }
  return value;
}

/** Media types an API response body is read as text for; anything else is kept as a file when it has bytes. */
const TEXTUAL = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded|[a-z.+-]*\+(json|xml)))|^$/i;

function fileNameOf(url: URL, headers: Record<string, string>): string {
  const cd = headers['content-disposition'] ?? '';
  const star = /filename\*=UTF-8''([^;]+)/i.exec(cd);
  if (star) return decodeURIComponent(star[1]!);
  const plain = /filename="?([^";]+)"?/i.exec(cd);
  if (plain) return plain[1]!;
  const last = url.pathname.split('/').filter(Boolean).pop();
  return last ? decodeURIComponent(last) : 'download';
}

const functionBlock: BlockHandler = async (ctx) => {
  const source = text(ctx.raw('code'));
  ctx.setTraceInput({ code: source });
  if (source.trim() === '') return { output: { result: null, stdout: '' } };
  const { code, refs } = ctx.resolveCode(source);
  // A function block may name a built sandbox (a dependency set): it then runs where it can require those packages.
  const sandboxRef = text(ctx.resolve(ctx.raw('sandboxId') ?? ctx.raw('sandbox'))).trim();
  let pool = ctx.sandbox;
  if (sandboxRef) {
    if (!ctx.resources?.sandboxPool) throw fail(ctx, 'This function names a sandbox, but sandboxes are not available in this run');
    try {
      pool = await ctx.resources.sandboxPool(sandboxRef);
    } catch (e) {
      throw fail(ctx, (e as Error).message);
    }
  }
  try {
    const r = await pool.run({ code, refs, signal: ctx.signal, timeoutMs: functionTimeout(ctx) });
    return { output: { result: await storeFiles(ctx, r.value), stdout: r.stdout } };
  } catch (e) {
    if (e instanceof ExecutionError) throw e;
    return sandboxFailure(ctx, e, 'The function');
  }
};

const condition: BlockHandler = async (ctx) => {
  const conditions = list(ctx.raw('conditions')).filter(isRecord) as { id?: unknown; title?: unknown; value?: unknown }[];
  if (conditions.length === 0) throw fail(ctx, 'The condition block has no conditions');
  const elseAt = conditions.findIndex((c) => String(c.title ?? '').trim().toLowerCase() === 'else');
  const tests = conditions.filter((_, i) => i !== elseAt);
  const expressions = tests.map((c) => text(c.value));
  ctx.setTraceInput({ conditions: conditions.map((c) => ({ id: c.id, title: c.title, value: c.value })) });
  const r = await firstTrue(ctx, expressions);
  if (r.error !== undefined) throw fail(ctx, `Condition "${String(tests[r.index]?.title ?? r.index)}" failed: ${r.error}`);
  const chosen = r.index >= 0 ? tests[r.index] : elseAt >= 0 ? conditions[elseAt] : undefined;
  if (!chosen) return { output: { conditionResult: false, selectedConditionId: null, selectedOption: null, selectedPath: null }, handles: [] };
  const id = String(chosen.id);
  const handle = `condition-${id}`;
  return {
    output: { conditionResult: r.index >= 0, selectedConditionId: id, selectedOption: chosen.title ?? null, selectedPath: selectedPath(ctx, handle) },
    handles: [handle, id],
  };
};

/** Rule-based: each route's value is an expression; the first true one wins; an empty one (or "else"/"default") is the fallback. */
const router: BlockHandler = async (ctx) => {
  const routes = list(ctx.raw('routes')).filter(isRecord) as { id?: unknown; title?: unknown; value?: unknown }[];
  if (routes.length === 0) throw fail(ctx, 'The router has no routes');
  const isFallback = (r: { title?: unknown; value?: unknown }) => text(r.value).trim() === '' || /^(else|default)$/i.test(String(r.title ?? '').trim());
  const rules = routes.filter((r) => !isFallback(r));
  const fallback = routes.find(isFallback);
  ctx.setTraceInput({ prompt: ctx.resolve(ctx.raw('prompt')), routes });
  const r = await firstTrue(ctx, rules.map((x) => text(x.value)));
  if (r.error !== undefined) throw fail(ctx, `Route "${String(rules[r.index]?.title ?? r.index)}" failed: ${r.error}`);
  const chosen = r.index >= 0 ? rules[r.index] : fallback;
  if (!chosen) throw fail(ctx, 'No route matched and the router has no fallback route');
  const id = String(chosen.id);
  const handle = `router-${id}`;
  return { output: { selectedRoute: id, selectedRouteTitle: chosen.title ?? null, selectedPath: selectedPath(ctx, handle) }, handles: [handle, id] };
};

function castVariable(ctx: BlockContext, name: string, type: string, value: unknown): unknown {
  const bad = () => fail(ctx, `Variable "${name}" is a ${type}; ${JSON.stringify(value)} is not`);
  switch (type) {
    case 'number': {
      const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      if (!Number.isFinite(n)) throw bad();
      return n;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      throw bad();
    case 'object':
    case 'array': {
      let v = value;
      if (typeof v === 'string') {
        try {
          v = JSON.parse(v);
        } catch {
          throw bad();
        }
      }
      if (type === 'array' ? !Array.isArray(v) : !isRecord(v)) throw bad();
      return v;
    }
    case 'string':
      return text(value);
    default:
      return value;
  }
}

const variables: BlockHandler = async (ctx) => {
  const assignments: Record<string, unknown> = {};
  for (const entry of list(ctx.raw('variables'))) {
    if (!isRecord(entry)) continue;
    const name = entry.variableName ?? entry.name;
    if (typeof name !== 'string' || name.trim() === '') continue;
    const value = ctx.resolve(entry.value);
    const variable = ctx.setVariable(name, (v) => castVariable(ctx, v.name, v.type, value));
    assignments[variable.name] = variable.value;
  }
  return { output: { assignments } };
};

const response: BlockHandler = async (ctx) => {
  const data = ctx.resolveJson(ctx.raw('data') ?? null, 'The response data');
  const rawStatus = ctx.resolve(ctx.raw('status'));
  const status = rawStatus === undefined || rawStatus === null || rawStatus === '' ? 200 : Number(rawStatus);
  if (!Number.isInteger(status) || status < 100 || status > 599) throw fail(ctx, `The response status must be a whole number from 100 to 599, got ${JSON.stringify(rawStatus)}`);
  const headers = table(ctx.resolve(ctx.raw('headers')));
  ctx.setResponse({ data, status, headers });
  return { output: { data, status, headers } };
};

const wait: BlockHandler = async (ctx) => {
  const amount = Number(ctx.resolve(ctx.raw('timeValue')));
  const unit = String(ctx.raw('timeUnit') ?? 'seconds');
  const factor = unit === 'minutes' ? 60_000 : unit === 'hours' ? 3_600_000 : unit === 'milliseconds' ? 1 : 1000;
  if (!Number.isFinite(amount) || amount < 0) throw fail(ctx, `The wait duration must be a number of ${unit} of zero or more`);
  const ms = Math.round(amount * factor);
  ctx.setTraceInput({ timeValue: amount, timeUnit: unit });
  await sleep(ms, ctx.signal);
  return { output: { waitDuration: ms } };
};

const humanInTheLoop: BlockHandler = async (ctx) => {
  const message = text(ctx.resolve(ctx.raw('message')));
  const inputFormat = parseInputFormat(ctx.raw('inputFormat'));
  ctx.setTraceInput({ message });
  return { output: null, pause: { message, inputFormat } };
};

const api: BlockHandler = async (ctx) => {
  const urlText = text(ctx.resolve(ctx.raw('url'))).trim();
  if (!urlText) throw fail(ctx, 'The API request has no URL');
  const method = text(ctx.resolve(ctx.raw('method')) || 'GET').toUpperCase();
  let url: URL;
  try {
    url = new URL(urlText);
  } catch {
    throw fail(ctx, `Not a valid URL: "${urlText}"`);
  }
  for (const [k, v] of Object.entries(table(ctx.resolve(ctx.raw('params'))))) url.searchParams.append(k, v);
  const headers = table(ctx.resolve(ctx.raw('headers')));
  const rawBody = ctx.raw('body');
  let body: string | null = null;
  if (rawBody !== undefined && rawBody !== null && !(typeof rawBody === 'string' && rawBody.trim() === '') && method !== 'GET' && method !== 'HEAD') {
    const value = ctx.resolveJson(rawBody, 'The request body');
    body = typeof value === 'string' ? value : JSON.stringify(value);
    if (typeof value !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
  }
  const requested = Number(ctx.resolve(ctx.raw('timeout')));
  const timeoutMs = Number.isFinite(requested) && requested > 0 ? requested : ctx.limits.apiTimeoutMs;
  ctx.setTraceInput({ url: url.href, method, headers: { ...headers }, body });
  // A named OAuth credential authenticates the request with a fresh token (added after the trace input: never traced).
  const credentialId = text(ctx.resolve(ctx.raw('credentialId'))).trim();
  if (credentialId && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
    if (!ctx.resources?.accessToken) throw fail(ctx, 'This API block names a credential, but credentials are not available in this run');
    try {
      headers.Authorization = `Bearer ${await ctx.resources.accessToken(credentialId)}`;
    } catch (e) {
      throw fail(ctx, (e as Error).message);
    }
  }
  let res;
  try {
    res = await ctx.egress.request({ url: url.href, method, headers, body, timeoutMs, signal: ctx.signal });
  } catch (e) {
    if (e instanceof EgressError) {
      if (e.code === 'CANCELLED') throw e;
      if (e.code === 'TIMEOUT') throw fail(ctx, e.message, 'TIMEOUT');
      throw fail(ctx, e.message);
    }
    throw e;
  }
  const raw = res.body.toString('utf8');
  let data: unknown = raw;
  if (/\bjson\b/i.test(res.headers['content-type'] ?? '')) {
    try {
      data = JSON.parse(raw);
    } catch {
      /* keep the text */
    }
  }
  if (res.status >= 400) throw fail(ctx, `The request to ${url.origin} failed with status ${res.status}: ${raw.slice(0, 200)}`);
  // A binary body becomes a file of the run; the output carries its reference instead of mangled text.
  const mediaType = (res.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (ctx.resources?.storeFile && res.body.length > 0 && !TEXTUAL.test(mediaType)) {
    if (res.body.length > MAX_RUN_FILE_BYTES) throw fail(ctx, `The response of ${url.origin} is larger than ${MAX_RUN_FILE_BYTES} bytes`);
    data = await ctx.resources.storeFile({ name: fileNameOf(url, res.headers), contentType: mediaType || 'application/octet-stream', data: res.body, blockId: ctx.block.id });
  }
  return { output: { data, status: res.status, headers: res.headers } };
};

const childWorkflow: BlockHandler = async (ctx) => {
  const id = text(ctx.resolve(ctx.raw('workflowId'))).trim();
  const childFail = (message: string) => fail(ctx, message, 'CHILD_WORKFLOW_FAILED');
  if (!id) throw childFail('No child workflow is selected');
  if (!ctx.resolveWorkflow) throw childFail('Child workflows cannot be run here');
  if (ctx.depth + 1 > ctx.limits.maxChildDepth) throw childFail(`Child workflows are nested deeper than the limit of ${ctx.limits.maxChildDepth}`);
  const rawInput = ctx.raw('input');
  const input = rawInput === undefined || rawInput === null || rawInput === '' ? {} : ctx.resolveJson(rawInput, 'The child workflow input');
  ctx.setTraceInput({ workflowId: id, input });
  const workflow = await ctx.resolveWorkflow(id);
  if (!workflow) throw childFail(`Workflow ${id} does not exist or is not deployed`);
  const result = await ctx.runChild(workflow, input);
  ctx.addChildCost(result.cost);
  const name = workflow.name ?? workflow.id;
  if (result.status === 'cancelled' && ctx.signal.aborted) throw ctx.signal.reason;
  if (result.status === 'paused') throw childFail(`Child workflow "${name}" paused for human input, which child workflows cannot do`);
  if (result.status !== 'completed') {
    const err = result.error;
    throw childFail(`Child workflow "${name}" failed${err?.blockName ? ` in block "${err.blockName}"` : ''}: ${err?.message ?? result.status}`);
  }
  return { output: { success: true, childWorkflowName: name, childRunId: result.runId, result: result.output }, children: result.traceSpans };
};

/** Most model round trips one agent block makes while the model keeps calling tools. */
const MAX_AGENT_TOOL_ROUNDS = 10;

async function chatCompletion(ctx: BlockContext, provider: AgentProvider, body: Record<string, unknown>): Promise<Completion> {
  try {
    return await completeChat(provider, body, ctx.signal);
  } catch (e) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (e instanceof ModelError) throw fail(ctx, e.message, e.kind === 'timeout' ? 'TIMEOUT' : undefined);
    throw e;
  }
}

const agent: BlockHandler = async (ctx) => {
  const provider = ctx.agent;
  if (!provider) throw fail(ctx, 'No agent provider is configured: set AGENT_API_BASE_URL (and AGENT_API_KEY, AGENT_MODEL) to an OpenAI-compatible endpoint');
  let system = text(ctx.resolve(ctx.raw('systemPrompt')));
  const skillRefs = list(ctx.resolve(ctx.raw('skills')));
  if (skillRefs.length > 0) {
    if (!ctx.resources?.skills) throw fail(ctx, 'This agent names skills, but skills are not available in this run');
    const { found, missing } = await ctx.resources.skills(skillRefs);
    if (missing.length > 0) throw fail(ctx, `Unknown skill${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
    const section = skillsInstructions(found);
    system = system.trim() ? `${system}\n\n${section}` : section;
  }
  const user = text(ctx.resolve(ctx.raw('userPrompt') ?? ctx.raw('context')));
  if (!user.trim()) throw fail(ctx, 'The agent has no user prompt');
  const toolEntries = list(ctx.resolve(ctx.raw('tools')));
  let tools: AgentTool[] = [];
  if (toolEntries.length > 0) {
    if (!ctx.resources?.tools) throw fail(ctx, 'This agent lists tools, but tools are not available in this run');
    const { found, missing } = await ctx.resources.tools(toolEntries, ctx.signal);
    if (missing.length > 0) throw fail(ctx, `Unknown tool${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
    tools = found;
  }
  const model = text(ctx.resolve(ctx.raw('model'))).trim() || provider.model;
  const modelRefused = await ctx.resources?.modelRefusal?.(model);
  if (modelRefused) throw fail(ctx, modelRefused);
  const temperature = Number(ctx.resolve(ctx.raw('temperature')));
  const messages: Record<string, unknown>[] = [...(system.trim() ? [{ role: 'system', content: system }] : []), { role: 'user', content: user }];
  const body: Record<string, unknown> = { model, messages };
  if (Number.isFinite(temperature) && ctx.raw('temperature') !== undefined && ctx.raw('temperature') !== '') body.temperature = temperature;
  if (tools.length > 0) body.tools = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  ctx.setTraceInput({ model, messages: messages.slice(), ...(tools.length ? { tools: tools.map((t) => t.name) } : {}) });
  let prompt = 0;
  let completion = 0;
  let usedModel = model;
  const calls: ToolCallRecord[] = [];
  for (let round = 0; ; round++) {
    const answer = await chatCompletion(ctx, provider, body);
    const message = answer.message;
    prompt += answer.usage.prompt;
    completion += answer.usage.completion;
    if (answer.model) usedModel = answer.model;
    const toolCalls = message.tool_calls ?? [];
    if (toolCalls.length === 0 || tools.length === 0) {
      return {
        output: {
          content: typeof message.content === 'string' ? message.content : '',
          model: usedModel,
          tokens: { prompt, completion, total: prompt + completion },
          toolCalls: tools.length > 0 ? calls : toolCalls,
        },
        tokens: { input: prompt, output: completion },
        model: usedModel,
      };
    }
    if (round >= MAX_AGENT_TOOL_ROUNDS) throw fail(ctx, `The model kept calling tools after ${MAX_AGENT_TOOL_ROUNDS} rounds`);
    messages.push({ role: 'assistant', content: typeof message.content === 'string' ? message.content : null, tool_calls: toolCalls });
    calls.push(...(await answerToolCalls(toolCalls, tools, messages, ctx.signal)));
  }
};

/** Block implementations by registry type id. */
/** Calls a tool of an MCP server registered in the workspace, through the SDK client under the egress policy. */
const mcpTool: BlockHandler = async (ctx) => {
  const serverId = text(ctx.resolve(ctx.raw('server'))).trim();
  const toolName = text(ctx.resolve(ctx.raw('tool'))).trim();
  if (!serverId) throw fail(ctx, 'The MCP tool block names no server');
  if (!toolName) throw fail(ctx, 'The MCP tool block names no tool');
  const raw = ctx.raw('arguments');
  const args = raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '') ? {} : ctx.resolveJson(raw, 'The tool arguments');
  if (!isRecord(args)) throw fail(ctx, 'The tool arguments must be a JSON object');
  ctx.setTraceInput({ server: serverId, tool: toolName, arguments: args });
  if (!ctx.mcp) throw fail(ctx, 'MCP tool blocks need a server with registered MCP servers');
  let result;
  try {
    result = await ctx.mcp(serverId, toolName, args, ctx.signal);
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    const code = (e as { code?: string }).code;
    throw fail(ctx, `MCP tool ${toolName} failed: ${e instanceof Error ? e.message : String(e)}`, code === 'TIMEOUT' ? 'TIMEOUT' : 'BLOCK_EXECUTION_FAILED');
  }
  try {
    return { output: mcpOutput(result, toolName) };
  } catch (e) {
    throw fail(ctx, (e as Error).message);
  }
};

export const BLOCK_HANDLERS: Record<string, BlockHandler> = {
  start_trigger: trigger,
  api_trigger: trigger,
  starter: trigger,
  function: functionBlock,
  condition,
  router,
  variables,
  response,
  wait,
  human_in_the_loop: humanInTheLoop,
  api,
  workflow: childWorkflow,
  agent,
  mcp: mcpTool,
};

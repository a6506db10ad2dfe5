// The one tool registry: every tool this server can run (the HTTP request tool, custom tools, and whatever other
// modules register: tables, files, knowledge, MCP), each with a JSON Schema for its input. The catalog
// (listTools/getTool), executeTool and agent blocks all read it. Providers are registered with registerTool;
// the registry never knows their internals. No HTTP here.
import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { DomainError } from '../domain/errors.ts';

/** A JSON Schema object describing a tool's input (`type: 'object'` with `properties`). */
export type JsonSchema = Record<string, unknown>;

export interface ToolParam {
  type: string;
  required?: boolean;
  /** `user-or-llm` (an agent may fill it), `user-only` (only a person or a block's preset), `llm-only`. */
  visibility?: string;
  description?: string;
  default?: unknown;
  items?: unknown;
}

export interface ToolOutput {
  type: string;
  description?: string;
  optional?: boolean;
  nullable?: boolean;
  properties?: Record<string, unknown>;
  items?: { type: string; description?: string; properties?: Record<string, unknown> };
  fileConfig?: { mimeType?: string; extension?: string };
}

/** What a tool call can use besides its input. */
export interface ToolCallContext {
  workspaceId: string;
  /** The person on whose behalf the tool runs (null for anonymous or system calls). */
  userId: string | null;
  /** Aborted on timeout or cancellation; tools must stop when it fires. */
  signal: AbortSignal;
  /** Milliseconds left for the call (tools pass it on to sandboxes and HTTP clients). */
  timeoutMs: number;
  /** The credential a tool that needs OAuth should use (executeTool's credentialId). */
  credentialId?: string;
  /** A fresh access token for the credential, when the tool needs one (supplied by the credentials module). */
  accessToken?: (credentialId: string) => Promise<string>;
}

export interface Tool {
  /** Catalog id; also the function name agents see (letters, digits, `_` and `-`, at most 64). */
  id: string;
  name: string;
  description: string;
  version?: string;
  hostedApiKey: 'always' | 'conditional' | 'none';
  oauth?: { required: boolean; provider: string; requiredScopes?: string[] };
  /** JSON Schema of the input; executeTool and agent calls are checked against it before `execute`. */
  inputSchema: JsonSchema;
  /** Per-parameter catalog entries; derived from inputSchema when absent. */
  params?: Record<string, ToolParam>;
  outputs: Record<string, ToolOutput>;
  /** Runs the tool; throw (any Error) to fail it with that message. */
  execute(input: Record<string, unknown>, call: ToolCallContext): Promise<unknown>;
}

/** A source of tools. `list` and `get` are scoped to a workspace (custom tools, MCP servers differ per workspace). */
export interface ToolProvider {
  /** A short name for logs and errors, e.g. `builtin`, `custom`, `mcp`. */
  name: string;
  list(workspaceId: string): Promise<Tool[]>;
  /** The tool with this id, or undefined when it is not one of this provider's. */
  get(workspaceId: string, toolId: string): Promise<Tool | undefined>;
}

export interface ToolExecution {
  toolId: string;
  status: 'succeeded' | 'failed';
  output: unknown;
  error: { message: string } | null;
  durationMs: number;
}

export class ToolInputError extends Error {
  readonly issues: { path: (string | number)[]; message: string }[];
  constructor(message: string, issues: { path: (string | number)[]; message: string }[]) {
    super(message);
    this.issues = issues;
  }
}

/** Says why a person may not run a tool (a permission group denies it), or null; asked before every execution. */
export type ToolExecutionGuard = (tool: Tool, call: { workspaceId: string; userId: string | null }) => Promise<string | null>;

/** A tool the caller may not run: its execution is refused before it starts (403 through the API). */
export class ToolRefused extends DomainError {
  constructor(message: string) {
    super('forbidden', message, { reason: 'permission_group' });
  }
}

/** Called after every execution (usage records, metrics). Failures of the listener are ignored. */
export type ToolExecutionListener = (execution: ToolExecution, call: { workspaceId: string; userId: string | null; source: 'api' | 'agent' }) => void | Promise<void>;

export class ToolRegistry {
  private readonly providers: ToolProvider[] = [];
  private readonly listeners: ToolExecutionListener[] = [];
  private readonly guards: ToolExecutionGuard[] = [];
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();

  constructor() {
    (addFormats as unknown as (a: Ajv2020) => void)(this.ajv);
  }

  /** Adds a provider; later providers cannot shadow an id an earlier one already answers for. */
  registerTool(provider: ToolProvider): void {
    if (this.providers.some((p) => p.name === provider.name)) throw new Error(`A tool provider named ${provider.name} is already registered`);
    this.providers.push(provider);
  }

  onExecution(listener: ToolExecutionListener): void {
    this.listeners.push(listener);
  }

  /** Adds a check every execution must pass (Access Control's denied tools). */
  guard(guard: ToolExecutionGuard): void {
    this.guards.push(guard);
  }

  /** Why `call` may not run `tool`, or null. */
  async refusal(tool: Tool, call: { workspaceId: string; userId: string | null }): Promise<string | null> {
    for (const g of this.guards) {
      const reason = await g(tool, call);
      if (reason) return reason;
    }
    return null;
  }

  /** Every tool available in the workspace, first provider first, duplicates dropped. */
  async list(workspaceId: string): Promise<Tool[]> {
    const seen = new Set<string>();
    const out: Tool[] = [];
    for (const p of this.providers) {
      for (const tool of await p.list(workspaceId)) {
        if (seen.has(tool.id)) continue;
        seen.add(tool.id);
        out.push(tool);
      }
    }
    return out;
  }

  /** A tool by id; an unversioned id (`name` of `name@v2`) resolves to the newest version a provider offers. */
  async get(workspaceId: string, toolId: string): Promise<Tool | undefined> {
    for (const p of this.providers) {
      const tool = await p.get(workspaceId, toolId);
      if (tool) return tool;
    }
    return undefined;
  }

  /** The catalog entry of each input parameter. */
  paramsOf(tool: Tool): Record<string, ToolParam> {
    if (tool.params) return tool.params;
    const props = (tool.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
    const required = new Set((tool.inputSchema.required ?? []) as string[]);
    return Object.fromEntries(
      Object.entries(props).map(([k, s]) => [
        k,
        {
          type: typeof s.type === 'string' ? s.type : Array.isArray(s.type) ? s.type.join('|') : 'any',
          required: required.has(k),
          visibility: 'user-or-llm',
          ...(typeof s.description === 'string' ? { description: s.description } : {}),
          ...(s.default !== undefined ? { default: s.default } : {}),
          ...(s.items !== undefined ? { items: s.items } : {}),
        },
      ]),
    );
  }

  /** Checks an input against the tool's schema; throws ToolInputError listing every problem. */
  validate(tool: Tool, input: Record<string, unknown>): void {
    const key = `${tool.id}:${createHash('sha256').update(JSON.stringify(tool.inputSchema)).digest('base64url')}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(tool.inputSchema);
      if (this.validators.size > 1000) this.validators.clear();
      this.validators.set(key, validate);
    }
    if (validate(input)) return;
    const issues = (validate.errors ?? []).map((e) => ({
      path: ['input', ...e.instancePath.split('/').filter(Boolean)],
      message: `${e.instancePath ? `input${e.instancePath.replaceAll('/', '.')}` : 'input'} ${e.message ?? 'is invalid'}`,
    }));
    throw new ToolInputError(`The input does not match the tool's schema: ${issues.map((i) => i.message).join('; ')}`, issues);
  }

  /**
   * Runs a tool with a timeout. Input problems throw ToolInputError (the caller decides how to report them);
   * everything that goes wrong while running is a `failed` execution with the error's message.
   */
  async execute(
    tool: Tool,
    input: Record<string, unknown>,
    options: { workspaceId: string; userId: string | null; timeoutMs: number; signal?: AbortSignal; credentialId?: string; source: 'api' | 'agent'; accessToken?: ToolCallContext['accessToken'] },
  ): Promise<ToolExecution> {
    const refused = await this.refusal(tool, { workspaceId: options.workspaceId, userId: options.userId });
    if (refused) throw new ToolRefused(refused);
    this.validate(tool, input);
    const started = performance.now();
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let execution: ToolExecution;
    try {
      const output = await new Promise<unknown>((resolve, reject) => {
        const onAbort = () => reject(timeout.aborted ? new Error(`The tool did not finish within ${options.timeoutMs} ms`) : new Error('The tool call was cancelled'));
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        tool
          .execute(input, { workspaceId: options.workspaceId, userId: options.userId, signal, timeoutMs: options.timeoutMs, credentialId: options.credentialId, accessToken: options.accessToken })
          .then(resolve, reject)
          .finally(() => signal.removeEventListener('abort', onAbort));
      });
      execution = { toolId: tool.id, status: 'succeeded', output: output ?? null, error: null, durationMs: performance.now() - started };
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      execution = { toolId: tool.id, status: 'failed', output: null, error: { message }, durationMs: performance.now() - started };
    }
    for (const l of this.listeners) {
      try {
        await l(execution, { workspaceId: options.workspaceId, userId: options.userId, source: options.source });
      } catch {
        /* a listener's failure does not change the result */
      }
    }
    return execution;
  }
}

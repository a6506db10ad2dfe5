// What a caller hands the engine: the shared services, a run's options and resources, resume input. Block
// implementations (blocks.ts) and the run (run/) read these too, so they live below all of them.
import type { SandboxPool } from '../sandbox/pool.ts';
import type { Config } from '../config.ts';
import type { EgressPolicy } from './egress.ts';
import type { RunEvent, WorkflowDefinition } from './types.ts';

/** The OpenAI-compatible provider agent blocks call (base URL, key, default model, timeout, USD per million
 * tokens); configured by AGENT_API_* (see src/config.ts). */
export type AgentProvider = NonNullable<Config['agent']>;

export interface ExecutionLimits {
  /** Most iterations any loop may run (a `for` count above it, or a while loop still true at it, fails). */
  maxLoopIterations: number;
  /** Most branches of one parallel running at the same time. */
  parallelConcurrency: number;
  /** Deepest nesting of child workflows. */
  maxChildDepth: number;
  /** Default and maximum wall-clock time of one function block call (ms). */
  functionTimeoutMs: number;
  /** Default timeout of an API request block (ms). */
  apiTimeoutMs: number;
}

/** The shared services an engine runs blocks with (one set per process). */
export interface EngineServices {
  sandbox: SandboxPool;
  egress: EgressPolicy;
  /** null: agent blocks fail with a message saying no provider is configured. */
  agent: AgentProvider | null;
  limits: ExecutionLimits;
}

/**
 * Secret values by name (`{{NAME}}`): a map, or a function asked once per name per run. A function may answer
 * `{ value, redact: false }` for a secret its owner marked unredacted (kept out of the redactor).
 */
export type SecretsProvider =
  | Record<string, string>
  | ((name: string) => string | { value: string; redact: boolean } | undefined | Promise<string | { value: string; redact: boolean } | undefined>);

/**
 * Workspace resources a run's blocks may use, supplied by whoever starts the run (the run service). Every member
 * is optional: a block that needs a missing one fails with a message saying so.
 */
export interface RunResources {
  /** The skills an agent block names (ids, names or editor objects), with the ones that do not exist. */
  skills?(refs: unknown[]): Promise<{ found: { name: string; description: string; content: string }[]; missing: string[] }>;
  /** The tools an agent block lists (tool-input entries), as functions the model may call. */
  tools?(entries: unknown[], signal: AbortSignal): Promise<{ found: AgentTool[]; missing: string[] }>;
  /** Why the run may not use a model (Access Control: a provider not allowed, a denied model), or null. */
  modelRefusal?(model: string): Promise<string | null>;
  /** The sandbox pool of a built sandbox a function block names (id or name); throws with a clear message otherwise. */
  sandboxPool?(ref: string): Promise<SandboxPool>;
  /** A fresh access token of an OAuth credential of the run's workspace (API blocks naming a credential). */
  accessToken?(credentialId: string): Promise<string>;
  /** Keeps a file a block produced (a function's returned file, a binary API response) with the run. */
  storeFile?(file: { name: string; contentType: string; data: Buffer; blockId: string }): Promise<RunFileRef>;
}

/** What replaces a produced file's content in block outputs: where to download it. */
export interface RunFileRef {
  id: string;
  name: string;
  size: number;
  type: string;
  downloadPath: string;
}

/** A tool as an agent sees it: an OpenAI function declaration and a way to call it. */
export interface AgentTool {
  /** Function name given to the model (unique within one agent call). */
  name: string;
  description: string;
  /** JSON Schema of the arguments the model fills in. */
  parameters: Record<string, unknown>;
  call(args: Record<string, unknown>): Promise<{ status: 'succeeded' | 'failed'; output: unknown; error: { message: string } | null }>;
}

export interface RunOptions {
  /** Workspace resources (skills, tools) for agent and function blocks; passed on to child workflows. */
  resources?: RunResources;
  /** Defaults to a random UUID. */
  runId?: string;
  /** The run's input, checked against the trigger block's input fields. */
  input?: unknown;
  /** Aborting it cancels the run (status 'cancelled', code CANCELLED). */
  signal?: AbortSignal;
  /** Wall-clock limit of the whole run; past it the run fails with TIMEOUT. */
  timeoutMs?: number;
  onEvent?: (event: RunEvent) => void;
  secrets?: SecretsProvider;
  /** Loads another workflow for child-workflow blocks (the deployed version); null when it does not exist. */
  resolveWorkflow?: (workflowId: string) => Promise<WorkflowDefinition | null>;
  /** Asked before the run starts: a message means the caller is over its usage limit (USAGE_LIMIT_EXCEEDED). */
  checkUsage?: () => string | null | Promise<string | null>;
  /** Most block executions this run may perform (loop iterations count each time); past it USAGE_LIMIT_EXCEEDED. */
  maxBlockExecutions?: number;
  /** Which trigger block starts the run when the workflow has several. */
  triggerBlockId?: string;
  /** Child-workflow nesting depth (0 for a top-level run); set by the engine. */
  depth?: number;
  /** Calls a tool of a registered MCP server (MCP tool blocks); absent: those blocks fail saying so. */
  mcp?: McpToolCaller;
}

/** What an MCP tool call answers: the tool's content, optional structured result, and whether it failed. */
export interface McpToolCallResult {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
export type McpToolCaller = (serverId: string, toolName: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<McpToolCallResult>;

export interface ResumeInput {
  /** The paused block to resume; defaults to the first pause point. */
  blockId?: string;
  /** What the reviewer submitted, checked against the block's input fields. */
  input?: Record<string, unknown>;
  /** Defaults to true. */
  approved?: boolean;
}

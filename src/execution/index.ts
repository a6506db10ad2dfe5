// The execution engine's public surface: build one Engine per process from the configuration, start its
// sandbox pool, then run workflows with engine.execute / engine.resume.
import type { Config } from '../config.ts';
import { SandboxPool } from '../sandbox/pool.ts';
import { EgressPolicy } from './egress.ts';
import { Engine } from './engine.ts';

export { Engine } from './engine.ts';
export type { EngineOptions } from './engine.ts';
export { sleep } from './sleep.ts';
export { normalizeName } from './references.ts';
export type { AgentProvider, EngineServices, ExecutionLimits, ResumeInput, RunOptions, RunResources, AgentTool, RunFileRef, SecretsProvider } from './options.ts';
export { ExecutionError, ResumeError } from './errors.ts';
export { EgressPolicy, EgressError } from './egress.ts';
export { BLOCK_HANDLERS, TRIGGER_TYPES, CONTAINER_TYPES, parseInputFormat, validateFields } from './blocks.ts';
export type { BlockContext, BlockHandler, BlockResult } from './blocks.ts';
export type * from './types.ts';

/**
 * The engine for a server process, from configuration. Call `await engine.options.sandbox.start()` before the
 * first run (or let the first function call wait for the processes) and `close()` on shutdown.
 */
export function createEngine(config: Config): { engine: Engine; start(): Promise<void>; close(): Promise<void> } {
  const egress = new EgressPolicy({ allowPrivate: config.egress.allowPrivate, allowCidrs: config.egress.allowCidrs, maxResponseBytes: config.egress.maxResponseBytes });
  const sandbox = new SandboxPool({
    size: config.sandbox.poolSize,
    timeoutMs: config.sandbox.timeoutMs,
    memoryMb: config.sandbox.memoryMb,
    fetch: egress.sandboxFetch(config.execution.apiTimeoutMs),
  });
  const engine = new Engine({
    sandbox,
    egress,
    agent: config.agent,
    limits: {
      maxLoopIterations: config.execution.maxLoopIterations,
      parallelConcurrency: config.execution.parallelConcurrency,
      maxChildDepth: config.execution.maxChildDepth,
      functionTimeoutMs: config.sandbox.timeoutMs,
      apiTimeoutMs: config.execution.apiTimeoutMs,
    },
  });
  return { engine, start: () => sandbox.start(), close: () => sandbox.close() };
}

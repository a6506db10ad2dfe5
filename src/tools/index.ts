// Builds the server's tool registry: the built-in tools, the workspace's custom tools, and usage recording.
// Other modules (tables, files, knowledge, MCP) add their own providers with `services.tools.registerTool(...)`.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Engine } from '../execution/index.ts';
import type { Store } from '../store/index.ts';
import { sortableId } from '../domain/ids.ts';
import { httpRequestTool, staticToolProvider } from './builtin.ts';
import { customToolProvider } from './custom-tools.ts';
import { ToolRegistry } from './registry.ts';
import { accessRefusal } from '../access-control/policy.ts';

export { ToolRegistry, ToolInputError } from './registry.ts';
export type { Tool, ToolProvider, ToolCallContext, ToolExecution, ToolParam, ToolOutput } from './registry.ts';

export function createToolRegistry(deps: { config: Config; store: Store; engine: Engine; logger: Logger }): ToolRegistry {
  const { config, store, engine, logger } = deps;
  const registry = new ToolRegistry();
  registry.registerTool(staticToolProvider('builtin', [httpRequestTool(engine.options.egress, config.execution.apiTimeoutMs)]));
  registry.registerTool(customToolProvider(store, engine.options.sandbox));
  // Access Control: a tool the caller's permission group denies does not run (src/access-control/policy.ts).
  registry.guard((tool, call) => accessRefusal(store, call, { kind: 'tool', toolId: tool.id }));
  // Every execution (through the API or an agent) is a usage record of category `api-tool`.
  registry.onExecution(async (execution, call) => {
    const workspace = await store.workspaces.get(call.workspaceId);
    if (!workspace) return;
    try {
      await store.transaction((tx) =>
        tx.usage.recordEvent({
          id: sortableId(),
          billingAccountId: workspace.billingAccountId,
          workspaceId: call.workspaceId,
          workflowId: null,
          runId: null,
          userId: call.userId,
          category: 'api-tool',
          cost: config.tools.executionCostUsd,
          blockExecutions: 0,
          durationMs: Math.round(execution.durationMs),
          recordedAt: new Date().toISOString(),
        }),
      );
    } catch (e) {
      logger.warn({ err: e, toolId: execution.toolId }, 'could not record tool usage');
    }
  });
  return registry;
}

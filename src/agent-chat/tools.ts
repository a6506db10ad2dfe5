// The tools the workspace agent may call in a chat turn, acting as the caller: the registry's workspace-data tools
// (tables, files, knowledge search) and two of its own, a workspace overview (so the model can find ids) and running
// a deployed workflow. Every call goes through the tool registry (input checked against the schema, timeout, usage
// recorded). A caller with only read access gets the reading tools.
import type { Principal } from '../identity/principal.ts';
import type { AgentTool } from '../execution/index.ts';
import { actingAs } from '../domain/changes.ts';
import { isServable } from '../mcp/workflow-servers.ts';
import { acceptRun } from '../runs/lifecycle.ts';
import type { RunService } from '../runs/service.ts';
import type { Store } from '../store/index.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { WorkspaceRole } from '../store/workspaces.ts';
import { agentTools } from '../tools/agent.ts';
import { ToolInputError, type Tool, type ToolRegistry } from '../tools/registry.ts';

const READ_TOOLS = ['table_query_rows', 'file_read_text', 'knowledge_search'];
const WRITE_TOOLS = ['table_insert_row', 'file_write_text'];
/** Most entries of each kind the overview lists. */
const OVERVIEW_LIMIT = 200;

export interface ChatToolDeps {
  store: Store;
  tools: ToolRegistry;
  runs: RunService;
  syncTimeoutMs: number;
  toolTimeoutMs: number;
}

export interface ChatCaller {
  principal: Principal;
  workspace: Workspace;
  role: WorkspaceRole;
}

function overviewTool(store: Store): Tool {
  return {
    id: 'workspace_overview',
    name: 'Workspace overview',
    description: "Lists the workspace's tables (with their columns), files, knowledge bases and workflows, with the ids the other tools take.",
    hostedApiKey: 'none',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    outputs: { tables: { type: 'array' }, files: { type: 'array' }, knowledgeBases: { type: 'array' }, workflows: { type: 'array' } },
    async execute(_input, call) {
      const workspaceId = call.workspaceId;
      const [tables, files, bases, workflows] = await Promise.all([
        store.userTables.list({ workspaceId, archived: false, folderPath: null, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: OVERVIEW_LIMIT }),
        store.files.list({ workspaceId, archived: false, folderPath: null, recursive: true, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: OVERVIEW_LIMIT }),
        store.knowledgeBases.list({ workspaceId, archived: false, folderPath: null, search: null, sortBy: 'name', order: 'asc', after: null, limit: OVERVIEW_LIMIT }),
        store.workflows.list({ workspaceId, archived: false, folderPath: null, deployedOnly: false, search: null, sortBy: 'name', sortOrder: 'asc', after: null, limit: OVERVIEW_LIMIT }),
      ]);
      return {
        tables: tables.map((t) => ({ id: t.id, name: t.name, rowCount: t.rowCount, columns: t.columns.map((c) => ({ name: c.name, type: c.type })) })),
        files: files.map((f) => ({ id: f.id, name: f.name, folderPath: f.folderPath, contentType: f.contentType, size: f.size })),
        knowledgeBases: bases.map((k) => ({ id: k.id, name: k.name })),
        workflows: workflows.map((w) => ({ id: w.id, name: w.name, deployed: w.isDeployed })),
      };
    },
  };
}

function workflowRunTool(deps: ChatToolDeps, caller: ChatCaller): Tool {
  const { store, runs } = deps;
  return {
    id: 'workflow_run',
    name: 'Run workflow',
    description: "Runs one of the workspace's deployed workflows with the given input and answers its result.",
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      properties: {
        workflowId: { type: 'string', minLength: 1, description: 'The workflow to run' },
        input: { type: 'object', description: "The workflow's input fields by name" },
      },
      required: ['workflowId'],
      additionalProperties: false,
    },
    outputs: { runId: { type: 'string' }, status: { type: 'string' }, output: { type: 'json' }, error: { type: 'string', nullable: true } },
    async execute(input, call) {
      const w = await store.workflows.get(String(input.workflowId));
      if (!w || w.workspaceId !== call.workspaceId || w.archived) throw new Error(`Workflow ${String(input.workflowId)} not found`);
      if (!w.isDeployed || !w.activeVersionId || !isServable(w)) throw new Error(`Workflow ${w.name} is not deployed; only deployed workflows can be run`);
      // Accepted and audited as the caller, like a run through the API.
      const run = await acceptRun(runs, actingAs(store, caller.principal, caller.workspace.id), {
        workflow: w,
        billingAccountId: caller.workspace.billingAccountId,
        mode: 'sync',
        source: 'deployment',
        trigger: 'chat',
        input: input.input ?? {},
        runId: null,
        triggerBlockId: null,
        timeoutMs: null,
        triggeredBy: caller.principal.userId,
      });
      // A turn that is aborted (the client left) cancels the run it started.
      const cancel = () => void runs.abort(run.id);
      call.signal.addEventListener('abort', cancel, { once: true });
      const result = await runs.execute(run, { timeoutMs: deps.syncTimeoutMs }).finally(() => call.signal.removeEventListener('abort', cancel));
      return { runId: run.key, status: result.status, output: result.output ?? null, error: result.error?.message ?? null };
    },
  };
}

/** The tools of one turn, as functions the model may call. */
export async function chatTools(deps: ChatToolDeps, caller: ChatCaller, signal: AbortSignal): Promise<AgentTool[]> {
  const canWrite = caller.role !== 'read';
  const call = { workspaceId: caller.workspace.id, userId: caller.principal.userId, signal, timeoutMs: deps.toolTimeoutMs };
  const { found } = await agentTools(deps.tools, [...READ_TOOLS, ...(canWrite ? WRITE_TOOLS : [])], call);
  const own = [overviewTool(deps.store), ...(canWrite ? [workflowRunTool(deps, caller)] : [])];
  for (const tool of own) {
    found.push({
      name: tool.id,
      description: tool.description,
      parameters: tool.inputSchema,
      call: async (args) => {
        try {
          const { durationMs: _d, toolId: _t, ...result } = await deps.tools.execute(tool, args, { ...call, source: 'agent', timeoutMs: tool.id === 'workflow_run' ? deps.syncTimeoutMs : deps.toolTimeoutMs });
          return result;
        } catch (e) {
          if (e instanceof ToolInputError) return { status: 'failed', output: null, error: { message: e.message } };
          throw e;
        }
      },
    });
  }
  return found;
}

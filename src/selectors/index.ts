// Selectors: the option lists behind block dropdowns. Each supported key is a source that lists options (a page at
// a time, continued by a source-defined position) and resolves one option by id. Internal sources read the
// workspace's own data; external ones ask the provider with the workspace credential the context names, through the
// egress policy. No HTTP server concerns here: the handler turns positions into signed cursors.
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import { loadTable } from '../tables/service.ts';
import { SELECTOR_CATALOG, UNAVAILABLE_SELECTORS } from './catalog.ts';
import { restSource } from './rest.ts';
import { slackSources } from './slack.ts';
import { MAX_LOCAL_OPTIONS, pageOf, type SelectorCall, type SelectorDeps, type SelectorOption, type SelectorPage, type SelectorSource } from './source.ts';

export type { SelectorCall, SelectorDeps, SelectorOption, SelectorPage, SelectorSource } from './source.ts';

/** A source over a list built from local data: paging, search and `get` all work on that list. */
function localSource(requires: string[], load: (call: SelectorCall) => Promise<SelectorOption[]>): SelectorSource {
  const capped = async (call: SelectorCall) => {
    const all = await load(call);
    return { all: all.slice(0, MAX_LOCAL_OPTIONS), truncated: all.length > MAX_LOCAL_OPTIONS };
  };
  return {
    requires,
    async list(call, page) {
      const { all, truncated } = await capped(call);
      return pageOf(all, page, truncated);
    },
    async get(call, id) {
      return (await load(call)).find((o) => o.id === id) ?? null;
    },
  };
}

/** Reads every page of a keyset-paged repository list (stops at the local cap plus one, to know it was cut). */
async function drain<T extends { id: string }>(fetch: (after: readonly [string, string] | null, limit: number) => Promise<T[]>, key: (t: T) => string): Promise<T[]> {
  const out: T[] = [];
  let after: readonly [string, string] | null = null;
  for (;;) {
    const batch = await fetch(after, 500);
    out.push(...batch);
    if (batch.length < 500 || out.length > MAX_LOCAL_OPTIONS) return out;
    const last = batch.at(-1)!;
    after = [key(last), last.id];
  }
}

export function selectorSources(deps: SelectorDeps): Record<string, SelectorSource> {
  const { store, mcp } = deps;

  const workflows = localSource([], async (call) => {
    const rows = await drain(
      (after, limit) => store.workflows.list({ workspaceId: call.workspaceId, archived: false, folderPath: null, deployedOnly: false, search: null, sortBy: 'name', sortOrder: 'asc', after, limit }),
      (w) => w.name,
    );
    const excluded = call.context.excludeWorkflowId;
    // The same name in two folders is told apart by the folder.
    const counts = new Map<string, number>();
    for (const w of rows) counts.set(w.name, (counts.get(w.name) ?? 0) + 1);
    return rows
      .filter((w) => w.id !== excluded)
      .map((w) => ({
        id: w.id,
        label: (counts.get(w.name) ?? 0) > 1 && w.folderPath !== '/' ? `${w.name} (${w.folderPath})` : w.name,
        meta: { folderPath: w.folderPath, deployed: w.isDeployed },
      }));
  });

  const tableOf = (call: SelectorCall) => loadTable(store, call.workspaceId, call.context.tableId!);
  const tableColumns = localSource(['tableId'], async (call) => {
    const t = await tableOf(call);
    return t.columns.filter((c) => c.unique).map((c) => ({ id: c.id, label: c.name, meta: { type: c.type } }));
  });
  // Columns a workflow may write: those no workflow group fills already.
  const tableOutputColumns = localSource(['tableId'], async (call) => {
    const t = await tableOf(call);
    return t.columns.filter((c) => !c.workflowGroupId).map((c) => ({ id: c.id, label: c.name, meta: { type: c.type } }));
  });

  const documents = localSource(['knowledgeBaseId'], async (call) => {
    const kb = await store.knowledgeBases.get(call.context.knowledgeBaseId!);
    if (!kb || kb.workspaceId !== call.workspaceId || kb.deletedAt) throw domainNotFound('Knowledge base');
    const docs = await drain(
      (after, limit) => store.knowledgeDocuments.list({ knowledgeBaseId: kb.id, search: null, enabled: null, tagConditions: [], sortBy: 'filename', order: 'asc', after, limit }),
      (d) => d.filename,
    );
    return docs.map((d) => ({ id: d.id, label: d.filename, meta: { enabled: d.enabled, processingStatus: d.processingStatus } }));
  });

  const secretNames = localSource([], async (call) => {
    const rows = await drain(
      (after, limit) => store.secrets.list({ workspaceId: call.workspaceId, userId: call.userId, sortBy: 'name', sortOrder: 'asc', after, limit }),
      (s) => s.name,
    );
    const names = [...new Set(rows.map((s) => s.name))].sort();
    return names.map((name) => ({ id: name, label: name }));
  });

  const sandboxes = localSource([], async (call) => {
    const rows = await drain((after, limit) => store.sandboxes.list({ workspaceId: call.workspaceId, sortBy: 'name', sortOrder: 'asc', after, limit }), (s) => s.name);
    const language = call.context.language;
    return rows.filter((s) => !language || s.language === language).map((s) => ({ id: s.id, label: s.name, meta: { language: s.language, buildStatus: s.buildStatus } }));
  });

  const mcpTools = localSource(['mcpServerId'], async (call) => {
    const server = await store.mcpServers.get(call.context.mcpServerId!);
    if (!server || server.workspaceId !== call.workspaceId) throw domainNotFound('MCP server');
    const { tools, server: current } = await mcp.toolsOf(server);
    if (tools === null) throw new DomainError('unavailable', `The MCP server ${server.name} cannot be reached${current.lastError ? `: ${current.lastError}` : ''}.`);
    return tools.map((t) => ({ id: t.name, label: t.name, ...(t.description ? { meta: { description: t.description } } : {}) }));
  });

  return {
    'sim.workflows': workflows,
    'table.columns': tableColumns,
    'table.outputColumns': tableOutputColumns,
    'knowledge.documents': documents,
    'workspace.secretNames': secretNames,
    'workspace.sandboxes': sandboxes,
    'mcp.tools': mcpTools,
    ...slackSources(deps),
    ...Object.fromEntries(Object.entries(SELECTOR_CATALOG).map(([key, entry]) => [key, restSource(deps, key, entry)])),
  };
}

/** Answers selector calls: checks the key is served here and its context is complete, then asks the source. */
export class Selectors {
  private readonly sources: Record<string, SelectorSource>;
  constructor(deps: SelectorDeps) {
    this.sources = selectorSources(deps);
  }

  /** The keys this server answers, sorted. */
  get supported(): string[] {
    return Object.keys(this.sources).sort();
  }

  private source(key: string, context: Record<string, string>): SelectorSource {
    const source = this.sources[key];
    if (!source) {
      const why = UNAVAILABLE_SELECTORS[key];
      if (why) throw invalidInput(['body', 'selectorKey'], `The selector ${key} is not available on this server: ${why}.`, 'selector_unavailable');
      throw invalidInput(['body', 'selectorKey'], `The selector ${key} is not available on this server; it answers ${this.supported.join(', ')}.`, 'selector_unavailable');
    }
    for (const name of source.requires) {
      if (!context[name]?.trim()) throw invalidInput(['body', 'context', name], `The selector ${key} needs context.${name}.`, 'missing_context');
    }
    return source;
  }

  list(key: string, call: SelectorCall, page: { search: string | null; after: string | null; limit: number }): Promise<SelectorPage> {
    return this.source(key, call.context).list(call, page);
  }

  get(key: string, call: SelectorCall, id: string): Promise<SelectorOption | null> {
    return this.source(key, call.context).get(call, id);
  }
}


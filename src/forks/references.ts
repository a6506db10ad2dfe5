// The references a workflow's blocks make to workspace resources, found and rewritten in one place, so a fork
// or a sync can remap them into another workspace. Where references live on this server:
//   - agent `tools` entries: params.tableId (table), params.fileId (file), params.knowledgeBaseId (knowledge
//     base), customToolId or {type:'custom-tool', id} (custom tool), credentialId (credential);
//   - agent `skills` (skill ids; names and built-ins resolve in any workspace and are left alone);
//   - api `credentialId`, function `sandboxId`, mcp `server`, workflow `workflowId`;
//   - `{{NAME}}` in any string: a secret, by name.
import type { WorkflowState } from '../workflows/state.ts';

export type ReferenceKind = 'credential' | 'env-var' | 'knowledge-base' | 'table' | 'file' | 'mcp-server' | 'custom-tool' | 'skill' | 'sandbox' | 'workflow';

export interface Reference {
  kind: ReferenceKind;
  sourceId: string;
  blockId: string;
  blockName: string;
  subBlockKey: string;
}

/** What to do with one reference: a new id, null to clear it, undefined to keep it as it is. */
export type Resolve = (kind: ReferenceKind, sourceId: string) => string | null | undefined;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const SECRET = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;
const TOOL_PARAMS: Record<string, ReferenceKind> = { tableId: 'table', fileId: 'file', knowledgeBaseId: 'knowledge-base' };
const BLOCK_FIELDS: Record<string, ReferenceKind> = { credentialId: 'credential', sandboxId: 'sandbox', server: 'mcp-server', workflowId: 'workflow' };

/**
 * Walks a value, calling `visit` for every reference and replacing it by what `visit` answers (undefined keeps
 * it, null clears it). Returns the rewritten value; the input is not changed.
 */
function rewriteValue(subBlockKey: string, value: unknown, visit: (kind: ReferenceKind, id: string) => string | null | undefined): unknown {
  const secrets = (v: unknown): unknown => {
    if (typeof v === 'string') {
      return v.replace(SECRET, (whole, name: string) => {
        const next = visit('env-var', name);
        return next === undefined ? whole : next === null ? '' : `{{${next}}}`;
      });
    }
    if (Array.isArray(v)) return v.map(secrets);
    if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, secrets(x)]));
    return v;
  };
  const field = (kind: ReferenceKind, v: unknown) => {
    if (typeof v !== 'string' || v.trim() === '' || SECRET.test(v)) {
      SECRET.lastIndex = 0;
      return secrets(v);
    }
    const next = visit(kind, v.trim());
    return next === undefined ? v : next === null ? '' : next;
  };
  if (BLOCK_FIELDS[subBlockKey]) return field(BLOCK_FIELDS[subBlockKey], value);
  if (subBlockKey === 'skills' && Array.isArray(value)) {
    return value
      .map((s) => {
        if (typeof s !== 'string') return secrets(s);
        const next = visit('skill', s);
        return next === undefined ? s : next;
      })
      .filter((s) => s !== null && s !== '');
  }
  if (subBlockKey === 'tools' && Array.isArray(value)) {
    return value.map((entry) => {
      if (!isRecord(entry)) return secrets(entry);
      const out: Record<string, unknown> = { ...entry };
      if (isRecord(entry.params)) {
        const params: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(entry.params)) params[k] = TOOL_PARAMS[k] ? field(TOOL_PARAMS[k], v) : secrets(v);
        out.params = params;
      }
      if (typeof entry.credentialId === 'string' && entry.credentialId) out.credentialId = field('credential', entry.credentialId);
      if (typeof entry.customToolId === 'string' && entry.customToolId) out.customToolId = field('custom-tool', entry.customToolId);
      else if (entry.type === 'custom-tool' && typeof entry.id === 'string' && entry.id) out.id = field('custom-tool', entry.id);
      for (const [k, v] of Object.entries(out)) if (!['params', 'credentialId', 'customToolId', 'id'].includes(k)) out[k] = secrets(v);
      return out;
    });
  }
  return secrets(value);
}

/** The state with every reference passed through `resolve`. */
export function rewriteReferences(state: WorkflowState, resolve: Resolve): WorkflowState {
  const blocks: WorkflowState['blocks'] = {};
  for (const [id, block] of Object.entries(state.blocks)) {
    const subBlocks: typeof block.subBlocks = {};
    for (const [key, sub] of Object.entries(block.subBlocks ?? {})) {
      subBlocks[key] = { ...sub, value: rewriteValue(key, sub.value, resolve) as typeof sub.value };
    }
    blocks[id] = { ...block, subBlocks };
  }
  return { ...state, blocks };
}

/** Every reference the state makes, once per block and field. */
export function collectReferences(state: WorkflowState): Reference[] {
  const found: Reference[] = [];
  const seen = new Set<string>();
  for (const [id, block] of Object.entries(state.blocks)) {
    for (const [key, sub] of Object.entries(block.subBlocks ?? {})) {
      rewriteValue(key, sub.value, (kind, sourceId) => {
        const k = `${id}\u0000${key}\u0000${kind}\u0000${sourceId}`;
        if (!seen.has(k)) {
          seen.add(k);
          found.push({ kind, sourceId, blockId: id, blockName: block.name, subBlockKey: key });
        }
        return undefined;
      });
    }
  }
  return found;
}

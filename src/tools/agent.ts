// Turns an agent block's tool entries into functions the model may call, backed by the tool registry.
// Entries come from the editor's tool input and take several shapes:
//   'http_request' | { toolId, params? } | { type: 'custom-tool', customToolId } | { type: <tool id>, params? }
// `params` are preset by the workflow author: they are merged over what the model sends and hidden from it.
// Entries with usageControl 'none' are left out.
import type { AgentTool } from '../execution/index.ts';
import { CUSTOM_TOOL_PREFIX } from './custom-tools.ts';
import { ToolInputError, ToolRefused, type ToolRegistry } from './registry.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The registry id an entry names, and its preset parameters. */
export function toolEntry(entry: unknown): { toolId: string; preset: Record<string, unknown>; credentialId?: string } | null {
  if (typeof entry === 'string') return entry.trim() ? { toolId: entry.trim(), preset: {} } : null;
  if (!isRecord(entry) || entry.usageControl === 'none') return null;
  const preset = isRecord(entry.params) ? Object.fromEntries(Object.entries(entry.params).filter(([, v]) => v !== undefined && v !== null && v !== '')) : {};
  const credentialId = typeof entry.credentialId === 'string' && entry.credentialId ? entry.credentialId : undefined;
  if (typeof entry.toolId === 'string' && entry.toolId) return { toolId: entry.toolId, preset, credentialId };
  const customId = entry.customToolId ?? (entry.type === 'custom-tool' ? entry.id : undefined);
  if (typeof customId === 'string' && customId) return { toolId: customId.startsWith(CUSTOM_TOOL_PREFIX) ? customId : CUSTOM_TOOL_PREFIX + customId, preset };
  if (typeof entry.type === 'string' && entry.type) return { toolId: entry.type, preset };
  return null;
}

/** Function names the model accepts: letters, digits, `_`, `-`, at most 64. */
const functionName = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);

/** The argument schema without the preset parameters (the model does not fill those). */
function withoutPresets(schema: Record<string, unknown>, preset: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(preset);
  if (keys.length === 0) return schema;
  const properties = isRecord(schema.properties) ? Object.fromEntries(Object.entries(schema.properties).filter(([k]) => !keys.includes(k))) : {};
  const required = Array.isArray(schema.required) ? schema.required.filter((r) => !keys.includes(String(r))) : undefined;
  return { ...schema, properties, ...(required ? { required } : {}) };
}

export async function agentTools(
  registry: ToolRegistry,
  entries: unknown[],
  call: { workspaceId: string; userId: string | null; signal: AbortSignal; timeoutMs: number; accessToken?: (credentialId: string) => Promise<string> },
): Promise<{ found: AgentTool[]; missing: string[] }> {
  const found: AgentTool[] = [];
  const missing: string[] = [];
  const used = new Set<string>();
  for (const raw of entries) {
    const entry = toolEntry(raw);
    if (!entry) continue;
    const tool = await registry.get(call.workspaceId, entry.toolId);
    if (!tool) {
      missing.push(entry.toolId);
      continue;
    }
    const refused = await registry.refusal(tool, { workspaceId: call.workspaceId, userId: call.userId });
    if (refused) throw new ToolRefused(refused);
    let name = functionName(tool.id);
    for (let i = 2; used.has(name); i++) name = functionName(`${tool.id}_${i}`);
    used.add(name);
    found.push({
      name,
      description: tool.description,
      parameters: withoutPresets(tool.inputSchema, entry.preset),
      call: async (args) => {
        try {
          const { durationMs: _d, toolId: _t, ...result } = await registry.execute(tool, { ...args, ...entry.preset }, {
            workspaceId: call.workspaceId,
            userId: call.userId,
            timeoutMs: call.timeoutMs,
            signal: call.signal,
            credentialId: entry.credentialId,
            accessToken: call.accessToken,
            source: 'agent',
          });
          return result;
        } catch (e) {
          if (e instanceof ToolInputError) return { status: 'failed', output: null, error: { message: e.message } };
          throw e;
        }
      },
    });
  }
  return { found, missing };
}

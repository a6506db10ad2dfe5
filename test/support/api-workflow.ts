// Builds small workflows through the API, as a client would: create → PUT state → deploy.
import { randomUUID } from 'node:crypto';
import type { TestServer } from './server.ts';
import type { GateServer } from './gate-server.ts';

export interface ApiBlock {
  id: string;
  type: string;
  name: string;
  position: { x: number; y: number };
  subBlocks: Record<string, { id: string; type: string; value: unknown }>;
  outputs: Record<string, unknown>;
  enabled: boolean;
  data?: Record<string, unknown>;
}

export function apiBlock(type: string, name: string, sub: Record<string, unknown> = {}, extra: Partial<ApiBlock> = {}): ApiBlock {
  return {
    id: randomUUID(),
    type,
    name,
    position: { x: 0, y: 0 },
    subBlocks: Object.fromEntries(Object.entries(sub).map(([k, value]) => [k, { id: k, type: 'short-input', value }])),
    outputs: {},
    enabled: true,
    ...extra,
  };
}

export const link = (source: ApiBlock, target: ApiBlock, sourceHandle = 'source') => ({ id: randomUUID(), source: source.id, target: target.id, sourceHandle, targetHandle: 'target' });

export interface BuiltWorkflow {
  id: string;
  /** Block ids by block name. */
  ids: Record<string, string> & { [name: string]: string };
}

/** Creates a workflow with this graph (replacing the seeded start block) and deploys it unless told not to. */
export async function buildWorkflow(
  s: TestServer,
  name: string,
  blocks: ApiBlock[],
  edges: ReturnType<typeof link>[],
  options: { deploy?: boolean; key?: string; workspaceId?: string } = {},
): Promise<BuiltWorkflow> {
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await s.request(path, { method, key: options.key, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
  const created = await call('POST', '/api/v2/workflows', { workspaceId: options.workspaceId ?? s.workspaceId, name });
  const id = created.data.id as string;
  await call('PUT', `/api/v2/workflows/${id}/state`, { blocks: Object.fromEntries(blocks.map((b) => [b.id, b])), edges });
  if (options.deploy !== false) await call('POST', `/api/v2/workflows/${id}/deploy`, {});
  return { id, ids: Object.fromEntries(blocks.map((b) => [b.name, b.id])) };
}

/** Calls a server process's API with a key; answers `data`, throws on any status from 300 up. */
export function apiCaller(baseUrl: string, key: string) {
  return async (method: string, path: string, body?: unknown): Promise<any> => {
    const r = await fetch(baseUrl + path, { method, headers: { 'X-API-Key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const parsed: any = await r.json();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(parsed)}`);
    return parsed.data;
  };
}

/**
 * Creates and deploys, in the key's first workspace, a workflow whose one block waits at the gate's `gateName`
 * until the test releases it: a run that stays running for as long as the test needs.
 */
export async function deployHeldWorkflow(call: ReturnType<typeof apiCaller>, gate: GateServer, name: string, gateName: string): Promise<{ workspaceId: string; workflowId: string }> {
  const workspaceId = (await call('GET', '/api/v2/workspaces'))[0].id as string;
  const wf = await call('POST', '/api/v2/workflows', { workspaceId, name });
  const startBlock = apiBlock('start_trigger', 'Start');
  const held = gate.block('Held', gateName);
  await call('PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: { [startBlock.id]: startBlock, [held.id]: held }, edges: [link(startBlock, held)] });
  await call('POST', `/api/v2/workflows/${wf.id}/deploy`, {});
  return { workspaceId, workflowId: wf.id as string };
}

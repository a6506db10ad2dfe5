// The official CLI's fork and workspace-operation commands, unchanged, against this server: the receipts must be
// what the CLI checks (operationId, trimmed requestId, path workspace, kind, applied), or it reports an unknown
// outcome; `--wait` and `operations wait` poll the receipt by id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';
import { setWorkspacePlan } from '../src/identity/admin.ts';

let s: TestServer;
const env = (workspace: string) => ({ endpoint: s.url, apiKey: s.key, workspace });
const cli = async (workspace: string, ...args: string[]) => {
  const r = await runCli(['--output', 'json', ...args], env(workspace));
  if (r.code !== 0) throw new Error(`sim ${args.join(' ')} → ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.json;
};

beforeAll(async () => {
  s = await startTestServer();
  await setWorkspacePlan(s.services.store, s.workspaceId, 'enterprise');
  await buildWorkflow(s, 'Hello', [apiBlock('start_trigger', 'Start'), apiBlock('function', 'Say', { code: 'return "hi"' })], []);
});
afterAll(async () => {
  await s?.stop();
});

describe('sim workspaces fork and operations', () => {
  it('fork-availability, fork-preview, fork --wait, lineage, children, operations get/list/wait, push, fork-rollback, unlink', async () => {
    const parent = s.workspaceId;
    expect(await cli(parent, 'workspaces', 'fork-availability')).toEqual({ available: true });
    const preview = await cli(parent, 'workspaces', 'fork-preview', '--name', 'CLI fork');
    expect(preview).toMatchObject({ sourceWorkspaceId: parent, draftOnly: true, workflows: [{ name: 'Hello' }] });

    const receipt = await cli(parent, 'workspaces', 'fork', '--name', 'CLI fork', '--request-id', 'cli-fork-1', '--preview-fingerprint', preview.previewFingerprint, '--wait');
    expect(receipt).toMatchObject({ kind: 'workspace_fork', workspaceId: parent, requestId: 'cli-fork-1', applied: true, status: 'completed' });
    const child = receipt.resourceIds[0];

    expect(await cli(parent, 'workspaces', 'operations', 'get', receipt.operationId)).toEqual(receipt);
    expect(await cli(parent, 'workspaces', 'operations', 'wait', receipt.operationId)).toEqual(receipt);
    const listed = await cli(parent, 'workspaces', 'operations', 'list', '--request-id', 'cli-fork-1');
    expect((listed.data ?? listed).map((o: any) => o.operationId)).toEqual([receipt.operationId]);
    // Retrying the same command with the same request id reconciles to the same receipt.
    expect(await cli(parent, 'workspaces', 'fork', '--name', 'CLI fork', '--request-id', 'cli-fork-1', '--preview-fingerprint', preview.previewFingerprint)).toEqual(receipt);

    expect(await cli(child, 'workspaces', 'lineage')).toMatchObject({ current: { id: child }, parent: { id: parent } });
    const children = await cli(parent, 'workspaces', 'children');
    expect((children.data ?? children).map((c: any) => c.id)).toEqual([child]);

    // Change the child's copy, deploy it, push it back to the parent.
    const [copy] = (await s.call('GET', `/api/v2/workflows?workspaceId=${child}`)).body.data;
    const only = apiBlock('start_trigger', 'Start');
    await s.ok('PUT', `/api/v2/workflows/${copy.id}/state`, { blocks: { [only.id]: only }, edges: [] });
    await s.ok('POST', `/api/v2/workflows/${copy.id}/deploy`, {});
    const pushPreview = await cli(child, 'workspaces', 'push-preview', '--other-workspace-id', parent);
    expect(pushPreview).toMatchObject({ ready: true, workflows: [{ action: 'replace' }] });
    const refused = await runCli(['--output', 'json', 'workspaces', 'push', '--other-workspace-id', parent, '--request-id', 'cli-push-1', '--preview-fingerprint', pushPreview.previewFingerprint], env(child));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr + refused.stdout).toContain('--yes');
    const pushed = await cli(child, 'workspaces', 'push', '--other-workspace-id', parent, '--request-id', 'cli-push-1', '--preview-fingerprint', pushPreview.previewFingerprint, '--yes', '--wait');
    expect(pushed).toMatchObject({ kind: 'workspace_push', workspaceId: child, requestId: 'cli-push-1', status: 'completed' });
    const target = pushed.resourceIds[0];
    const blocks = (await s.ok('GET', `/api/v2/workflows/${target}/state`)).blocks;
    expect(Object.values(blocks).map((b: any) => b.type)).toEqual(['start_trigger']);

    expect(await cli(parent, 'workspaces', 'fork-rollback', '--other-workspace-id', child, '--yes')).toEqual({ restored: 1, archived: 0, unarchived: 0, skipped: 0, pendingActivations: [] });
    const restored = (await s.ok('GET', `/api/v2/workflows/${target}/state`)).blocks;
    expect(Object.values(restored).map((b: any) => b.type).sort()).toEqual(['function', 'start_trigger']);

    expect(await cli(child, 'workspaces', 'unlink', '--other-workspace-id', parent, '--yes')).toEqual({ unlinked: true });
    expect((await cli(child, 'workspaces', 'lineage')).parent).toBeNull();
  });

  it('workflows import with a request id answers a receipt the CLI accepts and can poll', async () => {
    const doc = JSON.stringify({ version: '1.0', state: { blocks: {}, edges: [] } });
    const preview = await cli(s.workspaceId, 'workflows', 'import-preview', '--workflow', doc, '--name', 'Imported by CLI');
    const imported = await cli(s.workspaceId, 'workflows', 'import', '--workflow', doc, '--name', 'Imported by CLI', '--request-id', 'cli-import-1', '--preview-fingerprint', preview.previewFingerprint, '--wait');
    expect(imported).toMatchObject({ kind: 'workflow_import', workspaceId: s.workspaceId, requestId: 'cli-import-1', applied: true });
    const got = await cli(s.workspaceId, 'workspaces', 'operations', 'get', imported.operationId);
    expect(got).toMatchObject({ operationId: imported.operationId, kind: 'workflow_import', resourceIds: [imported.id] });
  });
});

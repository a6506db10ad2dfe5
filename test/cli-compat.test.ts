// The official CLI, unchanged, against this server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
beforeAll(async () => {
  s = await startTestServer();
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(() => s.stop());

describe('sim CLI: meta and workspaces', () => {
  it('sim meta status reports the credential', async () => {
    const r = await runCli(['--output', 'json', 'meta', 'status'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ v2Enabled: true, keyType: 'personal', expiresAt: null });
  });

  it('sim workspaces list shows every workspace of the user', async () => {
    const second = await s.newWorkspace('Second');
    const r = await runCli(['--output', 'json', 'workspaces', 'list'], env);
    expect(r.code).toBe(0);
    const rows = Array.isArray(r.json) ? r.json : r.json.data;
    expect(rows.map((w: any) => w.id).sort()).toEqual([s.workspaceId, second].sort());
  });

  it('sim workspaces get reads the configured workspace', async () => {
    const r = await runCli(['--output', 'json', 'workspaces', 'get'], env);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ id: s.workspaceId, name: 'My workspace', memberCount: 1 });
  });

  it('sim workspaces members lists the roster', async () => {
    await s.newUser('cli-member@example.com', { [s.workspaceId]: 'write' });
    const r = await runCli(['--output', 'json', 'workspaces', 'members'], env);
    expect(r.code).toBe(0);
    const rows = Array.isArray(r.json) ? r.json : r.json.data;
    expect(rows.map((m: any) => [m.email, m.role])).toEqual(
      expect.arrayContaining([
        ['admin@localhost.localdomain', 'admin'],
        ['cli-member@example.com', 'write'],
      ]),
    );
  });

  it('sim reports a bad key as an error, not as empty output', async () => {
    const r = await runCli(['--output', 'json', 'workspaces', 'list'], { ...env, apiKey: 'sk-owa-bad-key-0000000000000' });
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toMatch(/401|UNAUTHORIZED|unauthori[sz]ed|invalid/i);
  });
});

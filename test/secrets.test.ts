// Secrets for runs: values sealed at rest, resolved for {{NAME}} inside a run (personal before workspace),
// redacted from outputs and logs, managed by the admin command with an audit event and never a value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { DatabaseSync } from 'node:sqlite';
import fs from 'node:fs';
import path from 'node:path';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { SecretCipher } from '../src/secrets/cipher.ts';
import { setSecretAsOperator } from '../src/secrets/vault.ts';

const VALUE = 'tok_live_5ecr3t_value_42';
let s: TestServer;
let usesSecret: BuiltWorkflow;
let missing: BuiltWorkflow;

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1000' });
  await setSecretAsOperator(s.services.store, s.services.secrets, { workspaceId: s.workspaceId, scope: 'workspace', ownerUserId: null, name: 'API_TOKEN', value: VALUE });
  {
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Use', { code: 'const t = "{{API_TOKEN}}"; return { length: t.length, echo: t, prefix: t.slice(0, 8) }' });
    usesSecret = await buildWorkflow(s, 'Uses a secret', [start, fn], [link(start, fn)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const fn = apiBlock('function', 'Use', { code: 'return "{{NOT_SET}}"' });
    missing = await buildWorkflow(s, 'Missing secret', [start, fn], [link(start, fn)]);
  }
});
afterAll(() => s.stop());

const run = async (id: string, key?: string) => {
  const r = await s.request(`/api/v2/workflows/${id}/execute`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: '{}' });
  return { status: r.status, text: await r.text() };
};

describe('secrets in runs', () => {
  it('resolves {{NAME}} inside the run, and the value appears in neither the result nor the log', async () => {
    const r = await run(usesSecret.id);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.text);
    expect(body.data.status, r.text).toBe("completed");
    expect(body.data.output.result.length, r.text).toBe(VALUE.length);
    expect(body.data.output.result.echo).toBe('[REDACTED]');
    expect(r.text).not.toContain(VALUE);
    const log = await s.request(`/api/v2/logs/${body.data.runId}`);
    expect(log.status).toBe(200);
    expect(await log.text()).not.toContain(VALUE);
  });

  it('a personal secret of the triggering user shadows the workspace secret', async () => {
    const member = await s.newUser('secret-member@example.com', { [s.workspaceId]: 'write' });
    await setSecretAsOperator(s.services.store, s.services.secrets, { workspaceId: s.workspaceId, scope: 'personal', ownerUserId: member.userId, name: 'API_TOKEN', value: 'short' });
    const mine = JSON.parse((await run(usesSecret.id, member.key)).text);
    expect(mine.data.output.result.length).toBe(5);
    const admins = JSON.parse((await run(usesSecret.id)).text);
    expect(admins.data.output.result.length).toBe(VALUE.length);
  });

  it('an unknown secret fails the block with a message naming it', async () => {
    const body = JSON.parse((await run(missing.id)).text);
    expect(body.data.status).toBe('failed');
    expect(body.data.error.message).toContain('NOT_SET');
  });

  it('stores only sealed values, under a key kept outside the database with mode 0600', () => {
    const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
    try {
      const rows = db.prepare('SELECT * FROM secrets').all();
      expect(rows.length).toBeGreaterThan(0);
      expect(JSON.stringify(rows)).not.toContain(VALUE);
    } finally {
      db.close();
    }
    const stat = fs.statSync(path.join(s.dataDir, 'secrets.key'));
    expect(stat.mode & 0o777).toBe(0o600);
  });

  it('a sealed value only opens under its own name', () => {
    const cipher = new SecretCipher(Buffer.alloc(32, 7));
    const sealed = cipher.encrypt('v', 'ws/workspace//A');
    expect(cipher.decrypt(sealed, 'ws/workspace//A')).toBe('v');
    expect(() => cipher.decrypt(sealed, 'ws/workspace//B')).toThrow();
    expect(() => new SecretCipher(Buffer.alloc(32, 8)).decrypt(sealed, 'ws/workspace//A')).toThrow();
  });

  it('the admin command sets and deletes secrets, audits without the value, and refuses bad names', async () => {
    const admin = (args: string[]) =>
      spawnSync(process.execPath, [path.resolve(import.meta.dirname, '../bin/admin.js'), ...args], { env: { PATH: process.env.PATH, DATA_DIR: s.dataDir, ...s.databaseEnv }, encoding: 'utf8' });
    const set = admin(['secret', 'set', '--workspace', s.workspaceId, '--name', 'CLI_SECRET', '--value', 'from-the-cli-123']);
    expect(set.status).toBe(0);
    expect(set.stdout).not.toContain('from-the-cli-123');
    expect(JSON.parse(set.stdout)).toMatchObject({ name: 'CLI_SECRET', scope: 'workspace' });
    expect(await s.services.secrets.resolve(s.workspaceId, null, 'CLI_SECRET')).toBe('from-the-cli-123');
    const bad = admin(['secret', 'set', '--workspace', s.workspaceId, '--name', 'not-valid!', '--value', 'x']);
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stderr).error).toContain('secret name');
    expect(admin(['secret', 'delete', '--workspace', s.workspaceId, '--name', 'CLI_SECRET']).status).toBe(0);
    expect(await s.services.secrets.resolve(s.workspaceId, null, 'CLI_SECRET')).toBeUndefined();
    const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
    try {
      const events = db.prepare("SELECT * FROM audit_events WHERE resource_type = 'secret'").all();
      expect(events.map((e: any) => e.action)).toEqual(expect.arrayContaining(['secret.updated', 'secret.deleted']));
      expect(JSON.stringify(events)).not.toContain('from-the-cli-123');
    } finally {
      db.close();
    }
  });
});

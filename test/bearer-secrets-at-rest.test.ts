// Bearer secrets at rest. Share-link tokens: the database holds only their hash and a copy sealed under the
// secrets key, never the token itself; links made before (stored in plain by migration 40's schema) are
// converted by migration 45 and the first start, and keep working. The signing key that mints upload tokens,
// transfer URLs and cursors is stored sealed too (API keys and OAuth tokens were hashes already).
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createServices, startServer, type RunningServer } from '../src/server.ts';
import { createLogger } from '../src/http/logging.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

async function sharedFile(name: string): Promise<{ fileId: string; token: string; url: string }> {
  const file = await s.call('POST', '/api/v2/files', { workspaceId: s.workspaceId, name, content: `content of ${name}` });
  expect(file.status).toBe(200);
  const share = await s.call('PATCH', `/api/v2/files/${file.body.data.id}/share`, { workspaceId: s.workspaceId, isActive: true });
  expect(share.status, share.text).toBe(200);
  return { fileId: file.body.data.id, token: share.body.data.token, url: share.body.data.url };
}

/** Every byte of the database (and its WAL), to look for a secret anywhere in it. */
function databaseBytes(): Buffer {
  const file = s.services.config.databaseFile;
  return Buffer.concat([file, `${file}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)));
}

describe('share tokens at rest', () => {
  it('the database holds a hash and a sealed copy of a share token, never the token', async () => {
    const { fileId, token, url } = await sharedFile('at-rest.txt');
    expect(token.length).toBeGreaterThan(20);
    expect((await fetch(url)).status).toBe(200);
    const db = new DatabaseSync(s.services.config.databaseFile, { readOnly: true });
    try {
      const r = db.prepare('SELECT * FROM file_shares WHERE file_id = ?').get(fileId) as Record<string, unknown>;
      expect(r.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
      expect(r.plain_token).toBeNull();
      expect(JSON.stringify(r)).not.toContain(token);
    } finally {
      db.close();
    }
    expect(databaseBytes().includes(Buffer.from(token))).toBe(false);
    expect(databaseBytes().includes(Buffer.from(s.services.signingKey.toString('base64')))).toBe(false);
    // Members still see the link; it is the same after turning sharing off and on.
    const again = await s.call('GET', `/api/v2/files/${fileId}/share?workspaceId=${s.workspaceId}`);
    expect(again.body.data).toMatchObject({ token, url });
  });
});

describe('share links made before the tokens were sealed', () => {
  let restarted: RunningServer | null = null;
  afterAll(async () => {
    await restarted?.close();
  });

  it('are converted on start and keep working', async () => {
    const { fileId } = await sharedFile('old-link.txt');
    const legacyToken = 'legacy-plain-token-0123456789abcdef';
    const dataDir = s.dataDir;
    const dbFile = s.services.config.databaseFile;
    await s.close();
    // Back to the schema and plain token of version 40, as a database from before migration 45 has them.
    const db = new DatabaseSync(dbFile);
    const row = db.prepare('SELECT * FROM file_shares WHERE file_id = ?').get(fileId) as Record<string, any>;
    db.exec(`DROP TABLE file_shares;
      CREATE TABLE file_shares (
        id TEXT PRIMARY KEY, file_id TEXT NOT NULL UNIQUE REFERENCES files(id) ON DELETE CASCADE, workspace_id TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE, is_active INTEGER NOT NULL, auth_type TEXT NOT NULL, password_hash TEXT,
        allowed_emails TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      DELETE FROM schema_migrations WHERE version = 45;`);
    // And the signing key in plain, as versions before stored it.
    const plainKey = Buffer.alloc(32, 7).toString('base64');
    db.prepare("UPDATE settings SET value = ? WHERE key = 'signing_key'").run(plainKey);
    db.prepare('INSERT INTO file_shares VALUES (?, ?, ?, ?, 1, ?, NULL, ?, ?, ?)').run(row.id, fileId, row.workspace_id, legacyToken, 'public', '[]', row.created_at, row.updated_at);
    db.close();

    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test' });
    restarted = await startServer(await createServices(config, createLogger('silent')));
    expect(restarted.services.signingKey.toString('base64')).toBe(plainKey);
    const link = await fetch(`${restarted.url}/shared/files/${legacyToken}`);
    expect(link.status).toBe(200);
    expect(await link.text()).toBe('content of old-link.txt');
    const shown = await fetch(`${restarted.url}/api/v2/files/${fileId}/share?workspaceId=${s.workspaceId}`, { headers: { 'X-API-Key': s.key } });
    expect(((await shown.json()) as any).data.token).toBe(legacyToken);

    const check = new DatabaseSync(dbFile, { readOnly: true });
    try {
      const r = check.prepare('SELECT * FROM file_shares WHERE file_id = ?').get(fileId) as Record<string, unknown>;
      expect(r.plain_token).toBeNull();
      expect(r.token_hash).toBe(createHash('sha256').update(legacyToken).digest('hex'));
      expect(JSON.stringify(r)).not.toContain(legacyToken);
      const key = check.prepare("SELECT value FROM settings WHERE key = 'signing_key'").get() as { value: string };
      expect(key.value).not.toContain(plainKey);
      expect(key.value.split('.')).toHaveLength(4);
    } finally {
      check.close();
    }
  });
});

// Postgres mode's configuration: DATABASE_URL needs SECRETS_KEY, every server must bring the same key, and the
// data directory no longer limits the database to one server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createServices, startServer } from '../src/server.ts';
import { createLogger } from '../src/http/logging.ts';
import { createTestDatabase } from './support/postgres.ts';

const dirs: string[] = [];
const dataDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-pgmode-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
const base = { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', NODE_ENV: 'test' };

describe('configuration in Postgres mode', () => {
  it('DATABASE_URL without SECRETS_KEY, or not a postgres URL, is a configuration error', () => {
    expect(() => loadConfig({ ...base, DATA_DIR: dataDir(), DATABASE_URL: 'postgres://u@127.0.0.1:1/db' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, DATA_DIR: dataDir(), DATABASE_URL: 'postgres://u@127.0.0.1:1/db' })).toThrow(/SECRETS_KEY is required when DATABASE_URL is set/);
    expect(() => loadConfig({ ...base, DATA_DIR: dataDir(), DATABASE_URL: 'mysql://u@h/db', SECRETS_KEY: randomBytes(32).toString('base64') })).toThrow(/DATABASE_URL must be a postgres:\/\/ URL/);
  });

  it('servers share one database and one data directory; a server with another key is refused in one line', async () => {
    const db = await createTestDatabase();
    try {
      const key = randomBytes(32).toString('base64');
      const dir = dataDir();
      const config = loadConfig({ ...base, DATA_DIR: dir, DATABASE_URL: db.url, SECRETS_KEY: key });
      // Two servers on one DATA_DIR: refused on SQLite, allowed here.
      const one = await startServer(await createServices(config, createLogger('silent')));
      const two = await startServer(await createServices(config, createLogger('silent')));
      try {
        for (const s of [one, two]) expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      } finally {
        await one.close();
        await two.close();
      }
      const other = loadConfig({ ...base, DATA_DIR: dataDir(), DATABASE_URL: db.url, SECRETS_KEY: randomBytes(32).toString('base64') });
      const err = await createServices(other, createLogger('silent')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toBe('SECRETS_KEY does not open the secrets stored in the database at DATABASE_URL; every server on one database must use the same SECRETS_KEY');
    } finally {
      await db.drop();
    }
  });
});

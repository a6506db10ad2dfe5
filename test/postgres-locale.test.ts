// A server refuses to start, in one line, on a Postgres database whose encoding or locale cannot sort and fold
// text as SQLite does (the README asks for UTF8 with C.UTF-8): here, one created with ctype C, under which
// lower() folds ASCII only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { spawnServer } from './support/children.ts';
import { createTestDatabase, postgresAvailable } from './support/postgres.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!postgresAvailable())('the database locale', () => {
  it('a server on a database with ctype C does not start: one line naming what it found and what it needs', async () => {
    const admin = await createTestDatabase({ empty: true });
    const name = `owa_locale_${randomBytes(4).toString('hex')}`;
    const client = new pg.Client({ connectionString: admin.url });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
      const url = admin.url.replace(/\/[^/]+$/, `/${name}`);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-locale-'));
      dirs.push(dir);
      const started = spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'test', DATABASE_URL: url, SECRETS_KEY: randomBytes(32).toString('base64') });
      await expect(started).rejects.toThrow(
        'Cannot start: the Postgres database at DATABASE_URL has encoding UTF8, collation C and ctype C; it needs encoding UTF8 with locale C.UTF-8 (create it with: createdb --template=template0 --encoding=UTF8 --locale=C.UTF-8 <name>)\n',
      );
      // Nothing was written into it.
      const check = new pg.Client({ connectionString: url });
      await check.connect();
      try {
        expect((await check.query("SELECT COUNT(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).rows[0].n).toBe(0);
      } finally {
        await check.end();
      }
    } finally {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
      await admin.drop();
    }
  });
});

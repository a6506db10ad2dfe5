// A user is found by e-mail address in any ASCII case through an index on lower(email) on both engines
// (SQLite's NOCASE unique constraint cannot answer lower(email) = lower(?), so the lookup scanned every user).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/store/index.ts';
import { SqliteDatabase } from '../src/store/sqlite.ts';
import { createUser } from '../src/identity/admin.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-email-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('users by e-mail on SQLite', () => {
  it('finds an address in another case through the users_email_folded index', async () => {
    const file = path.join(dir, 'db.sqlite');
    const store = await openSqliteStore(file);
    try {
      await createUser(store, { email: 'Ada.Lovelace@Example.org' });
      expect((await store.users.getByEmail('ada.lovelace@EXAMPLE.ORG'))?.email).toBe('Ada.Lovelace@Example.org');
    } finally {
      await store.close();
    }
    const db = new SqliteDatabase(file);
    try {
      const plan = await db.dialect.explain(db.read, 'SELECT * FROM users WHERE lower(email) = lower(?)', ['x@example.org']);
      expect(plan.join('\n')).toMatch(/USING INDEX users_email_folded/);
    } finally {
      await db.close();
    }
  });
});

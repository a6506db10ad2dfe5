// The store contract (test/support/store-contract.ts) on Postgres: a fresh database per suite, cloned from the
// test cluster's migrated template (test/support/postgres.ts).
import { describe, expect, it } from 'vitest';
import { PostgresDatabase, numberPlaceholders } from '../src/store/postgres.ts';
import { openPostgresStore } from '../src/store/index.ts';
import { loadMigrations } from '../src/store/migrations.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { createTestDatabase } from './support/postgres.ts';
import { describeStoreContract } from './support/store-contract.ts';

const dropped: (() => Promise<void>)[] = [];
describeStoreContract('postgres', {
  async open() {
    const db = await createTestDatabase();
    dropped.push(db.drop);
    return new PostgresDatabase(db.url);
  },
  async cleanup() {
    for (const drop of dropped.splice(0)) await drop();
  },
});

describe('placeholders on Postgres', () => {
  it('numbers each ? outside literals, quoted names and comments', () => {
    expect(numberPlaceholders(`SELECT ?, '?' AS "a?", x -- why?\n FROM t WHERE a = ? AND b = 'it''s ?'`)).toBe(
      `SELECT $1, '?' AS "a?", x -- why?\n FROM t WHERE a = $2 AND b = 'it''s ?'`,
    );
  });
});

describe('several servers starting at once on an empty Postgres database', () => {
  it('migrate it once, bootstrap it once, and all open it', async () => {
    const db = await createTestDatabase({ empty: true });
    try {
      const applied: number[] = [];
      const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore(db.url, (m) => applied.push(m.version))));
      try {
        const migrations = loadMigrations('postgres');
        expect(applied.sort((a, b) => a - b)).toEqual(migrations.map((m) => m.version));
        const boots = await Promise.all(stores.map((s) => bootstrapIfEmpty(s, { apiKey: null })));
        expect(boots.filter(Boolean)).toHaveLength(1);
        for (const s of stores) {
          expect(await s.users.count()).toBe(1);
          expect(await s.schemaIsCurrent()).toBe(true);
        }
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    } finally {
      await db.drop();
    }
  });
});

// The store contract (test/support/store-contract.ts) on Postgres: a fresh database per suite, cloned from the
// test cluster's migrated template (test/support/postgres.ts).
import { describe, expect, it } from 'vitest';
import { PostgresDatabase, numberPlaceholders } from '../src/store/postgres.ts';
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

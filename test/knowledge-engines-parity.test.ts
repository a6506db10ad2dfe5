// Knowledge search answers alike on both engines (issue 20): the labelled retrieval set loaded into a server on
// SQLite and into one on Postgres (without pgvector here: the vector leg is the in-memory index on both; the full
// text is FTS5 on one, a tsvector on the other) gives hybrid and vector recall@10 within 0.03 of each other.
// (The pgvector leg is compared in test/knowledge-pgvector.test.ts.)
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createTestDatabase, postgresAvailable } from './support/postgres.ts';
import { loadRetrievalSet, rankings, recallAt10, type LoadedSet } from './support/retrieval.ts';

const servers: TestServer[] = [];
let sqlite: { s: TestServer; set: LoadedSet };
let postgres: { s: TestServer; set: LoadedSet };
let dropDatabase = async () => undefined as void;

beforeAll(async () => {
  if (!postgresAvailable()) return;
  const db = await createTestDatabase();
  dropDatabase = db.drop;
  const [a, b] = await Promise.all([
    startTestServer({ RATE_LIMIT_FREE_API: '100000', DATABASE_URL: '' }),
    startTestServer({ RATE_LIMIT_FREE_API: '100000', DATABASE_URL: db.url, SECRETS_KEY: randomBytes(32).toString('base64') }),
  ]);
  servers.push(a!, b!);
  expect(a!.services.store.connection?.engine).toBe('sqlite');
  expect(b!.services.store.connection?.engine).toBe('postgres');
  expect(b!.services.store.pgvector).toBeNull();
  const [sa, sb] = await Promise.all([loadRetrievalSet(a!), loadRetrievalSet(b!)]);
  sqlite = { s: a!, set: sa };
  postgres = { s: b!, set: sb };
});
afterAll(async () => {
  for (const s of servers) await s.stop();
  await dropDatabase();
});

describe.runIf(postgresAvailable())('knowledge search on SQLite and on Postgres', () => {
  it('hybrid and vector recall@10 on the labelled set are within 0.03 of each other', async () => {
    for (const mode of ['hybrid', 'vector'] as const) {
      const onSqlite = recallAt10(await rankings(sqlite.s, sqlite.set, mode));
      const onPostgres = recallAt10(await rankings(postgres.s, postgres.set, mode));
      console.log(`${mode} recall@10: SQLite ${onSqlite.toFixed(3)}, Postgres ${onPostgres.toFixed(3)}`);
      expect(Math.abs(onSqlite - onPostgres)).toBeLessThanOrEqual(0.03);
    }
  });
});

// The store contract (test/support/store-contract.ts) on SQLite: a fresh migrated database file per suite.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteDatabase } from '../src/store/sqlite.ts';
import { loadMigrations, migrate } from '../src/store/migrations.ts';
import { createStore } from '../src/store/index.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { describeStoreContract } from './support/store-contract.ts';

const dirs: string[] = [];
describeStoreContract('sqlite', {
  async open() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-contract-'));
    dirs.push(dir);
    const db = new SqliteDatabase(path.join(dir, 'contract.sqlite'));
    await migrate(db);
    return db;
  },
  async cleanup() {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  },
});

// SQLite's own migration: names repeated before the unique indexes existed are renamed, never lost, so the
// indexes can be built on an existing database.
describe('migration 150 on a database that already repeats names', () => {
  it('keeps the oldest name and appends the id to later repeats', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-contract-'));
    const db = new SqliteDatabase(path.join(dir, 'old.sqlite'));
    try {
      const all = loadMigrations('sqlite');
      await migrate(db, all.filter((m) => m.version < 150));
      const store = createStore(db);
      const ws = (await bootstrapIfEmpty(store, { apiKey: null }))!.workspace.id;
      const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
      await db.transaction(async (tx) => {
        for (const [id, s] of [['aaaaaaaa-1', 1], ['bbbbbbbb-2', 2], ['cccccccc-3', 3]] as const) {
          await tx.run(
            `INSERT INTO workflows (id, workspace_id, name, folder_path, position, state, state_saved_at, created_at, updated_at) VALUES (?, ?, 'Same', '/', 0, '{}', ?, ?, ?)`,
            [id, ws, at(s), at(s), at(s)],
          );
        }
        await tx.run(`INSERT INTO knowledge_bases (id, workspace_id, name, embedding_model, embedding_dimension, chunking_config, created_at, updated_at) VALUES ('kb', ?, 'KB', 'm', 4, '{}', ?, ?)`, [ws, at(0), at(0)]);
        await tx.run(`INSERT INTO knowledge_tag_definitions (id, knowledge_base_id, tag_slot, display_name, field_type, created_at, updated_at) VALUES ('t1-aaaaaa', 'kb', 'tag1', 'Owner', 'text', ?, ?)`, [at(1), at(1)]);
        await tx.run(`INSERT INTO knowledge_tag_definitions (id, knowledge_base_id, tag_slot, display_name, field_type, created_at, updated_at) VALUES ('t2-bbbbbb', 'kb', 'tag2', 'OWNER', 'text', ?, ?)`, [at(2), at(2)]);
      });
      await migrate(db, all);
      expect((await db.read.all<{ name: string }>('SELECT name FROM workflows ORDER BY created_at')).map((r) => r.name)).toEqual(['Same', 'Same (bbbbbbbb)', 'Same (cccccccc)']);
      expect((await db.read.all<{ display_name: string }>('SELECT display_name FROM knowledge_tag_definitions ORDER BY created_at')).map((r) => r.display_name)).toEqual(['Owner', 'OWNER (t2-bbbbb)']);
    } finally {
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// An in-memory database has one connection (no snapshot reader): its read-only transactions queue with the
// writes and still refuse to write; afterwards the connection writes again.
describe('read-only transactions on an in-memory SQLite database', () => {
  it('read, refuse writes, and leave the connection writable', async () => {
    const db = new SqliteDatabase(':memory:');
    try {
      expect(db.connection).toBeNull();
      await db.transaction((tx) => tx.run('CREATE TABLE t (x INTEGER)'));
      await db.transaction((tx) => tx.run('INSERT INTO t (x) VALUES (1)'));
      expect(await db.transaction(async (tx) => (await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM t'))!.n, { readOnly: true })).toBe(1);
      await expect(db.transaction((tx) => tx.run('INSERT INTO t (x) VALUES (2)'), { readOnly: true })).rejects.toThrow();
      await db.transaction((tx) => tx.run('INSERT INTO t (x) VALUES (3)'));
      expect((await db.read.all<{ x: number }>('SELECT x FROM t ORDER BY x')).map((r) => Number(r.x))).toEqual([1, 3]);
    } finally {
      await db.close();
    }
  });
});

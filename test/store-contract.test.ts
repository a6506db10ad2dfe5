// The store contract (test/support/store-contract.ts) on SQLite: a fresh migrated database file per suite.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteDatabase } from '../src/store/sqlite.ts';
import { migrate } from '../src/store/migrations.ts';
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

// `npm run admin -- migrate-to-postgres --to <url>`: a SQLite server's data (workflows and their runs and logs,
// files, tables and rows, knowledge bases with processed documents, secrets), stopped, copied into an empty Postgres database; a server
// on Postgres, given the SQLite data directory's secrets key and file bytes, answers the same reads.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { endsWithFile, exited, spawnServer, type SpawnedServer } from './support/children.ts';
import { apiBlock, apiCaller } from './support/api-workflow.ts';
import { createTestDatabase, postgresAvailable } from './support/postgres.ts';
import { PATIENCE_MS, waitUntil } from './support/wait.ts';
import { DOCUMENTS, QUERIES } from './fixtures/knowledge-retrieval.ts';

const ADMIN = path.resolve(import.meta.dirname, '..', 'bin', 'admin.js');
const KEY = 'sk-owa-migrate-pg-test-key-0123456789';
const dirs: string[] = [];
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const drop of drops) await drop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function admin(args: string[], env: Record<string, string>): Promise<{ code: unknown; stdout: string; stderr: string }> {
  const child = endsWithFile(spawn(process.execPath, [ADMIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  return { code: await exited(child), stdout, stderr };
}

async function stop(s: SpawnedServer): Promise<void> {
  s.child.kill('SIGTERM');
  await exited(s.child);
}

describe.skipIf(!postgresAvailable())('migrate-to-postgres', () => {
  it('copies a stopped SQLite server into an empty Postgres; a Postgres server then answers the same reads', { timeout: 4 * PATIENCE_MS }, async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-migrate-'));
    dirs.push(dataDir);
    const base = { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'test', BOOTSTRAP_API_KEY: KEY };
    const sqlite = await spawnServer({ ...base, DATA_DIR: dataDir });
    const call = apiCaller(sqlite.url, KEY);
    const ws = (await call('GET', '/api/v2/workspaces'))[0].id as string;
    // Workflows with a deployed version, and a run with its log.
    const wf = await call('POST', '/api/v2/workflows', { workspaceId: ws, name: 'Moved' });
    const start = apiBlock('start_trigger', 'Start');
    await call('PUT', `/api/v2/workflows/${wf.id}/state`, { blocks: { [start.id]: start }, edges: [] });
    await call('POST', `/api/v2/workflows/${wf.id}/deploy`, {});
    const run = await call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    // Files, a table with rows, a knowledge base, a secret (sealed with the data directory's key).
    const file = await call('POST', '/api/v2/files', { workspaceId: ws, name: 'notes.txt', content: 'bytes that stay in the blob directory' });
    const table = await call('POST', '/api/v2/tables', { workspaceId: ws, name: 'people', schema: { columns: [{ name: 'name', type: 'string' }, { name: 'age', type: 'number' }] } });
    await call('POST', `/api/v2/tables/${table.id}/rows`, { workspaceId: ws, rows: [{ name: 'Ada', age: 36 }, { name: 'Grace', age: 85 }, { name: 'Edsger', age: 72 }] });
    const kb = await call('POST', '/api/v2/knowledge', { workspaceId: ws, name: 'Handbook', description: 'moved along' });
    // Processed documents (chunks, full text, float32 vectors) from workspace files, one chunk edited by hand.
    const texts = Object.entries(DOCUMENTS).slice(0, 12);
    const docFiles = [];
    for (const [name, text] of texts) docFiles.push(await call('POST', '/api/v2/files', { workspaceId: ws, name: `${name}.txt`, content: text }));
    const added = await call('POST', `/api/v2/knowledge/${kb.id}/documents/from-workspace-files`, { workspaceId: ws, fileReferences: docFiles.map((f: any) => f.id) });
    expect(added.added).toHaveLength(texts.length);
    await waitUntil('the documents to be processed', async () => {
      const docs = await call('GET', `/api/v2/knowledge/${kb.id}/documents?workspaceId=${ws}&limit=100`);
      const list = docs.documents ?? docs;
      return list.length === texts.length && list.every((d: any) => d.processingStatus === 'completed');
    });
    await call('PUT', '/api/v2/secrets/MOVED_SECRET', { workspaceId: ws, scope: 'workspace', value: 'still-readable-after-the-move', unredacted: true });

    const reads = async (c: ReturnType<typeof apiCaller>) => ({
      workflows: (await c('GET', `/api/v2/workflows?workspaceId=${ws}`)).map((w: any) => [w.id, w.name, w.isDeployed]),
      run: await c('GET', `/api/v2/workflows/${wf.id}/runs/${run.runId ?? run.executionId}`).then((r: any) => [r.id, r.status]),
      file: await c('GET', `/api/v2/files?workspaceId=${ws}`).then((fs: any[]) => fs.map((f) => [f.id, f.name, f.size])),
      rows: (await c('GET', `/api/v2/tables/${table.id}/rows?workspaceId=${ws}`)).rows?.map((r: any) => [r.id, r.data]) ?? null,
      knowledge: await c('GET', `/api/v2/knowledge/${kb.id}?workspaceId=${ws}`).then((k: any) => [k.id, k.name, k.description]),
      secret: await c('GET', `/api/v2/secrets?workspaceId=${ws}`).then((all: any[]) => all.find((s) => s.name === 'MOVED_SECRET')?.value),
      // Vector search answers the same: the same chunks, ranks and (to float precision) similarities.
      search: await Promise.all(
        QUERIES.slice(0, 8).map(async ([query]) =>
          (await c('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: [kb.id], query, topK: 5, searchMode: 'vector' })).results.map((h: any) => [
            h.documentId, h.chunkIndex, h.content, Math.round(h.similarity * 1e5) / 1e5,
          ]),
        ),
      ),
      // Hybrid fuses in the lexical leg (FTS5 on one engine, a tsvector on the other, so ranks may differ, see
      // test/knowledge-engines-parity.test.ts): a query in the documents' own words finds its document first.
      hybridBest: (await c('POST', '/api/v2/knowledge/search', { workspaceId: ws, knowledgeBaseIds: [kb.id], query: 'passwords fourteen characters ninety days', topK: 5, searchMode: 'hybrid' })).results[0]?.content.slice(0, 15),
    });
    const before = await reads(call);
    expect(before.secret).toBe('still-readable-after-the-move');
    expect(before.search.flat().length).toBeGreaterThan(20);
    expect(before.hybridBest).toBe('Password rules.');
    const bytesBefore = await (await fetch(`${sqlite.url}/api/v2/files/${file.id}?workspaceId=${ws}`, { headers: { 'X-API-Key': KEY } })).text();

    // A running server holds the data directory: the copy is refused.
    const target = await createTestDatabase({ empty: true });
    drops.push(target.drop);
    const refused = await admin(['migrate-to-postgres', '--to', target.url], { ...base, DATA_DIR: dataDir });
    expect(refused.code, refused.stderr).toBe(1);
    expect(JSON.parse(refused.stderr.trim()).error).toMatch(/running|lock|in use|holds/i);
    await stop(sqlite);

    const moved = await admin(['migrate-to-postgres', '--to', target.url], { ...base, DATA_DIR: dataDir });
    expect(moved.code, moved.stderr).toBe(0);
    const report = JSON.parse(moved.stdout);
    expect(report.tables).toMatchObject({ workflows: 1, files: 13, user_tables: 1, knowledge_bases: 1, knowledge_documents: 12 });
    expect(report.userTables).toBe(1);
    expect(report.next.join(' ')).toMatch(/SECRETS_KEY/);
    expect(report.next.join(' ')).toMatch(/BLOB_DIR/);

    // A second copy into the now filled database is refused.
    const again = await admin(['migrate-to-postgres', '--to', target.url], { ...base, DATA_DIR: dataDir });
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr.trim()).error).toMatch(/not empty/);

    // What the report says to do: the old key as SECRETS_KEY, the old blob directory as BLOB_DIR.
    const secretsKey = fs.readFileSync(path.join(dataDir, 'secrets.key'), 'utf8').trim();
    const pgDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-migrated-'));
    dirs.push(pgDataDir);
    const pg = await spawnServer({ ...base, DATA_DIR: pgDataDir, DATABASE_URL: target.url, SECRETS_KEY: secretsKey, BLOB_DIR: path.join(dataDir, 'files', 'blobs') });
    try {
      const after = await reads(apiCaller(pg.url, KEY));
      expect(after).toEqual(before);
      expect(await (await fetch(`${pg.url}/api/v2/files/${file.id}?workspaceId=${ws}`, { headers: { 'X-API-Key': KEY } })).text()).toBe(bytesBefore);
      // And it keeps writing: new rows after the copied ones.
      const more = await apiCaller(pg.url, KEY)('POST', `/api/v2/tables/${table.id}/rows`, { workspaceId: ws, rows: [{ name: 'Barbara', age: 50 }] });
      expect(more).toBeTruthy();
    } finally {
      await stop(pg);
    }
  });
});

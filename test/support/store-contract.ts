// The store contract: what every database engine behind the `Database` interface must do, and what each
// repository does on top of it. It runs against an engine it is given (a factory of fresh, migrated databases),
// so a new engine is tested by calling `describeStoreContract` with its own factory (test/store-contract.test.ts
// does it for SQLite).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/database.ts';
import { createStore, openWorkerStore, type Store } from '../../src/store/index.ts';
import { ForeignKeyViolation, SerializationFailure, UniqueViolation } from '../../src/store/errors.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { bootstrapIfEmpty } from '../../src/identity/admin.ts';
import { defineColumn } from '../../src/tables/columns.ts';
import { parsePredicate } from '../../src/tables/predicate.ts';
import { newRowId, newTableId } from '../../src/tables/service.ts';
import type { WorkflowRecord } from '../../src/store/workflows.ts';
import type { UserTableRecord } from '../../src/store/user-tables.ts';
import type { StoredFile } from '../../src/store/files.ts';
import { CHUNK_TEXT_INDEX } from '../../src/store/knowledge-chunks.ts';

export interface EngineUnderTest {
  /** A fresh database with the whole schema migrated. */
  open(): Promise<Database>;
  /** Removes what open() left behind (files), after every database it gave is closed. */
  cleanup?(): Promise<void>;
}

const at = (i = 0) => new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString();

/** A scratch table for the interface tests, in SQL every engine reads alike. */
const SCRATCH = 'CREATE TABLE contract_scratch (id TEXT PRIMARY KEY, label TEXT NOT NULL, UNIQUE (label))';

export function describeStoreContract(engineName: string, engine: EngineUnderTest): void {
  describe(`store contract: ${engineName}`, () => {
    let db: Database;
    let store: Store;
    let workspaceId: string;
    let userId: string;

    beforeAll(async () => {
      db = await engine.open();
      store = createStore(db);
      const boot = (await bootstrapIfEmpty(store, { apiKey: null }))!;
      workspaceId = boot.workspace.id;
      userId = boot.user.id;
      await db.transaction((tx) => tx.run(SCRATCH));
    });
    afterAll(async () => {
      await db.close();
      await engine.cleanup?.();
    });

    const count = async (label?: string) =>
      Number((await db.read.get<{ n: number }>(`SELECT COUNT(*) AS n FROM contract_scratch${label ? ' WHERE label = ?' : ''}`, label ? [label] : []))!.n);

    describe('the Database interface', () => {
      it('commits everything a transaction wrote, and returns what fn returned', async () => {
        const r = await db.transaction(async (tx) => {
          await tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['c1', 'committed-1']);
          await tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['c2', 'committed-2']);
          return 'done';
        });
        expect(r).toBe('done');
        expect(await count('committed-1')).toBe(1);
        expect(await count('committed-2')).toBe(1);
      });

      it('rolls back everything when fn throws, and rethrows its error', async () => {
        const boom = new Error('boom');
        await expect(
          db.transaction(async (tx) => {
            await tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['r1', 'rolled-back']);
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect(await count('rolled-back')).toBe(0);
      });

      it('plain reads see only committed data', async () => {
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        let written!: () => void;
        const wroteRow = new Promise<void>((resolve) => (written = resolve));
        const open = db.transaction(async (tx) => {
          await tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['u1', 'uncommitted']);
          expect(Number((await tx.get<{ n: number }>("SELECT COUNT(*) AS n FROM contract_scratch WHERE label = 'uncommitted'"))!.n)).toBe(1);
          written();
          await gate;
        });
        await wroteRow;
        expect(await count('uncommitted')).toBe(0);
        release();
        await open;
        expect(await count('uncommitted')).toBe(1);
      });

      it('raises UniqueViolation naming the table and the columns of the index', async () => {
        const err = await db.transaction((tx) => tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['dup', 'committed-1'])).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(UniqueViolation);
        expect((err as UniqueViolation).is('contract_scratch', 'label')).toBe(true);
        const pk = await db.transaction((tx) => tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['c1', 'fresh'])).catch((e: unknown) => e);
        expect((pk as UniqueViolation).is('contract_scratch', 'id')).toBe(true);
        // A composite index of the real schema, through a repository.
        const skill = { id: randomUUID(), workspaceId, name: 'twice', description: 'd', content: 'c', createdBy: userId, createdAt: at(), updatedAt: at() };
        await store.transaction((tx) => tx.skills.insert(skill));
        const again = await store.transaction((tx) => tx.skills.insert({ ...skill, id: randomUUID() })).catch((e: unknown) => e);
        expect(again).toBeInstanceOf(UniqueViolation);
        expect((again as UniqueViolation).is('skills', 'workspace_id', 'name')).toBe(true);
      });

      it('raises ForeignKeyViolation for a reference to a row that does not exist', async () => {
        const err = await store
          .transaction((tx) => tx.skills.insert({ id: randomUUID(), workspaceId: 'no-such-workspace', name: 'orphan', description: 'd', content: 'c', createdBy: null, createdAt: at(), updatedAt: at() }))
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ForeignKeyViolation);
      });

      it('a read-only transaction sees one snapshot, and refuses writes', async () => {
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        let firstRead!: () => void;
        const readOnce = new Promise<void>((resolve) => (firstRead = resolve));
        const snapshot = db.transaction(
          async (tx) => {
            const before = Number((await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM contract_scratch'))!.n);
            firstRead();
            await gate;
            const after = Number((await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM contract_scratch'))!.n);
            return { before, after };
          },
          { readOnly: true },
        );
        await readOnce;
        // A write commits while the snapshot is open; the snapshot does not see it.
        await db.transaction((tx) => tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['s1', 'during-snapshot']));
        release();
        const { before, after } = await snapshot;
        expect(after).toBe(before);
        expect(await count('during-snapshot')).toBe(1);
        await expect(db.transaction((tx) => tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', ['s2', 'in-read-only']), { readOnly: true })).rejects.toThrow();
        expect(await count('in-read-only')).toBe(0);
      });

      it('retries fn on SerializationFailure up to the number asked, each attempt starting from a clean slate', async () => {
        let attempts = 0;
        const r = await db.transaction(
          async (tx) => {
            attempts++;
            await tx.run('INSERT INTO contract_scratch (id, label) VALUES (?, ?)', [`retry-${attempts}`, 'retried']);
            if (attempts < 3) throw new SerializationFailure('conflict, try again');
            return attempts;
          },
          { retryOnSerializationFailure: 2 },
        );
        expect(r).toBe(3);
        expect(await count('retried')).toBe(1);

        let tries = 0;
        await expect(
          db.transaction(
            async () => {
              tries++;
              throw new SerializationFailure('always');
            },
            { retryOnSerializationFailure: 1 },
          ),
        ).rejects.toBeInstanceOf(SerializationFailure);
        expect(tries).toBe(2);

        let once = 0;
        await expect(db.transaction(async () => { once++; throw new SerializationFailure('no retries'); })).rejects.toBeInstanceOf(SerializationFailure);
        // Other errors are never retried.
        let other = 0;
        await expect(db.transaction(async () => { other++; throw new Error('not a conflict'); }, { retryOnSerializationFailure: 5 })).rejects.toThrow('not a conflict');
        expect([once, other]).toEqual([1, 1]);
      });

      it('a worker opens the same database from its description', async () => {
        if (!db.connection) return; // an engine that cannot share its database (SQLite in memory) has none
        const worker = openWorkerStore(JSON.parse(JSON.stringify(db.connection)));
        try {
          expect((await worker.skills.getByName(workspaceId, 'twice'))?.name).toBe('twice');
        } finally {
          await worker.close();
        }
      });
    });

    describe('the dialect', () => {
      const value = async (expr: string, params: (string | number)[] = []) => (await db.read.get<{ v: unknown }>(`SELECT ${expr} AS v`, params))!.v;
      const truth = async (cond: string, params: (string | number)[] = []) => Number(await value(`CASE WHEN ${cond} THEN 1 ELSE 0 END`, params));

      it('folds case beyond ASCII, and matches text without wildcards in the needle', async () => {
        const d = db.dialect;
        expect(await value(d.fold('?'), ['ÄBC Straße'])).toBe('äbc straße');
        expect(await truth(d.contains('?', '?'), ['a%b_c', '%b_'])).toBe(1);
        expect(await truth(d.contains('?', '?'), ['abc', 'x'])).toBe(0);
        expect(await truth(d.startsWith('?', '?'), ['prefix-rest', 'prefix'])).toBe(1);
        expect(await truth(d.startsWith('?', '?'), ['a-prefix', 'prefix'])).toBe(0);
        expect(await truth(d.endsWith('?', '?', '?'), ['naïve café', 4, 'café'])).toBe(1);
        expect(await truth(d.endsWith('?', '?', '?'), ['café au lait', 4, 'café'])).toBe(0);
      });

      it('matches * patterns with every other character literal', async () => {
        const d = db.dialect;
        const like = (text: string, pattern: string) => truth(d.matchesPattern('?', '?'), [text, d.likePattern(pattern)]);
        expect(await like('report-2024.csv', 'report-*.csv')).toBe(1);
        expect(await like('a?c', 'a?c')).toBe(1);
        expect(await like('abc', 'a?c')).toBe(0);
        expect(await like('[x]', '[x]')).toBe(1);
        expect(await like('x', '[x]')).toBe(0);
        expect(await like('50%', '5_%')).toBe(0);
        expect(await like('Report', 'report')).toBe(0);
      });

      it('finds elements of JSON arrays, and computes with ISO times', async () => {
        const d = db.dialect;
        expect(await truth(d.jsonArrayHas('?', '?'), ['["a","b"]', 'b'])).toBe(1);
        expect(await truth(d.jsonArrayHas('?', '?'), ['["a","b"]', 'c'])).toBe(0);
        expect(Number(await value(d.millisBetween('?', '?'), ['2025-01-01T00:00:01.500Z', '2025-01-01T00:00:00.000Z']))).toBe(1500);
        expect(Number(await value(d.millisBetween('?', '?'), ['2025-01-01T00:00:00.000Z', '2025-01-01T00:00:01.000Z']))).toBe(0);
        expect(Math.round(Number(await value(d.epochMillis('?'), ['2025-01-01T00:00:00.000Z'])))).toBe(Date.UTC(2025, 0, 1));
      });

      it('indexes and searches full text, and forgets removed keys', async () => {
        const index = db.dialect.fullTextIndex(CHUNK_TEXT_INDEX);
        await db.transaction(async (tx) => {
          await index.add(tx, 900001, 'the quick brown fox');
          await index.add(tx, 900002, 'a lazy dog sleeps');
        });
        expect((await index.search(db.read, 'fox', 10)).map((h) => h.key)).toEqual([900001]);
        await db.transaction((tx) => index.remove(tx, 900001));
        expect(await index.search(db.read, 'fox', 10)).toEqual([]);
        expect((await index.search(db.read, 'dog', 10)).map((h) => h.key)).toEqual([900002]);
        await db.transaction((tx) => index.remove(tx, 900002));
      });
    });

    describe('repositories', () => {
      const workflow = (name: string, folderPath = '/'): WorkflowRecord => ({
        id: randomUUID(), workspaceId, name, description: null, folderPath, position: 0, archived: false, archivedAt: null, locked: false,
        isDeployed: false, deployedAt: null, activeVersionId: null, isPublicApi: false, runCount: 0, lastRunAt: null, state: '{}',
        stateSavedAt: at(), createdBy: userId, createdAt: at(), updatedAt: at(),
      });

      it('workflows: insert, read, list with search, and a taken name in a folder is the 409 of the name check', async () => {
        const w = workflow('Contract Flow', '/team');
        await store.transaction((tx) => tx.workflows.insert(w));
        expect((await store.workflows.get(w.id))?.name).toBe('Contract Flow');
        expect(await store.workflows.nameTaken(workspaceId, '/team', 'Contract Flow')).toBe(true);
        const page = await store.workflows.list({ workspaceId, archived: false, folderPath: null, deployedOnly: false, search: 'contract f', sortBy: 'name', sortOrder: 'asc', after: null, limit: 10 });
        expect(page.map((x) => x.id)).toEqual([w.id]);

        const clash = await store.transaction((tx) => tx.workflows.insert(workflow('Contract Flow', '/team'))).catch((e: unknown) => e);
        expect(clash).toBeInstanceOf(DomainError);
        expect((clash as DomainError).kind).toBe('conflict');
        expect((clash as DomainError).message).toBe('A workflow named "Contract Flow" already exists in /team.');
        // The same name in another folder, or beside an archived one, is free.
        await store.transaction((tx) => tx.workflows.insert(workflow('Contract Flow', '/other')));
        await store.transaction((tx) => tx.workflows.update(w.id, { archived: true, archivedAt: at(1), updatedAt: at(1) }));
        const back = workflow('Contract Flow', '/team');
        await store.transaction((tx) => tx.workflows.insert(back));
        // Restoring the archived one into the taken name is refused the same way.
        const restore = await store.transaction((tx) => tx.workflows.update(w.id, { archived: false, archivedAt: null, updatedAt: at(2) })).catch((e: unknown) => e);
        expect((restore as DomainError).kind).toBe('conflict');
        // A rename into a taken name too.
        const other = workflow('Second', '/team');
        await store.transaction((tx) => tx.workflows.insert(other));
        const rename = await store.transaction((tx) => tx.workflows.update(other.id, { name: 'Contract Flow', updatedAt: at(3) })).catch((e: unknown) => e);
        expect((rename as DomainError).message).toBe('A workflow named "Contract Flow" already exists in /team.');
        expect((await store.workflows.get(other.id))?.name).toBe('Second');
      });

      it('user tables and their rows: create, query through the dialect, and a taken table name is a 409', async () => {
        const columns = [defineColumn({ name: 'title', type: 'string' }, []), defineColumn({ name: 'tags', type: 'select', multiple: true, options: [{ id: 'o1', name: 'red' }, { id: 'o2', name: 'blue' }] }, [])];
        const table: UserTableRecord = {
          id: newTableId(), workspaceId, name: 'Contract Table', description: null, folderPath: '/', columns, ownerId: userId, ownerEmail: 'x@example.com',
          rowCount: 0, maxRows: 1000, locks: { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false }, job: null,
          archivedAt: null, archiveBatch: null, createdAt: at(), updatedAt: at(),
        };
        await store.transaction(async (tx) => {
          await tx.userTables.insert(table);
          await tx.tableRows.createTable(table.id, columns);
          const title = columns[0]!.id;
          const tags = columns[1]!.id;
          await tx.tableRows.insert(table.id, columns, [
            { id: newRowId(), orderKey: 'a0', createdAt: at(), updatedAt: at(), cells: { [title]: 'Ärger im Büro', [tags]: '["o1"]' } },
            { id: newRowId(), orderKey: 'a1', createdAt: at(), updatedAt: at(), cells: { [title]: 'report?.csv', [tags]: '["o2"]' } },
            { id: newRowId(), orderKey: 'a2', createdAt: at(), updatedAt: at(), cells: { [title]: 'plain' } },
          ]);
        });
        expect(await store.tableRows.tableExists(table.id)).toBe(true);
        const titles = async (where: unknown) =>
          (await store.tableRows.query(table.id, columns, { where: parsePredicate(columns, where, ['where']), sort: [], limit: 10 })).map((r) => r.cells[columns[0]!.id]);
        expect(await titles({ field: 'title', op: 'contains', value: 'ärger' })).toEqual(['Ärger im Büro']);
        expect(await titles({ field: 'title', op: 'startsWith', value: 'ÄRG' })).toEqual(['Ärger im Büro']);
        expect(await titles({ field: 'title', op: 'endsWith', value: 'BÜRO' })).toEqual(['Ärger im Büro']);
        expect(await titles({ field: 'title', op: 'like', value: 'report?.*' })).toEqual(['report?.csv']);
        expect(await titles({ field: 'title', op: 'ilike', value: 'REPORT*' })).toEqual(['report?.csv']);
        expect(await titles({ field: 'title', op: 'nlike', value: '*?*' })).toEqual(['Ärger im Büro', 'plain']);
        expect(await titles({ field: 'tags', op: 'contains', value: 'blue' })).toEqual(['report?.csv']);
        expect(await titles({ field: 'tags', op: 'ncontains', value: 'blue' })).toEqual(['Ärger im Büro', 'plain']);
        expect(await store.tableRows.missingIndexes(table.id, [{ kind: 'system', name: 'createdAt' }])).toEqual([]);
        expect(await store.tableRows.count(table.id, null)).toBe(3);
        expect((await store.userTables.list({ workspaceId, search: 'contract t', folderPath: null, sortBy: 'name', order: 'asc', after: null, limit: 10 } as never)).map((t) => t.id)).toContain(table.id);

        const clash = await store.transaction((tx) => tx.userTables.insert({ ...table, id: newTableId() })).catch((e: unknown) => e);
        expect((clash as DomainError).kind).toBe('conflict');
        expect((clash as DomainError).message).toBe('A table named "Contract Table" already exists.');
        await store.transaction((tx) => tx.tableRows.dropTable(table.id));
        expect(await store.tableRows.tableExists(table.id)).toBe(false);
      });

      it('files: a taken name in a folder is the 409 of the name check; a deleted file frees it', async () => {
        const file = (name: string): StoredFile => ({
          id: randomUUID(), workspaceId, folderPath: '/docs', name, contentType: 'text/plain', size: 1, blobKey: 'k', currentVersion: 1,
          uploadedBy: userId, uploadedByEmail: 'x@example.com', uploadedAt: at(), updatedAt: at(), deletedAt: null, archiveBatch: null,
        });
        const f = file('a.txt');
        await store.transaction((tx) => tx.files.insert(f));
        const clash = await store.transaction((tx) => tx.files.insert(file('a.txt'))).catch((e: unknown) => e);
        expect((clash as DomainError).kind).toBe('conflict');
        expect((clash as DomainError).details).toEqual({ code: 'NAME_CONFLICT' });
        await store.transaction((tx) => tx.files.update(f.id, { deletedAt: at(1), updatedAt: at(1) }));
        await store.transaction((tx) => tx.files.insert(file('a.txt')));
      });

      it('every name a check guards is backed by a unique index', async () => {
        const twice = async (table: string, columns: string[], write: (tx: Store | Parameters<Parameters<Store['transaction']>[0]>[0], n: number) => Promise<unknown>) => {
          await store.transaction((tx) => write(tx, 1));
          const err = await store.transaction((tx) => write(tx, 2)).catch((e: unknown) => e);
          expect(err, `${table}(${columns.join(', ')})`).toBeInstanceOf(UniqueViolation);
          expect((err as UniqueViolation).is(table, ...columns), `${table}(${columns.join(', ')})`).toBe(true);
        };
        await twice('custom_tools', ['workspace_id', 'title'], (tx) =>
          tx.customTools.insert({ id: randomUUID(), workspaceId, title: 'same', schema: { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }, code: 'return 1', createdBy: userId, createdAt: at(), updatedAt: at() } as never),
        );
        await twice('folders', ['workspace_id', 'kind', 'path'], (tx) =>
          tx.workflowFolders.insert({ id: randomUUID(), workspaceId, path: '/same', parentPath: '/', name: 'same', locked: false, createdAt: at(), updatedAt: at(), archivedAt: null, archiveBatch: null }),
        );
        const kb = randomUUID();
        await store.transaction((tx) => tx.knowledgeBases.insert({ id: kb, workspaceId, name: 'KB', description: null, folderPath: '/', chunkingConfig: '{}', embeddingModel: 'm', embeddingDimension: 4, createdBy: userId, createdAt: at(), updatedAt: at(), deletedAt: null } as never));
        await twice('knowledge_tag_definitions', ['knowledge_base_id', 'display_name'], (tx, n) =>
          tx.knowledgeBases.insertTag({ id: randomUUID(), knowledgeBaseId: kb, tagSlot: `tag${n}`, displayName: n === 1 ? 'Owner' : 'OWNER', fieldType: 'text', createdAt: at(), updatedAt: at() }),
        );
      });
    });
  });
}

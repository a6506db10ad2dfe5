// Leases instead of start-up sweeps (issue 19), for the queues outside runs: knowledge documents, knowledge
// connector syncs, table imports and exports, callback deliveries, in-flight idempotency keys, and the knowledge
// vector cache's version. For
// each queue: an expired lease is reclaimed by a poll, a completion after the lease was lost is dropped, and a
// live lease of another process is left alone (by a poll, or by a second service starting on the same store).
// A dead process is simulated by writing what it leaves in the database: a lease held by an owner that is gone.
// The server's own polls run too (a short LEASE_TTL_MS), so the tests check states, not who reclaimed first.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, callWithHeaders, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';
import { Gate, waitUntil } from './support/wait.ts';
import { KnowledgeService } from '../src/knowledge/service.ts';

const past = () => new Date(Date.now() - 60_000).toISOString();
const future = () => new Date(Date.now() + 3_600_000).toISOString();

let s: TestServer;
let db: DatabaseSync;
beforeAll(async () => {
  // Connector syncs fetch pages from a local site, allowed by EGRESS_ALLOW_CIDRS; the tests run the connector
  // scheduler's poll themselves (KB_CONNECTOR_POLL_MS 0 turns off its timer).
  s = await startTestServer({ LEASE_TTL_MS: '300', EGRESS_ALLOW_CIDRS: '127.0.0.1/32', KB_CONNECTOR_POLL_MS: '0' });
  // A second connection, standing in for what another (dead or live) process wrote.
  db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
  db.exec('PRAGMA busy_timeout = 10000');
});
afterAll(async () => {
  db.close();
  await s.stop();
});

describe('knowledge documents', () => {
  let kbId: string;
  let docId: string;
  const interruptions = () => Number((db.prepare('SELECT processing_interruptions AS n FROM knowledge_documents WHERE id = ?').get(docId) as { n: number }).n);
  /** What a process leaves when it dies while processing: the attempt claimed, held by `owner` until `until`. */
  const heldBy = (owner: string, until: string) =>
    db.prepare("UPDATE knowledge_documents SET processing_status = 'processing', processing_attempt = processing_attempt + 1, lease_owner = ?, lease_until = ? WHERE id = ?").run(owner, until, docId);

  beforeAll(async () => {
    kbId = (await createBase(s)).id;
    docId = (await uploadDocument(s, kbId, 'lease.txt', 'Leases expire. A poll reclaims what a dead worker held.')).document.id;
    expect((await waitForDocument(s, kbId, docId)).processingStatus).toBe('completed');
  });

  it('a live lease of another process is left alone, by a poll and by a second service starting on the same store', async () => {
    heldBy('another-live-process', future());
    expect(await s.services.knowledge.reclaimExpired()).toEqual({ requeued: 0, failed: [] });
    const second = new KnowledgeService({ store: s.services.store, blobs: s.services.blobs, config: s.services.config, logger: s.services.logger, content: s.services.content, provider: s.services.knowledge.provider });
    await second.start();
    try {
      expect(await second.reclaimExpired()).toEqual({ requeued: 0, failed: [] });
    } finally {
      await second.close();
    }
    const doc = (await s.services.store.knowledgeDocuments.get(docId))!;
    expect(doc.processingStatus).toBe('processing');
    expect(db.prepare('SELECT lease_owner AS o FROM knowledge_documents WHERE id = ?').get(docId)).toEqual({ o: 'another-live-process' });
  });

  it('an expired lease is reclaimed by a poll: processed again once, failed with the clear reason the second time', async () => {
    heldBy('a-dead-process', past());
    expect((await s.services.knowledge.reclaimExpired()).failed).toEqual([]);
    s.services.knowledge.notify();
    expect((await waitForDocument(s, kbId, docId)).processingStatus).toBe('completed');
    expect(interruptions()).toBe(1);

    heldBy('another-dead-process', past());
    expect((await s.services.knowledge.reclaimExpired()).requeued).toBe(0);
    const failed = await waitForDocument(s, kbId, docId, ['failed']);
    expect(failed.processingStatus).toBe('failed');
    expect(failed.processingError).toMatch(/cut off twice .* not retried again/);
    expect(failed.chunkCount).toBe(0);
  });

  it('an attempt that lost its lease cannot renew or complete it; the new holder can', async () => {
    // Workers A and B are played by hand here: the server's own workers stay out of it.
    await s.services.knowledge.close();
    const now = new Date().toISOString();
    db.prepare("UPDATE knowledge_documents SET processing_status = 'pending', processing_interruptions = 0, lease_owner = NULL, lease_until = NULL WHERE id = ?").run(docId);
    const store = s.services.store;
    const first = (await store.transaction((tx) => tx.knowledgeDocuments.claim(docId, now, 'worker-a', future())))!;
    // Worker A stalls past its lease; a poll reclaims the document and worker B claims it.
    db.prepare('UPDATE knowledge_documents SET lease_until = ? WHERE id = ?').run(past(), docId);
    expect((await store.transaction((tx) => tx.knowledgeDocuments.reclaimExpired(new Date().toISOString()))).requeued).toBe(1);
    const second = (await store.transaction((tx) => tx.knowledgeDocuments.claim(docId, now, 'worker-b', future())))!;
    expect(second).toBeGreaterThan(first);
    const outcome = { status: 'completed', chunkCount: 7, tokenCount: 7, characterCount: 7 } as const;
    expect(await store.transaction((tx) => tx.knowledgeDocuments.renew(docId, first, 'worker-a', future()))).toBe(false);
    expect(await store.transaction((tx) => tx.knowledgeDocuments.finish(docId, first, 'worker-a', outcome, now))).toBe(false);
    expect(await store.transaction((tx) => tx.knowledgeDocuments.renew(docId, second, 'worker-b', future()))).toBe(true);
    // Even with the right attempt number, another owner cannot end it.
    expect(await store.transaction((tx) => tx.knowledgeDocuments.finish(docId, second, 'worker-a', outcome, now))).toBe(false);
    expect(await store.transaction((tx) => tx.knowledgeDocuments.finish(docId, second, 'worker-b', { status: 'failed', error: 'b says so' }, now))).toBe(true);
    expect((await store.knowledgeDocuments.get(docId))!.processingError).toBe('b says so');
    await s.services.knowledge.start();
  });
});

describe('knowledge connector syncs', () => {
  const slowGate = new Gate();
  let site: http.Server;
  let siteUrl: string;
  let kbId: string;
  beforeAll(async () => {
    site = http.createServer((req, res) => {
      const page = (text: string) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>${text}</p>`);
      // Held until the test opens the gate: the sync fetching it runs for as long as the test needs.
      if (req.url === '/slow.html') return void slowGate.opened.then(() => page('a slow page about tides'));
      if (req.url === '/page.html') return page('a page about lighthouses and their keepers');
      res.writeHead(404).end('not found');
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    kbId = (await createBase(s, { name: 'Leased syncs' })).id;
  });
  afterAll(async () => {
    slowGate.open();
    await s.services.knowledge.idleSyncs();
    site.closeAllConnections();
    await new Promise((r) => site.close(r));
  });

  const connectorPath = (id: string) => `/api/v2/knowledge/${kbId}/connectors/${id}`;
  /** A connector whose first sync (started by its creation) has finished. */
  const syncedConnector = async (page: string) => {
    const c = await s.ok('POST', `/api/v2/knowledge/${kbId}/connectors`, { workspaceId: s.workspaceId, connectorType: 'web', sourceConfig: { urls: `${siteUrl}/${page}` } });
    await s.services.knowledge.idleSyncs();
    return c.id as string;
  };
  const read = async (id: string) => s.ok('GET', `${connectorPath(id)}?workspaceId=${s.workspaceId}`);
  const lease = (id: string) => db.prepare('SELECT status, resume_status AS resumeStatus, lease_owner AS owner, sync_id AS syncId FROM knowledge_connectors WHERE id = ?').get(id);
  const store = () => s.services.store;
  /**
   * What another process writes when it starts a sync: the connector syncing, held by `owner` until `until`
   * (in the past: a process that died syncing). Written through this server's store, whose writes are queued,
   * so it never waits on a transaction this process has open.
   */
  const heldBy = (id: string, owner: string, until: string, now = new Date().toISOString()) =>
    store().transaction((tx) => tx.knowledgeConnectors.claimSync(id, `ksl_${owner}`, owner, until, now));
  /** A time past every lease taken in these tests: what "now" is once a stalled holder's lease has run out. */
  const later = () => new Date(Date.now() + 7_200_000).toISOString();

  it('a live sync of another process is left alone, by a poll and by a second service starting on the same store', async () => {
    const id = await syncedConnector('page.html');
    expect(await heldBy(id, 'another-live-process', future())).toBe(true);
    const second = new KnowledgeService({ store: s.services.store, blobs: s.services.blobs, config: s.services.config, logger: s.services.logger, content: s.services.content, provider: s.services.knowledge.provider });
    await second.start();
    try {
      expect(await second.releaseExpiredSyncs()).toBe(0);
      await second.syncDue();
    } finally {
      await second.close();
    }
    expect(await s.services.knowledge.releaseExpiredSyncs()).toBe(0);
    expect(lease(id)).toEqual({ status: 'syncing', resumeStatus: 'active', owner: 'another-live-process', syncId: 'ksl_another-live-process' });
    // A client sees it syncing, and cannot start a second sync beside it.
    expect((await read(id)).status).toBe('syncing');
    const again = await s.call('POST', `${connectorPath(id)}/sync`, { workspaceId: s.workspaceId });
    expect(again.status).toBe(409);
    expect(again.body.error.details.code).toBe('SYNC_IN_PROGRESS');
    expect((await read(id)).syncLogs).toHaveLength(1);
  });

  it('a sync whose lease expired is released by a poll: back to the status it had, due again, and synced by the next poll', async () => {
    const id = await syncedConnector('page.html');
    await store().transaction((tx) => tx.knowledgeConnectors.update(id, { status: 'error' }));
    expect(await heldBy(id, 'a-dead-process', past())).toBe(true);
    expect(await s.services.knowledge.releaseExpiredSyncs()).toBe(1);
    expect(lease(id)).toEqual({ status: 'error', resumeStatus: 'error', owner: null, syncId: null });
    const released = await read(id);
    expect(Date.parse(released.nextSyncAt)).toBeLessThanOrEqual(Date.now());

    // The scheduler's poll does both: releases what a dead process held, then syncs what is due.
    expect(await heldBy(id, 'another-dead-process', past())).toBe(true);
    await waitUntil('the poll to release the dead sync', async () => {
      await s.services.knowledge.syncDue();
      return (lease(id) as { owner: string | null }).owner !== 'another-dead-process';
    });
    await s.services.knowledge.idleSyncs();
    const synced = await read(id);
    expect(synced).toMatchObject({ status: 'active', consecutiveFailures: 0 });
    expect(synced.syncLogs).toHaveLength(2);
    expect(lease(id)).toMatchObject({ owner: null, syncId: null });
  });

  it('a sync that lost its lease writes no outcome: the process holding the lease now keeps the connector', async () => {
    const c = await s.ok('POST', `/api/v2/knowledge/${kbId}/connectors`, { workspaceId: s.workspaceId, connectorType: 'web', sourceConfig: { urls: `${siteUrl}/slow.html` } });
    // This server's sync waits on the slow page; meanwhile it stalls past its lease (seen from "later"): a poll
    // releases the sync and another process starts one.
    await waitUntil('the sync to hold its lease', () => (lease(c.id) as { owner: string | null }).owner);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.releaseExpiredSyncs(later()))).toBeGreaterThanOrEqual(1);
    expect(await heldBy(c.id, 'the-new-holder', future())).toBe(true);
    slowGate.open();
    await s.services.knowledge.idleSyncs();
    expect(lease(c.id)).toEqual({ status: 'syncing', resumeStatus: 'active', owner: 'the-new-holder', syncId: 'ksl_the-new-holder' });
    const after = await read(c.id);
    expect(after.syncLogs).toHaveLength(0);
    expect(after.lastSyncAt).toBeNull();

    // The same at the store: a live lease is not taken; an expired one is, by the next claim even before a poll
    // released it; the old sync can then neither renew nor finish.
    const now = new Date().toISOString();
    expect(await heldBy(c.id, 'worker-a', future())).toBe(false);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.claimSync(c.id, 'ksl_a', 'worker-a', future(), later()))).toBe(true);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.claimSync(c.id, 'ksl_b', 'worker-b', future(), now))).toBe(false);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.claimSync(c.id, 'ksl_b', 'worker-b', later(), later()))).toBe(true);
    expect(lease(c.id)).toEqual({ status: 'syncing', resumeStatus: 'active', owner: 'worker-b', syncId: 'ksl_b' });
    const outcome = { failed: false, error: null, docCount: 7, nextSyncAt: null };
    expect(await store().transaction((tx) => tx.knowledgeConnectors.renewSync(c.id, 'ksl_a', 'worker-a', future()))).toBe(false);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.finishSync(c.id, 'ksl_a', 'worker-a', outcome, now))).toBe(false);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.renewSync(c.id, 'ksl_b', 'worker-b', future()))).toBe(true);
    // The right sync, the wrong owner: still not.
    expect(await store().transaction((tx) => tx.knowledgeConnectors.finishSync(c.id, 'ksl_b', 'worker-a', outcome, now))).toBe(false);
    expect(await store().transaction((tx) => tx.knowledgeConnectors.finishSync(c.id, 'ksl_b', 'worker-b', outcome, now))).toBe(true);
    expect(await read(c.id)).toMatchObject({ status: 'active', lastSyncDocCount: 7 });
    expect(lease(c.id)).toMatchObject({ owner: null, syncId: null });
  });
});

describe('the knowledge vector cache', () => {
  it('reloads when the base version in the database changed, whichever process changed the chunks', async () => {
    const kb = await createBase(s, { name: 'Versioned' });
    const doc = (await uploadDocument(s, kb.id, 'v.txt', 'One small document about vector versions.')).document;
    await waitForDocument(s, kb.id, doc.id);
    const knowledge = s.services.knowledge;
    const loaded = await knowledge.index(kb.id);
    expect(loaded.size).toBeGreaterThan(0);
    // Unchanged: the cached vectors are kept (one read of the version, no reload).
    expect(await knowledge.index(kb.id)).toBe(loaded);
    // Another process deletes a chunk: this one is not told, but the version moved with the change.
    const seq = Number((db.prepare('SELECT seq FROM knowledge_chunks WHERE knowledge_base_id = ? LIMIT 1').get(kb.id) as { seq: number }).seq);
    const before = await s.services.store.knowledgeChunks.vectorVersion(kb.id);
    const other = await import('../src/store/index.ts').then((m) => m.openWorkerStore({ engine: 'sqlite', file: path.join(s.dataDir, 'workspace.sqlite') }));
    try {
      await other.transaction((tx) => tx.knowledgeChunks.delete(seq));
    } finally {
      await other.close();
    }
    expect(await s.services.store.knowledgeChunks.vectorVersion(kb.id)).toBeGreaterThan(before);
    const reloaded = await knowledge.index(kb.id);
    expect(reloaded).not.toBe(loaded);
    expect(reloaded.size).toBe(loaded.size - 1);
  });
});

describe('table imports and exports', () => {
  const newImport = async (status: 'processing', leaseOwner: string | null, leaseUntil: string | null, updatedAt = new Date().toISOString()) => {
    const id = `imp_${randomUUID().replace(/-/g, '')}`;
    await s.services.store.transaction((tx) =>
      tx.tableImports.insert({
        id, workspaceId: s.workspaceId, userId: s.userId, uploadId: null, source: { type: 'upload', name: 'x.csv', contentType: 'text/csv', size: 1 },
        target: { type: 'new', name: `t_${id}` }, options: {}, status, tableId: null, stagingId: null, rowsProcessed: 0, rowsRejected: 0, cellsRejected: 0,
        rejectedSamples: [], error: null, expiresAt: future(), createdAt: updatedAt, updatedAt, completedAt: null,
      }),
    );
    db.prepare('UPDATE table_imports SET lease_owner = ?, lease_until = ? WHERE id = ?').run(leaseOwner, leaseUntil, id);
    return id;
  };

  it('an expired import lease, or an import nobody claimed within a lease time, is failed by a poll; a live one is left alone', async () => {
    const live = await newImport('processing', 'another-live-process', future());
    const dead = await newImport('processing', 'a-dead-process', past());
    const neverClaimed = await newImport('processing', null, null, past());
    const justStarted = await newImport('processing', null, null);
    await s.services.tableJobs.reclaimExpired();
    const store = s.services.store;
    for (const id of [dead, neverClaimed]) {
      const imp = await waitUntil('the import to be failed', async () => ((i) => (i?.status === 'failed' ? i : null))(await store.tableImports.get(id)));
      expect(imp.status).toBe('failed');
      expect(imp.error).toMatch(/interrupted .* Start it again/);
    }
    for (const id of [live, justStarted]) expect((await store.tableImports.get(id))!.status).toBe('processing');
    // Only the holder ends it: another owner does not hold it, and a claim of a held import fails.
    expect(await store.transaction((tx) => tx.tableImports.holds(live, 'worker-b'))).toBe(false);
    expect(await store.transaction((tx) => tx.tableImports.claim(live, 'worker-b', future()))).toBe(false);
    expect(await store.transaction((tx) => tx.tableImports.holds(live, 'another-live-process'))).toBe(true);
  });

  it('an export that lost its lease is not completed by its old holder', async () => {
    const table = await s.ok('POST', '/api/v2/tables', { workspaceId: s.workspaceId, name: 'leased_export', schema: { columns: [{ name: 'a', type: 'string' }] } });
    const id = `tex_${randomUUID().replace(/-/g, '')}`;
    const now = new Date().toISOString();
    const store = s.services.store;
    await store.transaction((tx) =>
      tx.tableExports.insert({ id, tableId: table.id, workspaceId: s.workspaceId, userId: s.userId, format: 'csv', status: 'queued', rowsProcessed: 0, error: null, fileName: 'x.csv', size: null, createdAt: now, updatedAt: now, completedAt: null }),
    );
    expect(await store.transaction((tx) => tx.tableExports.claim(id, 'worker-a', future(), now))).toBe(true);
    expect((await s.services.tableJobs.reclaimExpired()).exports).toBe(0);
    // Worker A stalls past its lease: the next poll fails the export, and A's late completion is dropped.
    db.prepare('UPDATE table_exports SET lease_until = ? WHERE id = ?').run(past(), id);
    expect(await store.transaction((tx) => tx.tableExports.renew(id, 'worker-b', future()))).toBe(false);
    await s.services.tableJobs.reclaimExpired();
    await waitUntil('the export to be failed', async () => (await store.tableExports.get(id))?.status === 'failed');
    expect(await store.transaction((tx) => tx.tableExports.renew(id, 'worker-a', future()))).toBe(false);
    expect(await store.transaction((tx) => tx.tableExports.transition(id, ['processing'], 'completed', { rowsProcessed: 1, size: 1, completedAt: now }, now, 'worker-a'))).toBe(false);
    const e = (await store.tableExports.get(id))!;
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/interrupted/);
  });
});

describe('callback deliveries', () => {
  it('a live lease is not taken; an expired one is due again, the cut-off attempt logged, and the old holder\'s outcome dropped', async () => {
    const wf = await buildWorkflow(s, 'Leased callbacks', [apiBlock('start_trigger', 'Start')], []);
    const runId = (await s.ok('POST', `/api/v2/workflows/${wf.id}/execute`, { input: {} })).runId as string;
    const id = randomUUID();
    const now = new Date().toISOString();
    const store = s.services.store;
    await store.transaction((tx) =>
      tx.runCallbacks.insertDelivery({
        id, runId, workspaceId: s.workspaceId, url: 'http://127.0.0.1:9/none', event: 'run.completed', payload: '{}', status: 'pending', attempts: 0,
        nextAttemptAt: future(), attemptStartedAt: null, createdAt: now, deliveredAt: null, lastError: null,
      }),
    );
    // Not due yet for the running worker; claimed here by hand as two processes would.
    const at = future();
    const a = (await store.transaction((tx) => tx.runCallbacks.claim(id, at, 'worker-a', new Date(Date.parse(at) + 60_000).toISOString())))!;
    expect(a).toMatchObject({ attempts: 1, leaseOwner: 'worker-a' });
    expect(await store.runCallbacks.dueIds(at, 10)).not.toContain(id);
    expect(await store.transaction((tx) => tx.runCallbacks.claim(id, at, 'worker-b', future()))).toBeUndefined();

    // Worker A's lease runs out: worker B takes the delivery (attempt 2), and attempt 1 is logged as cut off.
    const later = new Date(Date.parse(at) + 120_000).toISOString();
    expect(await store.runCallbacks.dueIds(later, 10)).toContain(id);
    const b = (await store.transaction((tx) => tx.runCallbacks.claim(id, later, 'worker-b', new Date(Date.parse(later) + 60_000).toISOString())))!;
    expect(b).toMatchObject({ attempts: 2, leaseOwner: 'worker-b' });
    const attempt = (n: number, outcome: 'delivered' | 'retry') => ({ deliveryId: id, attempt: n, startedAt: later, durationMs: 1, statusCode: 200, error: null, outcome, nextAttemptAt: null });
    expect(await store.transaction((tx) => tx.runCallbacks.recordAttempt(attempt(1, 'delivered'), 'delivered', 'worker-a'))).toBe(false);
    expect(await store.transaction((tx) => tx.runCallbacks.recordAttempt(attempt(2, 'delivered'), 'delivered', 'worker-b'))).toBe(true);
    const log = await store.runCallbacks.attemptsOf(id);
    expect(log.map((x) => [x.attempt, x.outcome])).toEqual([[1, 'retry'], [2, 'delivered']]);
    expect(log[0]!.error).toMatch(/server stopped/);
    expect((await store.runCallbacks.forRun(runId)).find((d) => d.id === id)).toMatchObject({ status: 'delivered', leaseOwner: null, leaseUntil: null });
  });
});

describe('idempotency keys in flight', () => {
  it('a key reserved by another server is in progress here until its lease runs out; then the retry is processed afresh', async () => {
    const wf = await buildWorkflow(s, 'Idempotent leases', [apiBlock('start_trigger', 'Start')], []);
    const execute = `/api/v2/workflows/${wf.id}/execute`;
    const body = { async: true, input: {} };
    // The fingerprint a request of this shape has (read from a first key's row).
    const first = await callWithHeaders(s, 'POST', execute, body, { 'Idempotency-Key': 'lease-a' });
    expect(first.status).toBe(202);
    const scopeOf = (key: string) => ({ subject: `user:${s.userId}`, scope: `path:${execute}`, operationId: 'executeWorkflow', key });
    const stored = await s.services.store.idempotencyKeys.get(scopeOf('lease-a'));
    expect(stored?.state).toBe('completed');

    // Another server (its own memory, same database) is processing key lease-b: reserved, leased, nothing committed.
    const now = new Date().toISOString();
    const reserved = await s.services.store.transaction((tx) => tx.idempotencyKeys.reserve(scopeOf('lease-b'), stored!.fingerprint, 'another-server', now, future(), future()));
    expect(reserved).toBeUndefined();
    const during = await callWithHeaders(s, 'POST', execute, body, { 'Idempotency-Key': 'lease-b' });
    expect(during.status).toBe(409);
    expect(during.body.error.details.code).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(during.headers.get('retry-after')).toBe('1');

    // That server dies: once its lease has run out the key is free, and the retry runs as a first request.
    db.prepare("UPDATE idempotency_keys SET lease_until = ? WHERE idem_key = 'lease-b'").run(past());
    const after = await callWithHeaders(s, 'POST', execute, body, { 'Idempotency-Key': 'lease-b' });
    expect(after.status).toBe(202);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.body.data.runId).not.toBe(first.body.data.runId);
    expect((await s.services.store.idempotencyKeys.get(scopeOf('lease-b')))?.state).toBe('completed');
    // And this server's own reservation is visible to any other server while it lasts (the row, not memory).
    const again = await s.services.store.transaction((tx) => tx.idempotencyKeys.reserve(scopeOf('lease-b'), stored!.fingerprint, 'another-server', new Date().toISOString(), future(), future()));
    expect(again?.state).toBe('completed');
  });
});

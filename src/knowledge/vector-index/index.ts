// The vector indexes a server holds, one per knowledge base, kept in step with the chunks table.
//
// A small base gets the exact index (its float32 vectors in memory), reloaded whole when the base's
// `vector_version` moved. A base of `minRows` chunks or more gets the quantized index (./quantized.ts), which
// lives with the data instead: it is written to `<dir>/<base>.vix` with the version it reflects (its watermark)
// and catches up by reading only what changed after that version (chunks whose `vector_rev` is higher, and
// tombstones of removed ones; src/store/knowledge-chunks.ts), whichever server changed them. A restart reads
// the file and catches up the same way; the file is written through a rename, so a crash leaves the previous
// one, which is simply further behind. After loading, the live rows are counted against the table, and rows
// whose chunk went without a tombstone (a cascade) are dropped. Search re-scores candidates from the table
// too, so a chunk that is gone never answers.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { ExactIndex } from './exact.ts';
import { DEFAULT_QUANTIZED_OPTIONS, QuantizedIndex, type QuantizedOptions } from './quantized.ts';
import type { VectorIndex, VectorSource } from './types.ts';
import { pagedVectors } from './types.ts';

export type { VectorHit, VectorIndex, VectorQuery, VectorSource } from './types.ts';

export interface VectorIndexSettings {
  /** `auto`: exact below `minRows` chunks, quantized from there; or one kind for every base. */
  kind: 'auto' | 'exact' | 'quantized';
  minRows: number;
  /** Where quantized indexes are written; null keeps them in memory only. */
  dir: string | null;
  options?: QuantizedOptions;
}

type Held = { kind: 'exact'; version: number; index: ExactIndex } | { kind: 'quantized'; index: QuantizedIndex; queue: Promise<unknown> };

export class VectorIndexes {
  private readonly entries = new Map<string, Promise<Held>>();
  private readonly source: VectorSource;
  private readonly settings: VectorIndexSettings;
  private readonly logger: Logger | null;

  constructor(source: VectorSource, settings: VectorIndexSettings, logger: Logger | null = null) {
    this.source = source;
    this.settings = settings;
    this.logger = logger;
  }

  /** The base's index, caught up with the base's vector version read now. */
  async get(knowledgeBaseId: string): Promise<VectorIndex> {
    const version = await this.source.vectorVersion(knowledgeBaseId);
    const entry = this.entries.get(knowledgeBaseId);
    if (entry) {
      const held = await entry.catch(() => null);
      if (held && this.entries.get(knowledgeBaseId) === entry) {
        if (held.kind === 'quantized') return this.caughtUp(knowledgeBaseId, held, version);
        if (held.version === version) return held.index;
      }
    }
    // Opened after reading the version: a change committing meanwhile makes the next read catch up again.
    const opening = this.open(knowledgeBaseId, version);
    this.entries.set(knowledgeBaseId, opening);
    opening.catch(() => {
      if (this.entries.get(knowledgeBaseId) === opening) this.entries.delete(knowledgeBaseId);
    });
    const held = await opening;
    return held.kind === 'exact' ? held.index : this.caughtUp(knowledgeBaseId, held, version);
  }

  /** Forgets an exact index after a change made here (a quantized one catches up on its next use instead). */
  invalidate(knowledgeBaseId: string): void {
    const entry = this.entries.get(knowledgeBaseId);
    void entry?.then((held) => {
      if (held.kind === 'exact' && this.entries.get(knowledgeBaseId) === entry) this.entries.delete(knowledgeBaseId);
    }, () => undefined);
  }

  /** Writes every quantized index with unwritten changes (shutdown). */
  async close(): Promise<void> {
    for (const [kbId, entry] of this.entries) {
      const held = await entry.catch(() => null);
      if (held?.kind === 'quantized' && held.index.unsaved > 0) await this.serial(held, () => this.save(kbId, held.index));
    }
  }

  private fileOf(knowledgeBaseId: string): string | null {
    return this.settings.dir && /^[A-Za-z0-9_-]+$/.test(knowledgeBaseId) ? path.join(this.settings.dir, `${knowledgeBaseId}.vix`) : null;
  }

  private async open(knowledgeBaseId: string, version: number): Promise<Held> {
    const { kind, minRows } = this.settings;
    if (kind !== 'exact') {
      const file = this.fileOf(knowledgeBaseId);
      if (file && fs.existsSync(file)) {
        const started = performance.now();
        const { dimension } = await this.source.vectorShape(knowledgeBaseId);
        const index = await QuantizedIndex.load(file, this.source, dimension, this.options);
        if (index) {
          const held: Held = { kind: 'quantized', index, queue: Promise.resolve() };
          await this.serial(held, () => this.catchUp(knowledgeBaseId, held, true));
          this.logger?.info({ knowledgeBaseId, rows: index.size, ms: Math.round(performance.now() - started) }, 'vector index loaded from its file');
          return held;
        }
        this.logger?.warn({ knowledgeBaseId, file }, 'vector index file unreadable or of another shape; rebuilding it');
      }
      if (kind === 'quantized' || (await this.source.chunkCount(knowledgeBaseId)) >= minRows) {
        const held: Held = { kind: 'quantized', index: await this.build(knowledgeBaseId), queue: Promise.resolve() };
        await this.serial(held, () => this.save(knowledgeBaseId, held.index));
        return held;
      }
    }
    return { kind: 'exact', version, index: await ExactIndex.load(this.source, knowledgeBaseId) };
  }

  private get options(): QuantizedOptions {
    return this.settings.options ?? DEFAULT_QUANTIZED_OPTIONS;
  }

  private async build(knowledgeBaseId: string): Promise<QuantizedIndex> {
    const started = performance.now();
    const index = await QuantizedIndex.build(this.source, knowledgeBaseId, this.options);
    this.logger?.info({ knowledgeBaseId, rows: index.size, ms: Math.round(performance.now() - started) }, 'vector index built');
    return index;
  }

  /** Runs `task` after the index's earlier catch-ups and writes (they change or read its rows across awaits). */
  private serial<T>(held: Extract<Held, { kind: 'quantized' }>, task: () => Promise<T>): Promise<T> {
    const run = held.queue.then(task, task);
    held.queue = run.catch(() => undefined);
    return run;
  }

  private async caughtUp(knowledgeBaseId: string, held: Extract<Held, { kind: 'quantized' }>, version: number): Promise<VectorIndex> {
    if (held.index.watermark !== version) await this.serial(held, () => this.catchUp(knowledgeBaseId, held, false));
    return held.index;
  }

  /**
   * Applies the changes after the index's watermark: changed chunks are upserted, tombstoned ones removed (both
   * idempotent, so changes committing while this reads are simply applied again next time). A far grown or
   * untrained index is rebuilt instead. After a load from file the live rows are also checked against the table.
   */
  private async catchUp(knowledgeBaseId: string, held: Extract<Held, { kind: 'quantized' }>, afterLoad: boolean): Promise<void> {
    const version = await this.source.vectorVersion(knowledgeBaseId);
    let index = held.index;
    // A version behind the file's means another database (a restored backup) under the same directory.
    const foreign = version < index.watermark;
    if (version !== index.watermark && !foreign) {
      const from = index.watermark;
      const changed = pagedVectors((after) => this.source.vectorsChangedAfter(knowledgeBaseId, from, after, 2000), index.dimension);
      for await (const r of changed) index.upsert(r.seq, r.documentId, r.enabled, r.vector);
      for (const seq of await this.source.removedAfter(knowledgeBaseId, from)) index.remove(seq);
      index.watermark = version;
    }
    let rebuild = foreign || (!index.trained && index.size > 0) || index.size > 4 * index.trainedOn + 1000;
    if (afterLoad && index.size !== (await this.source.chunkCount(knowledgeBaseId))) rebuild = (await this.reconcile(knowledgeBaseId, index)) || rebuild;
    if (rebuild) {
      index = held.index = await this.build(knowledgeBaseId);
      await this.save(knowledgeBaseId, index);
      return;
    }
    if (index.unsaved >= Math.max(1000, index.size * 0.05)) await this.save(knowledgeBaseId, index);
  }

  /** Drops rows whose chunk is gone without a tombstone; true when the table holds chunks the index lacks (rebuild). */
  private async reconcile(knowledgeBaseId: string, index: QuantizedIndex): Promise<boolean> {
    const stored = new Set<number>();
    let after = 0;
    for (;;) {
      const page = await this.source.vectorSeqs(knowledgeBaseId, after, 50_000);
      if (page.length === 0) break;
      for (const s of page) stored.add(s);
      after = page[page.length - 1]!;
    }
    let dropped = 0;
    for (const seq of index.liveSeqs()) {
      if (stored.delete(seq)) continue;
      index.remove(seq);
      dropped++;
    }
    this.logger?.warn({ knowledgeBaseId, dropped, missing: stored.size }, 'vector index reconciled with the chunks table');
    return stored.size > 0;
  }

  private async save(knowledgeBaseId: string, index: QuantizedIndex): Promise<void> {
    const file = this.fileOf(knowledgeBaseId);
    if (!file) return;
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    const started = performance.now();
    await index.save(file);
    this.logger?.info({ knowledgeBaseId, rows: index.size, ms: Math.round(performance.now() - started) }, 'vector index written');
  }
}

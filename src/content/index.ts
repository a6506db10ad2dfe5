// The server thread's door to the content workers: every parse of bytes a user brought goes through here, so no
// document, however hostile, runs a parser on the event loop. Errors come back as the domain errors the callers
// already know (ContentError, UserPatternError, StateError, UserRegexError); a task that ran out of time or
// memory comes back as a WorkerOverrun.
import type { ContentSettings } from '../config.ts';
import { UserPatternError, type UserPatternProblem } from '../domain/safe-regex.ts';
import { degraded, type ExtractedText, type TextKind } from '../files/text.ts';
import type { ChunkingConfig, ChunkRecipe } from '../knowledge/chunking-config.ts';
import { UserRegexError } from '../knowledge/user-regex.ts';
import { StateError } from '../workflows/state.ts';
import type { ParsedDocument } from '../workflows/portable.ts';
import { movable, WorkerOverrun, WorkerPool, WorkerTaskError } from '../workers/pool.ts';
import { ContentError } from './guards.ts';
import type { Chunk } from '../knowledge/chunker.ts';
import type { ContentTasks } from './tasks.ts';

export { ContentError } from './guards.ts';
export { WorkerOverrun } from '../workers/pool.ts';

/** Turns an error a task raised in its worker back into the class its caller handles. */
function restore(err: unknown): never {
  if (!(err instanceof WorkerTaskError)) throw err;
  switch (err.remoteName) {
    case 'ContentError':
      throw new ContentError(err.message);
    case 'UserRegexError':
      throw new UserRegexError(err.message);
    case 'UserPatternError':
      throw new UserPatternError(err.props.problem as UserPatternProblem, err.message);
    case 'StateError':
      throw new StateError(err.message, (err.props.path as (string | number)[]) ?? []);
    default:
      throw err;
  }
}

export class ContentWorkers {
  private readonly pool: WorkerPool<ContentTasks>;

  constructor(settings: ContentSettings) {
    this.pool = new WorkerPool<ContentTasks>(new URL('./worker-main.ts', import.meta.url), {
      size: settings.workers,
      memoryMb: settings.memoryMb,
      timeoutMs: settings.timeoutMs,
      data: { limits: { maxDepth: settings.maxDepth, maxExpandedBytes: settings.maxExpandedBytes } },
      settings: { memory: 'CONTENT_WORKER_MEMORY_MB', timeout: 'CONTENT_TIMEOUT_MS' },
    });
  }

  private async run<K extends keyof ContentTasks & string>(task: K, input: Parameters<ContentTasks[K]>[0], bytes?: Uint8Array): Promise<Awaited<ReturnType<ContentTasks[K]>>> {
    try {
      return await this.pool.run(task, input, bytes ? [bytes.buffer as ArrayBuffer] : []);
    } catch (err) {
      return restore(err);
    }
  }

  /** A knowledge document's text cut into chunks. */
  knowledgeDocument(bytes: Buffer, doc: { contentType: string; filename: string; chunking: ChunkingConfig; recipe?: ChunkRecipe }): Promise<{ pieces: Chunk[]; characters: number }> {
    const data = movable(bytes);
    return this.run('knowledgeDocument', { bytes: data, ...doc }, data);
  }

  /** A file's text; a file its worker could not finish in its limits comes back degraded, saying so. */
  async fileText(kind: TextKind, bytes: Buffer, complete: boolean): Promise<ExtractedText> {
    const data = movable(bytes);
    try {
      return await this.run('fileText', { kind, bytes: data, complete }, data);
    } catch (err) {
      if (err instanceof WorkerOverrun) return degraded(err.message);
      throw err;
    }
  }

  /** Lines of a file's text matching a user pattern (at most maxResults + 1). */
  searchText(kind: TextKind, bytes: Buffer, complete: boolean, search: { pattern: string; literal: boolean; maxResults: number }): Promise<{ lineNumber: number; text: string }[]> {
    const data = movable(bytes);
    return this.run('searchText', { kind, bytes: data, complete, ...search }, data);
  }

  /** A workflow document as import reads it. */
  workflowDocument(workflow: unknown): Promise<ParsedDocument> {
    return this.run('workflowDocument', { workflow });
  }

  stats() {
    return this.pool.stats();
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

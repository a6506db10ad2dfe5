// What the content workers do: every parse of bytes a user brought (documents for knowledge bases, the text of
// workspace files, content search, workflow documents). These functions run inside a worker thread
// (worker-main.ts); the server thread reaches them through ContentWorkers (index.ts), never directly.
import { compileUserPattern } from '../domain/safe-regex.ts';
import { extractText, type ExtractedText, type TextKind } from '../files/text.ts';
import { chunkText, type Chunk } from '../knowledge/chunker.ts';
import type { ChunkingConfig, ChunkRecipe } from '../knowledge/chunking-config.ts';
import { extractDocument } from '../knowledge/extract.ts';
import { parseWorkflowDocument, type ParsedDocument } from '../workflows/portable.ts';
import { checkJsonDepth, ContentError, type ContentLimits } from './guards.ts';

const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export interface ContentTasks {
  /** A knowledge document's text, checked and cut into chunks (embedding happens on the server thread). */
  knowledgeDocument(input: {
    bytes: Uint8Array;
    contentType: string;
    filename: string;
    chunking: ChunkingConfig;
    recipe?: ChunkRecipe;
  }): Promise<{ pieces: Chunk[]; characters: number }>;
  /** The text of a workspace file (or of its first `bytes` when `complete` is false). */
  fileText(input: { kind: TextKind; bytes: Uint8Array; complete: boolean }): Promise<ExtractedText>;
  /** The lines of a file's text that match a user pattern, at most `maxResults` of them (one more says "more"). */
  searchText(input: {
    kind: TextKind;
    bytes: Uint8Array;
    complete: boolean;
    pattern: string;
    literal: boolean;
    maxResults: number;
  }): Promise<{ lineNumber: number; text: string }[]>;
  /** A workflow export document (or a bare state, or a JSON string of either) read into a workflow state. */
  workflowDocument(input: { workflow: unknown }): Promise<ParsedDocument>;
}

export type ContentTask = keyof ContentTasks;

export function contentTasks(limits: ContentLimits): ContentTasks {
  return {
    async knowledgeDocument({ bytes, contentType, filename, chunking, recipe }) {
      const { text, kind } = await extractDocument(asBuffer(bytes), contentType, filename, limits);
      if (text.trim() === '') throw new ContentError('The document has no text to index.');
      if (kind === 'json' || kind === 'jsonl' || kind === 'yaml') checkJsonDepth(text, limits, 'document');
      return { pieces: chunkText(text, chunking, kind, recipe), characters: text.length };
    },

    fileText({ kind, bytes, complete }) {
      return extractText(kind, asBuffer(bytes), complete, limits);
    },

    async searchText({ kind, bytes, complete, pattern, literal, maxResults }) {
      const matcher = compileUserPattern(pattern, { literal });
      const { text } = await extractText(kind, asBuffer(bytes), complete, limits);
      const found: { lineNumber: number; text: string }[] = [];
      const lines = text.split(/\r?\n/);
      for (let i = 0; i < lines.length && found.length <= maxResults; i++) {
        if (matcher.test(lines[i]!)) found.push({ lineNumber: i + 1, text: lines[i]!.slice(0, 1000) });
      }
      return found;
    },

    async workflowDocument({ workflow }) {
      return parseWorkflowDocument(workflow);
    },
  };
}

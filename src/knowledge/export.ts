// The export bundle of a knowledge base (`<name>.simkb.zip`), streamed as it is written:
//   manifest.json    format, the base (name, description, chunking, embedding model and width), counts
//   tags.json        tag definitions
//   documents.jsonl  one document per line: metadata, processing state, tag values by slot
//   chunks.jsonl     one chunk per line: document id, index, content, offsets, token count, enabled
//                    and, with vectors, the vector as base64 little-endian float32
//   files/<documentId>/<filename>  the original bytes of each document that has them
import { Readable } from 'node:stream';
import type { Store } from '../store/index.ts';
import type { BlobStore } from '../files/blob-store.ts';
import type { KnowledgeBaseRecord } from '../store/knowledge-bases.ts';
import { zipStream } from '../files/zip.ts';

export const EXPORT_FORMAT = 'simkb/1';

export async function exportBundle(store: Store, blobs: BlobStore, kb: KnowledgeBaseRecord, withVectors: boolean): Promise<Readable> {
  const docs = await store.knowledgeDocuments.allOf(kb.id);
  const tags = await store.knowledgeBases.tags(kb.id);
  const now = new Date();
  const json = (v: unknown) => () => Readable.from([Buffer.from(JSON.stringify(v, null, 2))]);
  const manifest = {
    format: EXPORT_FORMAT,
    exportedAt: now.toISOString(),
    knowledgeBase: {
      id: kb.id,
      name: kb.name,
      description: kb.description,
      chunkingConfig: JSON.parse(kb.chunkingConfig),
      embeddingModel: kb.embeddingModel,
      embeddingDimension: kb.embeddingDimension,
      createdAt: kb.createdAt,
    },
    counts: { documents: docs.length, chunks: docs.reduce((n, d) => n + d.chunkCount, 0), tags: tags.length },
    vectors: withVectors,
  };
  async function* chunkLines() {
    for (const d of docs) {
      for (const c of await store.knowledgeChunks.forExport(d.id)) {
        const line: Record<string, unknown> = {
          id: c.id, documentId: d.id, chunkIndex: c.chunkIndex, content: c.content, startOffset: c.startOffset, endOffset: c.endOffset,
          tokenCount: c.tokenCount, enabled: c.enabled,
        };
        if (withVectors && c.embedding) line.vector = Buffer.from(c.embedding).toString('base64');
        yield Buffer.from(JSON.stringify(line) + '\n');
      }
    }
  }
  const documentLines = docs.map((d) =>
    JSON.stringify({
      id: d.id, filename: d.filename, mimeType: d.mimeType, fileSize: d.fileSize, enabled: d.enabled, processingStatus: d.processingStatus,
      processingError: d.processingError, chunkCount: d.chunkCount, tokenCount: d.tokenCount, characterCount: d.characterCount, sourceUrl: d.sourceUrl,
      tags: d.tags, uploadedAt: d.uploadedAt, file: d.blobKey ? `files/${d.id}/${safeName(d.filename)}` : null,
    }),
  );
  return zipStream([
    { name: 'manifest.json', mtime: now, open: json(manifest) },
    { name: 'tags.json', mtime: now, open: json(tags.map((t) => ({ id: t.id, tagSlot: t.tagSlot, displayName: t.displayName, fieldType: t.fieldType }))) },
    { name: 'documents.jsonl', mtime: now, open: () => Readable.from([Buffer.from(documentLines.map((l) => l + '\n').join(''))]) },
    { name: 'chunks.jsonl', mtime: now, open: () => Readable.from(chunkLines()) },
    ...docs.filter((d) => d.blobKey).map((d) => ({ name: `files/${d.id}/${safeName(d.filename)}`, mtime: new Date(d.uploadedAt), open: () => blobs.read(d.blobKey!) })),
  ]);
}

const safeName = (name: string) => name.replace(/[\\/\u0000-\u001f]/g, '_') || 'document';

/** `attachment; filename=...` with an ASCII fallback and the UTF-8 name. */
export function bundleDisposition(name: string): string {
  const file = `${name}.simkb.zip`;
  const ascii = file.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file)}`;
}

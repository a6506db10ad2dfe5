// Chunking strategies end to end: each base's configuration decides how an uploaded document is split
// (one question per chunk with a strict regex, sentences, token windows, custom separators), sizes stay within
// maxSize, changing minSize/overlap changes the result, and a pattern that would backtrack for ever on a
// backtracking engine finishes at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.stop());

async function chunksOf(chunkingConfig: Record<string, unknown>, text: string, name = 'doc.txt'): Promise<{ content: string; tokenCount: number }[]> {
  const kb = await createBase(s, { chunkingConfig });
  const session = await uploadDocument(s, kb.id, name, text);
  const doc = await waitForDocument(s, kb.id, session.document.id);
  expect(doc.processingStatus, doc.processingError).toBe('completed');
  const r = await s.call('GET', `/api/v2/knowledge/${kb.id}/documents/${doc.id}/chunks?workspaceId=${s.workspaceId}&limit=100`);
  return r.body.data;
}

const faq = Array.from({ length: 6 }, (_, i) => `Q: Question number ${i + 1}?\nA: The answer to question ${i + 1} is short.`).join('\n\n');

describe('chunking strategies', () => {
  it('regex with strictBoundaries gives one question per chunk', async () => {
    const chunks = await chunksOf({ strategy: 'regex', minSize: 10, overlap: 0, strategyOptions: { pattern: '^Q:', strictBoundaries: true } }, faq);
    expect(chunks.map((c) => c.content)).toEqual(faq.split('\n\n'));
  });

  it('regex without strict boundaries packs questions up to maxSize; no pattern falls back to text', async () => {
    const packed = await chunksOf({ strategy: 'regex', minSize: 10, overlap: 0, strategyOptions: { pattern: '^Q:' } }, faq);
    expect(packed).toHaveLength(1);
    const fallback = await chunksOf({ strategy: 'regex', minSize: 10, overlap: 0 }, faq);
    expect(fallback).toHaveLength(1);
  });

  it('sentence and token strategies keep every chunk within maxSize tokens, sentences whole; overlap repeats the previous end', async () => {
    const text = Array.from({ length: 120 }, (_, i) => `Sentence ${i} talks about river ${i % 7} and its bridges.`).join(' ');
    const sentences = await chunksOf({ strategy: 'sentence', maxSize: 100, minSize: 20, overlap: 0 }, text);
    expect(sentences.length).toBeGreaterThan(5);
    for (const c of sentences) {
      expect(c.tokenCount).toBeLessThanOrEqual(100);
      expect(c.content).toMatch(/\.$/);
    }
    const tokens = await chunksOf({ strategy: 'token', maxSize: 100, minSize: 20, overlap: 0 }, text);
    for (const c of tokens) expect(c.tokenCount).toBeLessThanOrEqual(100);
    const overlapped = await chunksOf({ strategy: 'sentence', maxSize: 100, minSize: 20, overlap: 80 }, text);
    expect(overlapped[1]!.content.slice(0, 40)).not.toBe(sentences[1]!.content.slice(0, 40));
  });

  it('recursive with custom separators splits where told', async () => {
    const text = Array.from({ length: 5 }, (_, i) => `Section ${i}: ${'words '.repeat(60)}`).join('\n---\n');
    const chunks = await chunksOf({ strategy: 'recursive', maxSize: 100, minSize: 10, overlap: 0, strategyOptions: { separators: ['\n---\n'] } }, text);
    expect(chunks.map((c) => c.content.slice(0, 9))).toEqual(['Section 0', 'Section 1', 'Section 2', 'Section 3', 'Section 4']);
  });

  it('a pattern that backtracks catastrophically elsewhere runs in linear time here', async () => {
    const text = `${'a'.repeat(30_000)}!`;
    const started = Date.now();
    const chunks = await chunksOf({ strategy: 'regex', minSize: 10, overlap: 0, strategyOptions: { pattern: '(a+)+b' } }, text);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(chunks.length).toBeGreaterThan(0);
  });
});

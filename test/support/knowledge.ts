// Helpers for the knowledge tests: a base, a document uploaded through an upload session, waiting for processing.
import { expect } from 'vitest';
import yazl from 'yazl';
import type { TestServer } from './server.ts';

export async function createBase(s: TestServer, body: Record<string, unknown> = {}, workspaceId = s.workspaceId): Promise<any> {
  const r = await s.call('POST', '/api/v2/knowledge', { workspaceId, name: 'KB', ...body });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

/** Uploads through a session (one signed PUT) and completes it; returns the completed session. */
export async function uploadDocument(
  s: TestServer,
  kbId: string,
  name: string,
  content: string | Buffer,
  contentType = 'text/plain',
  extra: Record<string, unknown> = {},
  workspaceId = s.workspaceId,
): Promise<any> {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  const created = await s.call('POST', `/api/v2/knowledge/${kbId}/documents/uploads`, { workspaceId, name, contentType, size: bytes.length, ...extra });
  expect(created.status, created.text).toBe(200);
  const { session, uploadToken, transfer } = created.body.data;
  expect(transfer.method).toBe('put');
  const put = await fetch(transfer.url, { method: 'PUT', headers: transfer.headers, body: bytes });
  expect(put.status).toBe(200);
  const done = await s.request(`/api/v2/knowledge/${kbId}/documents/uploads/${session.id}/complete?workspaceId=${workspaceId}`, {
    method: 'POST',
    headers: { 'upload-token': uploadToken },
  });
  const body = (await done.json()) as any;
  expect(done.status, JSON.stringify(body)).toBe(200);
  return body.data;
}

export async function waitForDocument(s: TestServer, kbId: string, docId: string, statuses = ['completed', 'failed'], workspaceId = s.workspaceId, timeoutMs = 60_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await s.call('GET', `/api/v2/knowledge/${kbId}/documents/${docId}?workspaceId=${workspaceId}`);
    if (r.status === 200 && statuses.includes(r.body.data.processingStatus)) return r.body.data;
    if (Date.now() > until) throw new Error(`document ${docId} is still ${r.body?.data?.processingStatus ?? r.status}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

/** A zip (xlsx, pptx) built in memory from its parts. */
export function zipOf(entries: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(entries)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    zip.outputStream.on('data', (c: Buffer) => parts.push(c));
    zip.outputStream.on('end', () => resolve(Buffer.concat(parts)));
    zip.outputStream.on('error', reject);
  });
}

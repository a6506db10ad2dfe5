// The Files rules and error paths, through HTTP as a client sees them.
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { purgeFiles } from '../src/files/purge.ts';

let s: TestServer;
let ws: string;
const json = (body: unknown) => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const post = (path: string, body: unknown, key?: string) => s.request(path, { method: 'POST', ...json(body), key });
async function data(res: Response | Promise<Response>): Promise<any> {
  const r = await res;
  const body: any = await r.json();
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(body)}`);
  return body.data;
}
const createFile = (name: string, content: string, extra: Record<string, unknown> = {}) => data(post('/api/v2/files', { workspaceId: ws, name, content, ...extra }));
async function startUpload(name: string, size: number, contentType = 'application/octet-stream', extra: Record<string, unknown> = {}) {
  return data(post('/api/v2/files/uploads', { workspaceId: ws, name, contentType, size, ...extra }));
}
const session = (id: string, suffix: string, token: string, init: RequestInit = {}) =>
  s.request(`/api/v2/files/uploads/${id}${suffix}?workspaceId=${ws}`, { method: 'POST', ...init, headers: { 'upload-token': token, ...(init.headers as object) } });

function zipOf(entries: [string, string | Buffer][]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of entries) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    (zip.outputStream as Readable).on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
  });
}

/** A one-page PDF showing `text`, with a correct cross-reference table. */
function minimalPdf(text: string): Buffer {
  const stream = `BT /F1 24 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

beforeAll(async () => {
  s = await startTestServer({ UPLOAD_PART_SIZE: '1kb', UNZIP_MAX_SIZE: '64kb', UNZIP_MAX_ENTRIES: '20' });
  ws = s.workspaceId;
});
afterAll(() => s.stop());

describe('upload sessions', () => {
  it('refuses a missing, wrong, foreign or tampered upload token', async () => {
    const a = await startUpload('a.bin', 10);
    const b = await startUpload('b.bin', 10);
    const missing = await s.request(`/api/v2/files/uploads/${a.session.id}?workspaceId=${ws}`);
    expect(missing.status).toBe(400);
    const foreign = await s.request(`/api/v2/files/uploads/${a.session.id}?workspaceId=${ws}`, { headers: { 'upload-token': b.uploadToken } });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as any).error.details.reason).toBe('foreign');
    const tampered = await s.request(`/api/v2/files/uploads/${a.session.id}?workspaceId=${ws}`, { headers: { 'upload-token': a.uploadToken.slice(0, -2) + 'xx' } });
    expect(tampered.status).toBe(403);
    const ok = await s.request(`/api/v2/files/uploads/${a.session.id}?workspaceId=${ws}`, { headers: { 'upload-token': a.uploadToken } });
    expect(((await ok.json()) as any).data).toMatchObject({ id: a.session.id, status: 'uploading', size: 10 });
  });

  it('checks the transfer: signature, Content-Type, byte count, part range', async () => {
    const up = await startUpload('t.txt', 5, 'text/plain');
    const url: string = up.transfer.url;
    expect((await fetch(url.replace(/signature=[^&]+/, 'signature=bad'), { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello' })).status).toBe(403);
    expect((await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: 'hello' })).status).toBe(415);
    const tooMany = await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello!' });
    expect(tooMany.status).toBe(400);
    expect((await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hell' })).status).toBe(400);
    // Nothing usable arrived, so completing is refused and nothing is created.
    expect((await session(up.session.id, '/complete', up.uploadToken)).status).toBe(409);
    expect((await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello' })).status).toBe(200);
    const done = await data(session(up.session.id, '/complete', up.uploadToken));
    expect(done).toMatchObject({ status: 'completed', file: { name: 't.txt', size: 5, type: 'text/plain' } });
    const again = await session(up.session.id, '/complete', up.uploadToken);
    expect(again.status).toBe(409);
  });

  it('multipart: part URLs on request, parts out of range refused, every part required', async () => {
    const bytes = Buffer.alloc(2500, 7);
    const up = await startUpload('m.bin', bytes.length);
    expect(up.transfer).toEqual({ method: 'multipart', partSize: 1024, partCount: 3 });
    const outOfRange = await session(up.session.id, '/parts', up.uploadToken, json({ partNumbers: [4] }));
    expect(outOfRange.status).toBe(400);
    const { parts } = await data(session(up.session.id, '/parts', up.uploadToken, json({ partNumbers: [1, 2, 3] })));
    for (const p of parts.slice(0, 2)) {
      const chunk = bytes.subarray((p.partNumber - 1) * 1024, p.partNumber * 1024);
      expect((await fetch(p.url, { method: 'PUT', headers: p.headers, body: chunk })).status).toBe(200);
    }
    const incomplete = await session(up.session.id, '/complete', up.uploadToken);
    expect(incomplete.status).toBe(409);
    expect(((await incomplete.json()) as any).error.details.missingParts).toEqual([3]);
    await fetch(parts[2].url, { method: 'PUT', headers: parts[2].headers, body: bytes.subarray(2048) });
    const done = await data(session(up.session.id, '/complete', up.uploadToken));
    const content = Buffer.from(await (await s.request(`/api/v2/files/${done.file.id}?workspaceId=${ws}`)).arrayBuffer());
    expect(content.equals(bytes)).toBe(true);
  });

  it('parts in any order give the same content and content hash', async () => {
    const bytes = Buffer.from(Array.from({ length: 2100 }, (_, i) => i % 251));
    const up = await startUpload('order.bin', bytes.length);
    const { parts } = await data(session(up.session.id, '/parts', up.uploadToken, json({ partNumbers: [3, 1, 2] })));
    for (const p of parts) await fetch(p.url, { method: 'PUT', headers: p.headers, body: bytes.subarray((p.partNumber - 1) * 1024, p.partNumber * 1024) });
    const done = await data(session(up.session.id, '/complete', up.uploadToken));
    const res = await s.request(`/api/v2/files/${done.file.id}?workspaceId=${ws}`);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    expect(res.headers.get('etag')).toBe(`"${createHash('sha256').update(bytes).digest('hex')}"`);
  });

  it('an aborted session cannot be completed or receive bytes', async () => {
    const up = await startUpload('ab.txt', 3, 'text/plain');
    const aborted = await data(s.request(`/api/v2/files/uploads/${up.session.id}?workspaceId=${ws}`, { method: 'DELETE', headers: { 'upload-token': up.uploadToken } }));
    expect(aborted.status).toBe('aborted');
    expect((await session(up.session.id, '/complete', up.uploadToken)).status).toBe(409);
    expect((await fetch(up.transfer.url, { method: 'PUT', headers: up.transfer.headers, body: 'abc' })).status).toBe(409);
  });

  it('refuses bad names and paths, and sizes over the quota with 413', async () => {
    for (const body of [
      { name: '', contentType: 'text/plain', size: 1 },
      { name: 'x'.repeat(256), contentType: 'text/plain', size: 1 },
      { name: 'a/b.txt', contentType: 'text/plain', size: 1 },
      { name: '..', contentType: 'text/plain', size: 1 },
      { name: 'ok.txt', contentType: 'text/plain', size: 1, folderPath: '/docs/../etc' },
      { name: 'ok.txt', contentType: 'text/plain', size: 1, folderPath: 'docs/%2E%2E' },
    ]) {
      const r = await post('/api/v2/files/uploads', { workspaceId: ws, ...body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    const quota = await startTestServer({ STORAGE_QUOTA_BYTES: '100' });
    try {
      const r = await quota.request('/api/v2/files/uploads', { method: 'POST', ...json({ workspaceId: quota.workspaceId, name: 'big.bin', contentType: 'application/octet-stream', size: 101 }) });
      expect(r.status).toBe(413);
      await quota.request('/api/v2/files', { method: 'POST', ...json({ workspaceId: quota.workspaceId, name: 'a.txt', content: 'x'.repeat(60) }) });
      const over = await quota.request('/api/v2/files', { method: 'POST', ...json({ workspaceId: quota.workspaceId, name: 'b.txt', content: 'x'.repeat(60) }) });
      expect(over.status).toBe(413);
      expect(((await over.json()) as any).error.details.code).toBe('STORAGE_QUOTA_EXCEEDED');
    } finally {
      await quota.stop();
    }
  });
});

describe('files', () => {
  it('downloads with type, length, disposition and ranges; archived files need scope=archived', async () => {
    const f = await createFile('Résumé.txt', '0123456789');
    const full = await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`);
    expect(full.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(full.headers.get('content-length')).toBe('10');
    expect(full.headers.get('content-disposition')).toContain("filename*=UTF-8''R%C3%A9sum%C3%A9.txt");
    const part = await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`, { headers: { range: 'bytes=2-4' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 2-4/10');
    expect(await part.text()).toBe('234');
    expect(await (await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`, { headers: { range: 'bytes=-3' } })).text()).toBe('789');

    await data(s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`, { method: 'DELETE' }));
    expect((await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`)).status).toBe(404);
    expect((await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}&scope=archived`)).status).toBe(200);
    const archived = await data(s.request(`/api/v2/files?workspaceId=${ws}&scope=archived`));
    expect(archived.map((x: any) => x.id)).toContain(f.id);
  });

  it('a file in another workspace is a 404', async () => {
    const f = await createFile('mine.txt', 'x');
    const other = await s.newWorkspace('Other');
    const r = await s.request(`/api/v2/files/${f.id}/metadata?workspaceId=${other}`);
    expect(r.status).toBe(404);
  });

  it('read-only members can read but not write', async () => {
    const reader = await s.newUser('reader-files@example.com', { [ws]: 'read' });
    expect((await s.request(`/api/v2/files?workspaceId=${ws}`, { key: reader.key })).status).toBe(200);
    const r = await post('/api/v2/files', { workspaceId: ws, name: 'r.txt', content: 'x' }, reader.key);
    expect(r.status).toBe(403);
  });

  it('names conflict with 409; moves are limited to 1,000 files and all-or-nothing', async () => {
    await data(post('/api/v2/files/folders', { workspaceId: ws, path: '/dest' }));
    const a = await createFile('same.txt', 'a');
    await createFile('same.txt', 'b', { folderPath: '/dest' });
    expect((await post('/api/v2/files', { workspaceId: ws, name: 'same.txt', content: 'c' })).status).toBe(409);
    expect((await post('/api/v2/files/move', { workspaceId: ws, fileIds: [a.id], targetFolderPath: '/dest' })).status).toBe(409);
    const tooMany = await post('/api/v2/files/move', { workspaceId: ws, fileIds: Array.from({ length: 1001 }, (_, i) => `wf_${i}`), targetFolderPath: '/dest' });
    expect(tooMany.status).toBe(400);
    expect((await post('/api/v2/files/move', { workspaceId: ws, fileIds: [a.id, 'wf_missing'], targetFolderPath: '/' })).status).toBe(404);
  });

  it('expectedRevision guards writes; versions list, read and revert', async () => {
    const f = await createFile('rev.txt', 'one');
    const meta = await data(s.request(`/api/v2/files/${f.id}/metadata?workspaceId=${ws}`));
    const put = await data(s.request(`/api/v2/files/${f.id}/content`, { method: 'PUT', ...json({ workspaceId: ws, content: 'two', expectedRevision: meta.revision }) }));
    expect(put.revision).not.toBe(meta.revision);
    const stale = await s.request(`/api/v2/files/${f.id}/content`, { method: 'PUT', ...json({ workspaceId: ws, content: 'three', expectedRevision: meta.revision }) });
    expect(stale.status).toBe(409);
    const badEdit = await s.request(`/api/v2/files/${f.id}/content`, { method: 'PATCH', ...json({ workspaceId: ws, edit: { mode: 'insert_after', anchor: 'nope', content: 'x' } }) });
    expect(badEdit.status).toBe(400);
    const versions = await data(s.request(`/api/v2/files/${f.id}/versions?workspaceId=${ws}`));
    expect(versions.map((v: any) => [v.version, v.isCurrent])).toEqual([[2, true], [1, false]]);
    expect((await s.request(`/api/v2/files/${f.id}/versions/2?workspaceId=${ws}`, { method: 'DELETE' })).status).toBe(409);
    const reverted = await data(post(`/api/v2/files/${f.id}/versions/1/revert`, { workspaceId: ws, expectedCurrentVersion: 2 }));
    expect(reverted).toMatchObject({ reverted: true, version: { version: 3, restoredFromVersion: 1, source: 'revert' } });
    expect(await (await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`)).text()).toBe('one');
  });

  it('extracts text from HTML, CSV, PDF and DOCX, with line ranges', async () => {
    const html = await createFile('page.html', '<html><body><h1>Title</h1><p>Hello <b>there</b></p><script>x()</script></body></html>');
    const t = await data(s.request(`/api/v2/files/${html.id}/text?workspaceId=${ws}`));
    expect(t.text).toContain('Hello there');
    expect(t.text).not.toContain('<p>');
    const csv = await createFile('rows.csv', 'a,b\n1,2\n3,4\n');
    const lines = await data(s.request(`/api/v2/files/${csv.id}/text?workspaceId=${ws}&offset=2&limit=1`));
    expect(lines).toMatchObject({ text: '1,2', lineRange: { offset: 2, lineCount: 1 }, truncated: false });
    const cut = await data(s.request(`/api/v2/files/${csv.id}/text?workspaceId=${ws}&maxBytes=3`));
    expect(cut).toMatchObject({ text: 'a,b', truncated: true, byteCount: 3 });
    const docx = await zipOf([
      ['[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'],
      ['_rels/.rels', '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'],
      ['word/document.xml', '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Quarterly report</w:t></w:r></w:p></w:body></w:document>'],
    ]);
    const d = await createFile('r.docx', docx.toString('base64'), { encoding: 'base64' });
    expect((await data(s.request(`/api/v2/files/${d.id}/text?workspaceId=${ws}`))).text).toContain('Quarterly report');
    const pdf = await createFile('doc.pdf', minimalPdf('Invoice total 42').toString('base64'), { encoding: 'base64' });
    expect((await data(s.request(`/api/v2/files/${pdf.id}/text?workspaceId=${ws}`))).text).toContain('Invoice total 42');
    const bin = await createFile('x.bin', 'AAEC', { encoding: 'base64' });
    expect(await data(s.request(`/api/v2/files/${bin.id}/text?workspaceId=${ws}`))).toMatchObject({ degraded: true, text: '' });
  });

  it('a share link serves the file without a key and stops when sharing is off', async () => {
    const f = await createFile('shared.txt', 'public bytes');
    const share = await data(s.request(`/api/v2/files/${f.id}/share`, { method: 'PATCH', ...json({ workspaceId: ws, isActive: true }) }));
    const first = await fetch(share.url);
    expect(await first.text()).toBe('public bytes');
    await data(s.request(`/api/v2/files/${f.id}/share`, { method: 'PATCH', ...json({ workspaceId: ws, isActive: false }) }));
    expect((await fetch(share.url)).status).toBe(404);
    const again = await data(s.request(`/api/v2/files/${f.id}/share`, { method: 'PATCH', ...json({ workspaceId: ws, isActive: true }) }));
    expect(again.token).toBe(share.token);
  });

  it('bulk download streams a zip of the selection', async () => {
    await data(post('/api/v2/files/folders', { workspaceId: ws, path: '/zipme/sub' }));
    const a = await createFile('one.txt', '1', { folderPath: '/zipme' });
    await createFile('two.txt', '2', { folderPath: '/zipme/sub' });
    const r = await s.request(`/api/v2/files/bulk-download?workspaceId=${ws}&folderPaths=/zipme&fileIds=${a.id}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/zip');
    const buf = Buffer.from(await r.arrayBuffer());
    expect(buf.subarray(0, 2).toString()).toBe('PK');
    expect(buf.includes(Buffer.from('zipme/sub/two.txt'))).toBe(true);
    expect((await s.request(`/api/v2/files/bulk-download?workspaceId=${ws}&folderPaths=/nope`)).status).toBe(404);
  });
});

describe('unzip', () => {
  it('extracts into a new folder beside the archive', async () => {
    const zip = await zipOf([['a.txt', 'A'], ['deep/b.txt', 'B'], ['__MACOSX/._a.txt', 'junk']]);
    await data(post('/api/v2/files/folders', { workspaceId: ws, path: '/arch' }));
    const f = await createFile('bundle.zip', zip.toString('base64'), { encoding: 'base64', folderPath: '/arch' });
    const r = await data(post(`/api/v2/files/${f.id}/unzip`, { workspaceId: ws }));
    expect(r).toEqual({ folderPath: '/arch/bundle', extractedFileCount: 2, skippedFileCount: 1 });
    const files = await data(s.request(`/api/v2/files?workspaceId=${ws}&folderPath=/arch/bundle&recursive=true&sortBy=name`));
    expect(files.map((x: any) => `${x.folderPath}/${x.name}`)).toEqual(['/arch/bundle/a.txt', '/arch/bundle/deep/b.txt']);
    expect((await post(`/api/v2/files/${f.id}/unzip`, { workspaceId: ws })).status).toBe(409);
  });

  async function refused(entries: [string, string | Buffer][], status: number) {
    const zip = await zipOf(entries);
    const name = `bad-${Math.random().toString(36).slice(2)}.zip`;
    const f = await createFile(name, zip.toString('base64'), { encoding: 'base64' });
    const before = await data(s.request(`/api/v2/files?workspaceId=${ws}&limit=1000`));
    const r = await post(`/api/v2/files/${f.id}/unzip`, { workspaceId: ws });
    expect(r.status).toBe(status);
    const after = await data(s.request(`/api/v2/files?workspaceId=${ws}&limit=1000`));
    expect(after.length).toBe(before.length);
    const folders = await data(s.request(`/api/v2/files/folders?workspaceId=${ws}`));
    expect(folders.map((x: any) => x.name)).not.toContain(name.replace('.zip', ''));
  }

  it('refuses entries escaping the folder (zip-slip) and writes nothing', async () => {
    // yazl refuses to write such names itself, so patch one in after the fact.
    const zip = await zipOf([['ok.txt', 'fine'], ['xx/evil.txt', 'evil']]);
    const patched = Buffer.from(zip.toString('latin1').split('xx/evil.txt').join('../evil.txt'), 'latin1');
    const f = await createFile('slip.zip', patched.toString('base64'), { encoding: 'base64' });
    const r = await post(`/api/v2/files/${f.id}/unzip`, { workspaceId: ws });
    expect(r.status).toBe(400);
    expect((await data(s.request(`/api/v2/files/folders?workspaceId=${ws}`))).map((x: any) => x.name)).not.toContain('slip');
  });

  it('refuses zip bombs: too many bytes or too many entries', async () => {
    await refused([['bomb.txt', Buffer.alloc(100 * 1024)]], 413);
    await refused(Array.from({ length: 25 }, (_, i) => [`f${i}.txt`, 'x'] as [string, string]), 413);
  });
});

describe('folders', () => {
  it('a file written into a missing folder creates it and its parents; a move into one says how to make it', async () => {
    const folderPaths = async () => (await data(s.request(`/api/v2/files/folders?workspaceId=${ws}&recursive=true`))).map((x: any) => x.path);
    const made = await createFile('readme.md', '# hi', { folderPath: '/made/deep' });
    expect(made.folderPath).toBe('/made/deep');
    expect(await folderPaths()).toEqual(expect.arrayContaining(['/made', '/made/deep']));

    // An upload session makes its folder only when it completes, so an abandoned one leaves none behind.
    const up = await startUpload('report.txt', 5, 'text/plain', { folderPath: '/uploaded/docs' });
    expect(await folderPaths()).not.toContain('/uploaded');
    expect((await fetch(up.transfer.url, { method: 'PUT', headers: up.transfer.headers, body: 'hello' })).status).toBe(200);
    const done: any = await (await session(up.session.id, '/complete', up.uploadToken)).json();
    expect(done.data, JSON.stringify(done)).toMatchObject({ status: 'completed', file: { name: 'report.txt', folderPath: '/uploaded/docs' } });
    expect(await folderPaths()).toEqual(expect.arrayContaining(['/uploaded', '/uploaded/docs']));

    const move = await post('/api/v2/files/move', { workspaceId: ws, fileIds: [made.id], targetFolderPath: '/nowhere' });
    expect(move.status).toBe(404);
    const err: any = await move.json();
    expect(err.error.message).toContain('POST /api/v2/files/folders');
    expect(err.error.details).toEqual({ path: '/nowhere' });
  });

  it('deleting a non-empty folder needs recursive; restore brings the contents back', async () => {
    await data(post('/api/v2/files/folders', { workspaceId: ws, path: '/proj/inner' }));
    expect((await post('/api/v2/files/folders', { workspaceId: ws, path: '/proj' })).status).toBe(409);
    const f = await createFile('spec.md', '# x', { folderPath: '/proj/inner' });
    expect((await s.request(`/api/v2/files/folders?workspaceId=${ws}&path=/proj`, { method: 'DELETE' })).status).toBe(409);
    const del = await data(s.request(`/api/v2/files/folders?workspaceId=${ws}&path=/proj&recursive=true`, { method: 'DELETE' }));
    expect(del.deletedItems).toEqual({ folders: 2, files: 1 });
    expect((await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`)).status).toBe(404);
    const archived = await data(s.request(`/api/v2/files/folders?workspaceId=${ws}&scope=archived`));
    expect(archived.map((x: any) => x.path)).toContain('/proj');
    const restored = await data(post('/api/v2/files/folders/restore', { workspaceId: ws, path: '/proj' }));
    expect(restored.restoredItems).toEqual({ files: 1, folders: 2 });
    expect((await s.request(`/api/v2/files/${f.id}?workspaceId=${ws}`)).status).toBe(200);
    expect((await post('/api/v2/files/folders/restore', { workspaceId: ws, path: '/never' })).status).toBe(404);
  });

  it('relocates with mv semantics, taking files along', async () => {
    await data(post('/api/v2/files/folders', { workspaceId: ws, path: '/m1' }));
    await data(post('/api/v2/files/folders', { workspaceId: ws, path: '/m2' }));
    const f = await createFile('in.txt', 'x', { folderPath: '/m1' });
    const moved = await data(s.request('/api/v2/files/folders', { method: 'PATCH', ...json({ workspaceId: ws, path: '/m1', destinationPath: '/m2' }) }));
    expect(moved).toMatchObject({ path: '/m2/m1', parentPath: '/m2', name: 'm1' });
    expect((await data(s.request(`/api/v2/files/${f.id}/metadata?workspaceId=${ws}`))).folderPath).toBe('/m2/m1');
    const inside = await s.request('/api/v2/files/folders', { method: 'PATCH', ...json({ workspaceId: ws, path: '/m2', destinationPath: '/m2/m1/x' }) });
    expect(inside.status).toBe(400);
  });
});

describe('purge', () => {
  it('removes expired archives, their orphaned blobs and abandoned upload sessions', async () => {
    const p = await startTestServer({ UPLOAD_SESSION_TTL_SECONDS: '1' });
    try {
      const f = await p.request('/api/v2/files', { method: 'POST', ...json({ workspaceId: p.workspaceId, name: 'gone.txt', content: 'bye' }) });
      const id = ((await f.json()) as any).data.id;
      await p.request(`/api/v2/files/${id}?workspaceId=${p.workspaceId}`, { method: 'DELETE' });
      const up = ((await (await p.request('/api/v2/files/uploads', { method: 'POST', ...json({ workspaceId: p.workspaceId, name: 'u.txt', contentType: 'text/plain', size: 3 }) })).json()) as any).data;
      await fetch(up.transfer.url, { method: 'PUT', headers: up.transfer.headers, body: 'abc' });
      const later = Date.now() + 5_000;
      const report = await purgeFiles(p.services.store, p.services.blobs, { now: later, archiveRetentionMs: 0, graceMs: 0 });
      expect(report).toMatchObject({ files: 1, expiredUploads: 1, blobs: 1 });
      expect(await p.services.store.files.get(id)).toBeUndefined();
      expect(fs.readdirSync(`${p.dataDir}/files/uploads`)).toEqual([]);
      expect((await p.services.store.fileUploads.get(up.session.id))?.status).toBe('expired');
    } finally {
      await p.stop();
    }
  });
});

describe('audit', () => {
  it('records exactly one event per change and none for reads', async () => {
    const before = await s.services.store.auditEvents.count();
    const f = await createFile('audited.txt', 'x');
    await data(s.request(`/api/v2/files/${f.id}/metadata?workspaceId=${ws}`));
    await data(s.request(`/api/v2/files/${f.id}`, { method: 'PATCH', ...json({ workspaceId: ws, name: 'audited-2.txt' }) }));
    expect((await s.services.store.auditEvents.count()) - before).toBe(2);
  });
});

describe('public operations (signed transfer URLs and share links)', () => {
  it('are validated like every operation, without an API key', async () => {
    const bogus = await s.request('/transfers/files/up_x/parts/1?expires=1&signature=abc&extra=1', {
      method: 'PUT',
      key: null,
      headers: { 'content-type': 'application/octet-stream' },
      body: 'hello',
    });
    expect(bogus.status).toBe(400);
    expect(((await bogus.json()) as any).error.details[0]).toMatchObject({ code: 'unrecognized_keys', keys: ['extra'] });
    const unsigned = await s.request('/transfers/files/up_x/parts/1?expires=1&signature=abc', {
      method: 'PUT',
      key: null,
      headers: { 'content-type': 'application/octet-stream' },
      body: 'hello',
    });
    expect(unsigned.status).toBe(403);
    expect(((await unsigned.json()) as any).error.details.code).toBe('INVALID_SIGNATURE');
    const zero = await s.request('/transfers/files/up_x/parts/0?expires=1&signature=abc', { method: 'PUT', key: null, headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(zero.status).toBe(400);
    const share = await s.request('/shared/files/not-a-token?x=1', { key: null });
    expect(share.status).toBe(400);
    const missing = await s.request('/shared/files/not-a-token', { key: null });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-ratelimit-limit')).toBeTruthy();
  });
});

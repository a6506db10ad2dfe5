// The official CLI's files commands, unchanged, against this server. Parts are 64 KiB here so a 200 KiB
// file goes through the multipart path.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
let dir: string;
const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);

beforeAll(async () => {
  s = await startTestServer({ UPLOAD_PART_SIZE: '64kb' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-files-cli-'));
});
afterAll(async () => {
  await s.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('sim files', () => {
  it('uploads a small file with one PUT and a large one in parts; get returns the same bytes', async () => {
    const small = path.join(dir, 'notes.txt');
    fs.writeFileSync(small, 'hello\nworld\n');
    const up = await cli('files', 'upload', small);
    expect(up.stderr).toBe('');
    expect(up.code).toBe(0);
    expect(up.json).toMatchObject({ name: 'notes.txt', size: 12, type: 'text/plain', folderPath: '/' });
    expect(up.json.id).toMatch(/^wf_/);

    const big = path.join(dir, 'big.bin');
    const bytes = randomBytes(200 * 1024 + 17);
    fs.writeFileSync(big, bytes);
    const upBig = await cli('files', 'upload', big);
    expect(upBig.stderr).toBe('');
    expect(upBig.json).toMatchObject({ name: 'big.bin', size: bytes.length });
    const out = path.join(dir, 'big.out');
    const got = await cli('files', 'get', upBig.json.id, '--output-file', out);
    expect(got.code).toBe(0);
    expect(fs.readFileSync(out).equals(bytes)).toBe(true);
  });

  it('mkdir, upload into a folder, ls, list, describe, read, rename, set-content, edit, move, search', async () => {
    expect((await cli('files', 'mkdir', 'docs/My Notes')).code).toBe(0);
    const local = path.join(dir, 'plan.md');
    fs.writeFileSync(local, '# Plan\nstep one\nstep two\n');
    const up = await cli('files', 'upload', local, '--folder', 'docs/My Notes');
    expect(up.stderr).toBe('');
    const id = up.json.id;
    expect(up.json.folderPath).toBe('/docs/My%20Notes');

    const ls = await cli('files', 'ls', 'docs');
    expect(ls.code).toBe(0);
    expect(JSON.stringify(ls.json)).toContain('My Notes');

    const list = await cli('files', 'list', '--folder', 'docs/My Notes');
    expect(list.stderr).toBe('');
    expect(JSON.stringify(list.json)).toContain(id);

    const described = await cli('files', 'describe', id);
    expect(described.json).toMatchObject({ id, currentVersion: 1, share: null });

    const read = await cli('files', 'read', id);
    expect(read.stderr).toBe('');
    expect(JSON.stringify(read.json)).toContain('step one');

    const renamed = await cli('files', 'rename', id, '--name', 'plan-v2.md');
    expect(renamed.stderr).toBe('');
    expect(renamed.json).toMatchObject({ name: 'plan-v2.md' });

    const set = await cli('files', 'set-content', id, '--content', '# Plan\nstep one\nstep three\n');
    expect(set.stderr).toBe('');

    const edit = await cli('files', 'edit', id, '--edit', JSON.stringify({ mode: 'search_replace', search: 'step three', content: 'step 3' }));
    expect(edit.stderr).toBe('');

    const get = await runCli(['files', 'get', id], env);
    expect(get.stdout).toBe('# Plan\nstep one\nstep 3\n');

    const versions = await cli('files', 'versions', 'list', id);
    expect(versions.stderr).toBe('');
    expect(JSON.stringify(versions.json)).toContain('"version":3');

    const moved = await cli('files', 'move', '--file-ids', id);
    expect(moved.stderr).toBe('');

    const search = await cli('files', 'search', '--query', 'step 3');
    expect(search.stderr).toBe('');
    expect(JSON.stringify(search.json)).toContain(id);
  });

  it('delete, restore, batch-delete, share and versions', async () => {
    const a = await s.request('/api/v2/files', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: s.workspaceId, name: 'a.txt', content: 'A' }) });
    const b = await s.request('/api/v2/files', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: s.workspaceId, name: 'b.txt', content: 'B' }) });
    const idA = ((await a.json()) as any).data.id;
    const idB = ((await b.json()) as any).data.id;
    expect((await cli('files', 'delete', idA, '--yes')).code).toBe(0);
    const restored = await cli('files', 'restore', idA);
    expect(restored.stderr).toBe('');
    expect(restored.json).toMatchObject({ id: idA, deletedAt: null });
    const batch = await cli('files', 'batch-delete', '--file-ids', idA, idB, '--yes');
    expect(batch.stderr).toBe('');

    const c = await s.request('/api/v2/files', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: s.workspaceId, name: 'c.txt', content: 'v1' }) });
    const idC = ((await c.json()) as any).data.id;
    const share = await cli('files', 'share', 'set', idC, '--is-active', 'true');
    expect(share.stderr).toBe('');
    expect(share.json).toMatchObject({ isActive: true, authType: 'public' });
    const shareGet = await cli('files', 'share', 'get', idC);
    expect(shareGet.json).toMatchObject({ isActive: true });
    expect(await (await fetch(share.json.url)).text()).toBe('v1');

    await s.request(`/api/v2/files/${idC}/content`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: s.workspaceId, content: 'v2' }) });
    const v1 = await cli('files', 'versions', 'describe', idC, '1');
    expect(v1.json).toMatchObject({ version: 1, isCurrent: false });
    const vread = await cli('files', 'versions', 'read', idC, '1');
    expect(JSON.stringify(vread.json)).toContain('v1');
    const revert = await cli('files', 'versions', 'revert', idC, '1');
    expect(revert.stderr).toBe('');
    const del = await cli('files', 'versions', 'delete', idC, '2', '--yes');
    expect(del.stderr).toBe('');
  });

  it('upload --folder creates a missing folder, as workflows and tables do', async () => {
    const local = path.join(dir, 'guide.md');
    fs.writeFileSync(local, '# Guide\n');
    const up = await cli('files', 'upload', local, '--folder', '/manuals/Guides');
    expect(up.stderr).toBe('');
    expect(up.code).toBe(0);
    expect(up.json).toMatchObject({ name: 'guide.md', folderPath: '/manuals/Guides' });
    const folders = await cli('files', 'folders', 'list', '--parent', '/manuals');
    expect(JSON.stringify(folders.json), folders.stdout + folders.stderr).toContain('/manuals/Guides');
  });

  it('unzip and the folders commands', async () => {
    const yazl = (await import('yazl')).default;
    const zip = new yazl.ZipFile();
    zip.addBuffer(Buffer.from('inside'), 'a/inside.txt');
    zip.end();
    const chunks: Buffer[] = [];
    for await (const c of zip.outputStream as AsyncIterable<Buffer>) chunks.push(c);
    const local = path.join(dir, 'pack.zip');
    fs.writeFileSync(local, Buffer.concat(chunks));
    const up = await cli('files', 'upload', local);
    const unzip = await cli('files', 'unzip', up.json.id, '--yes');
    expect(unzip.stderr).toBe('');
    expect(unzip.json).toMatchObject({ folderPath: '/pack', extractedFileCount: 1 });
    const folders = await cli('files', 'folders', 'list', '--parent', '/pack');
    expect(JSON.stringify(folders.json)).toContain('/pack/a');
    expect((await cli('files', 'folders', 'delete', '/pack', '--recursive', '--yes')).code).toBe(0);
    const restored = await cli('files', 'folders', 'restore', '/pack');
    expect(restored.stderr).toBe('');
    expect(restored.json).toMatchObject({ restoredItems: { files: 1, folders: 2 } });
  });
});

// Tag definitions on the 17 typed slots, values on documents, usage, next slot, and the CLI's tags commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { createBase, uploadDocument, waitForDocument } from './support/knowledge.ts';

let s: TestServer;
let ws: string;

beforeAll(async () => {
  s = await startTestServer();
  ws = s.workspaceId;
});
afterAll(async () => s.stop());

describe('tag definitions', () => {
  it('creates on the next free slot of each type, refuses wrong slot types, duplicates and full types', async () => {
    const kb = await createBase(s);
    const tags = `/api/v2/knowledge/${kb.id}/tags`;
    const text = await s.call('POST', tags, { workspaceId: ws, displayName: 'Team' });
    expect(text.body.data).toMatchObject({ displayName: 'Team', tagSlot: 'tag1', fieldType: 'text' });
    const num = await s.call('POST', tags, { workspaceId: ws, displayName: 'Year', fieldType: 'number' });
    expect(num.body.data).toMatchObject({ tagSlot: 'number1', fieldType: 'number' });
    const chosen = await s.call('POST', tags, { workspaceId: ws, displayName: 'Due', tagSlot: 'date2' });
    expect(chosen.body.data).toMatchObject({ tagSlot: 'date2', fieldType: 'date' });
    expect((await s.call('POST', tags, { workspaceId: ws, displayName: 'Flag', fieldType: 'boolean', tagSlot: 'tag3' })).status).toBe(400);
    expect((await s.call('POST', tags, { workspaceId: ws, displayName: 'team' })).status).toBe(409);
    expect((await s.call('POST', tags, { workspaceId: ws, displayName: 'Other', tagSlot: 'tag1' })).status).toBe(409);
    expect((await s.call('POST', tags, { workspaceId: ws, displayName: 'x'.repeat(101) })).status).toBe(400);
    expect((await s.call('POST', tags, { workspaceId: ws, displayName: 'Bad', tagSlot: 'tag8' })).status).toBe(400);
    for (const name of ['b1', 'b2', 'b3']) expect((await s.call('POST', tags, { workspaceId: ws, displayName: name, fieldType: 'boolean' })).status).toBe(200);
    const full = await s.call('POST', tags, { workspaceId: ws, displayName: 'b4', fieldType: 'boolean' });
    expect(full.status).toBe(409);
    const next = await s.call('GET', `${tags}/next-slot?workspaceId=${ws}&fieldType=date`);
    expect(next.body.data).toEqual({ nextAvailableSlot: 'date1', fieldType: 'date', usedSlots: ['date2'], totalSlots: 2, availableSlots: 1 });
    const nextBool = await s.call('GET', `${tags}/next-slot?workspaceId=${ws}&fieldType=boolean`);
    expect(nextBool.body.data).toMatchObject({ nextAvailableSlot: null, availableSlots: 0 });
    expect((await s.call('GET', `${tags}/next-slot?workspaceId=${ws}&fieldType=color`)).status).toBe(400);
    const list = await s.call('GET', `${tags}?workspaceId=${ws}`);
    expect(list.body.data.map((t: any) => t.tagSlot)).toEqual(['tag1', 'number1', 'date2', 'boolean1', 'boolean2', 'boolean3']);
  });

  it('bulk save creates and renames with per-definition errors; update, delete, usage and cleanup', async () => {
    const kb = await createBase(s);
    const tags = `/api/v2/knowledge/${kb.id}/tags`;
    const saved = await s.call('PUT', tags, {
      workspaceId: ws,
      definitions: [
        { tagSlot: 'tag1', displayName: 'Team', fieldType: 'text' },
        { tagSlot: 'number1', displayName: 'Year', fieldType: 'number' },
        { tagSlot: 'tag2', displayName: 'Wrong', fieldType: 'number' },
      ],
    });
    expect(saved.status).toBe(200);
    expect(saved.body.data.created.map((t: any) => t.displayName)).toEqual(['Team', 'Year']);
    expect(saved.body.data.errors).toHaveLength(1);
    const renamed = await s.call('PUT', tags, { workspaceId: ws, definitions: [{ tagSlot: 'tag1', displayName: 'Squad', fieldType: 'text', originalDisplayName: 'Team' }] });
    expect(renamed.body.data).toMatchObject({ created: [], updated: [{ displayName: 'Squad', tagSlot: 'tag1' }], errors: [] });

    const session = await uploadDocument(s, kb.id, 'doc.txt', 'Some words about the core team and its plans for the year ahead.', 'text/plain', { tag1: 'core' });
    const doc = await waitForDocument(s, kb.id, session.document.id);
    expect(doc.tags).toEqual({ Squad: 'core', Year: null });
    await s.call('PATCH', `/api/v2/knowledge/${kb.id}/documents/${doc.id}`, { workspaceId: ws, number1: 2025 });
    const usage = await s.call('GET', `${tags}/usage?workspaceId=${ws}`);
    expect(usage.body.data.map((u: any) => [u.displayName, u.documentCount, u.chunkCount])).toEqual([['Squad', 1, doc.chunkCount], ['Year', 1, doc.chunkCount]]);

    const year = saved.body.data.created[1].id;
    // Changing the type of a tag documents use is refused; unused, it moves to a slot of the new type.
    expect((await s.call('PATCH', `${tags}/${year}`, { workspaceId: ws, fieldType: 'date' })).status).toBe(409);
    const extra = (await s.call('POST', tags, { workspaceId: ws, displayName: 'Spare' })).body.data;
    const retyped = await s.call('PATCH', `${tags}/${extra.id}`, { workspaceId: ws, fieldType: 'boolean', displayName: 'Archived' });
    expect(retyped.body.data).toMatchObject({ displayName: 'Archived', fieldType: 'boolean', tagSlot: 'boolean1' });
    expect((await s.call('PATCH', `${tags}/${extra.id}`, { workspaceId: ws, displayName: 'squad' })).status).toBe(409);
    expect((await s.call('PATCH', `${tags}/kt_missing`, { workspaceId: ws, displayName: 'x' })).status).toBe(404);

    // Cleanup removes only unused definitions by default.
    const cleaned = await s.call('DELETE', `${tags}?workspaceId=${ws}`);
    expect(cleaned.body.data).toEqual({ unused: true, count: 1 });
    const del = await s.call('DELETE', `${tags}/${year}?workspaceId=${ws}`);
    expect(del.body.data).toEqual({ id: year, tagSlot: 'number1', displayName: 'Year', deleted: true });
    expect((await s.call('GET', `/api/v2/knowledge/${kb.id}/documents/${doc.id}?workspaceId=${ws}`)).body.data.tags).toEqual({ Squad: 'core' });
    const all = await s.call('DELETE', `${tags}?workspaceId=${ws}&unused=false`);
    expect(all.body.data).toEqual({ unused: false, count: 1 });
    expect((await s.call('GET', `${tags}?workspaceId=${ws}`)).body.data).toEqual([]);
  });
});

describe('sim knowledge tags (CLI)', () => {
  it('create, list, next-slot, save, update, usage, delete, cleanup', async () => {
    const env = { endpoint: s.url, apiKey: s.key, workspace: ws };
    const cli = (...args: string[]) => runCli(['--output', 'json', ...args], env);
    const kb = await createBase(s, { name: 'CLI tags' });
    const created = await cli('knowledge', 'tags', 'create', kb.id, '--display-name', 'Region', '--field-type', 'text');
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toMatchObject({ displayName: 'Region', tagSlot: 'tag1' });
    const list = await cli('knowledge', 'tags', 'list', kb.id);
    expect(JSON.stringify(list.json)).toContain('Region');
    const next = await cli('knowledge', 'tags', 'next-slot', kb.id, '--field-type', 'text');
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.stringify(next.json)).toContain('tag2');
    const saved = await cli('knowledge', 'tags', 'save', kb.id, '--definitions', JSON.stringify([{ tagSlot: 'number1', displayName: 'Score', fieldType: 'number' }]));
    expect(saved.code, saved.stderr).toBe(0);
    const up = await cli('knowledge', 'tags', 'update', kb.id, created.json.id, '--display-name', 'Area');
    expect(up.code, up.stderr).toBe(0);
    expect(up.json).toMatchObject({ displayName: 'Area' });
    const usage = await cli('knowledge', 'tags', 'usage', kb.id);
    expect(usage.code, usage.stderr).toBe(0);
    const del = await cli('knowledge', 'tags', 'delete', kb.id, created.json.id, '--yes');
    expect(del.code, del.stderr).toBe(0);
    const cleanup = await cli('knowledge', 'tags', 'cleanup', kb.id, '--yes');
    expect(cleanup.code, cleanup.stderr).toBe(0);
    expect(JSON.stringify(cleanup.json)).toContain('"count":1');
  });
});

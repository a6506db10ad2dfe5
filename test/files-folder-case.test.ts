// Folder paths compare case-sensitively and a file-name search ignores case, alike on both engines (this file
// runs on SQLite and Postgres; see POSTGRES_FILES): SQLite's LIKE ignores ASCII case and Postgres's does not, so a
// recursive listing of /Docs also listed /docs on SQLite, and a search for "REPORT" missed report.txt on Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

const names = async (query: string) => ((await s.ok('GET', `/api/v2/files?workspaceId=${s.workspaceId}&${query}`)) as any[]).map((f) => `${f.folderPath}|${f.name}`).sort();

describe('file folders and search, case', () => {
  it('lists a folder and its subfolders case-sensitively, and searches names whatever the case', async () => {
    for (const [folderPath, name] of [['/Docs', 'Report.txt'], ['/Docs/2024', 'q1.txt'], ['/docs', 'lower.txt'], ['/docs/old', 'older.txt'], ['/Docsx', 'other.txt'], ['/', 'ÉTÉ report.md']]) {
      await s.ok('POST', '/api/v2/files', { workspaceId: s.workspaceId, name, content: 'x', folderPath });
    }
    expect(await names(`folderPath=${encodeURIComponent('/Docs')}&recursive=true`)).toEqual(['/Docs/2024|q1.txt', '/Docs|Report.txt']);
    expect(await names(`folderPath=${encodeURIComponent('/docs')}&recursive=true`)).toEqual(['/docs/old|older.txt', '/docs|lower.txt']);
    expect(await names('search=REPORT')).toEqual(['/Docs|Report.txt', '/|ÉTÉ report.md']);
    expect(await names(`search=${encodeURIComponent('été')}`)).toEqual(['/|ÉTÉ report.md']);
    // A name with LIKE's wildcards is searched literally.
    expect(await names('search=%25')).toEqual([]);
    expect(await names('search=_')).toEqual([]);
  });

  it('moves a folder without taking the folder of another case along', async () => {
    const before = await names(`folderPath=${encodeURIComponent('/docs')}&recursive=true`);
    expect(before.length).toBeGreaterThan(0);
    await s.ok('PATCH', '/api/v2/files/folders', { workspaceId: s.workspaceId, path: '/Docs', destinationPath: '/Archive' });
    expect(await names(`folderPath=${encodeURIComponent('/Archive')}&recursive=true`)).toEqual(['/Archive/2024|q1.txt', '/Archive|Report.txt']);
    expect(await names(`folderPath=${encodeURIComponent('/docs')}&recursive=true`)).toEqual(before);
  });
});

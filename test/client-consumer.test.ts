// Another project consuming the generated client the way the README says: copy generated/client.ts and
// generated/types.ts, install openapi-fetch, compile with the project's own TypeScript (rewriting the `.ts` import
// extensions), and run the emitted JavaScript against a live server.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { PATIENCE_MS } from './support/wait.ts';

const root = path.resolve(import.meta.dirname, '..');
let s: TestServer;
let dir: string;

beforeAll(async () => {
  s = await startTestServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-consumer-'));
});
afterAll(async () => {
  await s.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('a separate TypeScript project compiles the copied client to JavaScript and calls the API with it', async () => {
  fs.mkdirSync(path.join(dir, 'src', 'api'), { recursive: true });
  for (const f of ['client.ts', 'types.ts']) fs.copyFileSync(path.join(root, 'generated', f), path.join(dir, 'src', 'api', f));
  // Stands for `npm install openapi-fetch` in that project.
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(root, 'node_modules', 'openapi-fetch'), path.join(dir, 'node_modules', 'openapi-fetch'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        rewriteRelativeImportExtensions: true,
        outDir: 'dist',
        strict: true,
        skipLibCheck: true,
        lib: ['es2022', 'dom'],
        types: [],
      },
      include: ['src'],
    }),
  );
  fs.writeFileSync(
    path.join(dir, 'src', 'main.ts'),
    `import { createApiClient } from './api/client.ts';
const [baseUrl, apiKey, workspaceId] = process.argv.slice(2) as [string, string, string];
const api = createApiClient({ baseUrl, apiKey });
const { data, error } = await api.GET('/api/v2/workspaces/{workspaceId}', { params: { path: { workspaceId } } });
const names: string[] = [];
for await (const ws of api.paginate('/api/v2/workspaces', { query: { sortBy: 'name' } })) names.push(ws.name);
console.log(JSON.stringify({ id: data?.data.id, error: error ?? null, names }));
`,
  );
  fs.writeFileSync(path.join(dir, 'src', 'node.d.ts'), 'declare const process: { argv: string[] };\n');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' });
  expect(fs.readFileSync(path.join(dir, 'dist', 'main.js'), 'utf8')).toContain('./api/client.js');
  // Asynchronously: the server answering it runs in this process.
  const { stdout: out } = await promisify(execFile)(process.execPath, [path.join(dir, 'dist', 'main.js'), s.url, s.key, s.workspaceId], { encoding: 'utf8', timeout: PATIENCE_MS });
  expect(JSON.parse(out)).toEqual({ id: s.workspaceId, error: null, names: ['My workspace'] });
});

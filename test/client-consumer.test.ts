// Another project consuming the generated client the way the README says: copy generated/client.ts and
// generated/types.ts, install openapi-fetch, typescript and @types/node, take the README's tsconfig.json as written,
// compile with TypeScript 5.9 and with TypeScript 7 (what `npm install -D typescript` installs today; it rejects
// configurations 5.x accepted), and run each compiler's JavaScript against a live server.
import { execFile } from 'node:child_process';
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

/** The consumer tsconfig.json exactly as the README shows it (its one comment line dropped). */
function readmeTsconfig(): { compilerOptions: Record<string, unknown> } {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const block = /```jsonc\n\/\/ tsconfig\.json of that project\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('README has no consumer tsconfig.json block');
  return JSON.parse(block[1]!);
}

const compilers = {
  // The project's own TypeScript, and TypeScript 7 (the aliased devDependency `typescript7`: a native compiler).
  'typescript 5.9': path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
  'typescript 7': path.join(root, 'node_modules', 'typescript7', 'bin', 'tsc'),
};

beforeAll(async () => {
  s = await startTestServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-consumer-'));
  fs.mkdirSync(path.join(dir, 'src', 'api'), { recursive: true });
  for (const f of ['client.ts', 'types.ts']) fs.copyFileSync(path.join(root, 'generated', f), path.join(dir, 'src', 'api', f));
  // Stands for `npm install openapi-fetch && npm install -D typescript @types/node` in that project.
  fs.mkdirSync(path.join(dir, 'node_modules', '@types'), { recursive: true });
  fs.symlinkSync(path.join(root, 'node_modules', 'openapi-fetch'), path.join(dir, 'node_modules', 'openapi-fetch'));
  fs.symlinkSync(path.join(root, 'node_modules', '@types', 'node'), path.join(dir, 'node_modules', '@types', 'node'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(readmeTsconfig()));
  // No casts and no narrowing beyond `?.`: a JSON execute call is typed by its JSON answer.
  fs.writeFileSync(
    path.join(dir, 'src', 'main.ts'),
    `import { createApiClient } from './api/client.ts';
const [baseUrl, workspaceId, name] = process.argv.slice(2) as [string, string, string];
const api = createApiClient({ baseUrl, apiKey: process.env.KEY });
const { data, error } = await api.GET('/api/v2/workspaces/{workspaceId}', { params: { path: { workspaceId } } });
const names: string[] = [];
for await (const ws of api.paginate('/api/v2/workspaces', { query: { sortBy: 'name' } })) names.push(ws.name);
const created = await api.POST('/api/v2/workflows', { body: { workspaceId, name } });
const workflowId: string = created.data!.data.id;
await api.POST('/api/v2/workflows/{workflowId}/deploy', { params: { path: { workflowId } } });
const run = await api.POST('/api/v2/workflows/{workflowId}/execute', { params: { path: { workflowId } }, body: { input: { name: 'Ada' } } });
const runId: string | undefined = run.data?.data.runId;
const status = run.data && 'status' in run.data.data ? run.data.data.status : null;
const queued = await api.POST('/api/v2/workflows/{workflowId}/execute', { params: { path: { workflowId } }, body: { input: {}, async: true } });
const queuedRunId: string | undefined = queued.data?.data.runId;
console.log(JSON.stringify({ id: data?.data.id, error: error ?? null, names, runId, status, queuedRunId }));
`,
  );
});
afterAll(async () => {
  await s.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

it.each(Object.entries(compilers))('the README consumer project compiles with %s and its JavaScript calls the API', async (name, tsc) => {
  const outDir = path.join(dir, `dist-${path.basename(path.dirname(path.dirname(tsc)))}`);
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', dir, '--outDir', outDir], { encoding: 'utf8' });
  } catch (err) {
    throw new Error(`tsc failed:\n${(err as { stdout: string }).stdout}`);
  }
  expect(fs.readFileSync(path.join(outDir, 'main.js'), 'utf8')).toContain('./api/client.js');
  const { stdout: out } = await promisify(execFile)(process.execPath, [path.join(outDir, 'main.js'), s.url, s.workspaceId, `Hello from ${name}`], {
    encoding: 'utf8',
    timeout: PATIENCE_MS,
    env: { ...process.env, KEY: s.key },
  });
  const result = JSON.parse(out);
  expect(result).toMatchObject({ id: s.workspaceId, error: null, names: ['My workspace'], status: 'completed' });
  expect(result.runId).toEqual(expect.any(String));
  expect(result.queuedRunId).toEqual(expect.any(String));
}, 180_000); // type-checking the whole API's types takes TypeScript 5.9 several seconds of CPU, far more on a busy machine

// The generator: deterministic output, --check catching drift and hand edits, --scaffold filling gaps,
// and the spec rules it enforces. Runs against a scratch copy of the project so the real tree is untouched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generate } from '../generator/generate.ts';

const root = path.resolve(import.meta.dirname, '..');
let scratch: string;

function run(args: string[], cwd = scratch) {
  return spawnSync(process.execPath, args, { cwd, encoding: 'utf8' });
}

beforeAll(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-gen-'));
  for (const dir of ['spec', 'generator', 'templates', 'generated', 'src', 'bin']) {
    fs.cpSync(path.join(root, dir), path.join(scratch, dir), { recursive: true });
  }
  for (const file of ['package.json', 'tsconfig.json']) fs.copyFileSync(path.join(root, file), path.join(scratch, file));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(scratch, 'node_modules'));
  // Only the parts the type check needs.
  const tsconfig = JSON.parse(fs.readFileSync(path.join(scratch, 'tsconfig.json'), 'utf8'));
  tsconfig.include = ['src', 'generator', 'generated'];
  fs.writeFileSync(path.join(scratch, 'tsconfig.json'), JSON.stringify(tsconfig));
});
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

// The two tests that type-check the scratch project run a compiler twice each. They use TypeScript 7's native
// compiler (the devDependency `typescript7`), about three times faster than 5.9 on this project; what they check
// is the generator's output and --scaffold, which both compilers judge alike. Still CPU-bound work, so the
// limit is above the suite's default for when two copies of the suite share two cores.
const TSC_TEST_TIMEOUT_MS = 300_000;
const typecheckScratch = () => spawnSync(path.join(root, 'node_modules', 'typescript7', 'bin', 'tsc'), ['--noEmit', '-p', 'tsconfig.json'], { cwd: scratch, encoding: 'utf8' });

describe('generator', () => {
  it('produces the same bytes every time, equal to what is committed', async () => {
    const a = await generate();
    const b = await generate();
    expect([...a.keys()]).toEqual([...b.keys()]);
    for (const [name, content] of a) {
      expect(content).toBe(b.get(name));
      expect(fs.readFileSync(path.join(root, 'generated', name), 'utf8')).toBe(content);
      expect(content).not.toContain(new Date().toISOString().slice(0, 13)); // no generation timestamp
    }
  });

  it('--check passes on a fresh tree and names a hand-edited file', () => {
    expect(run(['bin/generate.js', '--check']).status).toBe(0);
    const target = path.join(scratch, 'generated', 'operations.ts');
    const original = fs.readFileSync(target, 'utf8');
    fs.writeFileSync(target, original.replace("scope: 'api:read'", "scope: 'api:write'"));
    const r = run(['bin/generate.js', '--check']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('generated/operations.ts');
    fs.writeFileSync(target, original);
    fs.writeFileSync(path.join(scratch, 'generated', 'stray.ts'), '// not the generator\'s\n');
    const stray = run(['bin/generate.js', '--check']);
    expect(stray.status).toBe(1);
    expect(stray.stderr).toContain('generated/stray.ts');
    fs.rmSync(path.join(scratch, 'generated', 'stray.ts'));
    // Three generator runs: on a loaded two-core machine each can take ten seconds.
  });

  it('--check fails when the spec changed without regenerating', () => {
    const file = path.join(scratch, 'spec', 'paths', 'meta.yaml');
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, original.replace('summary: Get API capabilities', 'summary: Get the API capabilities'));
    const r = run(['bin/generate.js', '--check']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/generated\/(operations|types|handlers)\.ts/);
    fs.writeFileSync(file, original);
  });

  it('a new operation without a handler fails the type check; --scaffold adds a typed stub and keeps existing code', () => {
    const metaFile = path.join(scratch, 'spec', 'paths', 'meta.yaml');
    const original = fs.readFileSync(metaFile, 'utf8');
    // A second operation on the same path, in the Meta tag.
    const extra = original.replace(/^meta:\n  get:\n    operationId: getMeta/m, 'meta:\n  head:\n    operationId: headMeta');
    const headOp = extra.slice(extra.indexOf('  head:'));
    fs.writeFileSync(metaFile, original + headOp.replace(/^/gm, '').replace(/^  head:/m, '  head:'));
    const gen = run(['bin/generate.js']);
    expect(gen.stderr).toBe('');
    expect(gen.status).toBe(0);

    const before = typecheckScratch();
    expect(before.status).not.toBe(0);
    expect(before.stdout).toContain('headMeta');

    const handlerFile = path.join(scratch, 'src', 'handlers', 'meta.ts');
    const handlerBefore = fs.readFileSync(handlerFile, 'utf8');
    const scaffold = run(['bin/generate.js', '--scaffold']);
    expect(scaffold.status).toBe(0);
    expect(scaffold.stdout).toContain('src/handlers/meta.ts: headMeta');
    const handlerAfter = fs.readFileSync(handlerFile, 'utf8');
    expect(handlerAfter.startsWith(handlerBefore)).toBe(true);
    expect(handlerAfter).toContain("export const headMeta: Handler<'headMeta'>");

    const after = typecheckScratch();
    expect(after.stdout).toBe('');
    expect(after.status).toBe(0);
    // Running it again changes nothing.
    expect(run(['bin/generate.js', '--scaffold']).stdout).toContain('Every operation already has a handler.');
    expect(fs.readFileSync(handlerFile, 'utf8')).toBe(handlerAfter);

    fs.writeFileSync(metaFile, original);
    fs.writeFileSync(handlerFile, handlerBefore);
    expect(run(['bin/generate.js']).status).toBe(0);
  }, TSC_TEST_TIMEOUT_MS);

  it('--scaffold creates the handler module of a new tag', () => {
    const rootSpec = path.join(scratch, 'spec', 'openapi.yaml');
    const rootBefore = fs.readFileSync(rootSpec, 'utf8');
    const opFile = path.join(scratch, 'spec', 'paths', 'zeta.yaml');
    fs.writeFileSync(
      opFile,
      fs
        .readFileSync(path.join(scratch, 'spec', 'paths', 'meta.yaml'), 'utf8')
        .replace(/^meta:/m, 'zeta:')
        .replace('operationId: getMeta', 'operationId: getZeta')
        .replace('tags: [Meta]', 'tags: [Zeta Things]'),
    );
    fs.writeFileSync(
      rootSpec,
      rootBefore
        .replace('paths:\n', 'paths:\n  /api/v2/zeta:\n    $ref: ./paths/zeta.yaml#/zeta\n')
        .replace('tags:\n', 'tags:\n  - name: Zeta Things\n    description: A tag added by the test.\n'),
    );
    expect(run(['bin/generate.js']).status).toBe(0);
    const before = typecheckScratch();
    expect(before.stdout).toContain('zeta-things.ts');
    const scaffold = run(['bin/generate.js', '--scaffold']);
    expect(scaffold.stdout).toContain('src/handlers/zeta-things.ts: getZeta');
    const created = fs.readFileSync(path.join(scratch, 'src', 'handlers', 'zeta-things.ts'), 'utf8');
    expect(created).toContain("export const getZeta: Handler<'getZeta'>");
    const after = typecheckScratch();
    expect(after.stdout).toBe('');
    fs.writeFileSync(rootSpec, rootBefore);
    fs.rmSync(opFile);
    fs.rmSync(path.join(scratch, 'src', 'handlers', 'zeta-things.ts'));
    expect(run(['bin/generate.js']).status).toBe(0);
  }, TSC_TEST_TIMEOUT_MS);

  it('refuses a spec that breaks the project rules, naming each problem', () => {
    const file = path.join(scratch, 'spec', 'paths', 'workspaces.yaml');
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(
      file,
      original
        .replace('    operationId: getWorkspace\n', '')
        .replace('    x-min-role: read\n    x-workspace-id: path\n    parameters:\n      - $ref: \'../openapi.yaml#/components/parameters/WorkspaceIdPath\'\n      - $ref', '    x-min-role: owner\n    x-workspace-id: path\n    parameters:\n      - $ref: \'../openapi.yaml#/components/parameters/WorkspaceIdPath\'\n      - $ref'),
    );
    const r = run(['bin/generate.js']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('GET /api/v2/workspaces/{workspaceId}: needs a camelCase operationId');
    expect(r.stderr).toContain('x-min-role must be one of read, write, admin');
    fs.writeFileSync(file, original);
  });

  it('refuses an object schema that would type as an empty object in clients', () => {
    const file = path.join(scratch, 'spec', 'paths', 'workflow-runs.yaml');
    const original = fs.readFileSync(file, 'utf8');
    const closed = original.replace(/(\n {14}input:\n {16}type: object\n) {16}additionalProperties: true\n/, '$1');
    expect(closed).not.toBe(original);
    fs.writeFileSync(file, closed);
    const r = run(['bin/generate.js']);
    fs.writeFileSync(file, original);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('POST /api/v2/workflows/{workflowId}/execute: content.application/json.schema.input: an object schema with neither properties nor additionalProperties');
  });

  it('refuses x-idempotent without the Idempotency-Key header, and the header without x-idempotent', () => {
    const file = path.join(scratch, 'spec', 'paths', 'workflow-runs.yaml');
    const original = fs.readFileSync(file, 'utf8');
    const key = '      - $ref: ../openapi.yaml#/components/parameters/IdempotencyKey\n';
    const withoutHeader = original.replace(key, '');
    expect(withoutHeader).not.toBe(original);
    fs.writeFileSync(file, withoutHeader);
    const noHeader = run(['bin/generate.js']);
    const withoutFlag = original.replace('    x-idempotent: true\n', '');
    expect(withoutFlag).not.toBe(original);
    fs.writeFileSync(file, withoutFlag);
    const noFlag = run(['bin/generate.js']);
    fs.writeFileSync(file, original);
    expect(noHeader.status).toBe(1);
    expect(noHeader.stderr).toContain('POST /api/v2/workflows/{workflowId}/execute: x-idempotent needs the Idempotency-Key header');
    expect(noFlag.status).toBe(1);
    expect(noFlag.stderr).toContain('POST /api/v2/workflows/{workflowId}/execute: declares the Idempotency-Key header but not x-idempotent: true');
  });

  it('refuses an unknown option', () => {
    const r = run(['bin/generate.js', '--chek']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('Unknown option --chek');
  });
});

describe('entry points', () => {
  it('refuse a Node older than 24 with one line pointing at the npm scripts', () => {
    // The machine's own Node (20) is what is on PATH outside npm scripts.
    const candidates = ['/usr/local/bin/node', '/usr/bin/node'].filter((p) => fs.existsSync(p));
    const old = candidates.find((p) => Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' })) < 24);
    if (!old) {
      console.warn('no Node older than 24 on this machine; skipping the refusal check');
      return;
    }
    for (const entry of ['start', 'admin', 'generate', 'bench']) {
      const r = spawnSync(old, [path.join(root, 'bin', `${entry}.js`)], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/too old.*npm scripts/);
    }
  });
});

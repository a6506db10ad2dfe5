// Builds sandboxes: a named dependency set becomes a content-addressed directory under $DATA_DIR/sandboxes/<hash>,
// installed in the background (pending → building → ready | failed). JavaScript dependencies come from the npm
// registry through `npm install --ignore-scripts` (no package code runs on the server while installing); Python
// ones through pip when python3 and its package index are reachable. Managed CLI tools and system packages need
// prebuilt images this server does not make: such sandboxes fail with a code saying so. Function blocks that name
// a ready JavaScript sandbox run in a sandbox pool that may read (and `require` from) that directory only.
// No HTTP here.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { SandboxPool, type SandboxPoolOptions, type SandboxPoolUsage } from '../sandbox/pool.ts';
import type { Store } from '../store/index.ts';
import type { BuildState, SandboxRecord } from '../store/sandboxes.ts';

/** npm package specifiers: a name and an optional version or range; no URLs, paths, git or tarballs. */
const NPM_SPEC = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]{0,213}(@[A-Za-z0-9.^~<>=|*+ -]{1,64})?$/;
/** PyPI requirement: a name, optional extras and a version clause; no URLs or paths. */
const PYPI_SPEC = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(\[[A-Za-z0-9_,.-]+\])?([<>=!~]=?[A-Za-z0-9.*+!-]{1,40}(,[<>=!~]=?[A-Za-z0-9.*+!-]{1,40})*)?$/;
const DEBIAN_PACKAGE = /^[a-z0-9][a-z0-9+.-]{1,99}(=[A-Za-z0-9.+:~-]{1,64})?$/;

export interface SandboxSpec {
  language: 'javascript' | 'python';
  dependencies: string[];
  cliTools: string[];
  systemPackages: string[];
}

export class SandboxSpecError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

/** Checks a spec against its language; throws SandboxSpecError naming the offending field. */
export function checkSpec(spec: SandboxSpec): void {
  const seen = new Set<string>();
  for (const [i, dep] of spec.dependencies.entries()) {
    const ok = spec.language === 'javascript' ? NPM_SPEC.test(dep) && !dep.includes('..') : PYPI_SPEC.test(dep);
    if (!ok) {
      throw new SandboxSpecError(`dependencies[${i}]`, `"${dep}" is not a ${spec.language === 'javascript' ? 'npm package name with an optional version (name@range)' : 'PyPI requirement (name, extras, version)'}; URLs, paths and git sources are not accepted`);
    }
    const name = spec.language === 'javascript' ? dep.replace(/(.)@.*$/, '$1') : dep.split(/[<>=!~[]/)[0]!.toLowerCase();
    if (seen.has(name)) throw new SandboxSpecError(`dependencies[${i}]`, `The package ${name} is listed twice`);
    seen.add(name);
  }
  if (new Set(spec.cliTools).size !== spec.cliTools.length) throw new SandboxSpecError('cliTools', 'A CLI tool is listed twice');
  for (const [i, p] of spec.systemPackages.entries()) {
    if (!DEBIAN_PACKAGE.test(p)) throw new SandboxSpecError(`systemPackages[${i}]`, `"${p}" is not a Debian package name`);
  }
}

/** The content address of a spec: equal dependency sets share one build across workspaces. */
export function specHash(spec: SandboxSpec): string {
  const canonical = JSON.stringify([spec.language, [...spec.dependencies].sort(), [...spec.cliTools].sort(), [...spec.systemPackages].sort()]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

export interface BuilderOptions {
  /** Where built directories live ($DATA_DIR/sandboxes). */
  root: string;
  /** Longest one install may take. */
  buildTimeoutMs: number;
  /** The npm command (default `npm`, from PATH). */
  npmCommand: string;
  python: string;
  /** Options of the pools that run function blocks in a built sandbox. */
  pool: Omit<SandboxPoolOptions, 'modulesDir' | 'recycle' | 'size'>;
  /** Most sandbox pools kept alive at once (least recently used ones are closed). */
  maxPools: number;
}

const tail = (text: string, n = 2000) => (text.length > n ? text.slice(-n) : text);

function run(cmd: string, args: string[], options: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.stdout.on('data', (c) => (stdout = tail(stdout + c, 20_000)));
    child.stderr.on('data', (c) => (stderr = tail(stderr + c, 20_000)));
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: stderr + String(e.message), timedOut });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

const failed = (errorCode: string, errorMessage: string, errorDetail: string | null = null): BuildState => ({ buildStatus: 'failed', errorCode, errorMessage, errorDetail, builtAt: null });

export class SandboxBuilder {
  private readonly store: Store;
  private readonly options: BuilderOptions;
  private readonly logger: Logger;
  /** Builds in flight by spec hash (one build per hash, whoever asks). */
  private readonly inFlight = new Map<string, Promise<BuildState>>();
  /** One build at a time: installs are heavy and the machine is small. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly pools = new Map<string, SandboxPool>();
  private closed = false;

  constructor(store: Store, options: BuilderOptions, logger: Logger) {
    this.store = store;
    this.options = options;
    this.logger = logger;
  }

  dirOf(hash: string): string {
    return path.join(this.options.root, hash);
  }

  /** Whether a finished build of this spec is on disk already. */
  isBuilt(hash: string): boolean {
    return fs.existsSync(path.join(this.dirOf(hash), '.sandbox-ready'));
  }

  /**
   * Starts (or joins) the build of a sandbox's spec in the background and records its progress on every sandbox
   * with that spec. Returns the build's final state (tests and benchmarks await it; handlers do not).
   */
  build(sandbox: Pick<SandboxRecord, 'specHash' | 'language' | 'dependencies' | 'cliTools' | 'systemPackages'>): Promise<BuildState> {
    const hash = sandbox.specHash;
    const existing = this.inFlight.get(hash);
    if (existing) return existing;
    const job = (this.chain = this.chain.then(async () => {
      const state = await this.buildNow(sandbox).catch((e: Error) => failed('BUILD_ERROR', `The build stopped unexpectedly: ${e.message}`));
      if (!this.closed) await this.record(hash, state);
      return state;
    })) as Promise<BuildState>;
    this.inFlight.set(hash, job);
    void job.finally(() => this.inFlight.delete(hash));
    return job;
  }

  /** Re-queues builds a previous process left pending or building. */
  async resume(): Promise<void> {
    const seen = new Set<string>();
    for (const s of await this.store.sandboxes.unfinished()) {
      if (seen.has(s.specHash)) continue;
      seen.add(s.specHash);
      void this.build(s);
    }
  }

  private async record(hash: string, state: BuildState): Promise<void> {
    try {
      await this.store.transaction((tx) => tx.sandboxes.setBuildState(hash, state));
    } catch (e) {
      this.logger.warn({ err: e, hash }, 'could not record a sandbox build state');
    }
  }

  private async buildNow(spec: Pick<SandboxRecord, 'specHash' | 'language' | 'dependencies' | 'cliTools' | 'systemPackages'>): Promise<BuildState> {
    const hash = spec.specHash;
    if (spec.cliTools.length > 0) {
      return failed('CLI_TOOLS_UNSUPPORTED', `This server cannot install managed CLI tools (${spec.cliTools.join(', ')}): they need prebuilt images it does not make.`);
    }
    if (spec.systemPackages.length > 0) {
      return failed('SYSTEM_PACKAGES_UNSUPPORTED', `This server cannot install system packages (${spec.systemPackages.join(', ')}): they need prebuilt images it does not make.`);
    }
    const dir = this.dirOf(hash);
    if (this.isBuilt(hash)) return { buildStatus: 'ready', errorCode: null, errorMessage: null, errorDetail: null, builtAt: (await fsp.stat(path.join(dir, '.sandbox-ready'))).mtime.toISOString() };
    await this.record(hash, { buildStatus: 'building', errorCode: null, errorMessage: null, errorDetail: null, builtAt: null });
    await fsp.mkdir(this.options.root, { recursive: true });
    const work = path.join(this.options.root, `.build-${hash}-${randomBytes(4).toString('hex')}`);
    await fsp.mkdir(work, { recursive: true });
    try {
      const state = spec.language === 'javascript' ? await this.installNpm(work, spec.dependencies) : await this.installPython(work, spec.dependencies);
      if (state) return state;
      const builtAt = new Date().toISOString();
      await fsp.writeFile(path.join(work, '.sandbox-ready'), builtAt);
      await fsp.rm(dir, { recursive: true, force: true });
      await fsp.rename(work, dir);
      return { buildStatus: 'ready', errorCode: null, errorMessage: null, errorDetail: null, builtAt };
    } finally {
      await fsp.rm(work, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Installs into `work`; answers a failed state, or null on success. */
  private async installNpm(work: string, deps: string[]): Promise<BuildState | null> {
    await fsp.writeFile(path.join(work, 'package.json'), JSON.stringify({ name: 'sandbox', private: true, version: '0.0.0' }));
    if (deps.length === 0) return null;
    const r = await run(
      this.options.npmCommand,
      ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--no-package-lock', '--loglevel=error', ...deps],
      { cwd: work, timeoutMs: this.options.buildTimeoutMs, env: { ...process.env, npm_config_update_notifier: 'false' } },
    );
    if (r.timedOut) return failed('BUILD_TIMEOUT', `Installing the dependencies took longer than ${this.options.buildTimeoutMs} ms.`, tail(r.stderr));
    if (r.code !== 0) {
      const notFound = /E404|404 Not Found|is not in this registry|No matching version|ETARGET/i.exec(r.stderr);
      const unreachable = /ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|network/i.test(r.stderr);
      if (notFound) {
        const pkg = /'([^']+@[^']*)' is not in this registry|No matching version found for ([^\s.]+)|404 Not Found - GET \S+\/([^/\s]+)/i.exec(r.stderr);
        const name = pkg?.[1] ?? pkg?.[2] ?? (pkg?.[3] ? decodeURIComponent(pkg[3]) : null);
        return failed('DEPENDENCY_NOT_FOUND', name ? `The package ${name} does not exist in the npm registry (or has no matching version).` : 'A dependency does not exist in the npm registry (or has no matching version).', tail(r.stderr));
      }
      if (unreachable) return failed('PACKAGE_INDEX_UNREACHABLE', 'The npm registry could not be reached.', tail(r.stderr));
      return failed('DEPENDENCY_INSTALL_FAILED', 'npm could not install the dependencies.', tail(r.stderr));
    }
    return null;
  }

  private async installPython(work: string, deps: string[]): Promise<BuildState | null> {
    const version = await run(this.options.python, ['--version'], { cwd: work, timeoutMs: 10_000 });
    if (version.code !== 0) return failed('PYTHON_UNAVAILABLE', `python3 is not available on this server (${this.options.python}).`, tail(version.stderr));
    const pip = await run(this.options.python, ['-m', 'pip', '--version'], { cwd: work, timeoutMs: 10_000 });
    if (pip.code !== 0) return failed('PYTHON_UNAVAILABLE', 'pip is not available for python3 on this server.', tail(pip.stderr));
    try {
      const res = await fetch('https://pypi.org/simple/pip/', { method: 'HEAD', signal: AbortSignal.timeout(5000) });
      if (!res.ok) throw new Error(`status ${res.status}`);
    } catch (e) {
      return failed('PACKAGE_INDEX_UNREACHABLE', 'The Python package index (PyPI) cannot be reached from this server, so Python sandboxes cannot be built.', String((e as Error).message));
    }
    if (deps.length === 0) return null;
    const r = await run(this.options.python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--only-binary=:all:', '--target', path.join(work, 'site-packages'), ...deps], {
      cwd: work,
      timeoutMs: this.options.buildTimeoutMs,
    });
    if (r.timedOut) return failed('BUILD_TIMEOUT', `Installing the dependencies took longer than ${this.options.buildTimeoutMs} ms.`, tail(r.stderr));
    if (r.code !== 0) {
      if (/No matching distribution|Could not find a version/i.test(r.stderr)) return failed('DEPENDENCY_NOT_FOUND', 'A dependency does not exist on PyPI (or has no matching version).', tail(r.stderr));
      return failed('DEPENDENCY_INSTALL_FAILED', 'pip could not install the dependencies.', tail(r.stderr));
    }
    return null;
  }

  /** The processes of every built sandbox's pool, added up (metrics). */
  poolUsage(): SandboxPoolUsage {
    const sum: SandboxPoolUsage = { total: 0, busy: 0, idle: 0, waiting: 0 };
    for (const pool of this.pools.values()) {
      const u = pool.usage();
      sum.total += u.total;
      sum.busy += u.busy;
      sum.idle += u.idle;
      sum.waiting += u.waiting;
    }
    return sum;
  }

  /** A pool whose processes may `require` the packages of a built JavaScript sandbox (one call per process). */
  async poolFor(hash: string): Promise<SandboxPool> {
    let pool = this.pools.get(hash);
    if (pool) {
      this.pools.delete(hash);
      this.pools.set(hash, pool); // most recently used last
      return pool;
    }
    pool = new SandboxPool({ ...this.options.pool, size: 1, modulesDir: this.dirOf(hash), recycle: true });
    this.pools.set(hash, pool);
    while (this.pools.size > this.options.maxPools) {
      const [oldest, old] = this.pools.entries().next().value as [string, SandboxPool];
      this.pools.delete(oldest);
      void old.close();
    }
    await pool.start();
    return pool;
  }

  /** Removes a build no sandbox uses any more (its pool and its directory); a build in flight is left alone. */
  async discard(hash: string): Promise<boolean> {
    if (this.inFlight.has(hash)) return false;
    if ((await this.store.sandboxes.countByHash(hash)) > 0) return false;
    const pool = this.pools.get(hash);
    this.pools.delete(hash);
    await pool?.close();
    await fsp.rm(this.dirOf(hash), { recursive: true, force: true });
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

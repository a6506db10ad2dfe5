// `npm run bench -- <suites> --baseline <git ref>`: the regression guard. The given commit is checked out into a
// temporary worktree, and the same suites run on it and on this working tree in alternating rounds (A B, B A, …)
// so drift on a busy machine falls on both alike. Each round is a separate `bench --rounds 1 --figures <file>`
// process in the tree it measures, so each side runs its own code end to end. The figures are compared by
// median with the ratio working/baseline, and marked better or worse by the direction each figure improves in.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fmt, median, root, type Figure } from './lib.ts';

interface Options {
  ref: string;
  suites: string[];
  seconds: number;
  rounds: number;
}

/** A ratio within this far of 1 is reported as unchanged: single rounds on a shared machine are noisier than that. */
const NOISE = 0.05;

const git = (args: string[], cwd = root) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

export async function compareWithBaseline(options: Options): Promise<void> {
  let sha: string;
  try {
    sha = git(['rev-parse', '--verify', '--quiet', `${options.ref}^{commit}`]);
  } catch {
    console.error(`--baseline ${options.ref}: not a commit in this repository.`);
    process.exit(2);
  }
  const short = sha.slice(0, 9);
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), `owa-baseline-${short}-`));
  const figuresDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-figures-'));
  git(['worktree', 'add', '--detach', '--force', tree, sha]);
  try {
    if (!fs.readFileSync(path.join(tree, 'bench', 'run.ts'), 'utf8').includes('figures:')) {
      console.error(`--baseline ${options.ref}: its bench predates \`--figures\`, so its figures cannot be compared. Choose a commit at or after the one that added bench/baseline.ts.`);
      process.exitCode = 2;
      return;
    }
    prepareDependencies(tree);
    const sides = [
      { label: `baseline ${short}`, dir: tree, runs: [] as Figure[][] },
      { label: 'working tree', dir: root, runs: [] as Figure[][] },
    ];
    for (let round = 0; round < options.rounds; round++) {
      // A B, then B A: whichever side runs second in one round runs first in the next.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        console.log(`\n── round ${round + 1} of ${options.rounds}: ${side.label}`);
        const file = path.join(figuresDir, `${round}-${side === sides[0] ? 'baseline' : 'working'}.json`);
        const ok = await runBench(side.dir, [...options.suites, '--rounds', '1', '--seconds', String(options.seconds), '--figures', file]);
        if (!ok || !fs.existsSync(file)) {
          console.error(`The bench of the ${side.label} failed (its output is above); no comparison.`);
          process.exitCode = 1;
          return;
        }
        side.runs.push(JSON.parse(fs.readFileSync(file, 'utf8')) as Figure[]);
      }
    }
    printComparison(sides[0]!.runs, sides[1]!.runs, short, options.rounds);
  } finally {
    git(['worktree', 'remove', '--force', tree]);
    fs.rmSync(figuresDir, { recursive: true, force: true });
  }
}

/**
 * The baseline needs its own dependencies only when its lockfile differs; otherwise it shares this tree's
 * node_modules through a symlink (an install is then the same bytes, and takes a minute on these machines).
 */
function prepareDependencies(tree: string): void {
  const lock = (dir: string) => fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
  if (lock(tree) === lock(root)) {
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'), 'dir');
    return;
  }
  console.log(`The baseline's lockfile differs from this tree's: npm ci in ${tree}`);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: tree, stdio: 'inherit' });
}

/** Whether the bench in `dir` finished; its output goes straight to this process's. */
function runBench(dir: string, args: string[]): Promise<boolean> {
  return new Promise((resolve, reject) => {
    // This process runs on the pinned Node; the child uses the same binary, whatever `node` is on PATH.
    const child = spawn(process.execPath, [path.join(dir, 'bin', 'bench.js'), ...args], { cwd: dir, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code === 0));
  });
}

function printComparison(baseline: Figure[][], working: Figure[][], short: string, rounds: number): void {
  const key = (f: Figure) => `${f.suite}\u0000${f.name}`;
  const values = (runs: Figure[][]) => {
    const out = new Map<string, { figure: Figure; values: number[] }>();
    for (const run of runs) {
      for (const f of run) {
        const entry = out.get(key(f)) ?? { figure: f, values: [] };
        entry.values.push(f.value);
        out.set(key(f), entry);
      }
    }
    return out;
  };
  const base = values(baseline);
  const work = values(working);
  console.log(`\nworking tree against baseline ${short}: medians of ${rounds} alternating round(s); ratio = working / baseline`);
  const width = Math.max(...[...work.values()].map((e) => `${e.figure.suite}: ${e.figure.name}`.length), 20);
  for (const [k, w] of work) {
    const label = `${w.figure.suite}: ${w.figure.name}`.padEnd(width);
    const b = base.get(k);
    if (!b) {
      console.log(`  ${label}  ${fmt(median(w.values), 3).padStart(10)} ${w.figure.unit.padEnd(11)} (new: not measured on the baseline)`);
      continue;
    }
    const ratio = median(w.values) / median(b.values);
    const improved = w.figure.better === 'higher' ? ratio > 1 : ratio < 1;
    const verdict = Math.abs(ratio - 1) <= NOISE ? 'unchanged' : improved ? 'better' : 'WORSE';
    console.log(
      `  ${label}  ${fmt(median(b.values), 3).padStart(10)} → ${fmt(median(w.values), 3).padStart(10)} ${w.figure.unit.padEnd(11)} ×${fmt(ratio, 3)}  ${verdict}`,
    );
  }
  for (const [k, b] of base) {
    if (!work.has(k)) console.log(`  ${`${b.figure.suite}: ${b.figure.name}`.padEnd(width)}  (measured on the baseline only)`);
  }
}

// Child processes a test file starts (servers, the sim CLI) are stopped when the file ends, also when a test
// times out before its own cleanup: otherwise a server would outlive the run and hold its port and data.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll } from 'vitest';
import { PATIENCE_MS } from './wait.ts';

const live = new Set<ChildProcess>();

afterAll(() => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  live.clear();
});

/** Registers `child` to be killed at the end of the test file if it is still running then. */
export function endsWithFile<T extends ChildProcess>(child: T): T {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export interface SpawnedServer {
  child: ChildProcess;
  url: string;
}

const START = path.resolve(import.meta.dirname, '..', '..', 'bin', 'start.js');

/**
 * Starts `npm start`'s entry point as a child process with exactly `env` (stopped when the file ends) and
 * resolves once it logs where it listens; rejects with its output if it exits first or takes too long.
 */
export function spawnServer(env: Record<string, string>): Promise<SpawnedServer> {
  const child = endsWithFile(spawn(process.execPath, [START], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), PATIENCE_MS);
    const onData = (c: Buffer) => {
      out += c;
      const m = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve({ child, url: m[1]! });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c) => (out += c));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
}

/** Resolves with the signal or exit code once `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<NodeJS.Signals | number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.signalCode ?? child.exitCode);
    child.once('exit', (code, signal) => resolve(signal ?? code));
  });
}

/** The lines a server wrote to stdout, each parsed as the JSON log line it must be (a line that is not fails the test). */
export function logLines(stdout: string): Array<Record<string, any>> {
  return stdout
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, any>;
      } catch {
        throw new Error(`stdout line is not JSON: ${line}`);
      }
    });
}

/** The first start's log line (user, workspace, where the key is, how to set a password), or undefined. */
export function firstStartLine(stdout: string): Record<string, any> | undefined {
  return logLines(stdout).find((l) => typeof l.msg === 'string' && l.msg.startsWith('First start'));
}

// Child processes a test file starts (servers, the sim CLI) are stopped when the file ends, also when a test
// times out before its own cleanup: otherwise a server would outlive the run and hold its port and data.
import type { ChildProcess } from 'node:child_process';
import { afterAll } from 'vitest';

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

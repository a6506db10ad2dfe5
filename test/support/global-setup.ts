// Runs once before the test files: converts the embedded word-vector model into its compact cache (a few
// seconds, the first time on a machine), so no test waits for it and parallel test processes do not all
// convert it at once.
// It also names the directory of this run's test Postgres (started only if a test asks for it) and stops that
// cluster when the run ends.
import { ensureWordVectorCache } from '../../src/knowledge/word-vectors.ts';
import { prepareTestPostgres, stopTestPostgres } from './postgres.ts';

export default async function setup(): Promise<() => Promise<void>> {
  await ensureWordVectorCache();
  prepareTestPostgres();
  return stopTestPostgres;
}

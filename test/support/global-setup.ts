// Runs once before the test files: converts the embedded word-vector model into its compact cache (a few
// seconds, the first time on a machine), so no test waits for it and parallel test processes do not all
// convert it at once.
import { ensureWordVectorCache } from '../../src/knowledge/word-vectors.ts';

export default async function setup(): Promise<void> {
  await ensureWordVectorCache();
}

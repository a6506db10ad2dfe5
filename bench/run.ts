// `npm run bench [-- suite ...] [--seconds N] [--rounds N] [--figures <file>] [--baseline <git ref>] [--chunks N --dims N]`: runs the
// named suites (default: all). Each suite measures its own baseline in the same run and prints medians and ratios;
// `--figures` also writes the figures as JSON, and `--baseline` compares them with another commit's
// (./baseline.ts). `--chunks`/`--dims` size the knowledge suite's search (synthetic vectors when --dims is given).
// Not a test: no pass/fail.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { compareWithBaseline } from './baseline.ts';
import { recordedFigures } from './lib.ts';
import { foundation } from './suites/foundation.ts';
import { auth } from './suites/auth.ts';
import { workflows } from './suites/workflows.ts';
import { executor } from './suites/executor.ts';
import { files } from './suites/files.ts';
import { workflowOperations } from './suites/workflow-operations.ts';
import { runs } from './suites/runs.ts';
import { resources } from './suites/resources.ts';
import { mcp } from './suites/mcp.ts';
import { tables } from './suites/tables.ts';
import { knowledge } from './suites/knowledge.ts';
import { idempotency } from './suites/idempotency.ts';
import { hostile } from './suites/hostile.ts';
import { tracing } from './suites/tracing.ts';
import { consoleSuite } from './suites/console.ts';
import { scale } from './suites/scale.ts';
import { bulkLoadSuite } from './suites/bulk-load.ts';
import { memory } from './suites/memory.ts';

const SUITES: Record<string, (o: { seconds: number; rounds: number; chunks?: number; dims?: number }) => Promise<void>> = {
  foundation,
  auth,
  workflows,
  'workflow-operations': workflowOperations,
  executor,
  runs,
  files,
  resources,
  mcp,
  tables,
  knowledge,
  idempotency,
  hostile,
  tracing,
  console: consoleSuite,
  scale,
  'bulk-load': bulkLoadSuite,
  memory,
};

export async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '3' },
      figures: { type: 'string' },
      baseline: { type: 'string' },
      chunks: { type: 'string' },
      dims: { type: 'string' },
    },
    allowPositionals: true,
  });
  const names = positionals.length ? positionals : Object.keys(SUITES);
  const unknown = names.filter((name) => !SUITES[name]);
  if (unknown.length) {
    console.error(`Unknown suite ${unknown.join(', ')}; choose from ${Object.keys(SUITES).join(', ')}`);
    process.exit(2);
  }
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  if (!(seconds > 0) || !Number.isInteger(rounds) || rounds < 1) {
    console.error('--seconds takes a positive number and --rounds a positive whole number.');
    process.exit(2);
  }
  const chunks = values.chunks === undefined ? undefined : Number(values.chunks);
  const dims = values.dims === undefined ? undefined : Number(values.dims);
  if ((chunks !== undefined && !(Number.isInteger(chunks) && chunks >= 1000)) || (dims !== undefined && !(Number.isInteger(dims) && dims >= 4))) {
    console.error('--chunks takes a whole number of at least 1000 and --dims one of at least 4 (knowledge suite).');
    process.exit(2);
  }
  if (values.baseline !== undefined) {
    await compareWithBaseline({ ref: values.baseline, suites: names, seconds, rounds });
    return;
  }
  for (const name of names) await SUITES[name]!({ seconds, rounds, chunks, dims });
  if (values.figures !== undefined) fs.writeFileSync(values.figures, JSON.stringify(recordedFigures(), null, 2));
}

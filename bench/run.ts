// `npm run bench [-- suite ...] [--seconds N] [--rounds N]`: runs the named suites (default: all).
// Each suite measures its baseline in the same run and prints medians and ratios. Not a test: no pass/fail.
import { parseArgs } from 'node:util';
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

const SUITES: Record<string, (o: { seconds: number; rounds: number }) => Promise<void>> = {
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
};

export async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' } },
    allowPositionals: true,
  });
  const names = positionals.length ? positionals : Object.keys(SUITES);
  for (const name of names) {
    const suite = SUITES[name];
    if (!suite) {
      console.error(`Unknown suite ${name}; choose from ${Object.keys(SUITES).join(', ')}`);
      process.exit(2);
    }
    await suite({ seconds: Number(values.seconds), rounds: Number(values.rounds) });
  }
}

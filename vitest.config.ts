import { defineConfig } from 'vitest/config';

if (Number(process.versions.node.split('.')[0]) < 24) {
  throw new Error(`Node ${process.versions.node} is too old for this project; run the tests with \`npm test\`.`);
}

// Measures V8's young generation after allocating in a loop; its heap behaves as measured only when loaded
// through Vite's module runner, so it stays there (see `projects` below).
const HEAP_SENSITIVE = ['test/transfer-memory.test.ts'];

// HTTP test files run a second time with their servers on Postgres (TEST_DATABASE=postgres; the run's throwaway
// cluster is test/support/postgres.ts). Chosen to cover every family while keeping `npm test` well under 20
// minutes on 2 cores; files that open the SQLite file directly, or spawn server processes, run on SQLite only.
export const POSTGRES_FILES = [
  'test/access-control.test.ts', // keys, roles, plans, audit trail, OAuth tokens, rate limits
  'test/access-requests.test.ts',
  'test/agent-chat.test.ts',
  'test/billing.test.ts',
  'test/conditional-writes.test.ts', // ETag / If-Match across the families
  'test/files-http.test.ts',
  'test/files-folder-case.test.ts', // folder prefixes case-sensitive, name search case-insensitive, on both engines
  'test/hosted-chat.test.ts',
  'test/http-core.test.ts',
  'test/idempotency.test.ts',
  'test/knowledge-bases.test.ts',
  'test/knowledge-documents.test.ts', // processing queue, full text and hybrid search
  'test/knowledge-search-features.test.ts', // typo tolerance, highlights, pages, weights, tag ranges
  'test/knowledge-tags.test.ts',
  'test/mcp-external-servers.test.ts', // external MCP servers: sealed headers and OAuth secrets
  'test/metrics.test.ts',
  'test/organizations.test.ts', // and invitations, the accept page, per-person credit limits
  'test/permission-groups.test.ts',
  'test/run-id-scope.test.ts', // runs and their logs
  'test/run-queue-claims.test.ts', // SKIP LOCKED batch claims, lease fencing, no global write lock
  'test/selectors.test.ts',
  'test/skills.test.ts', // resources
  'test/tables-folders.test.ts',
  'test/tables-groups.test.ts', // workflow runs from table rows
  'test/tables-http.test.ts',
  'test/tables-import-bulk-load.test.ts', // COPY on Postgres, INSERTs on SQLite: the same rows and rejections
  'test/tables-rows.test.ts',
  'test/web-sign-in.test.ts',
  'test/workspace-forks.test.ts', // and operation receipts
];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Two files at a time on a two-core machine: much of a test's time is spent waiting on its server, a child
    // process (the sim CLI, tsc, Chromium) or a timer, and the other file uses that time. (Vitest's default here
    // is one worker, fully serial.)
    maxWorkers: 2,
    // Tests wait on conditions (test/support/wait.ts), so these limits only stop a hung test; they are generous
    // because on a busy shared 2-core machine a step that takes a second when idle can take many.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'native',
          include: ['test/**/*.test.ts'],
          exclude: HEAP_SENSITIVE,
          // Node 24 runs the TypeScript sources itself (type stripping, as `npm start` does): loading them
          // natively instead of through Vite's transform pipeline cuts each test file's start-up by about half.
          // The suite uses neither vi.mock nor import.meta.vitest, so Vitest's module loader hook is not needed.
          experimental: { viteModuleRunner: false, nodeLoader: false },
        },
      },
      { extends: true, test: { name: 'vite', include: HEAP_SENSITIVE } },
      {
        extends: true,
        test: { name: 'postgres', include: POSTGRES_FILES, env: { TEST_DATABASE: 'postgres' }, experimental: { viteModuleRunner: false, nodeLoader: false } },
      },
    ],
  },
});

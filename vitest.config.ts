import { defineConfig } from 'vitest/config';

if (Number(process.versions.node.split('.')[0]) < 24) {
  throw new Error(`Node ${process.versions.node} is too old for this project; run the tests with \`npm test\`.`);
}


export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    experimental: { viteModuleRunner: false, nodeLoader: false },
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});

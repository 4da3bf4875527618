import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The deployed functions run Node 22; the SDK's notice about Node 20 is noise here.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Tests share one PostgreSQL server; files run in parallel on separate databases.
    pool: 'forks',
    maxWorkers: 2,
  },
});

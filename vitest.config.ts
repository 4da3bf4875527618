import { defineConfig } from 'vitest/config';
import { SAFETY_NET_MS } from './test/support/safety-net.ts';

// The workflow tests run twice, once under each of Redshift's isolation
// levels (test/support/warehouse.ts reads ATOMIC_PUBLISH_ISOLATION); the
// rest once, under the default (SNAPSHOT).
const WORKFLOW = 'test/workflow/**/*.test.ts';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The deployed functions run Node 22; the SDK's notice about Node 20 is noise here.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // Safety nets only: a test that reaches one has hung (test/support/safety-net.ts).
    testTimeout: SAFETY_NET_MS,
    hookTimeout: SAFETY_NET_MS,
    // Tests share one PostgreSQL server; files run in parallel on separate databases.
    pool: 'forks',
    // Every run orders each file's tests anew (the seed is printed): no test may depend on another
    // (docs/decisions/independent-tests.md). Files keep vitest's order, longest first.
    sequence: { shuffle: { files: false, tests: true } },
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit and local', include: ['test/**/*.test.ts'], exclude: [WORKFLOW] } },
      { extends: true, test: { name: 'workflow snapshot', include: [WORKFLOW], env: { ATOMIC_PUBLISH_ISOLATION: 'snapshot' } } },
      { extends: true, test: { name: 'workflow serializable', include: [WORKFLOW], env: { ATOMIC_PUBLISH_ISOLATION: 'serializable' } } },
    ],
  },
});

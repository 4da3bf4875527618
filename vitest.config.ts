import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { SAFETY_NET_MS } from './test/support/safety-net.ts';

// Every workflow test runs on both target kinds, each kind under its own
// default isolation level: naming a Serverless workgroup (what cdk.json
// deploys) under SNAPSHOT, and naming a provisioned cluster, whose catalog
// differs (the STL, STV, SVL and SVCS views: local/data-api/system-views.ts),
// under SERIALIZABLE, the default of clusters created before May 2024. A
// file where no other session's transaction overlaps a run's on its tables
// does the same under either level; it runs on the cluster under SNAPSHOT
// (test/support/warehouse.ts reads ATOMIC_PUBLISH_ISOLATION,
// test/support/target-kind.ts ATOMIC_PUBLISH_TARGET;
// docs/decisions/isolation-levels-in-tests.md).
const WORKFLOW = 'test/workflow/**/*.test.ts';
const OVERLAPPING = [
  'concurrency',
  'dependents',
  'fault-matrix',
  'lease',
  'merge',
  'migration',
  'out-of-band',
  'postgres-faults',
  'publish-groups',
  'publish-success',
  'publish-via-view',
  'readers',
  'reattach',
  'real-catalog',
  'real-catalog-group',
  'real-catalog-group-in-place',
  'real-catalog-in-place',
  'real-catalog-intervals',
  'rename-conflict',
  'replace-intervals',
  'rollback',
  'snapshot-readers',
  'waits',
].map((name) => `test/workflow/${name}.test.ts`);
for (const file of OVERLAPPING) {
  if (!existsSync(new URL(file, import.meta.url))) throw new Error(`vitest.config.ts: ${file} is named but does not exist`);
}
const cluster = (isolation: 'snapshot' | 'serializable') => ({ ATOMIC_PUBLISH_ISOLATION: isolation, ATOMIC_PUBLISH_TARGET: 'cluster' });

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
    // Three files at once on two cores: a workflow test's process waits on PostgreSQL and its endpoints about a third of the time.
    maxWorkers: 3,
    projects: [
      { extends: true, test: { name: 'unit and local', include: ['test/**/*.test.ts'], exclude: [WORKFLOW] } },
      {
        extends: true,
        test: { name: 'workflow workgroup', include: [WORKFLOW], env: { ATOMIC_PUBLISH_ISOLATION: 'snapshot', ATOMIC_PUBLISH_TARGET: 'workgroup' } },
      },
      { extends: true, test: { name: 'workflow cluster serializable', include: OVERLAPPING, env: cluster('serializable') } },
      { extends: true, test: { name: 'workflow cluster', include: [WORKFLOW], exclude: OVERLAPPING, env: cluster('snapshot') } },
    ],
  },
});

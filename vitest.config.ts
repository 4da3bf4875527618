import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { SAFETY_NET_MS } from './test/support/safety-net.ts';

// The workflow tests run under SNAPSHOT, Redshift's default; those where
// another session's transaction overlaps a run's on the tables it reads or
// writes (readers, writers, a holder of the live table, concurrent
// executions) run again under SERIALIZABLE
// (test/support/warehouse.ts reads ATOMIC_PUBLISH_ISOLATION;
// docs/decisions/isolation-levels-in-tests.md).
const WORKFLOW = 'test/workflow/**/*.test.ts';
const OVERLAPPING = [
  'concurrency', 'dependents', 'fault-matrix', 'lease', 'merge', 'migration', 'out-of-band',
  'postgres-faults', 'publish-groups', 'publish-success', 'publish-via-view', 'readers',
  'rename-conflict', 'replace-intervals', 'rollback', 'waits',
].map((name) => `test/workflow/${name}.test.ts`);
// The workflow tests' handlers name a Serverless workgroup, as cdk.json
// deploys; these run again naming a provisioned cluster, whose catalog
// differs (the STL, STV, SVL and SVCS views: local/data-api/system-views.ts;
// test/support/target-kind.ts reads ATOMIC_PUBLISH_TARGET). Among them they
// send every statement kind the handlers send: the swap and its waits, a
// view switch, a group publish, a rollback, replaced intervals, a merge, a
// migration (docs/decisions/catalog-of-the-target-kind.md).
const PROVISIONED = ['merge', 'migration', 'publish-groups', 'publish-success', 'publish-via-view', 'replace-intervals', 'rollback', 'waits'].map(
  (name) => `test/workflow/${name}.test.ts`,
);
for (const file of [...OVERLAPPING, ...PROVISIONED]) {
  if (!existsSync(new URL(file, import.meta.url))) throw new Error(`vitest.config.ts: ${file} is named but does not exist`);
}

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
      { extends: true, test: { name: 'workflow snapshot', include: [WORKFLOW], env: { ATOMIC_PUBLISH_ISOLATION: 'snapshot' } } },
      { extends: true, test: { name: 'workflow serializable', include: OVERLAPPING, env: { ATOMIC_PUBLISH_ISOLATION: 'serializable' } } },
      { extends: true, test: { name: 'workflow provisioned', include: PROVISIONED, env: { ATOMIC_PUBLISH_ISOLATION: 'snapshot', ATOMIC_PUBLISH_TARGET: 'cluster' } } },
    ],
  },
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pipelines } from '../../pipelines/index.ts';
import { contextDefaults, setupSqlFor } from '../../scripts/setup-sql.ts';

const dir = mkdtempSync(join(tmpdir(), 'setup-sql-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** contextDefaults of a cdk.json with this context. */
function defaultsOf(context: Record<string, unknown>) {
  const file = join(dir, `cdk-${Object.keys(context).join('-')}.json`);
  writeFileSync(file, JSON.stringify({ app: 'x', context }));
  return contextDefaults(file);
}

describe('npm run setup-sql', () => {
  it("prints the setup of a pipeline for a user, in the deployment's database by default", () => {
    const sql = setupSqlFor(['--pipeline', 'sales_order_lines', '--user', 'IAMR:atomic-publish-steps'], pipelines, { database: 'dev' });
    expect(sql).toContain('GRANT CREATE ON DATABASE "dev" TO "IAMR:atomic-publish-steps";');
    expect(sql).toContain('ALTER TABLE "analytics"."sales_order_lines" OWNER TO "IAMR:atomic-publish-steps";');
    expect(setupSqlFor(['--pipeline', 'sales_order_lines', '--user', 'etl', '--database', 'warehouse'], pipelines, { database: 'dev' })).toContain(
      'ON DATABASE "warehouse" TO "etl"',
    );
  });

  it("defaults the user to the deployment's: this project's cdk.json is a workgroup with IAM, so IAMR:<the handlers' role>", () => {
    expect(contextDefaults()).toEqual({ database: 'dev', user: 'IAMR:atomicpublish-handlers', monitorUser: 'IAMR:atomicpublish-handlers-monitor' });
    expect(setupSqlFor(['--pipeline', 'sales_order_lines'])).toContain('OWNER TO "IAMR:atomicpublish-handlers";');
  });

  it("prints the freshness monitor's grants with --monitor (reads, and the one column it marks), for its own user by default", () => {
    const sql = setupSqlFor(['--pipeline', 'sales_order_lines', '--monitor']);
    const statements = sql.split('\n').filter((line) => line !== '' && !line.startsWith('--'));
    expect(statements).toEqual([
      'CREATE USER "IAMR:atomicpublish-handlers-monitor" PASSWORD DISABLE;',
      'GRANT USAGE ON SCHEMA "analytics" TO "IAMR:atomicpublish-handlers-monitor";',
      'GRANT SELECT ON TABLE "analytics"."sales_order_lines" TO "IAMR:atomicpublish-handlers-monitor";',
      'GRANT USAGE ON SCHEMA "atomic_publish" TO "IAMR:atomicpublish-handlers-monitor";',
      'GRANT SELECT ON TABLE "atomic_publish"."publications" TO "IAMR:atomicpublish-handlers-monitor";',
      'GRANT UPDATE ("event_sent_at") ON TABLE "atomic_publish"."publications" TO "IAMR:atomicpublish-handlers-monitor";',
      // The pipeline is a swap, watched between runs: the live watch reads the lease.
      'GRANT SELECT ON TABLE "atomic_publish"."pipeline_leases" TO "IAMR:atomicpublish-handlers-monitor";',
    ]);
    expect(sql).toMatch(/^-- atomic-publish freshness monitor setup for pipeline sales_order_lines/);
    expect(setupSqlFor(['--pipeline', 'sales_order_lines', '--monitor', '--user', 'reader'], pipelines, { database: 'dev' })).toContain('TO "reader";');
  });

  it('derives the user from the context: a role name, a DbUser, or nothing when the user is inside a secret', () => {
    expect(defaultsOf({ warehouse: { workgroupName: 'wg', database: 'db1' }, handlerRoleName: 'etl-steps' })).toEqual({
      database: 'db1',
      user: 'IAMR:etl-steps',
      monitorUser: 'IAMR:etl-steps-monitor',
    });
    expect(defaultsOf({ warehouse: { clusterIdentifier: 'c1', dbUser: 'loader', database: 'db2' } })).toEqual({
      database: 'db2',
      user: 'loader',
      monitorUser: 'loader',
    });
    const secretArn = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:warehouse-AbCdEf';
    expect(defaultsOf({ warehouse: { clusterIdentifier: 'c1', database: 'db3' }, secretArn })).toEqual({ database: 'db3' });
    expect(() => setupSqlFor(['--pipeline', 'sales_order_lines'], pipelines, { database: 'db3' })).toThrow('--user is required');
  });

  it.each([
    [['--pipeline', 'nope', '--user', 'etl'], 'unknown pipeline "nope"; known pipelines: sales_order_lines'],
    [['--pipeline', 'sales_order_lines', '--user', 'IAMR:bad"name'], '--user "IAMR:bad\\"name" is not allowed'],
    [['--user', 'etl'], "required option '--pipeline <name>' not specified"],
    [['--pipeline', 'sales_order_lines', '--user', 'etl', '--database', 'Dev'], '--database "Dev" is not allowed'],
  ])('refuses %j with a clear error', (args, message) => {
    expect(() => setupSqlFor(args, pipelines, { database: 'dev' })).toThrow(message);
  });

  it('asks for --database when the deployment names none', () => {
    expect(() => setupSqlFor(['--pipeline', 'sales_order_lines', '--user', 'etl'], pipelines, {})).toThrow('--database is required');
  });
});

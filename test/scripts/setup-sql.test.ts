import { describe, expect, it } from 'vitest';
import { pipelines } from '../../pipelines/index.ts';
import { contextDatabase, setupSqlFor } from '../../scripts/setup-sql.ts';

describe('npm run setup-sql', () => {
  it("prints the setup of a pipeline for a user, in the deployment's database by default", () => {
    expect(contextDatabase()).toBe('dev');
    const sql = setupSqlFor(['--pipeline', 'sales_order_lines', '--user', 'IAMR:atomic-publish-steps'], pipelines, 'dev');
    expect(sql).toContain('GRANT CREATE ON DATABASE "dev" TO "IAMR:atomic-publish-steps";');
    expect(sql).toContain('ALTER TABLE "analytics"."sales_order_lines" OWNER TO "IAMR:atomic-publish-steps";');
    expect(setupSqlFor(['--pipeline', 'sales_order_lines', '--user', 'etl', '--database', 'warehouse'], pipelines, 'dev')).toContain('ON DATABASE "warehouse" TO "etl"');
  });

  it.each([
    [['--pipeline', 'nope', '--user', 'etl'], 'unknown pipeline "nope"; known pipelines: sales_order_lines'],
    [['--pipeline', 'sales_order_lines', '--user', 'IAMR:bad"name'], '--user "IAMR:bad\\"name" is not allowed'],
    [['--pipeline', 'sales_order_lines'], "required option '--user <user>' not specified"],
    [['--pipeline', 'sales_order_lines', '--user', 'etl', '--database', 'Dev'], '--database "Dev" is not allowed'],
  ])('refuses %j with a clear error', (args, message) => {
    expect(() => setupSqlFor(args, pipelines, 'dev')).toThrow(message);
  });

  it('asks for --database when the deployment names none', () => {
    expect(() => setupSqlFor(['--pipeline', 'sales_order_lines', '--user', 'etl'], pipelines, null)).toThrow('--database is required');
  });
});

import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../domain/errors.ts';
import { checkSql } from '../../../../domain/redshift-sql/check.ts';
import { SqlSyntaxError } from '../../../../domain/redshift-sql/parser.ts';
import { monitorSetupStatements, setupScript, setupStatements } from '../../../../domain/setup/sql/setup.ts';
import { pipelines } from '../../../../pipelines/index.ts';
import { errorOf, pipelineWith } from '../../fixtures.ts';

const pipeline = pipelineWith({});

describe('setupStatements', () => {
  it('grants database CREATE, USAGE and CREATE on the target schema, hands over the live table, lets the user see every grant, grants USAGE and SELECT on the source', () => {
    expect(setupStatements(pipeline, { database: 'dev', user: 'IAMR:atomic-publish-steps' })).toEqual([
      'GRANT CREATE ON DATABASE "dev" TO "IAMR:atomic-publish-steps"',
      'GRANT USAGE ON SCHEMA "analytics" TO "IAMR:atomic-publish-steps"',
      'GRANT CREATE ON SCHEMA "analytics" TO "IAMR:atomic-publish-steps"',
      'ALTER TABLE "analytics"."orders" OWNER TO "IAMR:atomic-publish-steps"',
      'ALTER USER "IAMR:atomic-publish-steps" SYSLOG ACCESS UNRESTRICTED',
      'GRANT USAGE ON SCHEMA "raw" TO "IAMR:atomic-publish-steps"',
      'GRANT SELECT ON TABLE "raw"."order_events" TO "IAMR:atomic-publish-steps"',
    ]);
  });

  it('refuses a user or database that is not a name before generating anything', () => {
    expect(errorOf(() => setupStatements(pipeline, { database: 'dev', user: 'x" TO PUBLIC; --' }))).toBeInstanceOf(ValidationError);
    expect(errorOf(() => setupStatements(pipeline, { database: 'dev"; DROP', user: 'etl' }))).toBeInstanceOf(ValidationError);
  });
});

describe('setupScript', () => {
  it('says before each statement what it grants and why, each statement ending with a semicolon', () => {
    const script = setupScript(pipeline, { database: 'dev', user: 'etl' });
    expect(script).toContain(
      '-- ownership of table analytics.orders: to rename it in the publish and drop its old versions\nALTER TABLE "analytics"."orders" OWNER TO "etl";\n',
    );
    expect(script.split('\n').filter((line) => line !== '' && !line.startsWith('--'))).toHaveLength(8);
    expect(script).toContain('\nCREATE USER "etl" PASSWORD DISABLE;\n');
    expect(script).not.toContain('sys:secadmin');
  });

  it('grants sys:secadmin only with securityPolicies', () => {
    const script = setupScript(pipeline, { database: 'dev', user: 'etl' }, { securityPolicies: true });
    expect(script).toContain('\nGRANT ROLE "sys:secadmin" TO "etl";\n');
  });
});

describe('the setup SQL against the Redshift gate', () => {
  it('sends nothing the local engine refuses as not Redshift; the one statement PostgreSQL cannot parse is the SYSLOG ACCESS of ALTER USER', () => {
    const statements = pipelines.flatMap((p) => [
      ...setupStatements(p, { database: 'dev', user: 'IAMR:steps' }),
      ...monitorSetupStatements(p, { database: 'dev', user: 'IAMR:steps-monitor' }),
    ]);
    const unparsed: string[] = [];
    for (const sql of statements) {
      try {
        expect(checkSql(sql), sql).toEqual([]);
      } catch (error) {
        if (!(error instanceof SqlSyntaxError)) throw error;
        unparsed.push(sql);
      }
    }
    // Redshift's own form (https://docs.aws.amazon.com/redshift/latest/dg/r_ALTER_USER.html); locally it is a grant of pg_read_all_stats.
    expect(new Set(unparsed)).toEqual(new Set(['ALTER USER "IAMR:steps" SYSLOG ACCESS UNRESTRICTED']));
  });
});

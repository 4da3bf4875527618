// The setup SQL as `npm run setup-sql` prints it, run as an operator would: one
// statement at a time through the Data API, as the superuser, on a database where
// the handlers' user does not exist yet. It creates the user (PASSWORD DISABLE),
// grants it what the pipeline needs and hands it the live table; the pipeline
// then publishes as that user. Run again, only CREATE USER fails ("already exists").
// Why: docs/decisions/database-user-created-by-setup.md
import { randomBytes } from 'node:crypto';
import { type DescribeStatementResponse, ExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { WarehouseEnv } from '../../domain/warehouse-target.ts';
import { localDefaultUserTarget } from '../../local/aws-clients.ts';
import { withClient } from '../../local/pg-clients.ts';
import { setupSqlFor } from '../../scripts/setup-sql.ts';
import { suiteTargetKind } from '../support/target-kind.ts';
import { type Endpoint, untilEnded } from '../support/warehouse.ts';
import { caughtError, caughtMessage, inputFor, LIVE, PIPELINE, useWorkflow, type Workflow } from '../support/workflow.ts';

/** The statements of a printed script, in order, each as printed (one a line, with its semicolon), without the comments. */
function scriptStatements(script: string): string[] {
  return script.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('--'));
}

interface Outcome {
  sql: string;
  status: string | undefined;
  error?: string;
}

const VARIANTS: { name: string; args: string[] }[] = [
  { name: 'the setup', args: [] },
  { name: 'the setup with --security-policies', args: ['--security-policies'] },
];

for (const variant of VARIANTS) {
  describe(`${variant.name}, printed and run statement by statement on a fresh database`, () => {
    // A name no earlier run has left on the shared server: roles are the server's, not a database's. On Serverless the
    // role's identity; on a cluster a DbUser, which takes no colon (https://docs.aws.amazon.com/redshift/latest/APIReference/API_GetClusterCredentials.html).
    const suffix = randomBytes(4).toString('hex');
    const user = suiteTargetKind() === 'cluster' ? `atomic_publish_fresh_${suffix}` : `IAMR:atomic-publish-fresh-${suffix}`;
    let wf: Workflow;
    let admin: Endpoint;
    let statements: string[];
    let existedBefore: boolean;
    let first: Outcome[];

    /** Runs each statement as the superuser through the Data API, in order, on the suite's kind of target (workgroup or cluster). */
    async function runScript(): Promise<Outcome[]> {
      const target = localDefaultUserTarget(wf.wh.pg.database, suiteTargetKind());
      const outcomes: Outcome[] = [];
      for (const sql of statements) {
        const { Id } = await admin.client.send(
          new ExecuteStatementCommand({
            Database: target.database,
            ...(target.workgroupName !== undefined ? { WorkgroupName: target.workgroupName } : {}),
            ...(target.clusterIdentifier !== undefined ? { ClusterIdentifier: target.clusterIdentifier } : {}),
            ...(target.secretArn !== undefined ? { SecretArn: target.secretArn } : {}),
            Sql: sql,
          }),
        );
        const done: DescribeStatementResponse = await untilEnded(admin.client, Id!);
        outcomes.push({ sql, status: done.Status, ...(done.Error !== undefined ? { error: done.Error } : {}) });
      }
      return outcomes;
    }

    const roleExists = async () => (await wf.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_roles WHERE rolname = $1', [user]))[0]!.n === 1;

    beforeAll(async () => {
      // A user whose password is disabled logs on with IAM credentials only: on Serverless as the role's identity (the
      // workgroup's default user here), on a provisioned cluster through GetClusterCredentials, the handlers' DbUser.
      // (On a cluster the endpoint's default user stays the usual one: the owners asserted below show whom the handlers ran as.)
      const handlers = suiteTargetKind() === 'cluster' ? { env: { [WarehouseEnv.SECRET_ARN]: '', [WarehouseEnv.DB_USER]: user } } : { handlersUser: user };
      wf = await useWorkflow('wf_fresh_setup', handlers);
      await wf.sample({ rowsPerDay: 20, sourceDays: 8, liveDays: 4 }, { setup: false });
      // The operator's session: the superuser's (the admin's credentials, the query editor), on the same kind of target.
      admin = await wf.wh.otherEndpoint({});
      existedBefore = await roleExists();
      statements = scriptStatements(setupSqlFor(['--pipeline', PIPELINE.name, '--user', user, '--database', wf.wh.pg.database, ...variant.args]));
      first = await runScript();
    });
    afterAll(async () => {
      const server = wf?.wh.pg;
      await wf?.close();
      if (server) await withClient({ ...server, database: 'postgres' }, (client) => client.query(`DROP ROLE IF EXISTS ${quoteUser(user)}`));
    });

    it('creates the user first, then grants, each statement succeeding in the printed order', () => {
      expect(existedBefore, `${user} before the setup`).toBe(false);
      expect(statements[0]).toBe(`CREATE USER ${quoteUser(user)} PASSWORD DISABLE;`);
      if (variant.args.includes('--security-policies')) expect(statements[1]).toBe(`GRANT ROLE "sys:secadmin" TO ${quoteUser(user)};`);
      expect(statements).toContain(`ALTER USER ${quoteUser(user)} SYSLOG ACCESS UNRESTRICTED;`);
      expect(first).toEqual(statements.map((sql) => ({ sql, status: 'FINISHED' })));
    });

    it('gives the user exactly what the script says: no password of its own, not a superuser, syslog access, sys:secadmin only when asked', async () => {
      const [role] = await wf.query<{ super: boolean; login: boolean; stats: boolean; secadmin: boolean }>(
        `SELECT rolsuper AS super, rolcanlogin AS login, pg_has_role(rolname, 'pg_read_all_stats', 'MEMBER') AS stats,
                pg_has_role(rolname, 'sys:secadmin', 'MEMBER') AS secadmin
           FROM pg_roles WHERE rolname = $1`,
        [user],
      );
      expect(role).toEqual({ super: false, login: true, stats: true, secadmin: variant.args.includes('--security-policies') });
    });

    it('is enough: the pipeline, run as the new user, publishes, and the user owns the manifest and the new live table', async () => {
      const result = await wf.run(inputFor(6), 'fresh-setup');
      expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
      const owners = await wf.query<{ name: string; owner: string }>(
        `SELECT 'schema atomic_publish' AS name, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = 'atomic_publish'
         UNION ALL SELECT 'live', tableowner FROM pg_tables WHERE schemaname = 'analytics' AND tablename = 'sales_order_lines'`,
      );
      expect(owners).toEqual([
        { name: 'schema atomic_publish', owner: user },
        { name: 'live', owner: user },
      ]);
    });

    it('is harmless run again: only its CREATE USER fails, with "already exists"', async () => {
      const again = await runScript();
      expect(again[0]).toMatchObject({ sql: statements[0], status: 'FAILED', error: expect.stringMatching(/already exists/) });
      expect(again.slice(1)).toEqual(statements.slice(1).map((sql) => ({ sql, status: 'FINISHED' })));
    });
  });
}

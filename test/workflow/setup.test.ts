// The documented setup is what the handlers need: running as LOCAL_PIPELINE_USER,
// with each grant of the setup SQL taken away in turn, the run fails in Plan with
// MissingPrivilegeError naming privilege, object and user, writing nothing; the
// setup SQL run again restores it and a run publishes.
// Why: docs/decisions/privileges-and-the-database-user.md
import { beforeAll, describe, expect, it } from 'vitest';
import { qualifiedName, quoteIdent, quoteUser } from '../../domain/identifiers.ts';
import { describeRequirement, type Requirement, requiredPrivileges } from '../../domain/setup/privileges.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER, localUserPassword } from '../../local/database-users.ts';
import { withClient } from '../../local/pg-clients.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  PIPELINE,
  useFork,
  useWorkflowFixture,
  visited,
  type Workflow,
} from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_setup', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 8, liveDays: 4 });
  return { live: await wf.fingerprint(LIVE) };
});
let live: Fingerprint;
beforeAll(() => {
  ({ live } = fixture.arranged);
});

/** The statement that takes one requirement of the setup away again. */
function undo(wf: Workflow, r: Requirement, database: string): string {
  const user = quoteUser(LOCAL_PIPELINE_USER);
  switch (r.kind) {
    case 'database':
      return `REVOKE CREATE ON DATABASE ${quoteIdent(database)} FROM ${user}`;
    case 'schema':
      return `REVOKE ${r.privilege} ON SCHEMA ${quoteIdent(r.schema)} FROM ${user}`;
    case 'owner':
      return `ALTER TABLE ${qualifiedName(r.schema, r.table)} OWNER TO ${quoteIdent(wf.wh.pg.user)}`;
    case 'table':
      return `REVOKE SELECT ON TABLE ${qualifiedName(r.schema, r.table)} FROM ${user}`;
    case 'column':
      return `REVOKE ${r.privilege} (${quoteIdent(r.column)}) ON TABLE ${qualifiedName(r.schema, r.table)} FROM ${user}`;
    case 'syslog':
      return `REVOKE pg_read_all_stats FROM ${user}`;
  }
}

async function expectNothingWritten(wf: Workflow): Promise<void> {
  expect(await wf.schemaExists('atomic_publish'), 'manifest schema atomic_publish').toBe(false);
  expect(await wf.derivedTables(), 'staging or old version tables').toEqual([]);
  expect(await wf.fingerprint(LIVE)).toEqual(live);
}

function expectFailedInPlan(result: ExecutionResult, error: string): void {
  expect(result.status).toBe('FAILED');
  expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
  expect(caughtError(result)?.Error).toBe(error);
  expect(result.alerts).toHaveLength(1);
  expect(result.alerts[0]!.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything.');
}

describe('the setup SQL of a pipeline', () => {
  const required = requiredPrivileges(PIPELINE);

  it('lists database CREATE, USAGE and CREATE on the target schema, the live table, USAGE and SELECT for the source', () => {
    expect(required.map(describeRequirement)).toEqual([
      'CREATE on the database',
      'USAGE on schema analytics',
      'CREATE on schema analytics',
      'ownership of table analytics.sales_order_lines',
      'SYSLOG ACCESS UNRESTRICTED',
      'USAGE on schema source',
      'SELECT on source.sales_order_lines',
    ]);
  });

  // SYSLOG ACCESS UNRESTRICTED is not judged by Plan: only a superuser can
  // read it on Redshift (SVL_USER_INFO). What it is for, seeing other
  // users' grants, is shown below and in dependents.test.ts.
  describe('SYSLOG ACCESS UNRESTRICTED', () => {
    const wf = useFork(fixture);
    it('grants SYSLOG ACCESS UNRESTRICTED (locally pg_read_all_stats): the pipeline user sees grants made to other users, a regular user does not', async () => {
      // Roles are the server's, shared by every test file: the grant is not taken away here, another user stands for its absence.
      const restricted = 'syslog_restricted';
      await ensureLocalUser(wf.wh.pg, restricted);
      await wf.query(`GRANT SELECT ON ${LIVE} TO pg_monitor`);
      await wf.wh.run('SELECT 1'); // the endpoint installs its system views in a database it serves
      const seen = async (user: string) =>
        withClient({ ...wf.wh.pg, user, password: localUserPassword(wf.wh.pg, user) }, async (client) =>
          (
            await client.query<{ identity_name: string }>(
              `SELECT identity_name FROM local_redshift.svv_relation_privileges WHERE namespace_name = 'analytics' AND relation_name = 'sales_order_lines'`,
            )
          ).rows.map((r) => r.identity_name),
        );
      expect(await seen(LOCAL_PIPELINE_USER)).toContain('pg_monitor');
      expect(await seen(restricted)).not.toContain('pg_monitor');
    });
  });

  for (const [index, requirement] of required.entries()) {
    if (requirement.kind === 'syslog') continue;
    describe(`without ${describeRequirement(requirement)}`, () => {
      const wf = useFork(fixture);
      it('Plan fails naming it and the user, and writes nothing', async () => {
        await wf.query(undo(wf, requirement, wf.wh.pg.database));
        const result = await wf.run(inputFor(4), `setup-missing-${index}`);
        expectFailedInPlan(result, 'MissingPrivilegeError');
        const message = caughtMessage(result);
        expect(message).toContain(`pipeline sales_order_lines: database user "${LOCAL_PIPELINE_USER}" lacks ${describeRequirement(requirement)}`);
        if (requirement.kind === 'owner') expect(message).toContain(`(owned by ${wf.wh.pg.user})`);
        expect(message).toContain(`npm run setup-sql -- --pipeline sales_order_lines --user '${LOCAL_PIPELINE_USER}'`);
        await expectNothingWritten(wf);
      });
    });
  }

  describe('in full', () => {
    const wf = useFork(fixture);
    it('is enough: with all of it the run publishes, as the pipeline user, who then owns the manifest and the new live table', async () => {
      const result = await wf.run(inputFor(6), 'setup-complete');
      expect(result.status).toBe('SUCCEEDED');
      const owners = await wf.query<{ name: string; owner: string }>(
        `SELECT 'schema atomic_publish' AS name, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = 'atomic_publish'
         UNION ALL SELECT 'live', tableowner FROM pg_tables WHERE schemaname = 'analytics' AND tablename = 'sales_order_lines'`,
      );
      expect(owners).toEqual([
        { name: 'schema atomic_publish', owner: LOCAL_PIPELINE_USER },
        { name: 'live', owner: LOCAL_PIPELINE_USER },
      ]);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
    });
  });

  describe('run again after its grants were taken away', () => {
    const wf = useFork(fixture);
    it('restores exactly what was taken: a run then publishes', async () => {
      for (const requirement of required) if (requirement.kind !== 'syslog') await wf.query(undo(wf, requirement, wf.wh.pg.database));
      // The setup is safe to run again.
      await wf.withClient((client) => applyPipelineSetup(client, PIPELINE));
      const result = await wf.run(inputFor(6), 'setup-restored');
      expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
    });
  });
});

describe('source column types', () => {
  const wf = useFork(fixture);
  it('refuses a source column whose type does not fit the live column (text for an integer), naming the pipeline, field and column, before any write', async () => {
    await wf.query(`ALTER TABLE source.sales_order_lines ALTER COLUMN customer_id TYPE varchar(12)`);
    const result = await wf.run(inputFor(4), 'setup-types');
    expectFailedInPlan(result, 'ValidationError');
    expect(caughtMessage(result)).toBe(
      'pipeline sales_order_lines: field sourceSql produces values that do not fit the live table: ' +
        'column customer_id is varchar (string) where analytics.sales_order_lines.customer_id is integer (integer). ' +
        "Cast them in the source query to the live column's type",
    );
    await expectNothingWritten(wf);
  });
});

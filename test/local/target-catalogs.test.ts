// The catalog of the target kind, through the real SDK client: a
// WorkgroupName request is served as Redshift Serverless, which has no
// STL, STV, SVL or SVCS views; a ClusterIdentifier request as a provisioned
// cluster, which has them. The SYS and SVV views the project reads exist
// on both (https://docs.aws.amazon.com/redshift/latest/dg/c_intro_system_views.html),
// and so the swap's wait for other transactions runs on both.
import { ExecuteStatementCommand, GetStatementResultCommand } from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTransactions } from '../../domain/publish/sql/swap.ts';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { LOCAL_SECRET_ARN, LOCAL_WORKGROUP, localDefaultUserTarget } from '../../local/aws-clients.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER, localSetupStatement } from '../../local/database-users.ts';
import { newClient } from '../../local/pg-clients.ts';
import { untilEnded, useWarehouse, type Warehouse } from '../support/warehouse.ts';

let wh: Warehouse;

beforeAll(async () => {
  wh = await useWarehouse('target_catalogs', { defaultUser: LOCAL_PIPELINE_USER });
  await ensureLocalUser(wh.pg);
  // What the setup SQL's ALTER USER ... SYSLOG ACCESS UNRESTRICTED does locally.
  await wh.query(localSetupStatement(`ALTER USER "${LOCAL_PIPELINE_USER}" SYSLOG ACCESS UNRESTRICTED`));
  await wh.query('CREATE TABLE public.held (id int)');
});
afterAll(() => wh?.close());

const KINDS = {
  workgroup: { WorkgroupName: LOCAL_WORKGROUP },
  cluster: { ClusterIdentifier: LOCAL_WORKGROUP, SecretArn: LOCAL_SECRET_ARN },
} as const;

/** ExecuteStatement on a target of this kind, to its end: the error, or the number of records. */
async function run(kind: keyof typeof KINDS, sql: string): Promise<{ error?: string; records?: number }> {
  const { Id } = await wh.client.send(new ExecuteStatementCommand({ Database: wh.pg.database, ...KINDS[kind], Sql: sql }));
  const done = await untilEnded(wh.client, Id!);
  if (done.Status !== 'FINISHED') return { error: done.Error ?? done.Status };
  const result = await wh.client.send(new GetStatementResultCommand({ Id }));
  return { records: result.Records?.length ?? 0 };
}

describe('a workgroup (Serverless)', () => {
  it('has no STV_RECENTS: naming it fails as on Redshift', async () => {
    expect(await run('workgroup', 'SELECT * FROM stv_recents')).toEqual({ error: 'ERROR: relation "stv_recents" does not exist' });
  });

  it('has SYS_QUERY_HISTORY and the SVV views, with the columns the project reads', async () => {
    for (const sql of [
      'SELECT user_id, query_id, query_label, transaction_id, session_id, database_name, status, start_time, end_time, elapsed_time, query_text FROM sys_query_history',
      'SELECT txn_owner, txn_db, xid, pid, txn_start, lock_mode, lockable_object_type, relation, granted FROM svv_transactions',
      'SELECT namespace_name, relation_name, privilege_type, identity_name, identity_type FROM svv_relation_privileges',
      'SELECT schema_name, table_name, column_name, sortkey FROM svv_redshift_columns',
    ]) {
      expect(await run('workgroup', sql), sql).toEqual({ records: expect.any(Number) });
    }
  });
});

describe('a cluster (provisioned)', () => {
  it('has STV_RECENTS and SYS_QUERY_HISTORY', async () => {
    expect(await run('cluster', 'SELECT userid, status, starttime, duration, user_name, db_name, query, pid FROM stv_recents')).toEqual({
      records: expect.any(Number),
    });
    expect(await run('cluster', 'SELECT session_id, status, query_text FROM sys_query_history')).toEqual({ records: expect.any(Number) });
  });
});

describe("the swap's wait for other transactions (openTransactions)", () => {
  it.each(['workgroup', 'cluster'] as const)('names the holder of a lock and the query it runs on a %s', async (kind) => {
    const holder = newClient(wh.pg);
    await holder.connect();
    // The holder's query runs until the gate is released: it waits for the gate's lock.
    const gate = await wh.gate();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE public.held');
      const pid = (holder as unknown as { processID: number }).processID;
      const running = holder.query(gate.sql);
      expect(await gate.waiting()).toContain(pid);
      const warehouse = new DataApiWarehouse(wh.client, localDefaultUserTarget(wh.pg.database, kind), DEFAULT_POLL);
      const rows = await warehouse.query(openTransactions({ lockHolders: [{ schema: 'public', table: 'held' }] }), 'lock-holders');
      expect(rows).toEqual([expect.objectContaining({ pid, txn_owner: wh.pg.user, query: gate.sql })]);
      await gate.release();
      await running;
    } finally {
      await gate.release();
      await holder.end().catch(() => undefined);
    }
  });
});

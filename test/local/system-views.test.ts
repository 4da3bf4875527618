// Who the local endpoint runs a statement as, and Redshift's system views
// over PostgreSQL's catalog, through the real SDK client: the same SQL text
// as on Redshift, each view with Redshift's columns, its rows filtered as
// Redshift shows them to a regular user.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { localTarget } from '../../local/aws-clients.ts';
import { PROVISIONED_VIEWS_SCHEMA, SYSTEM_VIEWS_SCHEMA } from '../../local/data-api/system-views.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER, localSetupStatement, localUserPassword } from '../../local/database-users.ts';
import { newClient, withClient } from '../../local/pg-clients.ts';
import { until } from '../support/until.ts';
import { useWarehouse, type Warehouse } from '../support/warehouse.ts';

let wh: Warehouse;
/** Workgroup requests: the endpoint's default user, the least-privilege role. */
let asPipelineUser: DataApiWarehouse;
/** A regular user without SYSLOG ACCESS UNRESTRICTED. */
const RESTRICTED_USER = 'syslog_restricted';
/** Cluster requests with DbUser: the superuser. */
let asSuperuser: DataApiWarehouse;

beforeAll(async () => {
  wh = await useWarehouse('system_views', { defaultUser: LOCAL_PIPELINE_USER });
  await ensureLocalUser(wh.pg);
  await ensureLocalUser(wh.pg, RESTRICTED_USER);
  // What the setup SQL's ALTER USER ... SYSLOG ACCESS UNRESTRICTED does locally.
  await wh.query(localSetupStatement(`ALTER USER "${LOCAL_PIPELINE_USER}" SYSLOG ACCESS UNRESTRICTED`));
  asPipelineUser = new DataApiWarehouse(wh.client, localTarget(wh.pg.database), DEFAULT_POLL);
  asSuperuser = new DataApiWarehouse(wh.client, localTarget(wh.pg.database, wh.pg.user), DEFAULT_POLL);
  await wh.query('CREATE TABLE public.facts (id int, label varchar(30))');
  await wh.query(`INSERT INTO public.facts SELECT n, 'row ' || n FROM generate_series(1, 25) AS n`);
  await wh.query('ANALYZE public.facts');
});
afterAll(() => wh?.close());

describe('the database user of a request', () => {
  it("is a cluster request's DbUser, and the endpoint's default user for a workgroup or a secret", async () => {
    const user = { sql: 'SELECT current_user AS name' };
    expect(await asSuperuser.query(user, 'cluster')).toEqual([{ name: wh.pg.user }]);
    expect(await asPipelineUser.query(user, 'workgroup')).toEqual([{ name: LOCAL_PIPELINE_USER }]);
    const secret = new DataApiWarehouse(
      wh.client,
      { database: wh.pg.database, clusterIdentifier: 'local', secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:x' },
      DEFAULT_POLL,
    );
    expect(await secret.query(user, 'secret')).toEqual([{ name: LOCAL_PIPELINE_USER }]);
  });

  it('holds no privilege it was not granted: reading a table fails as on Redshift', async () => {
    await expect(asPipelineUser.query({ sql: 'SELECT count(*) FROM public.facts' }, 'denied')).rejects.toThrow(/permission denied for table facts/);
  });
});

describe('svv_relation_privileges', () => {
  const privileges = {
    sql: `SELECT namespace_name, relation_name, privilege_type, identity_name, identity_type, admin_option FROM svv_relation_privileges WHERE relation_name = 'facts'`,
  };

  it('lists a grant once it is made, to the grantee too', async () => {
    expect(await asSuperuser.query(privileges, 'before')).toEqual([]);
    await wh.query(`GRANT SELECT ON public.facts TO "${LOCAL_PIPELINE_USER}"`);
    try {
      const row = {
        namespace_name: 'public',
        relation_name: 'facts',
        privilege_type: 'SELECT',
        identity_name: LOCAL_PIPELINE_USER,
        identity_type: 'user',
        admin_option: false,
      };
      expect(await asSuperuser.query(privileges, 'superuser')).toEqual([row]);
      expect(await asPipelineUser.query(privileges, 'grantee')).toEqual([row]);
    } finally {
      await wh.query(`REVOKE SELECT ON public.facts FROM "${LOCAL_PIPELINE_USER}"`);
    }
  });
});

describe('svv_transactions, stv_recents and sys_query_history', () => {
  it('show an open transaction holding a lock, and a query waiting for it (queued), to a superuser only', async () => {
    const holder = newClient(wh.pg);
    const waiter = newClient(wh.pg);
    await holder.connect();
    await waiter.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`INSERT INTO public.facts VALUES (100, 'held')`);
      await holder.query('LOCK TABLE public.facts IN ACCESS EXCLUSIVE MODE');
      const holderPid = (holder as unknown as { processID: number }).processID;
      const waiterPid = (waiter as unknown as { processID: number }).processID;
      const xid = Number((await holder.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]!.xid);
      const oid = Number((await wh.query<{ oid: number }>(`SELECT 'public.facts'::regclass::oid::int AS oid`))[0]!.oid);
      const reading = waiter.query('SELECT count(*) FROM public.facts WHERE label = $1', ['waiting for the lock']);
      await until(
        async () => (await wh.query(`SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted`, [waiterPid])).length > 0,
        'the reader waiting for the lock',
      );

      const transactions = await asSuperuser.query(
        {
          sql: `SELECT txn_owner, txn_db, xid, pid, lock_mode, lockable_object_type, relation, granted FROM svv_transactions WHERE pid IN (${holderPid}, ${waiterPid}) ORDER BY pid = ${waiterPid}, lockable_object_type, lock_mode`,
        },
        'transactions',
      );
      const common = { txn_owner: wh.pg.user, txn_db: wh.pg.database };
      expect(transactions).toEqual(
        expect.arrayContaining([
          { ...common, xid, pid: holderPid, lock_mode: 'AccessExclusiveLock', lockable_object_type: 'relation', relation: oid, granted: true },
          { ...common, xid, pid: holderPid, lock_mode: 'ExclusiveLock', lockable_object_type: 'transactionid', relation: null, granted: true },
          expect.objectContaining({ ...common, pid: waiterPid, lock_mode: 'AccessShareLock', lockable_object_type: 'relation', relation: oid, granted: false }),
        ]),
      );

      // STV_RECENTS: a cluster request's (asSuperuser names a cluster); a workgroup has none (target-catalogs.test.ts).
      const recents = await asSuperuser.query({ sql: `SELECT status, user_name, db_name, query, pid FROM stv_recents WHERE pid = ${waiterPid}` }, 'recents');
      expect(recents).toHaveLength(1);
      expect(recents[0]).toMatchObject({ status: 'Running'.padEnd(20), user_name: wh.pg.user.padEnd(50), pid: waiterPid });
      expect(String(recents[0]!.query)).toMatch(/^SELECT count\(\*\) FROM public\.facts WHERE label = \$1 +$/);

      // A regular user sees only its own rows; with SYSLOG ACCESS UNRESTRICTED
      // (locally pg_read_all_stats), which the setup SQL gives the pipeline
      // user, every row.
      const seen = (user: string, view: string) =>
        withClient({ ...wh.pg, user, password: localUserPassword(wh.pg, user) }, async (client) =>
          Number(
            (
              await client.query(
                `SELECT count(*) AS n FROM ${view === 'stv_recents' ? PROVISIONED_VIEWS_SCHEMA : SYSTEM_VIEWS_SCHEMA}.${view} WHERE pid IN (${holderPid}, ${waiterPid})`,
              )
            ).rows[0].n,
          ),
        );
      expect(await seen(RESTRICTED_USER, 'svv_transactions')).toBe(0);
      expect(await seen(RESTRICTED_USER, 'stv_recents')).toBe(0);
      expect(await seen(LOCAL_PIPELINE_USER, 'svv_transactions')).toBeGreaterThanOrEqual(3);
      expect(await seen(LOCAL_PIPELINE_USER, 'stv_recents')).toBe(1);

      // SYS_QUERY_HISTORY: the waiting query is queued (a lock wait stands in for a WLM queue).
      const history = await asSuperuser.query({ sql: `SELECT status, query_text FROM sys_query_history WHERE session_id = ${waiterPid}` }, 'history');
      expect(history).toEqual([{ status: 'queued'.padEnd(10), query_text: expect.stringMatching(/^SELECT count\(\*\) FROM public\.facts/) }]);
      expect((await asSuperuser.query({ sql: `SELECT COUNT(*) AS queued FROM sys_query_history WHERE status = 'queued'` }, 'queued'))[0]).toEqual({
        queued: 1,
      });
      const queued = (user: string) =>
        withClient({ ...wh.pg, user, password: localUserPassword(wh.pg, user) }, async (client) =>
          Number((await client.query(`SELECT count(*) AS n FROM ${SYSTEM_VIEWS_SCHEMA}.sys_query_history WHERE status = 'queued'`)).rows[0].n),
        );
      expect(await queued(RESTRICTED_USER)).toBe(0);
      expect(await queued(LOCAL_PIPELINE_USER)).toBe(1);

      await holder.query('ROLLBACK');
      await reading;
      expect((await asSuperuser.query({ sql: `SELECT COUNT(*) AS queued FROM sys_query_history WHERE status = 'queued'` }, 'drained'))[0]).toEqual({
        queued: 0,
      });
    } finally {
      await holder.end().catch(() => undefined);
      await waiter.end().catch(() => undefined);
    }
  });
});

describe('svv_table_info', () => {
  it("shows a table's rows and no sort key to a superuser, and is refused to a regular user unless granted", async () => {
    const info = { sql: `SELECT database, schema, "table", tbl_rows, sortkey1, sortkey_num, max_varchar FROM svv_table_info WHERE "table" = 'facts'` };
    expect(await asSuperuser.query(info, 'superuser')).toEqual([
      { database: wh.pg.database, schema: 'public', table: 'facts', tbl_rows: '25', sortkey1: null, sortkey_num: 0, max_varchar: 30 },
    ]);
    await expect(asPipelineUser.query(info, 'regular user')).rejects.toThrow(/permission denied for view svv_table_info/);
  });
});

describe('svv_redshift_columns', () => {
  const columns = {
    sql: `SELECT schema_name, table_name, column_name, ordinal_position, data_type, sortkey
            FROM svv_redshift_columns WHERE database_name = current_database() AND table_name = 'sorted_facts' ORDER BY ordinal_position`,
  };

  it("gives a column's position in the index standing in for the sort key (the clustered one, else the oldest), to users who may read the table", async () => {
    await wh.query('CREATE TABLE public.sorted_facts (id int, label varchar(30), at timestamp)');
    try {
      const sortkeys = async (as: DataApiWarehouse) => (await as.query(columns, 'columns')).map((r) => [r.column_name, r.sortkey]);
      expect(await sortkeys(asSuperuser)).toEqual([
        ['id', 0],
        ['label', 0],
        ['at', 0],
      ]);
      expect(await asSuperuser.query(columns, 'types')).toMatchObject([
        { schema_name: 'public', table_name: 'sorted_facts', column_name: 'id', ordinal_position: 1, data_type: 'integer' },
        { column_name: 'label', data_type: 'character varying(30)' },
        { column_name: 'at', data_type: 'timestamp without time zone' },
      ]);

      await wh.query('CREATE INDEX sorted_facts_at_id ON public.sorted_facts (at, id)');
      await wh.query('CREATE INDEX sorted_facts_label ON public.sorted_facts (label)');
      expect(await sortkeys(asSuperuser)).toEqual([
        ['id', 2],
        ['label', 0],
        ['at', 1],
      ]);
      await wh.query('CLUSTER public.sorted_facts USING sorted_facts_label');
      expect(await sortkeys(asSuperuser)).toEqual([
        ['id', 0],
        ['label', 1],
        ['at', 0],
      ]);

      // Visible to all users, each seeing the columns it may read.
      expect(await asPipelineUser.query(columns, 'no grant')).toEqual([]);
      await wh.query(`GRANT SELECT ON public.sorted_facts TO "${LOCAL_PIPELINE_USER}"`);
      expect(await sortkeys(asPipelineUser)).toEqual([
        ['id', 0],
        ['label', 1],
        ['at', 0],
      ]);
    } finally {
      await wh.query('DROP TABLE public.sorted_facts');
    }
  });
});

describe('STRTOL', () => {
  // The 60-bit value as text: the Data API returns a BIGINT as a JSON number (longValue), which JavaScript rounds past 2^53.
  it("converts as Redshift's examples say, through the Data API", async () => {
    const done = await wh.select(
      `SELECT STRTOL('0xf', 16), STRTOL('abcd1234', 16), STRTOL('1234567', 10), STRTOL('1234567', 8), STRTOL('110101', 2),
              STRTOL('  -7f', 16), STRTOL('', 10), STRTOL(CAST(NULL AS varchar(10)), 16), CAST(STRTOL('fffffffffffffff', 16) AS varchar(20)), STRTOL('12z', 36)`,
    );
    expect(done).toEqual([['15', '2882343476', '1234567', '342391', '53', '-127', '0', null, '1152921504606846975', String(1 * 36 * 36 + 2 * 36 + 35)]]);
  });

  it('refuses a base outside 2 to 36 and a value outside 64 bits', async () => {
    expect((await wh.run(`SELECT STRTOL('1', 37)`)).Error).toMatch(/STRTOL base must be an integer between 2 and 36, not 37/);
    expect((await wh.run(`SELECT STRTOL('ffffffffffffffffff', 16)`)).Error).toMatch(/out of the signed 64-bit range/);
  });
});

describe('FNV_HASH', () => {
  const text = (expression: string) => `CAST(${expression} AS varchar(24))`;
  it('hashes every column type the gate reads, seeded and typed, with the offset basis as the default seed', async () => {
    const [row] = await wh.select(
      `SELECT ${[
        text('FNV_HASH(1)'),
        text('FNV_HASH(1, -3750763034362895579)'),
        text('FNV_HASH(1, 7)'),
        text("FNV_HASH(CAST('ab' AS varchar(4)))"),
        text("FNV_HASH(CAST('ab' AS char(4)))"),
        text('FNV_HASH(CAST(1.50 AS numeric(12, 2)))'),
        text('FNV_HASH(CAST(1.51 AS numeric(12, 2)))'),
        text('FNV_HASH(true)'),
        text('FNV_HASH(false)'),
        text("FNV_HASH(CAST('2026-01-01' AS date))"),
        text("FNV_HASH(CAST('2026-01-01 10:00' AS timestamp))"),
        text("FNV_HASH(CAST('2026-01-01 10:00+00' AS timestamptz))"),
        text('FNV_HASH(CAST(1 AS smallint))'),
        text('FNV_HASH(CAST(1 AS bigint))'),
        text('FNV_HASH(CAST(1 AS real))'),
        text('FNV_HASH(CAST(1 AS double precision))'),
        text("FNV_HASH(CAST('10:00' AS time))"),
        text('FNV_HASH(CAST(NULL AS integer))'),
      ].join(', ')}`,
    );
    expect(row).toHaveLength(18);
    const [defaultSeed, offsetBasis, seven, varchar, , decimal150, decimal151, yes, no, date, timestamp, timestamptz, , , , , time, none] = row!;
    expect(defaultSeed).toBe(offsetBasis);
    expect(seven).not.toBe(defaultSeed);
    expect(new Set([defaultSeed, varchar, decimal150, decimal151, yes, no, date, timestamp, time]).size).toBe(9);
    // The same instant, as a timestamp and as a timestamptz in UTC.
    expect(timestamptz).toBe(timestamp);
    expect(none).toBeNull();
    for (const value of row!.slice(0, 17)) expect(String(value)).toMatch(/^-?\d+$/);
  });

  it('chains over columns: the order of the values changes the hash', async () => {
    const [[ab, ba]] = (await wh.select(`SELECT ${text('FNV_HASH(2, FNV_HASH(1))')}, ${text('FNV_HASH(1, FNV_HASH(2))')}`)) as [[string, string]];
    expect(ab).not.toBe(ba);
  });
});

// Conformance of the local Redshift Data API, through the real SDK client.

import { randomUUID } from 'node:crypto';
import {
  ActiveStatementsExceededException,
  BatchExecuteStatementCommand,
  CancelStatementCommand,
  DescribeStatementCommand,
  ExecuteStatementCommand,
  GetStatementResultCommand,
  ListStatementsCommand,
  RedshiftDataClient,
  ResourceNotFoundException,
  ValidationException,
} from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { localRedshiftDataClient } from '../../local/aws-clients.ts';
import { RedshiftDataService } from '../../local/data-api/service.ts';
import { awsJsonRequest } from '../support/aws-wire.ts';
import { untilEnded, useWarehouse, type Warehouse } from '../support/warehouse.ts';

let wh: Warehouse;
beforeAll(async () => {
  wh = await useWarehouse('data_api');
});
afterAll(() => wh?.close());

const describeId = (client: RedshiftDataClient, Id: string) => client.send(new DescribeStatementCommand({ Id }));
const submit = async (client: RedshiftDataClient, Sql: string) => (await client.send(new ExecuteStatementCommand({ ...wh.target, Sql }))).Id!;

describe('statement lifecycle', () => {
  it('returns an Id before the SQL has run, then reports FINISHED with its duration', async () => {
    const gate = await wh.gate();
    // Returns while the statement cannot have run: it waits for the gate the test holds.
    const out = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: gate.sql }));
    expect(out.Id).toMatch(/^[a-z0-9]{8}(-[a-z0-9]{4}){3}-[a-z0-9]{12}$/);
    expect(out.CreatedAt).toBeInstanceOf(Date);
    expect(out).toMatchObject({ Database: wh.target.Database, ClusterIdentifier: 'local', DbUser: wh.target.DbUser });
    const [pid] = await gate.waiting();
    const seenRunning = performance.now();
    expect((await describeId(wh.client, out.Id!)).Status).toBe('STARTED');

    const released = performance.now();
    await gate.release();
    const done = await untilEnded(wh.client, out.Id!);

    expect(done).toMatchObject({ Status: 'FINISHED', HasResultSet: true, ResultRows: 1, QueryString: gate.sql, RedshiftPid: pid });
    // It ran from before it was seen waiting until after the gate opened.
    expect(done.Duration).toBeGreaterThanOrEqual(Math.floor((released - seenRunning) * 1e6));
    expect(done.UpdatedAt!.getTime()).toBeGreaterThanOrEqual(done.CreatedAt!.getTime());
  });

  it('reports a SQL error as FAILED with the database message, not as an API error', async () => {
    const done = await wh.run('SELECT 1/0');
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toBe('ERROR: division by zero');
  });

  it('fails a text of several statements like Redshift does', async () => {
    const done = await wh.run('SELECT 1; SELECT 2');
    expect(done).toMatchObject({ Status: 'FAILED', Error: 'ERROR: cannot insert multiple commands into a prepared statement' });
  });

  it('ends ABORTED after CancelStatement of a running statement', async () => {
    const gate = await wh.gate();
    const Id = await submit(wh.client, gate.sql);
    await gate.waiting();

    expect(await wh.client.send(new CancelStatementCommand({ Id }))).toMatchObject({ Status: true });

    // CancelStatement returns once the statement has ended; the gate is still held, so the cancel ended it.
    expect((await describeId(wh.client, Id)).Status).toBe('ABORTED');
    await gate.release();
    await expect(wh.client.send(new CancelStatementCommand({ Id }))).rejects.toThrow(/already in ABORTED state/);
  });

  it('fails a statement on a missing database with the connection error', async () => {
    const { Id } = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Database: 'no_such_db', Sql: 'SELECT 1' }));
    expect(await untilEnded(wh.client, Id!)).toMatchObject({ Status: 'FAILED', Error: 'FATAL: database "no_such_db" does not exist' });
  });

  it('rejects a request without a cluster or workgroup, and unknown or malformed ids', async () => {
    const { ClusterIdentifier: _, ...noCluster } = wh.target;
    await expect(wh.client.send(new ExecuteStatementCommand({ ...noCluster, Sql: 'SELECT 1' }))).rejects.toBeInstanceOf(ValidationException);
    const unknown = wh.client.send(new DescribeStatementCommand({ Id: randomUUID() }));
    await expect(unknown).rejects.toBeInstanceOf(ResourceNotFoundException);
    await expect(wh.client.send(new DescribeStatementCommand({ Id: 'not-an-id' }))).rejects.toBeInstanceOf(ValidationException);
  });

  it('returns the same statement for a repeated ClientToken', async () => {
    const input = { ...wh.target, Sql: 'SELECT 1', ClientToken: randomUUID() };
    const first = await wh.client.send(new ExecuteStatementCommand(input));
    const second = await wh.client.send(new ExecuteStatementCommand(input));
    expect(second.Id).toBe(first.Id);
  });

  it('waits up to WaitTimeSeconds in DescribeStatement: answers when the statement ends, or with its status when the wait expires', async () => {
    const gate = await wh.gate();
    const Id = await submit(wh.client, gate.sql);
    await gate.waiting();

    // The gate is held: only the expiry can end this wait.
    expect((await wh.client.send(new DescribeStatementCommand({ Id, WaitTimeSeconds: 1 }))).Status).toBe('STARTED');

    // The request is inside the endpoint, waiting, before the gate opens.
    const describe = RedshiftDataService.prototype.describeStatement;
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const spy = vi.spyOn(RedshiftDataService.prototype, 'describeStatement').mockImplementation(function (this: RedshiftDataService, input) {
      const answer = describe.call(this, input);
      entered();
      return answer;
    });
    try {
      const waited = wh.client.send(new DescribeStatementCommand({ Id, WaitTimeSeconds: 30 }));
      await inside;
      await gate.release();
      expect((await waited).Status).toBe('FINISHED');
    } finally {
      spy.mockRestore();
    }
  });

  it('lists statements newest first, filtered by name prefix', async () => {
    const name = `list-${randomUUID()}`;
    const a = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1', StatementName: `${name}-a` }));
    const b = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 2', StatementName: `${name}-b` }));
    const listed = await wh.client.send(new ListStatementsCommand({ StatementName: name, Status: 'ALL' }));
    expect(listed.Statements?.map((s) => s.Id)).toEqual([b.Id, a.Id]);
    expect(listed.Statements?.[0]).toMatchObject({ QueryString: 'SELECT 2', IsBatchStatement: false, StatementName: `${name}-b` });
  });

  it('lists only finished statements unless asked for a status or ALL, as the real API does', async () => {
    const name = `list-running-${randomUUID()}`;
    const gate = await wh.gate();
    const { Id } = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: gate.sql, StatementName: name }));
    await gate.waiting();
    try {
      expect((await wh.client.send(new ListStatementsCommand({ StatementName: name }))).Statements).toEqual([]);
      expect((await wh.client.send(new ListStatementsCommand({ StatementName: name, Status: 'ALL' }))).Statements?.map((s) => [s.Id, s.Status])).toEqual([
        [Id, 'STARTED'],
      ]);
    } finally {
      await gate.release();
    }
    await untilEnded(wh.client, Id!);
    expect((await wh.client.send(new ListStatementsCommand({ StatementName: name }))).Statements?.map((s) => s.Id)).toEqual([Id]);
  });

  it("lists every session's statements by default, and with RoleLevel false only the calling session's", async () => {
    const name = `role-level-${randomUUID()}`;
    const session = (accessKeyId: string) => localRedshiftDataClient(wh.endpoint, { credentials: { accessKeyId, secretAccessKey: 'local' } });
    const [first, second] = [session('ASIAFIRSTSESSION'), session('ASIASECONDSESSION')];
    try {
      const a = await first.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1', StatementName: name }));
      const b = await second.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 2', StatementName: name }));
      const list = (client: RedshiftDataClient, RoleLevel?: boolean) =>
        client.send(new ListStatementsCommand({ StatementName: name, Status: 'ALL', ...(RoleLevel === undefined ? {} : { RoleLevel }) }));

      expect((await list(first)).Statements?.map((s) => s.Id)).toEqual([b.Id, a.Id]);
      expect((await list(first, true)).Statements?.map((s) => s.Id)).toEqual([b.Id, a.Id]);
      expect((await list(first, false)).Statements?.map((s) => s.Id)).toEqual([a.Id]);
      expect((await list(second, false)).Statements?.map((s) => s.Id)).toEqual([b.Id]);
      // As the AWS CLI sends it, signed by a session that ran nothing.
      const other = await awsJsonRequest(wh.endpoint, {
        protocol: '1.1',
        service: 'redshift-data',
        target: 'RedshiftData.ListStatements',
        accessKeyId: 'ASIATHIRDSESSION',
        body: { StatementName: name, Status: 'ALL', RoleLevel: false },
      });
      expect(other.body).toEqual({ Statements: [] });
      const invalid = await awsJsonRequest(wh.endpoint, {
        protocol: '1.1',
        service: 'redshift-data',
        target: 'RedshiftData.ListStatements',
        body: { RoleLevel: 'no' },
      });
      expect(invalid).toMatchObject({ status: 400, errorType: 'ValidationException' });
    } finally {
      first.destroy();
      second.destroy();
    }
  });

  it('logs every request with the statement it names or addresses', async () => {
    const name = `logged-${randomUUID()}`;
    const before = wh.api.requests().length;
    const { Id } = await wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1', StatementName: name }));
    await wh.client.send(new DescribeStatementCommand({ Id, WaitTimeSeconds: 5 }));
    await wh.client.send(new ListStatementsCommand({ StatementName: name }));
    expect(wh.api.requests().slice(before)).toEqual([
      { operation: 'ExecuteStatement', statementName: name },
      { operation: 'DescribeStatement', statementName: name, waitTimeSeconds: 5 },
      { operation: 'ListStatements', statementName: name },
    ]);
  });
});

describe(':name parameters', () => {
  it('binds values by name, leaving casts and string literals alone', async () => {
    const done = await wh.run("SELECT :a::int + 1 AS n, ':x' AS literal, :b AS s", { a: '41', b: 'hello' });
    expect(done.Status).toBe('FINISHED');
    expect(done.QueryParameters).toEqual([
      { name: 'a', value: '41' },
      { name: 'b', value: 'hello' },
    ]);
    const result = await wh.client.send(new GetStatementResultCommand({ Id: done.Id }));
    expect(result.Records).toEqual([[{ longValue: 42 }, { stringValue: ':x' }, { stringValue: 'hello' }]]);
  });

  it('lets PostgreSQL infer a value type from its context', async () => {
    await wh.query('CREATE TABLE typed_params (id int8, at timestamp, amount numeric(12,2))');
    const done = await wh.run('INSERT INTO typed_params VALUES (:id, :at, :amount)', { id: '7', at: '2026-01-02 03:04:05', amount: '10.5' });
    expect(done).toMatchObject({ Status: 'FINISHED', ResultRows: 1, HasResultSet: false });
    expect(await wh.query('SELECT id::text, at::text, amount::text FROM typed_params')).toEqual([{ id: '7', at: '2026-01-02 03:04:05', amount: '10.50' }]);
  });

  it('rejects a referenced parameter without a value, and a supplied one never referenced', async () => {
    const missing = wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT :a, :b', Parameters: [{ name: 'a', value: '1' }] }));
    await expect(missing).rejects.toBeInstanceOf(ValidationException);
    const unused = wh.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1', Parameters: [{ name: 'a', value: '1' }] }));
    await expect(unused).rejects.toThrow(/not referenced/);
  });
});

describe('BatchExecuteStatement', () => {
  beforeAll(async () => {
    await wh.query('CREATE TABLE batch_t (x int)');
  });

  it('rolls back every statement of the batch when one fails', async () => {
    await wh.query('TRUNCATE batch_t');
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['INSERT INTO batch_t VALUES (1)', 'INSERT INTO batch_t VALUES (2)', 'SELECT 1/0'] }),
    );
    const done = await untilEnded(wh.client, Id!);
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toBe('ERROR: division by zero');
    expect(done.SubStatements?.map((s) => [s.Id, s.Status])).toEqual([
      [`${Id}:1`, 'FINISHED'],
      [`${Id}:2`, 'FINISHED'],
      [`${Id}:3`, 'FAILED'],
    ]);
    expect(await wh.query('SELECT count(*)::int AS n FROM batch_t')).toEqual([{ n: 0 }]);
  });

  it('commits each statement on its own with ExecutionMode AUTO_COMMIT', async () => {
    await wh.query('TRUNCATE batch_t');
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({
        ...wh.target,
        ExecutionMode: 'AUTO_COMMIT',
        Sqls: ['INSERT INTO batch_t VALUES (1)', 'SELECT 1/0', 'INSERT INTO batch_t VALUES (3)'],
      }),
    );
    const done = await untilEnded(wh.client, Id!);
    expect(done.SubStatements?.map((s) => s.Status)).toEqual(['FINISHED', 'FAILED', 'FINISHED']);
    expect(done.Status).toBe('FAILED');
    expect(await wh.query('SELECT x FROM batch_t ORDER BY x')).toEqual([{ x: 1 }, { x: 3 }]);
  });

  it('commits all statements and serves the result of a sub-statement by its id', async () => {
    await wh.query('TRUNCATE batch_t');
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({
        ...wh.target,
        Sqls: ['INSERT INTO batch_t VALUES (1), (2)', 'INSERT INTO batch_t SELECT x + 10 FROM batch_t', 'SELECT x FROM batch_t ORDER BY x'],
      }),
    );
    const done = await untilEnded(wh.client, Id!);
    expect(done).toMatchObject({ Status: 'FINISHED', HasResultSet: true, ResultRows: 8 });
    expect(done.SubStatements?.map((s) => [s.ResultRows, s.HasResultSet])).toEqual([
      [2, false],
      [2, false],
      [4, true],
    ]);
    const sub = await wh.client.send(new DescribeStatementCommand({ Id: `${Id}:3` }));
    expect(sub).toMatchObject({ Id: `${Id}:3`, Status: 'FINISHED', QueryString: 'SELECT x FROM batch_t ORDER BY x' });
    const result = await wh.client.send(new GetStatementResultCommand({ Id: `${Id}:3` }));
    expect(result.Records?.map((r) => r[0])).toEqual([{ longValue: 1 }, { longValue: 2 }, { longValue: 11 }, { longValue: 12 }]);
    await expect(wh.client.send(new GetStatementResultCommand({ Id: `${Id}:1` }))).rejects.toThrow('Query does not have result');
  });
});

describe('GetStatementResult', () => {
  it('types each field the way the Data API does', async () => {
    const done = await wh.run(`SELECT 1::int4 AS i, 9007199254740991::int8 AS big, 1.5::float8 AS d, true AS b,
      'x'::varchar(10) AS s, 12.34::numeric(10,2) AS dec, timestamp '2026-01-02 03:04:05' AS ts,
      timestamptz '2026-01-02 03:04:05.5+02' AS tstz, date '2026-01-02' AS day, NULL::int AS nothing`);
    const result = await wh.client.send(new GetStatementResultCommand({ Id: done.Id }));
    expect(result.Records?.[0]).toEqual([
      { longValue: 1 },
      { longValue: 9007199254740991 },
      { doubleValue: 1.5 },
      { booleanValue: true },
      { stringValue: 'x' },
      { stringValue: '12.34' },
      { stringValue: '2026-01-02 03:04:05' },
      { stringValue: '2026-01-02 01:04:05.5+00' },
      { stringValue: '2026-01-02' },
      { isNull: true },
    ]);
    expect(result.ColumnMetadata?.map((c) => c.typeName)).toEqual([
      'int4',
      'int8',
      'float8',
      'bool',
      'varchar',
      'numeric',
      'timestamp',
      'timestamptz',
      'date',
      'int4',
    ]);
    expect(result.ColumnMetadata?.[5]).toMatchObject({ name: 'dec', label: 'dec', precision: 10, scale: 2, isSigned: true });
    expect(result.TotalNumRows).toBe(1);
    expect(result.NextToken).toBeUndefined();
  });

  it('describes table columns: schema, table, nullability, default', async () => {
    await wh.query("CREATE TABLE meta_t (id int8 NOT NULL, name varchar(20) DEFAULT 'n/a')");
    const done = await wh.run('SELECT id, name FROM meta_t');
    const { ColumnMetadata, Records } = await wh.client.send(new GetStatementResultCommand({ Id: done.Id }));
    expect(Records).toEqual([]);
    expect(ColumnMetadata?.[0]).toMatchObject({ name: 'id', typeName: 'int8', nullable: 0, schemaName: 'public', tableName: 'meta_t' });
    expect(ColumnMetadata?.[1]).toMatchObject({ name: 'name', typeName: 'varchar', nullable: 1, length: 20, columnDefault: "'n/a'::character varying" });
  });

  it('pages a large result with NextToken', async () => {
    const done = await wh.run('SELECT n FROM generate_series(1, 2500) AS n');
    const pages: number[][] = [];
    let NextToken: string | undefined;
    do {
      const page = await wh.client.send(new GetStatementResultCommand({ Id: done.Id, NextToken }));
      expect(page.TotalNumRows).toBe(2500);
      pages.push(page.Records!.map((r) => r[0]!.longValue!));
      NextToken = page.NextToken;
    } while (NextToken);
    expect(pages.map((p) => p.length)).toEqual([1000, 1000, 500]);
    expect(pages.flat()).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
  });

  it('rejects a statement without a result set', async () => {
    const done = await wh.run('CREATE TABLE no_result (x int)');
    expect(done).toMatchObject({ Status: 'FINISHED', HasResultSet: false });
    const fetch = wh.client.send(new GetStatementResultCommand({ Id: done.Id }));
    await expect(fetch).rejects.toBeInstanceOf(ValidationException);
    await expect(fetch).rejects.toThrow('Query does not have result');
  });
});

describe('connections and limits', () => {
  it('does not carry a BEGIN over to the next statement on the same connection', async () => {
    const one = await wh.otherEndpoint({ maxConnectionsPerDatabase: 1 });
    try {
      await wh.query('CREATE TABLE begin_t (x int)');
      const run = async (Sql: string) => untilEnded(one.client, await submit(one.client, Sql));
      expect((await run('BEGIN')).Status).toBe('FINISHED');
      expect((await run('INSERT INTO begin_t VALUES (1)')).Status).toBe('FINISHED');
      // Had the BEGIN survived, the insert would sit uncommitted in an open transaction.
      expect(await wh.query('SELECT count(*)::int AS n FROM begin_t')).toEqual([{ n: 1 }]);
      expect((await run('SET search_path TO nowhere')).Status).toBe('FINISHED');
      expect((await run('SELECT count(*) FROM begin_t')).Status).toBe('FINISHED');
    } finally {
      await one.close();
    }
  });

  it('queues statements in SUBMITTED while every connection is busy', async () => {
    const one = await wh.otherEndpoint({ maxConnectionsPerDatabase: 1 });
    const gate = await wh.gate();
    const slow = await submit(one.client, gate.sql);
    await gate.waiting(); // holds the only connection

    const queued = await submit(one.client, 'SELECT 1');
    const cancelled = await submit(one.client, 'CREATE TABLE never_created (x int)');
    expect((await describeId(one.client, queued)).Status).toBe('SUBMITTED');
    await one.client.send(new CancelStatementCommand({ Id: cancelled }));
    expect((await describeId(one.client, cancelled)).Status).toBe('ABORTED');

    await gate.release();
    expect((await untilEnded(one.client, queued)).Status).toBe('FINISHED');
    expect(await wh.query("SELECT to_regclass('never_created') AS t")).toEqual([{ t: null }]);
    // The queued statement had to wait for this one's connection.
    expect((await describeId(one.client, slow)).Status).toBe('FINISHED');
    await one.close();
  });

  it('refuses statements beyond the active limit with ActiveStatementsExceededException', async () => {
    const limited = await wh.otherEndpoint({ maxActiveStatements: 2 });
    const gate = await wh.gate();
    const ids = [await submit(limited.client, gate.sql), await submit(limited.client, gate.sql)];
    await gate.waiting(2); // both active until the gate opens

    const third = limited.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1' }));
    await expect(third).rejects.toBeInstanceOf(ActiveStatementsExceededException);
    await limited.client.send(new CancelStatementCommand({ Id: ids[0] }));
    const fourth = await limited.client.send(new ExecuteStatementCommand({ ...wh.target, Sql: 'SELECT 1' }));
    expect(fourth.Id).toBeDefined();
    expect(limited.api.statements()).toBe(3);

    await gate.release();
    await limited.close();
  });

  it.each([
    ['serializable', ['FAILED', 'FINISHED']],
    ['snapshot', ['FINISHED', 'FINISHED']],
  ] as const)("under %s isolation, a write skew ends %j; a conflict reads as Redshift's error 1023", async (isolation, statuses) => {
    const endpoint = await wh.otherEndpoint({ isolation });
    const table = `skew_${isolation}`;
    await wh.query(`CREATE TABLE ${table} (k int)`);
    const gate = await wh.gate();
    // Each reads what the other writes; both wait at the gate between their read and their write.
    const batch = (read: number, write: number) =>
      endpoint.client.send(
        new BatchExecuteStatementCommand({
          ...wh.target,
          Sqls: [`SELECT count(*) FROM ${table} WHERE k = ${read}`, gate.sql, `INSERT INTO ${table} VALUES (${write})`],
        }),
      );
    const [a, b] = await Promise.all([batch(1, 2), batch(2, 1)]);
    await gate.waiting(2); // both transactions have read: they overlap for certain

    await gate.release();

    const outcomes = await Promise.all([untilEnded(endpoint.client, a.Id!), untilEnded(endpoint.client, b.Id!)]);
    expect(outcomes.map((o) => o.Status).sort()).toEqual(statuses);
    const failed = outcomes.find((o) => o.Status === 'FAILED');
    if (failed) expect(failed.Error).toMatch(/^ERROR: 1023 DETAIL: Serializable isolation violation on table in Redshift \(could not serialize access/);
    expect(await wh.query(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: statuses.filter((s) => s === 'FINISHED').length }]);
  });
});

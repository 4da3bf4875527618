// The local Data API when PostgreSQL goes away (restarted, stopped, sessions
// terminated), while statements run and while connections idle: it keeps
// answering, fails what ran on a lost connection with the database's message,
// and runs what comes after. On a server of its own, ordered by observed events.
// Why: docs/decisions/local-engine.md, docs/decisions/tests-and-timing.md
import { randomUUID } from 'node:crypto';
import {
  BatchExecuteStatementCommand,
  CancelStatementCommand,
  DescribeStatementCommand,
  ExecuteStatementCommand,
  ListStatementsCommand,
  RedshiftDataClient,
  ValidationException,
} from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransientWarehouseError } from '../../domain/errors.ts';
import { classifySqlError } from '../../functions/commons/warehouse.ts';
import { APPLICATION_NAME, StatementRunner } from '../../local/data-api/runner.ts';
import { Statement, StatementPart } from '../../local/data-api/statement.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../support/private-postgres.ts';
import { type Endpoint, untilEnded, useWarehouse, type Warehouse } from '../support/warehouse.ts';

const TERMINATED = 'FATAL: terminating connection due to administrator command';
const IDLE_LOST = /^local data api: idle connection to \S+ lost, dropped from the pool: /;

let own: PrivatePostgres;
let wh: Warehouse;
beforeAll(async () => {
  // Prepared transactions: a durable gate holds its lock through a restart.
  own = await startPrivatePostgres({ settings: { max_prepared_transactions: '4' } });
  wh = await useWarehouse('faults', { postgres: own.conn });
});
afterAll(async () => {
  await wh?.close();
  await own?.close();
});

/** Lines logged so far, and promises kept when the lines logged satisfy a condition. */
function logWatch() {
  const lines: string[] = [];
  const waiting = new Set<{ met: (lines: string[]) => boolean; resolve: () => void }>();
  return {
    lines,
    log(line: string) {
      lines.push(line);
      for (const waiter of waiting) {
        if (waiter.met(lines)) {
          waiting.delete(waiter);
          waiter.resolve();
        }
      }
    },
    until(met: (lines: string[]) => boolean): Promise<void> {
      return met(lines) ? Promise.resolve() : new Promise((resolve) => waiting.add({ met, resolve }));
    },
  };
}
type LogWatch = ReturnType<typeof logWatch>;

/** An endpoint of this test's own, watching what it logs. */
async function endpoint(maxConnectionsPerDatabase = 8): Promise<Endpoint & { logged: LogWatch }> {
  const logged = logWatch();
  const started = await wh.otherEndpoint({ maxConnectionsPerDatabase, log: logged.log });
  return { ...started, logged };
}

async function submit(client: RedshiftDataClient, Sql: string): Promise<string> {
  return (await client.send(new ExecuteStatementCommand({ ...wh.target, Sql }))).Id!;
}

/** The endpoints' sessions on this file's database, as the server sees them. */
async function sessions(state?: 'idle'): Promise<number[]> {
  const rows = await wh.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = $2 AND ($3::text IS NULL OR state = $3) ORDER BY pid`,
    [APPLICATION_NAME, wh.pg.database, state ?? null],
  );
  return rows.map((r) => r.pid);
}

/** Terminates sessions of the endpoints on this file's database (never anyone else's); returns how many. */
async function terminate(pids: number[]): Promise<number> {
  const rows = await wh.query<{ done: boolean }>(
    `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1 AND datname = $2 AND pid = ANY($3::int[])`,
    [APPLICATION_NAME, wh.pg.database, pids],
  );
  return rows.filter((r) => r.done).length;
}

/** Leaves `count` connections idle in the endpoint's pool: as many statements at once, held on a gate until all run. */
async function idleConnections(client: RedshiftDataClient, count: number): Promise<number[]> {
  const gate = await wh.gate();
  const ids = await Promise.all(Array.from({ length: count }, () => submit(client, gate.sql)));
  const pids = await gate.waiting(count);
  await gate.release();
  // A wait on DescribeStatement returns once the statement has given its connection back.
  for (const id of ids) expect((await untilEnded(client, id)).Status).toBe('FINISHED');
  expect(await sessions('idle')).toEqual(expect.arrayContaining(pids));
  return pids;
}

/** Resolves once the endpoint has logged `count` dropped idle connections. */
function idleDropped(logged: LogWatch, count: number): Promise<void> {
  return logged.until((lines) => lines.filter((line) => IDLE_LOST.test(line)).length >= count);
}

describe('PostgreSQL restarted', () => {
  it('fails the statement and the batch that were running with the database message, drops idle connections, and runs what comes after', async () => {
    const { client, logged } = await endpoint();
    await wh.query('CREATE TABLE restarted (x int)');
    const idle = await idleConnections(client, 4);
    const gate = await wh.gate({ durable: true });
    const single = await submit(client, gate.sql);
    const { Id: batch } = await client.send(new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['INSERT INTO restarted VALUES (1)', gate.sql] }));
    const running = await gate.waiting(2);
    const idleLeft = (await sessions('idle')).filter((pid) => idle.includes(pid));
    expect(idleLeft).toHaveLength(2);

    await own.server.restart();

    const [singleDone, batchDone] = [await untilEnded(client, single), await untilEnded(client, batch!)];
    expect(singleDone).toMatchObject({ Status: 'FAILED', Error: TERMINATED });
    expect(batchDone).toMatchObject({ Status: 'FAILED', Error: TERMINATED });
    expect(batchDone.SubStatements?.map((s) => [s.Status, s.Error])).toEqual([
      ['FINISHED', undefined],
      ['FAILED', TERMINATED],
    ]);
    expect(classifySqlError(singleDone.Error!, 'restarted')).toBeInstanceOf(TransientWarehouseError);
    await idleDropped(logged, idleLeft.length);

    const after = await untilEnded(client, await submit(client, 'SELECT count(*) FROM restarted'));
    expect(after.Status).toBe('FINISHED');
    expect(running.concat(idle)).not.toContain(after.RedshiftPid);
    // The batch's INSERT was rolled back with its transaction.
    expect(await wh.query('SELECT count(*)::int AS n FROM restarted')).toEqual([{ n: 0 }]);
    await gate.release();
  });
});

describe('PostgreSQL down', () => {
  it('fails a statement submitted while the server is down with a transient connection error, and runs statements again once it is back', async () => {
    const { client, logged } = await endpoint();
    const idle = await idleConnections(client, 2);

    await own.server.stop();
    try {
      await idleDropped(logged, idle.length);
      const id = await submit(client, 'SELECT 1');
      const failed = await untilEnded(client, id);

      expect(failed.Status).toBe('FAILED');
      expect(failed.Error).toBe(`FATAL: connection to server at "${own.conn.host}", port ${own.conn.port} failed: Connection refused`);
      expect(classifySqlError(failed.Error!, 'while down')).toBeInstanceOf(TransientWarehouseError);
      const listed = await client.send(new ListStatementsCommand({ Status: 'FAILED' }));
      expect(listed.Statements?.map((s) => s.Id)).toContain(id);
    } finally {
      await own.server.start();
    }

    expect((await untilEnded(client, await submit(client, 'SELECT 1'))).Status).toBe('FINISHED');
  });

  it('keeps a cancel trying while the server cannot be reached, and ends it, without an error, once the statement has ended', async () => {
    const logged = logWatch();
    const runner = new StatementRunner(own.conn, {
      maxConnectionsPerDatabase: 1,
      isolation: 'serializable',
      maxResultBytes: 1024,
      defaultUser: own.conn.user,
      log: logged.log,
    });
    const id = randomUUID();
    const part = new StatementPart(id, 'SELECT 1', { text: 'SELECT 1', values: [] });
    const statement = new Statement({
      id,
      isBatch: false,
      target: { database: wh.pg.database },
      parameters: [],
      executionMode: 'AUTO_COMMIT',
      withEvent: false,
      parts: [part],
    });
    // As if it ran on a connection the stop is about to cut.
    statement.picked(1);
    statement.started();

    await own.server.stop();
    try {
      const cancelling = runner.cancel(statement);
      await logged.until((lines) => lines.some((line) => line.startsWith(`local data api: cancel of ${id}: `)));
      expect(logged.lines[0]).toMatch(/ECONNREFUSED/);
      // Its connection is lost: the statement fails, and the cancel stops trying.
      part.fail(TERMINATED);
      statement.conclude();
      statement.settle();

      await expect(cancelling).resolves.toBeUndefined();
    } finally {
      await own.server.start();
      await runner.close();
    }
  });
});

describe('sessions terminated (pg_terminate_backend)', () => {
  it('fails the running statement with the database message and never reuses its connection', async () => {
    // One connection: a lost one handed out again would fail the next statement.
    const { client } = await endpoint(1);
    const gate = await wh.gate();
    const id = await submit(client, gate.sql);
    const [pid] = await gate.waiting();

    expect(await terminate([pid!])).toBe(1);

    const failed = await untilEnded(client, id);
    expect(failed).toMatchObject({ Status: 'FAILED', Error: TERMINATED, RedshiftPid: pid });
    const after = await untilEnded(client, await submit(client, 'SELECT 1'));
    expect(after.Status).toBe('FINISHED');
    expect(after.RedshiftPid).not.toBe(pid);
  });

  it('does not run the rest of an AUTO_COMMIT batch on a terminated session', async () => {
    const { client } = await endpoint();
    await wh.query('CREATE TABLE auto_committed (x int)');
    const gate = await wh.gate();
    const { Id } = await client.send(
      new BatchExecuteStatementCommand({
        ...wh.target,
        ExecutionMode: 'AUTO_COMMIT',
        Sqls: ['INSERT INTO auto_committed VALUES (1)', gate.sql, 'INSERT INTO auto_committed VALUES (3)'],
      }),
    );
    const [pid] = await gate.waiting();

    await terminate([pid!]);

    const done = await untilEnded(client, Id!);
    expect(done).toMatchObject({ Status: 'FAILED', Error: TERMINATED });
    expect(done.SubStatements?.map((s) => s.Status)).toEqual(['FINISHED', 'FAILED', 'ABORTED']);
    expect(await wh.query('SELECT x FROM auto_committed')).toEqual([{ x: 1 }]);
  });

  it('drops idle connections from the pool with a log line, and the next statements run on new ones', async () => {
    const { client, logged } = await endpoint();
    const idle = await idleConnections(client, 3);

    expect(await terminate(idle)).toBe(3);
    await idleDropped(logged, 3);

    const after = await Promise.all([submit(client, 'SELECT 1'), submit(client, 'SELECT 2')].map(async (id) => untilEnded(client, await id)));
    expect(after.map((d) => d.Status)).toEqual(['FINISHED', 'FINISHED']);
    for (const d of after) expect(idle).not.toContain(d.RedshiftPid);
  });

  it('answers CancelStatement of a statement whose session was terminated, without an internal error', async () => {
    const { client } = await endpoint();
    const gate = await wh.gate();

    // Terminated first, seen FAILED, then cancelled: the API says it already ended.
    const first = await submit(client, gate.sql);
    const [firstPid] = await gate.waiting(1);
    await terminate([firstPid!]);
    expect(await untilEnded(client, first)).toMatchObject({ Status: 'FAILED', Error: TERMINATED });
    const late = client.send(new CancelStatementCommand({ Id: first }));
    await expect(late).rejects.toBeInstanceOf(ValidationException);
    await expect(late).rejects.toThrow('Could not cancel a query that is already in FAILED state.');

    // Terminated and cancelled at once: whichever wins, the cancel answers and the statement ends.
    const second = await submit(client, gate.sql);
    const [secondPid] = await gate.waiting(1);
    const [cancelled] = await Promise.allSettled([client.send(new CancelStatementCommand({ Id: second })), terminate([secondPid!])]);
    if (cancelled.status === 'fulfilled') expect(cancelled.value.Status).toBe(true);
    else expect(cancelled.reason).toBeInstanceOf(ValidationException);
    expect(['FAILED', 'ABORTED']).toContain((await untilEnded(client, second)).Status);

    expect((await client.send(new DescribeStatementCommand({ Id: second }))).Id).toBe(second);
    expect((await untilEnded(client, await submit(client, 'SELECT 1'))).Status).toBe('FINISHED');
  });
});

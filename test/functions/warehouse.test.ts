// The Warehouse (functions/commons/warehouse.ts) with the real SDK client
// against the local Redshift Data API: results, batches, error
// classification, polling, and its construction from the environment.
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import {
  CancelStatementCommand,
  DescribeStatementCommand,
  GetStatementResultCommand,
  RedshiftDataClient,
  type RedshiftDataClientConfig,
} from '@aws-sdk/client-redshift-data';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TransientWarehouseError, WarehouseError } from '../../domain/errors.ts';
import { DEFAULT_POLL, type PollOptions, Warehouse, warehouseFromEnv } from '../../functions/commons/warehouse.ts';
import { localRedshiftDataClient, localTarget } from '../../local/aws-clients.ts';
import { until } from '../support/until.ts';
import { type Warehouse as TestWarehouse, untilEnded, useWarehouse } from '../support/warehouse.ts';

let wh: TestWarehouse;
const clients: RedshiftDataClient[] = [];

beforeAll(async () => {
  wh = await useWarehouse('warehouse_client', { resultPageRows: 1000 });
});
afterAll(async () => {
  for (const client of clients) client.destroy();
  await wh?.close();
});

function clientFor(endpoint: string, extra: Partial<RedshiftDataClientConfig> = {}): RedshiftDataClient {
  const client = localRedshiftDataClient(endpoint, extra);
  clients.push(client);
  return client;
}

function warehouseAt(endpoint: string, poll: PollOptions = DEFAULT_POLL, extra: Partial<RedshiftDataClientConfig> = {}) {
  const client = clientFor(endpoint, extra);
  return { client, warehouse: new Warehouse(client, localTarget(wh.pg.database), poll) };
}

const fastPoll: PollOptions = { initialDelayMs: 10, maxDelayMs: 50, factor: 2, timeoutMs: 30_000 };
let main: { client: RedshiftDataClient; warehouse: Warehouse };
beforeAll(() => {
  main = warehouseAt(wh.endpoint, fastPoll);
});

/**
 * A clock that moves only when the Warehouse sleeps between polls, recording
 * each delay it asked for; `onSleep` runs after each (the n-th is `delays.length`).
 */
function pollClock(onSleep: (delays: number[]) => Promise<void> = async () => undefined) {
  let now = 1_000_000;
  const delays: number[] = [];
  return {
    delays,
    now: () => now,
    sleep: async (ms: number) => {
      delays.push(ms);
      now += ms;
      await onSleep(delays);
    },
  };
}

/** The rejection of a promise that must reject. */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection, got a result');
}

describe('execute, query and columns', () => {
  it('execute reports the rows an INSERT with :name parameters wrote', async () => {
    await wh.query('CREATE TABLE inserted (id int, label varchar(20))');

    const outcome = await main.warehouse.execute(
      { sql: 'INSERT INTO inserted VALUES (CAST(:a AS int), :la), (CAST(:b AS int), :lb), (3, NULL)', parameters: { a: '1', la: 'one', b: '2', lb: 'two' } },
      'insert three',
    );

    expect(outcome.resultRows).toBe(3);
    expect(outcome.hasResultSet).toBe(false);
    expect(outcome.subStatements).toEqual([]);
    expect(outcome.id).toMatch(/^[a-z0-9-]{36}$/);
    expect(await wh.query('SELECT id, label FROM inserted ORDER BY id')).toEqual([
      { id: 1, label: 'one' },
      { id: 2, label: 'two' },
      { id: 3, label: null },
    ]);
  });

  it('query decodes long, double, boolean, string and null fields and keeps numeric and timestamp as strings', async () => {
    const rows = await main.warehouse.query(
      {
        sql: `SELECT 9007199254740991::int8 AS big, 7::int4 AS small, 1.5::float8 AS ratio, true AS yes, false AS no,
                     'héllo'::varchar AS greeting, NULL::int AS nothing, 12.340::numeric(10,3) AS amount,
                     TIMESTAMP '2026-01-02 03:04:05.5' AS at, DATE '2026-01-02' AS day, :p AS echoed`,
        parameters: { p: 'param value' },
      },
      'typed fields',
    );

    expect(rows).toEqual([
      {
        big: 9007199254740991,
        small: 7,
        ratio: 1.5,
        yes: true,
        no: false,
        greeting: 'héllo',
        nothing: null,
        amount: '12.340',
        at: '2026-01-02 03:04:05.5',
        day: '2026-01-02',
        echoed: 'param value',
      },
    ]);
  });

  it('query follows NextToken: 2,500 rows over pages of 1,000 arrive complete and in order (3 GetStatementResult calls)', async () => {
    const send = vi.spyOn(main.client, 'send');
    try {
      const rows = await main.warehouse.query({ sql: 'SELECT g AS n FROM generate_series(1, 2500) g ORDER BY g' }, 'many rows');

      expect(rows).toHaveLength(2500);
      expect(rows.map((r) => r.n)).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
      const pages = send.mock.calls.filter(([command]) => command instanceof GetStatementResultCommand);
      expect(pages).toHaveLength(3);
    } finally {
      send.mockRestore();
    }
  });

  it('query of a SELECT with no rows returns an empty list', async () => {
    expect(await main.warehouse.query({ sql: 'SELECT 1 AS one WHERE false' }, 'no rows')).toEqual([]);
  });

  it('columns returns the column names of a LIMIT 0 query, in order', async () => {
    await wh.query('CREATE TABLE shaped (event_time timestamp, customer_id int8, amount numeric(12,2), note varchar(50))');

    expect(await main.warehouse.columns({ sql: 'SELECT * FROM shaped LIMIT 0' }, 'shape')).toEqual([
      { name: 'event_time', typeName: 'timestamp' },
      { name: 'customer_id', typeName: 'int8' },
      { name: 'amount', typeName: 'numeric' },
      { name: 'note', typeName: 'varchar' },
    ]);
  });
});

describe('batch', () => {
  it('runs its statements in order and reports each sub-statement (rows, result set)', async () => {
    await wh.query('CREATE TABLE batched (id int, v int)');

    const outcome = await main.warehouse.batch(
      ['INSERT INTO batched VALUES (1, 0), (2, 0)', 'UPDATE batched SET v = v + 1', 'SELECT * FROM batched'],
      'three steps',
    );

    expect(outcome.subStatements).toHaveLength(3);
    expect(outcome.subStatements.map((s) => [s.resultRows, s.hasResultSet])).toEqual([
      [2, false],
      [2, false],
      [2, true],
    ]);
    expect(outcome.subStatements.map((s) => s.id)).toEqual([1, 2, 3].map((n) => `${outcome.id}:${n}`));
    expect(outcome.hasResultSet).toBe(true);
    expect(await wh.query('SELECT id, v FROM batched ORDER BY id')).toEqual([
      { id: 1, v: 1 },
      { id: 2, v: 1 },
    ]);
  });

  it('is one transaction: a failing last statement rolls back the first, and the error names the batch', async () => {
    await wh.query('CREATE TABLE all_or_nothing (id int)');

    const error = await rejectionOf(main.warehouse.batch(['INSERT INTO all_or_nothing VALUES (1)', 'SELECT 1 / 0'], 'insert then fail'));

    expect(error).toBeInstanceOf(WarehouseError);
    expect(error.message).toMatch(/insert then fail.*division by zero/);
    expect(await wh.query('SELECT count(*)::int AS n FROM all_or_nothing')).toEqual([{ n: 0 }]);
  });
});

describe('submitBatchOnce', () => {
  it('runs a request once: sent again, it answers the statement it first created, as earlier, and runs nothing', async () => {
    await wh.query('CREATE TABLE once_only (id int)');
    const sqls = ['INSERT INTO once_only VALUES (CAST(:id AS int))'];

    const first = await main.warehouse.submitBatchOnce(sqls, 'once', { id: '1' });
    await main.warehouse.wait(first.id, 'once');
    const again = await main.warehouse.submitBatchOnce(sqls, 'once', { id: '1' });

    expect(first.earlier).toBe(false);
    expect(again).toEqual({ id: first.id, earlier: true });
    expect(await wh.query('SELECT count(*)::int AS n FROM once_only')).toEqual([{ n: 1 }]);
  });

  it('runs the same statements again under another key, or with other parameters', async () => {
    await wh.query('CREATE TABLE once_per_key (id int)');
    const sqls = ['INSERT INTO once_per_key VALUES (CAST(:id AS int))'];

    const first = await main.warehouse.submitBatchOnce(sqls, 'per key', { id: '1' });
    const keyed = await main.warehouse.submitBatchOnce(sqls, 'per key', { id: '1' }, first.id);
    const other = await main.warehouse.submitBatchOnce(sqls, 'per key', { id: '2' });
    for (const s of [first, keyed, other]) await main.warehouse.wait(s.id, 'per key');

    expect(new Set([first.id, keyed.id, other.id]).size).toBe(3);
    expect([keyed.earlier, other.earlier]).toEqual([false, false]);
    expect(await wh.query('SELECT id FROM once_per_key ORDER BY id')).toEqual([{ id: 1 }, { id: 1 }, { id: 2 }]);
  });
});

describe('errors', () => {
  it.each([
    ['SELECT 1 / 0', 'divide', /division by zero/],
    ['SELECT * FROM no_such_table', 'read missing', /relation "no_such_table" does not exist/],
    ['SELEC 1', 'typo', /syntax error/],
  ])('a SQL error (%s) is a permanent WarehouseError with the database message and the statement name', async (sql, name, dbMessage) => {
    const error = await rejectionOf(main.warehouse.execute({ sql }, name));

    expect(error).toBeInstanceOf(WarehouseError);
    expect(error).not.toBeInstanceOf(TransientWarehouseError);
    expect(error.name).toBe('WarehouseError');
    expect(error.message).toMatch(dbMessage);
    expect(error.message).toContain(`${name} failed`);
  });

  it("under SERIALIZABLE, write skew between two concurrent batches fails one of them with Redshift's error 1023, a TransientWarehouseError", async () => {
    const { warehouse } = warehouseAt((await wh.otherEndpoint({ isolation: 'serializable' })).api.endpoint, fastPoll);
    await wh.query('CREATE TABLE skew (id int PRIMARY KEY, v int NOT NULL)');
    await wh.query('INSERT INTO skew VALUES (1, 0), (2, 0)');
    const gate = await wh.gate();

    // Each reads one row, waits at the gate until the other has read too, then writes the row the other read.
    const results = Promise.allSettled([
      warehouse.batch(['SELECT v FROM skew WHERE id = 1', gate.sql, 'UPDATE skew SET v = v + 1 WHERE id = 2'], 'skew a'),
      warehouse.batch(['SELECT v FROM skew WHERE id = 2', gate.sql, 'UPDATE skew SET v = v + 1 WHERE id = 1'], 'skew b'),
    ]);
    await gate.waiting(2);
    await gate.release();

    const failed = (await results).filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(failed).toHaveLength(1);
    const error = failed[0]!.reason as Error;
    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toMatch(/^skew [ab]: ERROR: 1023 DETAIL: Serializable isolation violation on table/);
    // The survivor committed its write; the loser's was rolled back.
    expect(await wh.query('SELECT sum(v)::int AS total FROM skew')).toEqual([{ total: 1 }]);
  });

  it('under SNAPSHOT, write skew commits both batches, and two batches updating one row fail the later with error 1023', async () => {
    const { warehouse } = warehouseAt((await wh.otherEndpoint({ isolation: 'snapshot' })).api.endpoint, fastPoll);
    await wh.query('CREATE TABLE snap (id int PRIMARY KEY, v int NOT NULL)');
    await wh.query('INSERT INTO snap VALUES (1, 0), (2, 0)');
    let gate = await wh.gate();
    const skew = Promise.allSettled([
      warehouse.batch(['SELECT v FROM snap WHERE id = 1', gate.sql, 'UPDATE snap SET v = v + 1 WHERE id = 2'], 'skew a'),
      warehouse.batch(['SELECT v FROM snap WHERE id = 2', gate.sql, 'UPDATE snap SET v = v + 1 WHERE id = 1'], 'skew b'),
    ]);
    await gate.waiting(2);
    await gate.release();
    expect((await skew).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(await wh.query('SELECT sum(v)::int AS total FROM snap')).toEqual([{ total: 2 }]);

    // Both take their snapshot, wait at the gate, then write the same row: the second writer conflicts.
    gate = await wh.gate();
    const same = Promise.allSettled([
      warehouse.batch(['SELECT v FROM snap WHERE id = 1', gate.sql, 'UPDATE snap SET v = v + 10 WHERE id = 1'], 'same a'),
      warehouse.batch(['SELECT v FROM snap WHERE id = 1', gate.sql, 'UPDATE snap SET v = v + 10 WHERE id = 1'], 'same b'),
    ]);
    await gate.waiting(2);
    await gate.release();
    const failed = (await same).filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toBeInstanceOf(TransientWarehouseError);
    expect((failed[0]!.reason as Error).message).toMatch(/^same [ab]: ERROR: 1023 DETAIL: Serializable isolation violation on table/);
    expect(await wh.query('SELECT v FROM snap WHERE id = 1')).toEqual([{ v: 11 }]);
  });

  describe("the Data API's environmental errors (ExecuteStatementException, BatchExecuteStatementException)", () => {
    // Injected by the local endpoint (no SQL makes the real service answer them); the SDK's own
    // retry is off so that the first answer reaches the Warehouse.
    async function faulty(fault: 'accepted' | 'failed') {
      const endpoint = await wh.otherEndpoint({ environmentalError: ({ name }) => (name?.startsWith('faulty') ? fault : undefined) });
      return { endpoint, ...warehouseAt(endpoint.api.endpoint, fastPoll, { maxAttempts: 1 }) };
    }

    it('a statement the error names that runs all the same is re-attached to: it runs once and its outcome is the answer', async () => {
      await wh.query('CREATE TABLE env_accepted (k int)');
      const { endpoint, warehouse } = await faulty('accepted');

      const single = await warehouse.execute({ sql: 'INSERT INTO env_accepted VALUES (1), (2)' }, 'faulty insert');
      const batch = await warehouse.batch(['INSERT INTO env_accepted VALUES (3)', 'DELETE FROM env_accepted WHERE k = 1'], 'faulty batch');

      expect(single.resultRows).toBe(2);
      expect(batch.subStatements.map((s) => s.resultRows)).toEqual([1, 1]);
      expect(endpoint.api.statements()).toBe(2);
      expect(await wh.query('SELECT k FROM env_accepted ORDER BY k')).toEqual([{ k: 2 }, { k: 3 }]);
    });

    it('a statement the error names that did not run is a TransientWarehouseError naming the error: a retry submits it again', async () => {
      await wh.query('CREATE TABLE env_failed (k int)');
      const { warehouse } = await faulty('failed');

      const single = await rejectionOf(warehouse.execute({ sql: 'INSERT INTO env_failed VALUES (1)' }, 'faulty insert'));
      const batch = await rejectionOf(warehouse.batch(['INSERT INTO env_failed VALUES (2)'], 'faulty batch'));

      expect(single).toBeInstanceOf(TransientWarehouseError);
      expect(single.message).toMatch(/^Data API is busy or unavailable while trying to submit faulty insert: ExecuteStatementException: /);
      expect(batch).toBeInstanceOf(TransientWarehouseError);
      expect(batch.message).toContain('BatchExecuteStatementException');
      expect(await wh.query('SELECT count(*)::int AS n FROM env_failed')).toEqual([{ n: 0 }]);
    });
  });

  it('ActiveStatementsExceededException (limit 1, one statement running) is a TransientWarehouseError', async () => {
    const { client, warehouse } = warehouseAt((await wh.otherEndpoint({ maxActiveStatements: 1 })).api.endpoint, fastPoll);
    const gate = await wh.gate();
    const running = await warehouse.submit({ sql: gate.sql }, 'occupies the slot');
    await gate.waiting();

    const error = await rejectionOf(warehouse.submit({ sql: 'SELECT 1' }, 'one too many'));

    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toMatch(/busy or unavailable while trying to submit one too many: ActiveStatementsExceededException/);
    await client.send(new CancelStatementCommand({ Id: running }));
    await gate.release();
  });

  it('an unreachable endpoint (closed port) is a TransientWarehouseError saying the warehouse is unreachable', async () => {
    const probe = net.createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const { warehouse } = warehouseAt(`http://127.0.0.1:${port}`, fastPoll, { maxAttempts: 1 });

    const submitError = await rejectionOf(warehouse.execute({ sql: 'SELECT 1' }, 'nowhere'));
    const describeError = await rejectionOf(warehouse.wait('00000000-0000-0000-0000-000000000000', 'lost'));

    expect(submitError).toBeInstanceOf(TransientWarehouseError);
    expect(submitError.message).toMatch(/^warehouse unreachable while trying to submit nowhere \(ECONNREFUSED\)/);
    expect(submitError.cause).toBeDefined();
    expect(describeError).toBeInstanceOf(TransientWarehouseError);
    expect(describeError.message).toMatch(/^warehouse unreachable while trying to describe lost/);
  });

  it('a statement cancelled with CancelStatement while running is a WarehouseError saying it was cancelled', async () => {
    const gate = await wh.gate();
    const id = await main.warehouse.submit({ sql: gate.sql }, 'to be cancelled');
    const waited = rejectionOf(main.warehouse.wait(id, 'to be cancelled'));
    await gate.waiting();

    await main.client.send(new CancelStatementCommand({ Id: id }));
    const error = await waited;

    expect(error).toBeInstanceOf(WarehouseError);
    expect(error).not.toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toBe(`to be cancelled (${id}) was cancelled`);
    await gate.release();
  });

  it('wait gives up after PollOptions.timeoutMs with a TransientWarehouseError "still ..." and leaves the statement running', async () => {
    const clock = pollClock();
    const { client, warehouse } = warehouseAt(wh.endpoint, { initialDelayMs: 20, maxDelayMs: 100, factor: 1.5, timeoutMs: 500, ...clock });
    const gate = await wh.gate();
    const id = await warehouse.submit({ sql: gate.sql }, 'slow');
    await gate.waiting(); // it cannot finish while the gate is held

    const error = await rejectionOf(warehouse.wait(id, 'slow'));

    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toBe(`slow (${id}) still STARTED after 0 s`);
    // Waited 462.5 ms of the clock; one more 100 ms poll would pass 500.
    expect(clock.delays).toEqual([20, 30, 45, 67.5, 100, 100, 100]);
    expect((await client.send(new DescribeStatementCommand({ Id: id }))).Status).toBe('STARTED');
    await gate.release();
    expect((await untilEnded(client, id)).Status).toBe('FINISHED');
  });

  it('a wait that would outlast the deadline given to until() is a TransientWarehouseError, and the statement keeps running', async () => {
    const clock = pollClock();
    const { client, warehouse } = warehouseAt(wh.endpoint, { ...DEFAULT_POLL, ...clock });
    const gate = await wh.gate();
    const id = await warehouse.submit({ sql: gate.sql }, 'long load');
    await gate.waiting();

    const error = await rejectionOf(warehouse.until(clock.now() + 250).wait(id, 'long load'));

    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toBe(`long load (${id}) still STARTED after 0 s`);
    // 162.5 ms waited; the next 101.25 ms poll would end after the deadline.
    expect(clock.delays).toEqual([20, 30, 45, 67.5]);
    expect((await client.send(new DescribeStatementCommand({ Id: id }))).Status).toBe('STARTED');
    await gate.release();
  });

  it('query of a statement without a result set is a permanent WarehouseError from GetStatementResult', async () => {
    await wh.query('CREATE TABLE without_result (id int, label varchar(20))');
    const error = await rejectionOf(main.warehouse.query({ sql: 'INSERT INTO without_result VALUES (9, NULL)' }, 'no result set'));

    expect(error).toBeInstanceOf(WarehouseError);
    expect(error.message).toMatch(/^Data API refused to read results of no result set \(.*\): ValidationException: Query does not have result/);
  });
});

describe('cancel', () => {
  it('cancels a running statement and returns once it has ended ABORTED', async () => {
    const gate = await wh.gate();
    const id = await main.warehouse.submit({ sql: gate.sql }, 'held');
    await gate.waiting();

    expect(await main.warehouse.cancel(id, 'held', 30_000)).toBe('ABORTED');

    expect((await main.client.send(new DescribeStatementCommand({ Id: id }))).Status).toBe('ABORTED');
    await gate.release();
  });

  it('answers a statement that ended before the cancel with the status it ended in, without throwing', async () => {
    const id = await main.warehouse.submit({ sql: 'SELECT 1 AS one' }, 'quick');
    await main.warehouse.wait(id, 'quick');
    expect(await main.warehouse.cancel(id, 'quick', 30_000)).toBe('FINISHED');
  });

  it('returns the running status when the statement outlasts the wait', async () => {
    const gate = await wh.gate();
    const id = await main.warehouse.submit({ sql: gate.sql }, 'stubborn');
    await gate.waiting();
    // A Data API whose cancel is accepted but never takes: the statement stays running.
    const ignoring = new Warehouse(
      {
        send: (command: unknown) => (command instanceof CancelStatementCommand ? Promise.resolve({ Status: true }) : main.client.send(command as never)),
      } as never,
      localTarget(wh.pg.database),
      fastPoll,
    );

    expect(await ignoring.cancel(id, 'stubborn', 0)).toBe('STARTED');

    expect(await main.warehouse.cancel(id, 'stubborn', 30_000)).toBe('ABORTED');
    await gate.release();
  });

  it('waits for the cancel to take with a long poll when long polling is on: one CancelStatement, one DescribeStatement', async () => {
    const gate = await wh.gate();
    const { warehouse } = warehouseAt(wh.endpoint, DEFAULT_POLL);
    const name = `cancel-long-poll-${Date.now()}`;
    const id = await warehouse.submit({ sql: gate.sql }, name);
    await gate.waiting();
    const before = wh.api.requests().length;

    expect(await warehouse.cancel(id, name, 30_000)).toBe('ABORTED');

    expect(
      wh.api
        .requests()
        .slice(before)
        .filter((r) => r.statementName === name),
    ).toEqual([
      { operation: 'CancelStatement', statementName: name },
      { operation: 'DescribeStatement', statementName: name, waitTimeSeconds: 20 },
    ]);
    await gate.release();
  });
});

describe('adaptive polling', () => {
  it('polls after initialDelayMs, then factor times later each time up to maxDelayMs, until the statement has finished', async () => {
    const gate = await wh.gate();
    let id = '';
    // The statement runs until the seventh wait, then is let go and seen FINISHED by the next poll.
    const clock = pollClock(async (delays) => {
      if (delays.length !== 7) return;
      await gate.release();
      await untilEnded(wh.client, id);
    });
    const { warehouse } = warehouseAt(wh.endpoint, { initialDelayMs: 20, maxDelayMs: 100, factor: 1.5, timeoutMs: 30_000, ...clock });
    id = await warehouse.submit({ sql: gate.sql }, 'gated');
    await gate.waiting();

    const outcome = await warehouse.wait(id, 'gated');

    expect(clock.delays).toEqual([20, 30, 45, 67.5, 100, 100, 100]);
    expect(outcome.polls).toBe(8);
    expect(outcome.resultRows).toBe(1);
  });

  it('a statement that has already finished is seen by the first poll, without waiting', async () => {
    const clock = pollClock();
    const { warehouse } = warehouseAt(wh.endpoint, { ...DEFAULT_POLL, ...clock });
    const id = await warehouse.submit({ sql: 'SELECT 1' }, 'trivial');
    await untilEnded(wh.client, id);

    const outcome = await warehouse.wait(id, 'trivial');

    expect(outcome.polls).toBe(1);
    expect(clock.delays).toEqual([]);
  });

  it('without long polling, the handlers poll from 20 ms, half as long again each time up to 2 s, never sleeping past max(100 ms, 10% of the wait so far)', async () => {
    const clock = pollClock();
    const gate = await wh.gate();
    const { warehouse } = warehouseAt(wh.endpoint, { ...DEFAULT_POLL, longPollSeconds: 0, timeoutMs: 60_000, ...clock });
    const id = await warehouse.submit({ sql: gate.sql }, 'default schedule');
    await gate.waiting();

    await rejectionOf(warehouse.wait(id, 'default schedule'));

    expect(clock.delays.slice(0, 4)).toEqual([20, 30, 45, 67.5]);
    let waited = 0;
    for (const delay of clock.delays) {
      // A statement that ends during this sleep is noticed within max(100 ms, 10% of its duration).
      expect(delay).toBeLessThanOrEqual(Math.max(100, waited / 10) + 1e-9);
      waited += delay;
    }
    expect(Math.max(...clock.delays)).toBe(2_000);
    await gate.release();
  });
});

describe('long polling', () => {
  it('is the default: one DescribeStatement waits until the statement ends, no sleep in between', async () => {
    const clock = pollClock();
    const gate = await wh.gate();
    const { warehouse } = warehouseAt(wh.endpoint, { ...DEFAULT_POLL, sleep: clock.sleep });
    const name = `long-poll-${Date.now()}`;
    const id = await warehouse.submit({ sql: gate.sql }, name);
    await gate.waiting();
    const before = wh.api.requests().length;

    const waiting = warehouse.wait(id, name);
    // The DescribeStatement is at the endpoint, waiting: only then may the statement end.
    await until(() =>
      wh.api
        .requests()
        .slice(before)
        .some((r) => r.operation === 'DescribeStatement' && r.statementName === name),
    );
    await gate.release();
    const outcome = await waiting;

    expect(outcome.polls).toBe(1);
    expect(clock.delays).toEqual([]);
    expect(
      wh.api
        .requests()
        .slice(before)
        .filter((r) => r.statementName === name),
    ).toEqual([{ operation: 'DescribeStatement', statementName: name, waitTimeSeconds: 20 }]);
  });

  it('asks no longer than the wait may last, and polls again at once after a long poll that ran its time', async () => {
    const gate = await wh.gate();
    const { warehouse } = warehouseAt(wh.endpoint, { ...DEFAULT_POLL, longPollSeconds: 1, timeoutMs: 2_500 });
    const name = `long-poll-timeout-${Date.now()}`;
    const id = await warehouse.submit({ sql: gate.sql }, name);
    await gate.waiting();
    const before = wh.api.requests().length;

    const error = await rejectionOf(warehouse.wait(id, name));

    expect(error).toBeInstanceOf(TransientWarehouseError);
    expect(error.message).toMatch(/still STARTED/);
    // Long polls of a second each, back to back, until less than a second is left; then plain polls.
    const waits = wh.api
      .requests()
      .slice(before)
      .filter((r) => r.statementName === name)
      .map((r) => r.waitTimeSeconds);
    expect(waits.slice(0, 2)).toEqual([1, 1]);
    expect(waits.slice(2).every((w) => w === undefined)).toBe(true);
    await gate.release();
  });
});

describe('warehouseFromEnv', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('honours REDSHIFT_DATA_ENDPOINT: statements run on the local endpoint', async () => {
    // The SDK client takes region and credentials from process.env, as on Lambda.
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    const env = { REDSHIFT_DATA_ENDPOINT: wh.endpoint, WAREHOUSE_DATABASE: wh.pg.database, WAREHOUSE_WORKGROUP: 'local', WAREHOUSE_POLL_MAX_MS: '50' };
    const before = wh.api.statements();

    const warehouse = warehouseFromEnv(env);
    const rows = await warehouse.query({ sql: 'SELECT current_database() AS db' }, 'where am i');

    expect(rows).toEqual([{ db: wh.pg.database }]);
    expect(wh.api.statements()).toBe(before + 1);
    expect(warehouseFromEnv({ ...env })).toBe(warehouse);
    expect(warehouseFromEnv({ ...env, WAREHOUSE_POLL_MAX_MS: '60' })).not.toBe(warehouse);
  });
});

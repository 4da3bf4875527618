// Statements that outlive the invocation that submitted them: a LoadChunk
// retry waits for the INSERT an earlier attempt submitted (or counts it, if
// it finished) instead of running it twice, and a Publish retry recognises
// its own earlier commit instead of calling it a conflict.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransientWarehouseError } from '../../domain/errors.ts';
import { DEFAULT_POLL, Warehouse as DataApiWarehouse, type StatementOutcome } from '../../functions/commons/warehouse.ts';
import { loadChunk, REATTACHED_MESSAGE, type LoadChunkEvent } from '../../functions/load-chunk/index.ts';
import { publish, type PublishEvent } from '../../functions/publish/index.ts';
import { newClient } from '../../local/pg-clients.ts';
import { localRedshiftDataClient, localTarget } from '../../local/aws-clients.ts';
import { until } from '../support/until.ts';
import { LIVE, inputFor, namesFor, stateEvents, useWorkflow, type Workflow } from '../support/workflow.ts';

/** A Lambda whose wait for the INSERT gives up once (as at its 15-minute limit) while the statement keeps running. */
class GivesUpOnce extends DataApiWarehouse {
  gaveUp = false;
  override async wait(id: string, name: string): Promise<StatementOutcome> {
    if (name.includes(':insert:') && !this.gaveUp) {
      this.gaveUp = true;
      throw new TransientWarehouseError(`${name} (${id}) still STARTED after 900 s`);
    }
    return super.wait(id, name);
  }
}

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('wf_reattach');
  await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
});
afterAll(() => wf?.close());

const warehouse = () =>
  new GivesUpOnce(
    localRedshiftDataClient(wf.wh.endpoint),
    localTarget(wf.wh.pg.database),
    DEFAULT_POLL,
  );

describe('a LoadChunk retry after the wait gave up', () => {
  it('waits for the INSERT still running instead of running it again, and the chunk holds its rows once', async () => {
    wf.reset();
    const { staging } = namesFor(7);
    const blocker = newClient(wf.wh.pg);
    await blocker.connect();
    let slowChunk: number | undefined;
    let released = false;
    try {
      // Chunk 3's first attempt: the INSERT waits on a lock held here, its
      // Lambda gives up waiting; the retry must re-attach to that INSERT,
      // which is released only once the retry is seen waiting for it.
      wf.faults.LoadChunk = async (input, next) => {
        const event = input as LoadChunkEvent;
        if (event.chunk.index !== 3) return next(input);
        if (slowChunk === undefined) {
          slowChunk = 3;
          await blocker.query('BEGIN');
          await blocker.query(`LOCK TABLE ${staging} IN ACCESS EXCLUSIVE MODE`);
          await expect(loadChunk(event, warehouse())).rejects.toThrow(/still STARTED/);
          throw new TransientWarehouseError('the Lambda gave up waiting');
        }
        const retry = next(input);
        await until(() => wf.runner.logs.some((l) => l.message === REATTACHED_MESSAGE && l.chunk === 3));
        await blocker.query('COMMIT');
        released = true;
        return retry;
      };
      const result = await wf.run(inputFor(7), 'reattach-running');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toHaveLength(1);
      expect(released).toBe(true);
    } finally {
      await blocker.end();
    }
    const [chunk] = await wf.query<{ attempt: number; rows_written: string; statement_id: string }>(
      `SELECT attempt, rows_written::text, statement_id FROM atomic_publish.chunks WHERE batch_id = $1 AND chunk_index = 3`,
      [namesFor(7).batchId],
    );
    // One INSERT, one attempt: the retry did not mark the chunk LOADING again.
    expect(chunk).toMatchObject({ attempt: 1, rows_written: '40' });
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });

  it('counts an INSERT that finished after the wait gave up, without loading the chunk again', async () => {
    await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
    await wf.query('DROP SCHEMA IF EXISTS atomic_publish CASCADE');
    wf.reset();
    let inserts = 0;
    wf.faults.LoadChunk = async (input, next) => {
      const event = input as LoadChunkEvent;
      if (event.chunk.index !== 2 || inserts > 0) return next(input);
      inserts += 1;
      const attempt = warehouse();
      await expect(loadChunk(event, attempt)).rejects.toThrow(/still STARTED/);
      // The abandoned INSERT finishes before the retry looks at it.
      const [{ statement_id: id }] = await wf.query<{ statement_id: string }>(
        'SELECT statement_id FROM atomic_publish.chunks WHERE batch_id = $1 AND chunk_index = 2',
        [namesFor(7).batchId],
      ) as [{ statement_id: string }];
      await until(async () => (await attempt.status(id, 'abandoned insert'))?.status === 'FINISHED');
      throw new TransientWarehouseError('the Lambda gave up waiting');
    };
    const result = await wf.run(inputFor(7), 'reattach-finished');
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const [chunk] = await wf.query<{ attempt: number; rows_written: string }>(
      `SELECT attempt, rows_written::text FROM atomic_publish.chunks WHERE batch_id = $1 AND chunk_index = 2`,
      [namesFor(7).batchId],
    );
    expect(chunk).toMatchObject({ attempt: 1, rows_written: '40' });
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });
});

/** A warehouse whose manifest write of the INSERT's id fails `times` times with a transient error. */
class RecordingFails extends DataApiWarehouse {
  failures = 0;
  constructor(private readonly times: number, ...args: ConstructorParameters<typeof DataApiWarehouse>) {
    super(...args);
  }
  override async execute(statement: Parameters<DataApiWarehouse['execute']>[0], name: string): Promise<StatementOutcome> {
    if (name.includes(':record-statement:') && this.failures < this.times) {
      this.failures += 1;
      throw new TransientWarehouseError(`${name}: ERROR: could not serialize access due to concurrent update`);
    }
    return super.execute(statement, name);
  }
}

const recordingFails = (times: number) =>
  new RecordingFails(
    times,
    localRedshiftDataClient(wf.wh.endpoint),
    localTarget(wf.wh.pg.database),
    DEFAULT_POLL,
  );

describe('a failure to record the INSERT it just submitted', () => {
  it('is retried inside the step, so the chunk is loaded once by one INSERT', async () => {
    await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
    await wf.query('DROP SCHEMA IF EXISTS atomic_publish CASCADE');
    wf.reset();
    const flaky = recordingFails(2);
    wf.faults.LoadChunk = async (input, next) => ((input as LoadChunkEvent).chunk.index === 4 ? loadChunk(input as LoadChunkEvent, flaky) : next(input));

    const result = await wf.run(inputFor(7), 'record-retried');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(flaky.failures).toBe(2);
    expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toHaveLength(0);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });

  it('that persists fails the step only after its INSERT finished, so the retry replaces those rows instead of doubling them', async () => {
    await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
    await wf.query('DROP SCHEMA IF EXISTS atomic_publish CASCADE');
    wf.reset();
    const broken = recordingFails(1_000);
    let first = true;
    wf.faults.LoadChunk = async (input, next) => {
      if ((input as LoadChunkEvent).chunk.index !== 4 || !first) return next(input);
      first = false;
      return loadChunk(input as LoadChunkEvent, broken);
    };

    const result = await wf.run(inputFor(7), 'record-broken');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toHaveLength(1);
    const [chunk] = await wf.query<{ attempt: number; rows_written: string }>(
      'SELECT attempt, rows_written::text FROM atomic_publish.chunks WHERE batch_id = $1 AND chunk_index = 4',
      [namesFor(7).batchId],
    );
    expect(chunk).toMatchObject({ attempt: 2, rows_written: '40' });
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });
});

describe('a Publish retry after its own commit', () => {
  it('returns the publication it made instead of failing as a conflict', async () => {
    await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
    await wf.query('DROP SCHEMA IF EXISTS atomic_publish CASCADE');
    wf.reset();
    let attempts = 0;
    // The first attempt commits the swap, then its response is lost.
    wf.faults.Publish = async (input, next) => {
      attempts += 1;
      if (attempts === 1) {
        await publish(input as PublishEvent);
        throw new TransientWarehouseError('connection reset after the swap was sent');
      }
      return next(input);
    };
    const result = await wf.run(inputFor(7), 'publish-lost-response');
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(attempts).toBe(2);
    expect((result.output as { publish: { alreadyPublished: boolean; publication: number } }).publish).toMatchObject({
      alreadyPublished: true,
      publication: 1,
    });
    expect(await wf.publications()).toHaveLength(1);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });

  it('lets two overlapping attempts of the same Publish both succeed with exactly one swap', async () => {
    await wf.sample({ rowsPerDay: 40, sourceDays: 8, liveDays: 5 });
    await wf.query('DROP SCHEMA IF EXISTS atomic_publish CASCADE');
    wf.reset();
    let results: PromiseSettledResult<Awaited<ReturnType<typeof publish>>>[] = [];
    // Both read the batch as not yet published; the LOCK lets one swap, the
    // other's guard fails and it finds its own batch published.
    wf.faults.Publish = async (input) => {
      results = await Promise.allSettled([publish(input as PublishEvent), publish(input as PublishEvent)]);
      const made = results.find((r) => r.status === 'fulfilled' && !r.value.alreadyPublished);
      return made && made.status === 'fulfilled' ? made.value : Promise.reject(new Error('no attempt published'));
    };
    const result = await wf.run(inputFor(7), 'publish-overlap');
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(results.map((r) => (r as PromiseFulfilledResult<{ alreadyPublished: boolean }>).value.alreadyPublished).sort()).toEqual([false, true]);
    expect(await wf.publications()).toHaveLength(1);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });
});

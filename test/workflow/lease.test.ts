// One run per pipeline (its lease in atomic_publish.pipeline_leases), newest
// data wins whatever order batches finish in, and attempts of dead
// executions marked ABANDONED. Two executions racing for the lease: see
// concurrency.test.ts.
// The first publication (it installs the manifest) is arranged once; each
// describe acts on its own copy of it (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, planChunks, resolveInterval, stagingTableFor } from '../../domain/plan/plan.ts';
import { startBatch } from '../../domain/plan/sql/plan.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { holdStep } from '../support/step-hold.ts';
import { until } from '../support/until.ts';
import {
  caughtError,
  caughtMessage,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  planOf,
  stateEvents,
  useFork,
  useWorkflowFixture,
  visited,
  visitedOutsideChunks,
  type Workflow,
} from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_lease', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 12, liveDays: 5 });
  // Installs the manifest (the lease table with it).
  const first = await wf.run(inputFor(6), 'installs-the-manifest');
  expect(first.status, `${caughtError(first)?.Error}: ${caughtMessage(first)}`).toBe('SUCCEEDED');
  return {};
});

const leases = (wf: Workflow) =>
  wf.query<{ pipeline: string; execution_id: string }>('SELECT pipeline, execution_id FROM atomic_publish.pipeline_leases ORDER BY pipeline');
const holdLease = (wf: Workflow, executionId: string, expiresAt: string) =>
  wf.query(
    `INSERT INTO atomic_publish.pipeline_leases (pipeline, execution_id, acquired_at, expires_at)
     VALUES ($1, $2, TIMESTAMP '2026-01-01 00:00:00', CAST($3 AS timestamp))`,
    [PIPELINE.name, executionId, expiresAt],
  );

describe('a pipeline whose lease another running execution holds', () => {
  const wf = useForkPerTest(fixture);

  /** Starts day `day`'s run with its LoadChunks held: it holds the lease until released. */
  async function holder(day: number, name: string) {
    const hold = holdStep(wf, 'LoadChunk');
    const running = await wf.start(inputFor(day), name);
    await hold.reached;
    expect(await leases(wf)).toEqual([{ pipeline: PIPELINE.name, execution_id: running.executionId }]);
    return { running, hold };
  }

  it('a run of the same batch ends PipelineBusy at once, having written nothing, without a page; the holder publishes', async () => {
    const { running, hold } = await holder(7, 'holds-day-7');
    const publications = await wf.publications();
    const result = await wf.run(inputFor(7), 'same-batch-while-held');
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'PipelineBusy']);
    const { skipped } = planOf(result) as unknown as { skipped: { heldBy: string; holderStatus: string; sameBatch: boolean; since: string; message: string } };
    expect(skipped).toMatchObject({ heldBy: running.executionId, holderStatus: 'RUNNING', sameBatch: true });
    expect(skipped.message).toContain(`is being run by execution ${running.executionId} (RUNNING), which holds its lease since ${skipped.since} UTC`);
    expect(skipped.message).toContain(`running batch ${namesFor(7).batchId}`);
    expect(skipped.message).toContain('that execution publishes it');
    expect(result.alerts).toEqual([]);
    expect(await wf.publications()).toEqual(publications);
    hold.release();
    wf.reset();
    const held = await running.result;
    expect(visited(held).at(-1)).toBe('Published');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    expect(await leases(wf)).toEqual([]);
  });

  it('a run of another batch waits for the lease and publishes its data once the holder ends', async () => {
    const { running, hold } = await holder(8, 'holds-day-8');
    const waiting = await wf.start(inputFor(9), 'newer-waits');
    const entered = (state: string) =>
      wf.runner
        .describe(waiting.executionId)!
        .events()
        .filter((e) => e.type === 'StateEntered' && e.state?.name === state).length;
    // It has asked twice: a wait between, the lease still held.
    await until(() => entered('Plan') >= 2, 'the waiting run planning again after a LeaseWait');
    expect(await leases(wf)).toEqual([{ pipeline: PIPELINE.name, execution_id: running.executionId }]);
    expect(await wf.batch(namesFor(9).batchId)).toBeUndefined();
    hold.release();
    wf.reset();
    expect(visited(await running.result).at(-1)).toBe('Published');
    const result = await waiting.result;
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result).slice(0, 6)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LeaseHeld', 'LeaseWait', 'Plan']);
    expect(visited(result).at(-1)).toBe('Published');
    expect(result.alerts).toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
    expect(await leases(wf)).toEqual([]);
  });

  it('a run of another batch that waited all LEASE_WAIT_SECONDS fails with PipelineBusyError and pages, naming the holder and what to do', async () => {
    const { running, hold } = await holder(10, 'holds-day-10');
    const publications = await wf.publications();
    // This run's Plan allows no wait at all (the env var Plan reads, for this invocation only).
    const held = wf.faults.LoadChunk;
    wf.faults.Plan = async (input, next) => {
      process.env.LEASE_WAIT_SECONDS = '0';
      try {
        return await next(input);
      } finally {
        delete process.env.LEASE_WAIT_SECONDS;
      }
    };
    const result = await wf.run(inputFor(11), 'gives-up-waiting');
    delete wf.faults.Plan;
    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('PipelineBusyError');
    expect(caughtMessage(result)).toContain(`is being run by execution ${running.executionId} (RUNNING)`);
    expect(caughtMessage(result)).toMatch(/waited \d+ s for the lease \(LEASE_WAIT_SECONDS 0\) and wrote nothing/);
    expect(caughtMessage(result)).toContain('aws stepfunctions stop-execution');
    expect(result.alerts).toHaveLength(1);
    expect(result.alerts[0]!.subject).toContain('PipelineBusyError');
    expect(await wf.batch(namesFor(11).batchId)).toBeUndefined();
    expect(await wf.publications()).toEqual(publications);
    // The holder still holds its lease, and publishes.
    expect(await leases(wf)).toEqual([{ pipeline: PIPELINE.name, execution_id: running.executionId }]);
    expect(wf.faults.LoadChunk).toBe(held);
    hold.release();
    wf.reset();
    expect(visited(await running.result).at(-1)).toBe('Published');
    expect(await leases(wf)).toEqual([]);
  });
});

describe('a lease whose execution Step Functions does not know (its process died with it)', () => {
  const wf = useFork(fixture);
  const gone = 'arn:aws:states:eu-west-1:000000000000:execution:atomic-publish:gone-with-its-process';

  it('is taken over by the next run, which marks the batch it left FAILED, publishes and releases the lease', async () => {
    const day = 7;
    const interval = resolveInterval(inputFor(day), PIPELINE, new Date());
    const batchId = batchIdFor(PIPELINE, interval);
    await holdLease(wf, gone, '2999-01-01 00:00:00');
    await localWarehouse(wf.wh.endpoint, wf.wh.pg.database).batch(
      startBatch({
        batchId,
        pipeline: PIPELINE,
        interval,
        codeVersion: 'test',
        executionId: gone,
        basePublication: 0,
        stagingTable: stagingTableFor(PIPELINE, batchId),
        chunks: planChunks(interval, PIPELINE),
        now: new Date(),
      }),
      'gone execution',
    );
    expect(await wf.batch(batchId)).toMatchObject({ status: 'RUNNING', execution_id: gone });
    const result = await wf.run(inputFor(day), 'after-the-gone-one');
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result).at(-1)).toBe('Published');
    expect(result.alerts).toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    const attempts = await wf.query<{ attempt: number; status: string; error: string | null }>(
      'SELECT attempt, status, error FROM atomic_publish.batch_attempts WHERE batch_id = $1 ORDER BY attempt',
      [batchId],
    );
    expect(attempts).toMatchObject([
      {
        attempt: 1,
        status: 'FAILED',
        error: `ExecutionGone: Step Functions knows no such execution any more; its lease was taken over by ${result.executionId}`,
      },
      { attempt: 2, status: 'PUBLISHED' },
    ]);
    expect(await leases(wf)).toEqual([]);
  });
});

describe('an expired lease', () => {
  const wf = useFork(fixture);

  it('is taken over by the next run, which publishes and then releases it', async () => {
    await holdLease(wf, 'arn:aws:states:eu-west-1:000000000000:execution:atomic-publish:died', '2026-01-01 12:00:00');
    const result = await wf.run(inputFor(7), 'takes-over');
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result).at(-1)).toBe('Published');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    expect(await leases(wf)).toEqual([]);
  });
});

describe('two batches of one pipeline with different `to`', () => {
  describe('the newer finishing first', () => {
    const wf = useFork(fixture);

    it('stays live: the older ends SUPERSEDED, logged in the manifest, without a page', async () => {
      const newer = await wf.run(inputFor(9), 'newer-first');
      expect(newer.status, `${caughtError(newer)?.Error}: ${caughtMessage(newer)}`).toBe('SUCCEEDED');
      const publications = await wf.publications();
      // Publish's first answer is lost after it recorded the batch superseded: the retry finds it so and ends the same way.
      let answers = 0;
      wf.faults.Publish = async (input, next) => {
        const result = await next(input);
        answers += 1;
        if (answers === 1) {
          const lost = new Error('warehouse unreachable while reading the result (ECONNRESET)');
          lost.name = 'TransientWarehouseError';
          throw lost;
        }
        return result;
      };
      const older = await wf.run(inputFor(8), 'older-after');
      wf.reset();
      expect(older.status, `${caughtError(older)?.Error}: ${caughtMessage(older)}`).toBe('SUCCEEDED');
      expect(stateEvents(older, 'StateRetried', 'Publish')).toHaveLength(1);
      expect(visitedOutsideChunks(older).slice(-3)).toEqual(['Publish', 'NewerDataLive', 'Superseded']);
      expect(older.alerts).toEqual([]);
      expect(older.metrics.some((m) => 'BatchFailed' in m.values || 'Published' in m.values)).toBe(false);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
      expect(await wf.publications()).toEqual(publications);
      const { batchId } = namesFor(8);
      expect(await wf.batch(batchId)).toMatchObject({
        status: 'SUPERSEDED',
        error: expect.stringMatching(/^publish guard: pipeline \w+ already publishes data up to /),
      });
      expect(await wf.query('SELECT attempt, status FROM atomic_publish.batch_attempts WHERE batch_id = $1', [batchId])).toEqual([
        { attempt: 1, status: 'SUPERSEDED' },
      ]);
      expect(await leases(wf)).toEqual([]);
      // The next run's Cleanup drops the superseded batch's staging and records it (the describe below).
      expect(await wf.tableExists(namesFor(8).staging)).toBe(true);
    });
  });

  describe('the older finishing first, after a batch was superseded', () => {
    const wf = useFork(fixture);
    let older: ExecutionResult;
    let newer: ExecutionResult;
    beforeAll(async () => {
      // Day 9 live, then day 8 superseded by it: its staging is left for the next run's Cleanup.
      for (const [day, name] of [
        [9, 'newer-live'],
        [8, 'older-superseded'],
      ] as const) {
        const result = await wf.run(inputFor(day), name);
        expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      }
      expect(await wf.batch(namesFor(8).batchId)).toMatchObject({ status: 'SUPERSEDED' });
      expect(await wf.tableExists(namesFor(8).staging)).toBe(true);
      // Day 9 is live: 10 is newer than it, 11 newer still.
      older = await wf.run(inputFor(10), 'older-first');
      newer = await wf.run(inputFor(11), 'newer-after');
    });

    it('is replaced by the newer', async () => {
      expect([older.status, newer.status]).toEqual(['SUCCEEDED', 'SUCCEEDED']);
      expect([visited(older).at(-1), visited(newer).at(-1)]).toEqual(['Published', 'Published']);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(11));
      expect((await wf.publications()).slice(-2).map((p) => p.batch_id)).toEqual([namesFor(10).batchId, namesFor(11).batchId]);
    });

    it("lets the next run's Cleanup drop the superseded batch's staging, and records it", async () => {
      expect(await wf.tableExists(namesFor(8).staging)).toBe(false);
      expect(await wf.batch(namesFor(8).batchId)).toMatchObject({ status: 'SUPERSEDED', staging_dropped_at: expect.anything() });
    });
  });
});

describe('an attempt whose execution died without a trace', () => {
  const wf = useFork(fixture);

  it('is marked ABANDONED when a new attempt of its batch starts', async () => {
    const day = 12;
    const interval = resolveInterval(inputFor(day), PIPELINE, new Date());
    const batchId = batchIdFor(PIPELINE, interval);
    expect(batchId).toBe(namesFor(day).batchId);
    // An execution started the batch, then vanished: no RecordFailure, no CancelOrphans; its lease has expired.
    await holdLease(wf, 'arn:aws:states:eu-west-1:000000000000:execution:atomic-publish:vanished', '2026-01-01 12:00:00');
    const warehouse = localWarehouse(wf.wh.endpoint, wf.wh.pg.database);
    await warehouse.batch(
      startBatch({
        batchId,
        pipeline: PIPELINE,
        interval,
        codeVersion: 'test',
        executionId: 'arn:aws:states:eu-west-1:000000000000:execution:atomic-publish:vanished',
        basePublication: 0,
        stagingTable: stagingTableFor(PIPELINE, batchId),
        chunks: planChunks(interval, PIPELINE),
        now: new Date(),
      }),
      'dead execution',
    );
    expect(await wf.query('SELECT attempt, status FROM atomic_publish.batch_attempts WHERE batch_id = $1', [batchId])).toEqual([
      { attempt: 1, status: 'RUNNING' },
    ]);

    const result = await wf.run(inputFor(day), 'after-the-dead-one');
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    const attempts = await wf.query<{ attempt: number; status: string; finished_at: unknown }>(
      'SELECT attempt, status, finished_at FROM atomic_publish.batch_attempts WHERE batch_id = $1 ORDER BY attempt',
      [batchId],
    );
    expect(attempts).toMatchObject([
      { attempt: 1, status: 'ABANDONED', finished_at: expect.anything() },
      { attempt: 2, status: 'PUBLISHED' },
    ]);
  });
});

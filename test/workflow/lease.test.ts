// One run per pipeline (its lease in atomic_publish.pipeline_leases), newest
// data wins whatever order batches finish in, and attempts of dead
// executions marked ABANDONED. Two executions racing for the lease: see
// concurrency.test.ts.
// The first publication (it installs the manifest) is arranged once; each
// describe acts on its own copy of it (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import { batchIdFor, planChunks, resolveInterval, stagingTableFor } from '../../domain/plan.ts';
import { startBatch } from '../../domain/sql/plan.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { caughtError, caughtMessage, inputFor, LIVE, namesFor, PIPELINE, planOf, stateEvents, useFork, useWorkflowFixture, visited, visitedOutsideChunks, type Workflow } from '../support/workflow.ts';

const fixture = useWorkflowFixture('wf_lease', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 12, liveDays: 5 });
  // Installs the manifest (the lease table with it).
  const first = await wf.run(inputFor(6), 'installs-the-manifest');
  expect(first.status, `${caughtError(first)?.Error}: ${caughtMessage(first)}`).toBe('SUCCEEDED');
  return {};
});

const leases = (wf: Workflow) => wf.query<{ pipeline: string; execution_id: string }>('SELECT pipeline, execution_id FROM atomic_publish.pipeline_leases ORDER BY pipeline');
const holdLease = (wf: Workflow, executionId: string, expiresAt: string) =>
  wf.query(
    `INSERT INTO atomic_publish.pipeline_leases (pipeline, execution_id, acquired_at, expires_at)
     VALUES ($1, $2, TIMESTAMP '2026-01-01 00:00:00', CAST($3 AS timestamp))`,
    [PIPELINE.name, executionId, expiresAt],
  );

describe("a pipeline whose lease another live execution holds", () => {
  const wf = useFork(fixture);
  const holder = 'arn:aws:states:eu-west-1:000000000000:execution:atomic-publish:still-running';

  it('refuses before writing anything: the run ends PipelineBusy, saying which execution holds the pipeline and what to do, without a page', async () => {
    await holdLease(wf, holder, '2999-01-01 00:00:00');
    const { batchId, staging } = namesFor(7);
    const publications = await wf.publications();
    const result = await wf.run(inputFor(7), 'while-held');
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'PipelineBusy']);
    const { skipped } = planOf(result) as unknown as { skipped: { heldBy: string; message: string } };
    expect(skipped.heldBy).toBe(holder);
    expect(skipped.message).toMatch(
      new RegExp(`^pipeline ${PIPELINE.name} is being run by execution ${holder} \\(its lease lasts until 2999-01-01 00:00:00(\\.0+)? UTC\\); this execution wrote nothing\\.`),
    );
    expect(skipped.message).toContain('start this run again');
    expect(skipped.message).toContain('If it is stuck, stop it');
    expect(result.alerts).toEqual([]);
    expect(await wf.batch(batchId)).toBeUndefined();
    expect(await wf.tableExists(staging)).toBe(false);
    expect(await wf.publications()).toEqual(publications);
    expect(await leases(wf)).toEqual([{ pipeline: PIPELINE.name, execution_id: holder }]);
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
      expect(await wf.batch(batchId)).toMatchObject({ status: 'SUPERSEDED', error: expect.stringMatching(/^publish guard: pipeline \w+ already publishes data up to /) });
      expect(await wf.query('SELECT attempt, status FROM atomic_publish.batch_attempts WHERE batch_id = $1', [batchId])).toEqual([{ attempt: 1, status: 'SUPERSEDED' }]);
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
      for (const [day, name] of [[9, 'newer-live'], [8, 'older-superseded']] as const) {
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
    // An execution started the batch, then vanished: no RecordFailure, no CancelOrphans.
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
    expect(await wf.query('SELECT attempt, status FROM atomic_publish.batch_attempts WHERE batch_id = $1', [batchId])).toEqual([{ attempt: 1, status: 'RUNNING' }]);

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

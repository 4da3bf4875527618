// No statement outlives its execution: chunk INSERTs held at a lock gate when one
// chunk fails are cancelled by RecordFailure, and the page says so; when the
// execution is aborted, CancelOrphans (on the status-change event) cancels them and
// fails the batch. Nothing of a cancelled INSERT is in staging; a re-run publishes
// the source once. Why: docs/decisions/failure-handling.md
import { DescribeStatementCommand } from '@aws-sdk/client-redshift-data';
import { beforeEach, describe, expect, it } from 'vitest';
import { TransientWarehouseError, WarehouseError } from '../../domain/errors.ts';
import type { RecordFailureEvent } from '../../domain/record-failure/record-failure.ts';
import { type CancelOrphansResult, cancelExecutionOrphans } from '../../functions/cancel-orphans/index.ts';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { recordFailure } from '../../functions/record-failure/index.ts';
import { localRedshiftDataClient, localTarget, localWarehouse } from '../../local/aws-clients.ts';
import { holdGate, type LockGate } from '../support/lock-gate.ts';
import { until } from '../support/until.ts';
import { inputFor, LIVE, namesFor, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const TO_DAY = 3;
/** One chunk a day from the pipeline's history start: days 0, 1 and 2, all loaded at once (maxConcurrency 4). */
const CHUNKS = 3;
const { batchId, staging } = namesFor(TO_DAY);

const fixture = useWorkflowFixture('wf_orphans', async (wf) => {
  await wf.sample({ rowsPerDay: 30, sourceDays: 5, liveDays: 2 });
});
/** The test's own copy of the sample warehouse, and the gate it took (if any). */
let wf: Workflow;
let gate: LockGate | undefined;
beforeEach(async () => {
  gate = undefined;
  wf = await fixture.fork();
  return async () => {
    await gate?.release();
    await wf.close();
  };
});

/** Staging locked by the test, taken by the first LoadChunk (Plan has created staging by then): every chunk INSERT waits at it. */
function gateStaging(): () => Promise<LockGate> {
  let taking: Promise<LockGate> | undefined;
  return () => {
    taking ??= holdGate(wf.wh.pg, { table: staging }).then((held) => (gate = held));
    return taking;
  };
}

/** Chunk loads submitted and still running, found as a re-run finds them: by their statement names. */
const recordedInserts = () => wf.runningLoads(batchId);

async function statementStatus(id: string): Promise<string | undefined> {
  return (await localRedshiftDataClient(wf.wh.endpoint).send(new DescribeStatementCommand({ Id: id }))).Status;
}

async function stagingRows(): Promise<number> {
  const [row] = await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${staging}`);
  return row!.n;
}

async function rerunPublishesOnce(): Promise<void> {
  wf.reset();
  const rerun = await wf.run(inputFor(TO_DAY), `rerun-${Date.now()}`);
  expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
  expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
  expect(await wf.publications()).toHaveLength(1);
}

describe('a chunk that fails while other chunks still load', () => {
  it('has RecordFailure cancel the INSERTs still running, say so in the alert, and a re-run publishes the source once', async () => {
    const takeGate = gateStaging();
    const held: string[] = [];
    wf.faults.LoadChunk = async (input, next) => {
      const { chunk } = input as { chunk: { index: number } };
      const gated = await takeGate();
      if (chunk.index !== 0) return next(input);
      // Chunk 0 fails for good once the other chunks' INSERTs are provably running and recorded.
      await gated.waiting(CHUNKS - 1);
      await until(async () => (await recordedInserts()).length === CHUNKS - 1, 'the held INSERTs recorded in the manifest');
      held.push(...(await recordedInserts()).map((r) => r.statement_id));
      throw new WarehouseError('chunk 0 failed for good');
    };

    const failed = await wf.run(inputFor(TO_DAY), 'chunk-fails');
    await gate!.release();
    await wf.quiesce();

    expect(failed.status).toBe('FAILED');
    expect(visited(failed)).toEqual(expect.arrayContaining(['RecordFailure', 'Notify']));
    expect(held).toHaveLength(CHUNKS - 1);
    for (const id of held) expect(await statementStatus(id)).toBe('ABORTED');
    expect(failed.alerts).toHaveLength(1);
    expect(failed.alerts[0]!.message).toContain(`Statements: cancelled ${CHUNKS - 1} still-running statement(s) of this batch (the INSERTs of chunk(s) 1, 2;`);
    // A cancelled load rolled back whole: nothing of it in staging nor in the manifest.
    expect(await wf.chunkStatuses(batchId)).toEqual({ PENDING: CHUNKS });
    expect(await wf.batch(batchId)).toMatchObject({ status: 'FAILED' });
    // The gate is open now: a cancelled INSERT that had gone on would have written its rows by now.
    expect(await stagingRows()).toBe(0);

    await rerunPublishesOnce();
  });

  it('still pages when the cancels fail, naming the loads that may still run; their chunks stay unloaded, and a re-run publishes the source once', async () => {
    /** A Data API whose CancelStatement is unavailable. */
    class CannotCancel extends DataApiWarehouse {
      override async cancel(id: string): Promise<string | undefined> {
        throw new TransientWarehouseError(`Data API is busy or unavailable while trying to cancel (${id}): ThrottlingException`);
      }
    }
    const cannotCancel = new CannotCancel(localRedshiftDataClient(wf.wh.endpoint), localTarget(wf.wh.pg.database), DEFAULT_POLL);
    wf.faults.RecordFailure = (input) => recordFailure(input as RecordFailureEvent, () => cannotCancel);
    const takeGate = gateStaging();
    let chunksLoading: Record<string, number> = {};
    wf.faults.LoadChunk = async (input, next) => {
      const gated = await takeGate();
      if ((input as { chunk: { index: number } }).chunk.index !== 0) return next(input);
      await gated.waiting(CHUNKS - 1);
      await until(async () => (await recordedInserts()).length === CHUNKS - 1, 'the held INSERTs recorded in the manifest');
      throw new WarehouseError('chunk 0 failed for good');
    };

    const failed = await wf.run(inputFor(TO_DAY), 'cancel-fails');
    chunksLoading = await wf.chunkStatuses(batchId);
    await gate!.release();
    await wf.quiesce();

    expect(failed.status).toBe('FAILED');
    expect(failed.alerts).toHaveLength(1);
    expect(failed.alerts[0]!.message).toContain('Statements: 2 could not be cancelled and may still run (chunk(s) 1, 2; a re-run waits for them).');
    expect(failed.alerts[0]!.message).toContain('Manifest:   batch and attempt marked FAILED');
    // Not loaded while their loads still ran (a load and its record commit together); a re-run finds the loads by name.
    expect(chunksLoading).toEqual({ PENDING: CHUNKS });

    await rerunPublishesOnce();
  });

  it('says no statement was cancelled when none was running', async () => {
    wf.faults.LoadChunk = async (input, next) => {
      if ((input as { chunk: { index: number } }).chunk.index !== 0) return next(input);
      // Chunk 0 fails once the other chunks are loaded: nothing of the batch runs then.
      await until(async () => (await wf.chunkStatuses(batchId)).DONE === CHUNKS - 1, 'the other chunks loaded');
      throw new WarehouseError('chunk 0 failed for good');
    };
    const failed = await wf.run(inputFor(TO_DAY), 'chunk-fails-alone');
    await wf.quiesce();
    expect(failed.status).toBe('FAILED');
    expect(failed.alerts[0]!.message).toContain('Statements: no statement of this batch was left running.');
  });
});

describe('an execution aborted while its chunk INSERTs run', () => {
  it('has CancelOrphans cancel them from the status-change event and fail the batch; a re-run publishes the source once', async () => {
    const takeGate = gateStaging();
    wf.faults.LoadChunk = async (input, next) => {
      await takeGate();
      return next(input);
    };
    const execution = await wf.start(inputFor(TO_DAY), 'aborted');
    // The gate is taken by a LoadChunk, so Plan has written the manifest by then.
    await until(async () => gate !== undefined && (await recordedInserts()).length === CHUNKS, 'every chunk INSERT recorded');
    await gate!.waiting(CHUNKS);
    const held = (await recordedInserts()).map((r) => r.statement_id);
    expect(await wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases')).toEqual([{ execution_id: execution.executionId }]);

    execution.abort();
    const aborted = await execution.result;
    await gate!.release();
    await wf.quiesce();

    expect(aborted.status).toBe('ABORTED');
    expect(aborted.alerts).toEqual([]);
    expect(aborted.statusChange).toHaveLength(1);
    const delivered = aborted.statusChange[0]!;
    expect(delivered.error).toBeUndefined();
    expect(delivered.output as CancelOrphansResult).toMatchObject({
      executionArn: aborted.executionId,
      status: 'ABORTED',
      batchId,
      statements: { cancelled: [0, 1, 2], stillRunning: [] },
      markedFailed: true,
      leaseReleased: true,
    });
    // Counted for the batch's pipeline: its execution-stopped alarm pages (no failure alert is sent).
    expect(aborted.metrics.filter((m) => 'ExecutionStopped' in m.values)).toEqual([
      expect.objectContaining({ dimensions: { service: 'atomic-publish', Pipeline: 'sales_order_lines' }, values: { ExecutionStopped: 1 } }),
    ]);
    // Released after the cancels: the re-run below need not wait for the lease to expire.
    expect(await wf.query('SELECT execution_id FROM atomic_publish.pipeline_leases')).toEqual([]);
    for (const id of held) expect(await statementStatus(id)).toBe('ABORTED');
    expect(await wf.chunkStatuses(batchId)).toEqual({ PENDING: CHUNKS });
    expect(await wf.batch(batchId)).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/^ExecutionAborted: the execution was aborted/) });
    const [attempt] = await wf.query(`SELECT status, error FROM atomic_publish.batch_attempts WHERE batch_id = $1`, [batchId]);
    expect(attempt).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/aborted/) });
    expect(await stagingRows()).toBe(0);

    await rerunPublishesOnce();
  });
});

describe('an execution that timed out', () => {
  it('has the runner end it TIMED_OUT and deliver the status change to CancelOrphans, which finds no batch before Plan recorded one', async () => {
    let releasePlan!: () => void;
    const planHeld = new Promise<void>((resolve) => (releasePlan = resolve));
    // Plan does not even start before the time-out: nothing can reach the warehouse.
    wf.faults.Plan = async () => {
      await planHeld;
      throw new WarehouseError('not run: the execution timed out');
    };
    const execution = await wf.runner.start(inputFor(TO_DAY), { name: 'timed-out', timeoutSeconds: 1 });
    const timedOut = await execution.result;
    releasePlan();

    expect(timedOut.status).toBe('TIMED_OUT');
    expect(timedOut.alerts).toEqual([]);
    expect(timedOut.statusChange).toEqual([
      {
        functionLogicalId: expect.stringMatching(/^WorkflowCancelOrphansFunction/),
        output: { executionArn: timedOut.executionId, status: 'TIMED_OUT', markedFailed: false, leaseReleased: false },
      },
    ]);
  });

  it('has CancelOrphans cancel the running INSERTs and fail the batch as timed out; a second delivery of the event changes nothing', async () => {
    const takeGate = gateStaging();
    let stopped!: () => void;
    const executionStopped = new Promise<void>((resolve) => (stopped = resolve));
    wf.faults.LoadChunk = async (input, next) => {
      await takeGate();
      // A timed-out execution runs no Catch: the cancelled INSERTs' errors reach it only once it has stopped.
      return next(input).catch(async (error: unknown) => {
        await executionStopped;
        throw error;
      });
    };
    const execution = await wf.start(inputFor(TO_DAY), 'timed-out-loading');
    await until(async () => gate !== undefined && (await recordedInserts()).length === CHUNKS, 'every chunk INSERT recorded');
    await gate!.waiting(CHUNKS);
    const warehouse = localWarehouse(wf.wh.endpoint, wf.wh.pg.database);
    const event = { detail: { executionArn: execution.executionId, status: 'TIMED_OUT' } };

    // The event as EventBridge delivers it for a time-out (the local runner's time-out cannot be timed against the load).
    const first = await cancelExecutionOrphans(event, warehouse);
    const again = await cancelExecutionOrphans(event, warehouse);
    execution.abort();
    stopped();
    await execution.result;
    await gate!.release();
    await wf.quiesce();

    expect(first).toMatchObject({ batchId, statements: { cancelled: [0, 1, 2], stillRunning: [] }, markedFailed: true, leaseReleased: true });
    expect(again).toMatchObject({ batchId, statements: { cancelled: [], stillRunning: [] }, markedFailed: false, leaseReleased: false });
    expect(await wf.batch(batchId)).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/^ExecutionTimedOut: the execution timed out/) });
    expect(await wf.chunkStatuses(batchId)).toEqual({ PENDING: CHUNKS });
    expect(await stagingRows()).toBe(0);

    await rerunPublishesOnce();
  });
});

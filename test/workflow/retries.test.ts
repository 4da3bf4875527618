// Transient vs permanent errors in LoadChunk, injected at the Lambda
// boundary (a taskOverride throws an error with the name a real handler
// would): the synthesized Retry retries TransientWarehouseError with
// backoff and never WarehouseError, and a retried chunk is not loaded twice.
// A first publication (day 5) is arranged once; each test runs on its own
// copy of it (test/support/workflow.ts useFork).
import { describe, expect, it } from 'vitest';
import {
  caughtError,
  inputFor,
  LIVE,
  namesFor,
  stateEvents,
  useFork,
  useWorkflowFixture,
  visited,
  visitedOutsideChunks,
  WORKFLOW_TIME_SCALE,
} from '../support/workflow.ts';

const ROWS_PER_DAY = 20;

// Day 5 published: the manifest exists, holding one publication.
const fixture = useWorkflowFixture('wf_retries', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 10, liveDays: 4 });
  const first = await wf.run(inputFor(5), 'first-publication');
  expect(first.status, `${first.error}: ${first.cause}`).toBe('SUCCEEDED');
  return {};
});

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

const chunkOf = (input: unknown) => (input as { chunk: { index: number } }).chunk.index;
const retriedChunks = (events: ReturnType<typeof stateEvents>) => events.map((e) => chunkOf(e.state!.input)).sort((a, b) => a - b);

describe('LoadChunk retries', () => {
  describe('of transient errors', () => {
    const wf = useFork(fixture);

    it('retries TransientWarehouseErrors (before the load, after a lost response, after a crash mid-chunk) without loading any row twice', async () => {
      const names = namesFor(6);
      const failedOnce = new Set<number>();
      wf.faults.LoadChunk = async (input, next) => {
        const index = chunkOf(input);
        // Chunk 2: the warehouse is busy before anything ran.
        if (index === 2 && !failedOnce.has(2)) {
          failedOnce.add(2);
          throw named('TransientWarehouseError', 'Data API is busy or unavailable: ActiveStatementsExceededException');
        }
        // Chunk 3: the load completed, but its response was lost; the retry must not insert again.
        if (index === 3 && !failedOnce.has(3)) {
          failedOnce.add(3);
          await next(input);
          throw named('TransientWarehouseError', 'warehouse unreachable while reading the result (ECONNRESET)');
        }
        // Chunk 4: the load committed (rows and record in one transaction) but the invocation died before answering.
        if (index === 4 && !failedOnce.has(4)) {
          failedOnce.add(4);
          await next(input);
          throw named('TransientWarehouseError', 'load-chunk: terminating connection due to administrator command');
        }
        return next(input);
      };
      const result = await wf.run(inputFor(6));

      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      const retried = stateEvents(result, 'StateRetried', 'LoadChunk');
      expect(retriedChunks(retried)).toEqual([2, 3, 4]);
      expect(wf.loads.started.filter((i) => i === 2)).toHaveLength(2);
      expect(wf.loads.started.filter((i) => i === 3)).toHaveLength(2);
      expect(wf.loads.started.filter((i) => i === 4)).toHaveLength(2);
      expect(visited(result)).not.toContain('RecordFailure');
      expect(result.alerts).toEqual([]);
      // Exactly the source: a double insert of chunk 3 or 4 would show up in count and digest.
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
      const chunks = await wf.query<{ chunk_index: number; loads: string; rows_written: string }>(
        'SELECT chunk_index, loads, rows_written FROM atomic_publish.chunk_state WHERE batch_id = $1 ORDER BY chunk_index',
        [names.batchId],
      );
      // Chunk 2's first attempt never reached the handler; the retries of chunks 3 and 4 found their
      // loads FINISHED under the chunk's statement name and skipped them: every chunk loaded once.
      expect(chunks.map((c) => Number(c.loads))).toEqual([1, 1, 1, 1, 1, 1]);
      expect(chunks.map((c) => Number(c.rows_written))).toEqual(Array(6).fill(ROWS_PER_DAY));
      expect(await wf.batch(names.batchId)).toMatchObject({ status: 'PUBLISHED', attempt: 1 });
    });
  });

  describe('of a permanent error', () => {
    const wf = useFork(fixture);

    it('does not retry a permanent WarehouseError: one attempt, then RecordFailure, live untouched', async () => {
      const before = await wf.fingerprint(LIVE);
      wf.faults.LoadChunk = async (input, next) => {
        if (chunkOf(input) === 1) throw named('WarehouseError', 'load-chunk:insert failed: ERROR: permission denied for table sales_order_lines');
        return next(input);
      };
      const names = namesFor(7);
      const result = await wf.run(inputFor(7));
      await wf.quiesce();

      expect(result.status).toBe('FAILED');
      expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toEqual([]);
      expect(wf.loads.started.filter((i) => i === 1)).toHaveLength(1);
      expect(caughtError(result)?.Error).toBe('WarehouseError');
      expect(visitedOutsideChunks(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LoadChunks', 'RecordFailure', 'Notify', 'Failed']);
      expect(result.alerts).toHaveLength(1);
      expect(result.alerts[0]!.subject).toBe('atomic-publish: sales_order_lines failed (WarehouseError)');
      expect(result.alerts[0]!.message).toContain('permission denied');
      expect(await wf.fingerprint(LIVE)).toEqual(before);
      const batch = await wf.batch(names.batchId);
      expect(batch).toMatchObject({ status: 'FAILED', attempt: 1 });
      expect(String(batch!.error)).toBe('WarehouseError: load-chunk:insert failed: ERROR: permission denied for table sales_order_lines');
      // Only the arranged publication.
      expect(await wf.publications()).toHaveLength(1);
    });
  });

  describe('of a transient error that persists', () => {
    const wf = useFork(fixture);

    it('gives up on a transient error that persists after 8 retries, and pages', async () => {
      const before = await wf.fingerprint(LIVE);
      wf.faults.LoadChunk = async (input, next) => {
        if (chunkOf(input) === 0) throw named('TransientWarehouseError', 'Data API is busy or unavailable: ThrottlingException');
        return next(input);
      };
      const result = await wf.run(inputFor(8));
      await wf.quiesce();

      expect(result.status).toBe('FAILED');
      expect(wf.loads.started.filter((i) => i === 0)).toHaveLength(9);
      expect(stateEvents(result, 'StateRetried', 'LoadChunk').map((e) => chunkOf(e.state!.input))).toEqual(Array(8).fill(0));
      expect(caughtError(result)?.Error).toBe('TransientWarehouseError');
      expect(result.alerts).toHaveLength(1);
      expect(result.alerts[0]!.subject).toBe('atomic-publish: sales_order_lines failed (TransientWarehouseError)');
      expect(await wf.fingerprint(LIVE)).toEqual(before);
      expect(await wf.batch(namesFor(8).batchId)).toMatchObject({ status: 'FAILED' });
    });
  });
});

describe('retry waits on this machine', () => {
  const wf = useFork(fixture);

  // The local run executes the declared retriers with their waits scaled (local/template.ts localDefinition):
  // the same backoff, attempts and jitter as on AWS, where a fixed local wait would exercise none of them.
  it('run the declared retrier with its waits scaled and its backoff, attempts and full jitter kept, and ride out six failed attempts', async () => {
    let refused = 0;
    wf.faults.Plan = async (input, next) => {
      if (refused < 6) {
        refused += 1;
        throw named('TransientWarehouseError', 'warehouse unreachable while trying to submit plan (ECONNREFUSED)');
      }
      return next(input);
    };
    const result = await wf.run(inputFor(9), 'outage');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const retries = stateEvents(result, 'StateRetried', 'Plan');
    expect(retries.map((e) => e.retry!.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const event of retries) {
      expect(event.retry!.retrier).toEqual({
        ErrorEquals: ['TransientWarehouseError'],
        IntervalSeconds: 2 * WORKFLOW_TIME_SCALE,
        MaxAttempts: 8,
        BackoffRate: 2,
        MaxDelaySeconds: 120 * WORKFLOW_TIME_SCALE,
        JitterStrategy: 'FULL',
      });
    }
    expect(visited(result)).not.toContain('RecordFailure');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
  });
});

// No ceiling on a batch's length, at the suite's size: 1,100 hourly chunks in two
// windows (a full one of 1,000 and one of 100) published in one run, every
// execution's history within 25,000 events, every payload within 256 KB, every
// statement and batch within the Data API's limits; and a batch that would
// outlast the execution refused. Ten years is the bench's (measureLongBatch in
// both). Runs once, under SNAPSHOT. Why: docs/decisions/scale-proofs-in-the-bench.md

// First: it replaces the pipelines before any other module reads them.
import '../support/hourly-pipeline.ts';
import { describe, expect, it } from 'vitest';
import { type LongBatchFigures, MAX_PAYLOAD_BYTES, measureLongBatch, PayloadMeter } from '../../bench/long-batch.ts';
import { DEFAULT_CHUNKS_PER_WINDOW } from '../../domain/plan/windows.ts';
import { MAX_HISTORY_EVENTS } from '../../local/history.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { HOURS, TO_DAY } from '../support/hourly-pipeline.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  useFork,
  useWorkflowFixture,
  visitedOutsideChunks,
} from '../support/workflow.ts';

const WINDOWS = Math.ceil(HOURS / DEFAULT_CHUNKS_PER_WINDOW);

const payloads = new PayloadMeter();
const fixture = useWorkflowFixture(
  'scale_long_batch',
  async (wf): Promise<{ result: ExecutionResult; figures: LongBatchFigures; live: Fingerprint; expected: Fingerprint }> => {
    await wf.sample({ rowsPerDay: 48, sourceDays: TO_DAY + 1, liveDays: 1 });
    const result = await wf.run(inputFor(TO_DAY), 'long-batch');
    const figures = await measureLongBatch({
      result,
      payloads,
      query: wf.query,
      batchId: namesFor(TO_DAY).batchId,
      from: new Date(PIPELINE.historyStart),
      to: sampleDay(TO_DAY),
    });
    return { result, figures, live: await wf.fingerprint(LIVE), expected: await wf.expected(TO_DAY) };
  },
  { onEvent: payloads.onEvent },
);

describe(`a batch of ${HOURS.toLocaleString('en-US')} hourly chunks`, () => {
  it('is published in windows, each execution under the history limit and every payload under 256 KB', () => {
    const { result, figures, live, expected } = fixture.arranged;
    expect(result.status, `${result.error}: ${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(live).toEqual(expected);
    expect(figures.liveDifferences).toBe(0);
    expect(visitedOutsideChunks(result)).toEqual([
      'Input',
      'Plan',
      'AlreadyPublished',
      'LoadWindows',
      'Reconcile',
      'CheckOnly',
      'Publish',
      'NewerDataLive',
      'EmitMetrics',
      'Cleanup',
      'Published',
    ]);

    // One child execution per window, each holding its window's chunk iterations.
    expect(figures.childExecutions).toBe(WINDOWS);
    expect(figures.childrenSucceeded).toBe(WINDOWS);
    expect(Math.max(figures.parentHistoryEvents, figures.maxWindowHistoryEvents)).toBeLessThan(MAX_HISTORY_EVENTS);
    // A full window's history counts each of its chunks (about 7 events each), so the count is real.
    expect(figures.maxWindowHistoryEvents).toBeGreaterThan(6 * DEFAULT_CHUNKS_PER_WINDOW);
    expect(figures.parentHistoryEvents).toBeLessThan(200);

    // Plan's output lists windows, not chunks; the largest payload (a full window's PlanWindow output) is far under the limit.
    expect(figures.chunks).toBe(HOURS);
    expect(figures.windows).toBe(WINDOWS);
    expect(figures.plannedInline).toBe(0);
    expect(figures.largestPayloadBytes).toBeGreaterThan(DEFAULT_CHUNKS_PER_WINDOW * 20);
    expect(figures.largestPayloadBytes).toBeLessThan(MAX_PAYLOAD_BYTES);

    // Every chunk loaded exactly once, and every window recorded.
    expect([figures.chunksRecorded, figures.chunksDone, figures.chunkLoads]).toEqual([HOURS, HOURS, HOURS]);
    expect(figures.recordedWindows).toBe(WINDOWS);
  });
});

describe('a batch whose loads would outlast the execution', () => {
  const wf = useFork(fixture);

  it('is refused by Plan before anything is written, naming the estimate and the ways to make it fit', async () => {
    const { batchId: published } = namesFor(TO_DAY);
    // The published batch, as if it had taken 100 days.
    await wf.query(`UPDATE atomic_publish.batches SET finished_at = started_at + interval '100 days' WHERE batch_id = $1`, [published]);
    const before = await wf.fingerprint(LIVE);
    const { batchId } = namesFor(TO_DAY + 1);

    const result = await wf.run(inputFor(TO_DAY + 1), 'long-batch-too-long');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('ValidationError');
    const message = caughtMessage(result);
    expect(message).toContain(`its ${HOURS + 24} chunks still to load would take about`);
    expect(message).toContain(`as batch ${published} took (${HOURS} chunks in 8640000 s)`);
    expect(message).toContain("longer than the 12.0 h left before the state machine's time-out (12.0 h) ends the execution; nothing was written");
    expect(message).toContain('raise chunk.maxConcurrency (now 16)');
    expect(result.alerts).toHaveLength(1);
    expect(await wf.batch(batchId)).toBeUndefined();
    expect(await wf.query('SELECT * FROM atomic_publish.pipeline_leases WHERE execution_id = $1', [result.executionId])).toEqual([]);
    expect(await wf.fingerprint(LIVE)).toEqual(before);
  });
});

// No ceiling on a batch's length: ten years of hourly chunks (87,600, tiny:
// the sample's rows fill only the last two days) published in one run on
// real parts. Plan records 88 windows; LoadWindows runs each as a child
// execution, whose PlanWindow records its 1,000 chunks. Every execution's
// history is counted as Step Functions would count it (local/history.ts;
// past 25,000 events the runner fails it), every state payload is checked
// against 256 KB, and the local Data API refuses a statement over 100 KB or
// a batch of more than 40, as the real one does. Runs once, under SNAPSHOT.
import { HOURS, TO_DAY } from '../support/hourly-pipeline.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHUNKS_PER_WINDOW } from '../../domain/windows.ts';
import { MAX_HISTORY_EVENTS } from '../../local/history.ts';
import { caughtError, caughtMessage, inputFor, LIVE, namesFor, useWorkflow, visitedOutsideChunks, type Workflow } from '../support/workflow.ts';

const WINDOWS = Math.ceil(HOURS / DEFAULT_CHUNKS_PER_WINDOW);
const MAX_PAYLOAD_BYTES = 256 * 1024;

let wf: Workflow;
beforeAll(async () => {
  wf = await useWorkflow('scale_long_batch');
  await wf.sample({ rowsPerDay: 48, sourceDays: TO_DAY + 1, liveDays: 1 });
});
afterAll(() => wf?.close());

describe(`a batch of ${HOURS.toLocaleString('en-US')} hourly chunks`, () => {
  it('is published in windows, each execution under the history limit and every payload under 256 KB', { timeout: 900_000 }, async () => {
    const { batchId } = namesFor(TO_DAY);
    const result = await wf.run(inputFor(TO_DAY), 'long-batch');

    expect(result.status, `${result.error}: ${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
    expect(visitedOutsideChunks(result)).toEqual(['Input', 'Plan', 'AlreadyPublished', 'LoadWindows', 'Reconcile', 'CheckOnly', 'Publish', 'NewerDataLive', 'EmitMetrics', 'Cleanup', 'Published']);

    // One child execution per window, each holding its window's chunk iterations.
    expect(result.childExecutions).toHaveLength(WINDOWS);
    expect(result.childExecutions.every((c) => c.status === 'SUCCEEDED')).toBe(true);
    const histories = [result.historyEvents, ...result.childExecutions.map((c) => c.historyEvents)];
    expect(Math.max(...histories)).toBeLessThan(MAX_HISTORY_EVENTS);
    // A full window's history counts each of its chunks (about 7 events each), so the count is real.
    expect(Math.max(...result.childExecutions.map((c) => c.historyEvents))).toBeGreaterThan(6 * DEFAULT_CHUNKS_PER_WINDOW);
    expect(result.historyEvents).toBeLessThan(200);

    // Plan's output lists windows, not chunks.
    const planned = result.events.find((e) => e.type === 'StateExited' && e.state?.name === 'Plan')?.state?.output as { plan: { windows: unknown[]; chunks: unknown[]; chunkCount: number } };
    expect(planned.plan.chunkCount).toBe(HOURS);
    expect(planned.plan.windows).toHaveLength(WINDOWS);
    expect(planned.plan.chunks).toEqual([]);
    const largest = Math.max(...result.events.flatMap((e) => (e.state ? [JSON.stringify(e.state.input ?? null).length, JSON.stringify(e.state.output ?? null).length] : [])));
    expect(largest).toBeLessThan(MAX_PAYLOAD_BYTES);

    // Every chunk loaded exactly once.
    const [state] = await wf.query<{ chunks: number; done: number; loads: number }>(
      `SELECT count(*)::int AS chunks, count(*) FILTER (WHERE status = 'DONE')::int AS done, sum(loads)::int AS loads
         FROM atomic_publish.chunk_state WHERE batch_id = $1`,
      [batchId],
    );
    expect(state).toEqual({ chunks: HOURS, done: HOURS, loads: HOURS });
    const [windows] = await wf.query<{ n: number }>('SELECT count(*)::int AS n FROM atomic_publish.batch_windows WHERE batch_id = $1', [batchId]);
    expect(windows?.n).toBe(WINDOWS);
  });
});

describe('a batch whose loads would outlast the execution', () => {
  it('is refused by Plan before anything is written, naming the estimate and the ways to make it fit', async () => {
    const { batchId: published } = namesFor(TO_DAY);
    // The published batch, as if it had taken 100 days: some 99 s per chunk.
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

// Chunks sized by data (chunk.targetRows) on real parts: Plan counts the
// source's rows per day and merges adjacent days up to the target; the
// gate compares each merged chunk; a re-run keeps the chunks its batch was
// planned with; Plan warns when the source is not sorted on the time column.
// The first sized run is arranged once; every other test acts on a copy of
// what it left (test/support/workflow.ts useFork).

// First: it replaces the pipelines before any other module reads them.
import '../support/sized-pipeline.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { TARGET_ROWS } from '../support/sized-pipeline.ts';
import { caughtError, caughtMessage, inputFor, LIVE, namesFor, planOf, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const ROWS_PER_DAY = 30;

/** `count` more order lines on sample day `day`, a minute apart from 00:30. */
async function addRows(wf: Workflow, day: number, count: number, firstOrder: number): Promise<void> {
  await wf.query(
    `INSERT INTO source.sales_order_lines
     SELECT $2::bigint + n, 1, $1::timestamp + interval '30 minutes' + n * interval '1 minute', 1, 1, 1, 5.00
       FROM generate_series(0, $3::int - 1) AS n`,
    [sampleDay(day).toISOString().slice(0, 19), firstOrder, count],
  );
}

const day = (n: number) => sampleDay(n).toISOString();
type PlannedChunk = { index: number; start: string; end: string };
const spans = (chunks: readonly PlannedChunk[]) => chunks.map((c) => [c.index, c.start, c.end]);

const fixture = useWorkflowFixture('wf_sizing', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 8, liveDays: 5 });
  // Day 5 holds 130 rows, more than the target: a chunk of its own.
  await addRows(wf, 5, 100, 700_000_000);
  return { sized: await wf.run(inputFor(6), 'sized') };
});

describe(`chunks of about ${TARGET_ROWS} rows`, () => {
  const wf = useFork(fixture);
  let result: ExecutionResult;
  beforeAll(() => {
    result = fixture.arranged.sized;
  });

  it('merges adjacent days up to the target, keeps a bigger day as one chunk, and publishes exactly the source', async () => {
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const plan = planOf(result) as unknown as { chunks: PlannedChunk[]; chunkCount: number; warnings?: string[] };
    expect(spans(plan.chunks)).toEqual([
      [0, day(0), day(2)],
      [1, day(2), day(4)],
      [2, day(4), day(5)],
      [3, day(5), day(6)],
    ]);
    expect(plan.chunkCount).toBe(4);
    // The sample source is indexed on its time column: no warning.
    expect(plan.warnings).toBeUndefined();
    const recorded = await wf.query<{ interval_start: Date; interval_end: Date }>(
      'SELECT interval_start, interval_end FROM atomic_publish.chunks WHERE batch_id = $1 ORDER BY chunk_index',
      [namesFor(6).batchId],
    );
    expect(recorded.map((c) => [c.interval_start.toISOString(), c.interval_end.toISOString()])).toEqual(plan.chunks.map((c) => [c.start, c.end]));
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
  });
});

describe('late rows in a merged chunk', () => {
  const wf = useFork(fixture);

  it('the gate names the merged chunk that differs, and the re-run keeps the chunks its batch was planned with, reloading only that one', async () => {
    const { batchId } = namesFor(7);
    // 15 late rows for day 3 after its chunk (days 2 and 3, 60 rows) loaded:
    // 75 rows, which a fresh plan would split into two chunks.
    wf.faults.Reconcile = async (input, next) => {
      await addRows(wf, 3, 15, 710_000_000);
      return next(input);
    };

    const failed = await wf.run(inputFor(7), 'sized-late-rows');

    expect(failed.status).toBe('FAILED');
    expect(caughtError(failed)?.Error).toBe('CheckFailedError');
    const planned = (planOf(failed) as unknown as { chunks: PlannedChunk[] }).chunks;
    expect(spans(planned)).toEqual([
      [0, day(0), day(2)],
      [1, day(2), day(4)],
      [2, day(4), day(5)],
      [3, day(5), day(6)],
      [4, day(6), day(7)],
    ]);
    const [mismatch] = await wf.query<{ details: string }>(
      `SELECT details FROM atomic_publish.check_results WHERE batch_id = $1 AND check_name = 'staging_rows_match_source'`,
      [batchId],
    );
    expect(mismatch!.details).toBe(`#1 2026-01-03 00:00:00: source ${2 * ROWS_PER_DAY + 15}, staging ${2 * ROWS_PER_DAY}, recorded ${2 * ROWS_PER_DAY}`);
    expect(await wf.chunkStatuses(batchId)).toEqual({ DONE: 4, STALE: 1 });

    wf.reset();
    const rerun = await wf.run(inputFor(7), 'sized-late-rows-rerun');

    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(planOf(rerun).chunkCount).toBe(5);
    expect(wf.loads.started).toEqual([1]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
  });
});

describe('a source not sorted on the time column', () => {
  const wf = useFork(fixture);

  it("warns in Plan's output when no table the source reads is sorted on the time column, and still publishes", async () => {
    await wf.query('DROP INDEX source.sales_order_lines_ordered_at');
    try {
      const result = await wf.run(inputFor(8), 'unsorted-source');

      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      const { warnings } = planOf(result) as unknown as { warnings?: string[] };
      expect(warnings).toHaveLength(1);
      expect(warnings![0]).toMatch(
        /^pipeline sales_order_lines: no table the source reads is sorted first on the time column ordered_at: source\.sales_order_lines \(no sort key\)\. Each chunk's load then scans the whole source/,
      );
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(8));
    } finally {
      await wf.query('CREATE INDEX sales_order_lines_ordered_at ON source.sales_order_lines (ordered_at)');
    }
  });
});

describe('staging altered after the loads', () => {
  const wf = useFork(fixture);

  it('the one pass over staging still catches rows outside the interval and duplicated keys, with exact counts per merged chunk', async () => {
    // 15 more rows on day 3 (75 on days 2 and 3): days 2 and 3 make a chunk
    // each, so that the batch's chunks are days 0-1, 2, 3, 4, 5, 6-7 and 8.
    await addRows(wf, 3, 15, 710_000_000);
    const { batchId, staging } = namesFor(9);
    // Staging altered after the loads: order line (1, 1) twice on its day,
    // (2, 1) again on day 6 (another chunk), (3, 1) again on day 20 (outside the batch).
    wf.faults.Reconcile = async (input, next) => {
      await wf.query(
        `INSERT INTO ${staging}
         SELECT order_id, line_no, ordered_at + shift, customer_id, product_id, quantity, amount, unit_price
           FROM ${staging}
           JOIN (VALUES (1, interval '1 hour'), (2, interval '6 days'), (3, interval '20 days')) AS copy (id, shift) ON copy.id = order_id
          WHERE line_no = 1`,
      );
      return next(input);
    };

    const result = await wf.run(inputFor(9), 'sized-tampered');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error, caughtMessage(result)).toBe('CheckFailedError');
    const checks = await wf.query<{ check_name: string; passed: boolean; observed: string; details: string }>(
      'SELECT check_name, passed, observed, details FROM atomic_publish.check_results WHERE batch_id = $1 ORDER BY check_name',
      [batchId],
    );
    const byName = Object.fromEntries(checks.map((c) => [c.check_name, c]));
    expect(byName.staging_within_interval).toMatchObject({ passed: false, observed: '1 row(s) outside the batch interval or with no time' });
    expect(byName.business_key_unique).toMatchObject({ passed: false, observed: '3 key value(s) on more than one row' });
    // Days 0-1 are chunk 0; days 6-8 chunk 5: one extra staging row each, counted where it lies.
    expect(byName.staging_rows_match_source).toMatchObject({
      passed: false,
      details: '#0 2026-01-01 00:00:00: source 60, staging 61, recorded 60; #5 2026-01-07 00:00:00: source 60, staging 61, recorded 60',
    });
    expect(byName.all_chunks_loaded!.passed).toBe(true);
  });
});

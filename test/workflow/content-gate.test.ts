// The gate beyond counts, on real parts: a per-chunk content checksum and the
// measures' sums, from the counts' pass. A value corrected in place, a key swapped,
// or a duplicate and an omission that cancel out fail the gate naming the chunk,
// its day and a sum's difference; live stays untouched and the chunk STALE, so the
// re-run reloads just it. Why: docs/decisions/content-checksum-in-the-gate.md
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../domain/batch.ts';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { caughtError, type Fingerprint, inputFor, LIVE, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const ROWS_PER_DAY = 120;
const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
const original = pipelines[index]!;
// The sample pipeline with measures declared (deployed as a new spec would be: the functions read this list).
pipelines[index] = definePipeline({ ...salesOrderLines, checks: { allowEmpty: false, measures: ['quantity', 'amount'] } });

const batchId = (day: number) => batchIdFor(pipelines[index]!, resolveInterval(inputFor(day), pipelines[index]!, new Date()));
const day = (n: number) => sampleDay(n).toISOString().slice(0, 19);
interface Check {
  check_name: string;
  passed: boolean;
  observed: string;
  details: string;
}
/** The check results of the batch's latest attempt. */
const checks = (wf: Workflow, id: string) =>
  wf.query<Check>(
    `SELECT check_name, passed, observed, details FROM atomic_publish.check_results
      WHERE batch_id = $1 AND attempt = (SELECT MAX(attempt) FROM atomic_publish.check_results WHERE batch_id = $1) ORDER BY check_name`,
    [id],
  );
const failed = async (wf: Workflow, id: string) => (await checks(wf, id)).filter((c) => !c.passed).map((c) => c.check_name);
/** The source's amount total over sample day n, as the warehouse writes it. */
const sourceAmount = async (wf: Workflow, n: number) =>
  (
    await wf.query<{ total: string }>('SELECT SUM(amount) AS total FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2', [
      day(n),
      day(n + 1),
    ])
  )[0]!.total;

const fixture = useWorkflowFixture('wf_content_gate', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 10, liveDays: 5 });
  const live = await wf.fingerprint(LIVE);
  const loaded = await sourceAmount(wf, 3);
  // After day 3's chunk loaded, 100 of its source rows are corrected: +1,000.00 each, same count.
  wf.faults.Reconcile = async (input, next) => {
    await wf.query(
      `UPDATE source.sales_order_lines SET amount = amount + 1000.00
        WHERE (order_id, line_no) IN (SELECT order_id, line_no FROM source.sales_order_lines
                                       WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 100)`,
      [day(3), day(4)],
    );
    return next(input);
  };
  const result = await wf.run(inputFor(7), 'correction-in-place');
  wf.reset();
  return { live, loaded, result };
});
afterAll(() => {
  pipelines[index] = original;
});

describe('a correction in place after the chunk loaded', () => {
  const wf = useFork(fixture);
  let live: Fingerprint;
  let loaded: string;
  let result: ExecutionResult;
  beforeAll(() => {
    ({ live, loaded, result } = fixture.arranged);
  });

  it('fails the gate, naming the chunk, its day and the amount, and marks the chunk STALE', async () => {
    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('Publish');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    const corrected = await sourceAmount(wf, 3);
    expect(corrected).not.toBe(loaded);
    const id = batchId(7);
    // With where the difference lies (test/workflow/locate.test.ts): the corrected rows' keys.
    expect(await failed(wf, id)).toEqual(['difference_located', 'rows_changed', 'staging_content_matches_source', 'staging_sums_match_source']);
    const recorded = await checks(wf, id);
    expect(recorded.find((c) => c.check_name === 'staging_rows_match_source')?.passed).toBe(true);
    const sums = recorded.find((c) => c.check_name === 'staging_sums_match_source')!;
    expect(sums.details).toBe(`#3 2026-01-04 00:00:00: amount: source ${corrected}, staging ${loaded}, source - staging 100000.00`);
    expect(sums.observed).toMatch(
      /^1 chunk\(s\) whose sums differ; quantity: source (\d+), staging \1, source - staging 0; amount: source .*, source - staging 100000\.00$/,
    );
    expect(recorded.find((c) => c.check_name === 'staging_content_matches_source')!.details).toBe(
      `#3 2026-01-04 00:00:00: checksum differs (source ${ROWS_PER_DAY} rows, staging ${ROWS_PER_DAY} rows)`,
    );

    const { message } = result.alerts[0]!;
    expect(message).toContain('Chunks whose content differs from the source (1 of 1):');
    expect(message).toMatch(
      new RegExp(
        `│ +3 │ 2026-01-04 00:00:00 │ +${ROWS_PER_DAY} │ +${ROWS_PER_DAY} │ differs +│ +(\\d+) │ +\\1 │ +0 │ +${corrected.replace('.', '\\.')} │ +${loaded.replace('.', '\\.')} │ +100000\\.00 │`,
      ),
    );
    expect(message).not.toContain('Chunks that differ (');
    expect(await wf.chunkStatuses(id)).toEqual({ DONE: 6, STALE: 1 });
  });
});

describe('the re-run after a correction in place', () => {
  const wf = useFork(fixture);

  it('reloads just the corrected chunk and publishes the corrected amounts', async () => {
    const rerun = await wf.run(inputFor(7), 'correction-rerun');

    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(wf.loads.started).toEqual([3]);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    expect(await failed(wf, batchId(7))).toEqual([]);
    expect((await checks(wf, batchId(7))).map((c) => c.check_name)).toContain('staging_sums_match_source');
  });
});

describe('a key swapped in the source after the loads', () => {
  const wf = useFork(fixture);

  it('fails the checksum, and only it, on a source row swapped for one with another key', async () => {
    const live = await wf.fingerprint(LIVE);
    // Same count, same sums: one order line of day 4 now carries another line number.
    wf.faults.Reconcile = async (input, next) => {
      await wf.query(
        `UPDATE source.sales_order_lines SET line_no = line_no + 1000
          WHERE (order_id, line_no) = (SELECT order_id, line_no FROM source.sales_order_lines
                                        WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 1)`,
        [day(4), day(5)],
      );
      return next(input);
    };

    const result = await wf.run(inputFor(8), 'swapped-key');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    // Of the gate's checks only the checksum; where: the key in both directions (test/workflow/locate.test.ts).
    expect(await failed(wf, batchId(8))).toEqual(['difference_located', 'missing_in_source', 'missing_in_staging', 'staging_content_matches_source']);
    expect(result.alerts[0]!.message).toMatch(new RegExp(`│ +4 │ 2026-01-05 00:00:00 │ +${ROWS_PER_DAY} │ +${ROWS_PER_DAY} │ differs +│`));
    expect(await wf.fingerprint(LIVE)).toEqual(live);
  });
});

describe('a duplicate and an omission in staging', () => {
  const wf = useFork(fixture);

  it('fails the checksum on a duplicate and an omission that cancel out in the count', async () => {
    const live = await wf.fingerprint(LIVE);
    // A load that wrote one row of day 6 twice and lost another of the same day: staging's count is right.
    wf.faults.Reconcile = async (input, next) => {
      const { batch } = input as { batch: BatchRef };
      const staging = `analytics.${batch.stagingTable}`;
      const rows = await wf.query<{ order_id: string; line_no: number }>(
        `SELECT order_id, line_no FROM ${staging} WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 2`,
        [day(6), day(7)],
      );
      await wf.query(`INSERT INTO ${staging} SELECT * FROM ${staging} WHERE order_id = $1 AND line_no = $2`, [rows[0]!.order_id, rows[0]!.line_no]);
      await wf.query(`DELETE FROM ${staging} WHERE order_id = $1 AND line_no = $2`, [rows[1]!.order_id, rows[1]!.line_no]);
      return next(input);
    };

    const result = await wf.run(inputFor(9), 'duplicate-and-omission');

    expect(result.status).toBe('FAILED');
    const id = batchId(9);
    const recorded = await checks(wf, id);
    expect(recorded.find((c) => c.check_name === 'staging_rows_match_source')?.passed).toBe(true);
    expect(recorded.find((c) => c.check_name === 'staging_content_matches_source')).toMatchObject({
      passed: false,
      details: `#6 2026-01-07 00:00:00: checksum differs (source ${ROWS_PER_DAY} rows, staging ${ROWS_PER_DAY} rows)`,
    });
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await wf.chunkStatuses(id)).toMatchObject({ STALE: 1 });
  });
});

// Drift against live and the measures' tolerances, through the state machine:
// with staging matching the source, a source that lost most of a day's rows, or a
// column gone NULL, fails against live's rows and NULL shares; a measure's sums
// pass within their tolerance, a floating-point one only with one.
// Why: docs/decisions/drift-against-live-and-tolerances.md
import { afterAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { caughtError, caughtMessage, inputFor, LIVE, stateEvents, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const ROWS_PER_DAY = 120;
const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
const original = pipelines[index]!;
const DRIFT = {
  rowCount: { maxDecreasePct: 50, maxIncreasePct: 100, minRows: 50 },
  nullRate: { maxIncreasePoints: 10, minRows: 50 },
} as const;
/** The sample pipeline with these checks (deployed as a new spec would be: the functions read this list). */
const withChecks = (checks: PipelineSpec['checks'], spec: Partial<PipelineSpec> = {}) =>
  definePipeline({ ...salesOrderLines, ...spec, checks: { allowEmpty: false, ...checks } });

const batchId = (day: number) => batchIdFor(pipelines[index]!, resolveInterval(inputFor(day), pipelines[index]!, new Date()));
const day = (n: number) => sampleDay(n).toISOString().slice(0, 19);
interface Recorded {
  check_name: string;
  passed: boolean;
  severity: string;
  observed: string;
  expected: string;
  details: string;
}
/** The check results of the batch's latest attempt, by name. */
async function recorded(wf: Workflow, id: string): Promise<Record<string, Recorded>> {
  const rows = await wf.query<Recorded>(
    `SELECT check_name, passed, severity, observed, expected, details FROM atomic_publish.check_results
      WHERE batch_id = $1 AND attempt = (SELECT MAX(attempt) FROM atomic_publish.check_results WHERE batch_id = $1) ORDER BY check_name`,
    [id],
  );
  return Object.fromEntries(rows.map((r) => [r.check_name, r]));
}
const failed = async (wf: Workflow, id: string) =>
  Object.values(await recorded(wf, id))
    .filter((c) => !c.passed)
    .map((c) => c.check_name);
/** 84 of day 3's 120 source rows are gone: staging matches the source, live still has them. */
const truncateDay3 = (wf: Workflow) =>
  wf.query(
    `DELETE FROM source.sales_order_lines WHERE (order_id, line_no) IN (
       SELECT order_id, line_no FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 84)`,
    [day(3), day(4)],
  );

const fixture = useWorkflowFixture('wf_drift', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 11, liveDays: 5 });
  // A customer may be unknown upstream: a NULL the load carries.
  for (const table of ['source.sales_order_lines', LIVE]) await wf.query(`ALTER TABLE ${table} ALTER COLUMN customer_id DROP NOT NULL`);
  // The first publication with drift declared, into an empty live table: live then holds days 0 to 5.
  pipelines[index] = withChecks({ drift: DRIFT });
  await wf.query(`TRUNCATE ${LIVE}`);
  return { first: await wf.run(inputFor(6), 'first-publication'), firstBatch: batchId(6) };
});
afterAll(() => {
  pipelines[index] = original;
});

describe('drift against the live table', () => {
  const wf = useForkPerTest(fixture);

  it('passes the first publication, which has no live rows to compare', async () => {
    const { first: result, firstBatch } = fixture.arranged;

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
    const checks = await recorded(wf, firstBatch);
    expect(checks.live_row_count_drift).toMatchObject({
      passed: true,
      severity: 'block',
      observed: '0 of 0 chunk(s) compared outside the bounds; 6 with no live rows to compare',
      expected: "staging rows per chunk within -50% / +100% of live's rows of the same interval (tolerance), chunks with at least 50 live rows; severity block",
    });
    expect(checks.live_null_rate_drift).toMatchObject({
      passed: true,
      observed: `0 of 0 column(s) compared whose NULL share rose by more than 10 points; not compared: live 0, staging ${6 * ROWS_PER_DAY} rows over the interval, fewer than 50`,
    });
  });

  it('fails a source truncated to 30% of a day after the publish, naming the chunk and its day; live untouched', async () => {
    pipelines[index] = withChecks({ drift: DRIFT });
    await truncateDay3(wf);
    const live = await wf.fingerprint(LIVE);

    const result = await wf.run(inputFor(7), 'truncated-source');

    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('Publish');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    const id = batchId(7);
    expect(await failed(wf, id)).toEqual(['live_row_count_drift']);
    const checks = await recorded(wf, id);
    expect(checks.staging_rows_match_source?.passed).toBe(true);
    expect(checks.live_row_count_drift).toMatchObject({
      severity: 'block',
      observed: '1 of 6 chunk(s) compared outside the bounds; 1 with no live rows to compare',
      details: `#3 2026-01-04 00:00:00: live ${ROWS_PER_DAY}, staging 36, -70.0%`,
    });
    const { message } = result.alerts[0]!;
    expect(message).toContain('live_row_count_drift: observed 1 of 6 chunk(s) compared outside the bounds');
    expect(message).toContain('Chunks whose row count drifted from live (1 of 1, severity block):');
    expect(message).toMatch(new RegExp(`│ +3 │ 2026-01-04 00:00:00 │ +${ROWS_PER_DAY} │ +36 │ +-70\\.0% │`));
    expect(message).not.toContain('Declared checks that failed');
    // Nothing to reload: staging holds the source's rows.
    expect(await wf.chunkStatuses(id)).toEqual({ DONE: 7 });
  });

  it('publishes the same truncation under severity warn, recording and returning the warning', async () => {
    await truncateDay3(wf);
    pipelines[index] = withChecks({ drift: { ...DRIFT, rowCount: { ...DRIFT.rowCount, severity: 'warn' } } });

    const result = await wf.run(inputFor(7), 'truncated-warn');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    const id = batchId(7);
    expect((await wf.batch(id))?.status).toBe('PUBLISHED');
    expect((await recorded(wf, id)).live_row_count_drift).toMatchObject({
      passed: false,
      severity: 'warn',
      details: `#3 2026-01-04 00:00:00: live ${ROWS_PER_DAY}, staging 36, -70.0%`,
    });
    const output = stateEvents(result, 'StateExited', 'Reconcile')[0]!.state!.output as { reconcile: { warnings: { check: string }[] } };
    expect(output.reconcile.warnings.map((w) => w.check)).toEqual(['live_row_count_drift']);
  });

  it('fails a column that went mostly NULL, with both shares; live untouched', async () => {
    // Live as a warn publication of the truncation leaves it: day 3 holds its 36 rows in live too.
    await truncateDay3(wf);
    pipelines[index] = withChecks({ drift: { ...DRIFT, rowCount: { ...DRIFT.rowCount, severity: 'warn' } } });
    const warned = await wf.run(inputFor(7), 'truncated-warn');
    expect(warned.status, `${warned.error}: ${warned.cause}`).toBe('SUCCEEDED');
    wf.reset();
    pipelines[index] = withChecks({ drift: DRIFT });
    // Days 5 and 6 lose their customer: 240 of the interval's 876 rows (27.4%), none live.
    await wf.query('UPDATE source.sales_order_lines SET customer_id = NULL WHERE ordered_at >= $1 AND ordered_at < $2', [day(5), day(7)]);
    const live = await wf.fingerprint(LIVE);

    const result = await wf.run(inputFor(8), 'mostly-null');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    const id = batchId(8);
    expect(await failed(wf, id)).toEqual(['live_null_rate_drift']);
    expect((await recorded(wf, id)).live_null_rate_drift).toMatchObject({
      severity: 'block',
      observed: '1 of 8 column(s) compared whose NULL share rose by more than 10 points',
      details: 'customer_id: live 0.0% NULL, staging 27.4% NULL (+27.4 points)',
    });
    expect(result.alerts[0]!.message).toMatch(/│ customer_id │ +0\.0% │ +27\.4% │ \+27\.4 points │/);
  });
});

describe('tolerances of the measures', () => {
  const wf = useForkPerTest(fixture);
  /** A run whose source gains `added` on one amount of day 2 after the loads: the sums differ by it. */
  const runWithAmountChange = async (to: number, added: string, name: string) => {
    wf.reset();
    wf.faults.Reconcile = async (input, next) => {
      await wf.query(
        `UPDATE source.sales_order_lines SET amount = amount + ${added}
          WHERE (order_id, line_no) = (SELECT order_id, line_no FROM source.sales_order_lines
                                        WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 1)`,
        [day(2), day(3)],
      );
      return next(input);
    };
    return wf.run(inputFor(to), name);
  };

  it('passes sums within the tolerance and names it; fails them outside it', async () => {
    pipelines[index] = withChecks({ contentChecksum: false, measures: ['quantity', { column: 'amount', tolerance: { absolute: '1.00' } }] });

    const within = await runWithAmountChange(9, '0.50', 'within-tolerance');

    expect(within.status, `${within.error}: ${within.cause}`).toBe('SUCCEEDED');
    expect((await recorded(wf, batchId(9))).staging_sums_match_source).toMatchObject({
      passed: true,
      expected: 'sums of quantity, amount (tolerance absolute 1.00) equal in every chunk',
    });
    expect((await recorded(wf, batchId(9))).staging_sums_match_source!.observed).toMatch(/amount: source .*, source - staging 0\.50$/);

    const outside = await runWithAmountChange(10, '5.00', 'outside-tolerance');

    expect(outside.status).toBe('FAILED');
    expect(caughtError(outside)?.Error).toBe('CheckFailedError');
    // The gate's failure, and where it lies: the one changed row (the locating checks of a failed gate).
    expect(await failed(wf, batchId(10))).toEqual(['difference_located', 'rows_changed', 'staging_sums_match_source']);
    expect((await recorded(wf, batchId(10))).staging_sums_match_source!.details).toMatch(/^#2 2026-01-03 00:00:00: amount: source .*, source - staging 5\.00$/);
  });

  it('refuses a floating-point measure without a tolerance in Plan, and sums it with one', async () => {
    for (const table of ['source.sales_order_lines', LIVE]) await wf.query(`ALTER TABLE ${table} ADD COLUMN weight double precision`);
    await wf.query('UPDATE source.sales_order_lines SET weight = CAST(amount AS double precision) / 7');
    await wf.query(`UPDATE ${LIVE} SET weight = CAST(amount AS double precision) / 7`);
    const sourceSql = salesOrderLines.sourceSql.replace('AS unit_price', 'AS unit_price, weight');
    const live = await wf.fingerprint(LIVE);
    pipelines[index] = withChecks({ measures: ['weight'] }, { sourceSql });

    const refused = await wf.run(inputFor(10), 'float-without-tolerance');

    expect(refused.status).toBe('FAILED');
    expect(visited(refused)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(refused)?.Error).toBe('ValidationError');
    expect(caughtMessage(refused)).toMatch(
      /^pipeline sales_order_lines: checks\.measures names weight of analytics\.sales_order_lines, which is double precision: .*declare it with a tolerance/,
    );
    expect(await wf.fingerprint(LIVE)).toEqual(live);

    wf.reset();
    pipelines[index] = withChecks({ measures: [{ column: 'weight', tolerance: { relative: 1e-9 } }] }, { sourceSql });

    const accepted = await wf.run(inputFor(10), 'float-with-tolerance');

    expect(accepted.status, `${accepted.error}: ${accepted.cause}`).toBe('SUCCEEDED');
    expect((await recorded(wf, batchId(10))).staging_sums_match_source).toMatchObject({
      passed: true,
      expected: 'sums of weight (tolerance relative 1e-9) equal in every chunk',
    });
  });
});

describe('drift against live under replace-intervals', () => {
  const wf = useFork(fixture);

  it('compares only the live rows of the replaced days, and fails the day the source lost', async () => {
    // Live first holds days 0 to 8 of the source; then the days 7 and 8 are replaced.
    pipelines[index] = withChecks({});
    const published = await wf.run(inputFor(9), 'publish-to-day-9');
    expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
    wf.reset();
    pipelines[index] = withChecks({ drift: { rowCount: DRIFT.rowCount } }, { publishMode: 'replace-intervals' });
    await wf.query(
      `DELETE FROM source.sales_order_lines WHERE (order_id, line_no) IN (
         SELECT order_id, line_no FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 100)`,
      [day(8), day(9)],
    );
    const live = await wf.fingerprint(LIVE);
    const input = { pipeline: salesOrderLines.name, from: sampleDay(7).toISOString(), to: sampleDay(9).toISOString() };

    const result = await wf.run(input, 'replace-truncated');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    const id = batchIdFor(pipelines[index]!, resolveInterval(input, pipelines[index]!, new Date()));
    expect(await failed(wf, id)).toEqual(['live_row_count_drift']);
    expect((await recorded(wf, id)).live_row_count_drift).toMatchObject({
      observed: '1 of 2 chunk(s) compared outside the bounds',
      details: `#1 2026-01-09 00:00:00: live ${ROWS_PER_DAY}, staging 20, -83.3%`,
    });
  });
});

describe('drift checks the live table does not fit, refused in Plan before any load', () => {
  const wf = useFork(fixture);

  it('refuses a NULL-rate column the live table lacks, naming the pipeline and the check', async () => {
    pipelines[index] = withChecks({ drift: { nullRate: { columns: ['discount'], maxIncreasePoints: 5 } } });
    const live = await wf.fingerprint(LIVE);

    const result = await wf.run(inputFor(11), 'bad-null-rate-column');

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toMatch(
      /^pipeline sales_order_lines: check live_null_rate_drift \(checks\.drift\.nullRate\.columns\) names discount, which is not a column of analytics\.sales_order_lines/,
    );
    expect(await wf.fingerprint(LIVE)).toEqual(live);
  });
});

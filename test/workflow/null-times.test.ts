// Source rows whose time is NULL belong to no chunk: Reconcile counts them
// and, by the spec's nullTimes, fails the batch naming them or quarantines
// them and publishes the rest. The sample pipeline's source query here lets
// such rows through its own filter, as the spec's documentation asks; one
// whose filter hides them is refused by Plan before anything is written,
// unless it leaves them out on purpose (IS NOT NULL).
// The source with its NULL-time rows is arranged once; each test runs on
// a copy of its own (test/support/workflow.ts useFork).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { NullTimes } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { caughtError, caughtMessage, inputFor, LIVE, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const TO_DAY = 5;
const NULL_ROWS = 7;
const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
const sourceSql = salesOrderLines.sourceSql.replace(
  'WHERE ordered_at >= :start AND ordered_at < :end',
  'WHERE (ordered_at >= :start AND ordered_at < :end) OR ordered_at IS NULL',
);
/** The sample pipeline with NULL times let through (or another source query), and what becomes of them (deployed as a new spec would be: the functions read this list). */
function deploy(nullTimes: NullTimes | undefined, sql = sourceSql): void {
  pipelines[index] = definePipeline({ ...salesOrderLines, sourceSql: sql, ...(nullTimes ? { nullTimes } : {}) });
}
deploy('fail');

const fixture = useWorkflowFixture('wf_null_times', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 6, liveDays: 3 });
  await wf.query('ALTER TABLE source.sales_order_lines ALTER COLUMN ordered_at DROP NOT NULL');
  await wf.query(`INSERT INTO source.sales_order_lines SELECT 800000000 + n, 1, NULL, 1, 1, 2, 10.00 FROM generate_series(1, ${NULL_ROWS}) AS n`);
});
afterAll(() => deploy('fail'));

/** The batch id of the run up to TO_DAY under the deployed spec (nullTimes is not part of the spec's hash: both deploys make the same batch). */
const batchId = () => batchIdFor(pipelines[index]!, resolveInterval(inputFor(TO_DAY), pipelines[index]!, new Date()));
const quarantined = (wf: Workflow) =>
  wf.query<{ order_id: string; batch_id: string }>('SELECT order_id, batch_id FROM analytics.sales_order_lines__quarantine ORDER BY order_id');

describe("source rows with no time under nullTimes 'fail'", () => {
  const wf = useFork(fixture);
  beforeAll(() => deploy('fail'));

  it("fails the batch under nullTimes 'fail', naming the rows, with the live table untouched", async () => {
    const before = await wf.fingerprint(LIVE);

    const result = await wf.run(inputFor(TO_DAY), 'null-times-fail');

    expect(result.status).toBe('FAILED');
    const message = result.alerts[0]?.message ?? '';
    expect(message).toContain(`source_time_not_null: observed ${NULL_ROWS} source row(s) with no ordered_at`);
    expect(await wf.fingerprint(LIVE)).toEqual(before);
    const [check] = await wf.query<{ passed: boolean; details: string }>(
      `SELECT passed, details FROM atomic_publish.check_results WHERE batch_id = $1 AND check_name = 'source_time_not_null'`,
      [batchId()],
    );
    expect(check).toEqual({ passed: false, details: expect.stringContaining('(order_id, line_no) = (800000001, 1); (order_id, line_no) = (800000002, 1)') });
    expect(await wf.tableExists('analytics.sales_order_lines__quarantine')).toBe(false);
  });
});

describe("source rows with no time under nullTimes 'quarantine'", () => {
  const wf = useFork(fixture);
  beforeAll(() => deploy('fail'));

  it("publishes the rest under nullTimes 'quarantine', keeping the rows aside and counting them as rejected; a replay keeps them once", async () => {
    // The batch nullTimes 'fail' makes: 'quarantine' makes the same one.
    const underFail = batchId();
    deploy('quarantine');
    expect(batchId()).toBe(underFail);

    const result = await wf.run(inputFor(TO_DAY), 'null-times-quarantine');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
    expect((await quarantined(wf)).map((r) => [r.order_id, r.batch_id])).toEqual(
      Array.from({ length: NULL_ROWS }, (_, i) => [String(800000001 + i), underFail]),
    );
    expect((await wf.batch(underFail))?.rows_rejected).toBe(String(NULL_ROWS));

    const replay = await wf.run(inputFor(TO_DAY), 'null-times-replay');
    expect(replay.status).toBe('SUCCEEDED');
    expect(await quarantined(wf)).toHaveLength(NULL_ROWS);
  });
});

describe('a source query whose filter hides the rows with no time', () => {
  const wf = useFork(fixture);
  afterAll(() => deploy('fail'));

  it.each([
    ['no nullTimes policy', undefined],
    ["nullTimes 'quarantine'", 'quarantine' as const],
  ])('is refused by Plan under %s, naming the column and the choices, before anything is written', async (_, nullTimes) => {
    // The sample's own query: WHERE ordered_at >= :start AND ordered_at < :end returns none of the NULL-time rows.
    deploy(nullTimes, salesOrderLines.sourceSql);
    const before = await wf.fingerprint(LIVE);
    const tables = await wf.derivedTables();
    const manifest = await wf.schemaExists('atomic_publish');

    const result = await wf.run(inputFor(TO_DAY), `null-times-hidden-${nullTimes ?? 'default'}`);

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toBe(
      'pipeline sales_order_lines: field sourceSql would drop rows without a word: it filters the interval on source.sales_order_lines.ordered_at, ' +
        'which can be NULL, and a row with no ordered_at passes no comparison with :start and :end, so no check sees it. ' +
        'Let such rows through the filter (WHERE (ordered_at >= :start AND ordered_at < :end) OR ordered_at IS NULL) and choose with nullTimes ' +
        "what becomes of them: 'fail' (the default: the run fails naming them) or 'quarantine' (kept in sales_order_lines__quarantine, the rest published); " +
        'or leave them out on purpose (AND ordered_at IS NOT NULL)',
    );
    // Nothing written: no manifest if there was none (another test of the fork may have run), no batch, no staging, the live table as it was.
    expect(await wf.schemaExists('atomic_publish'), 'manifest schema atomic_publish').toBe(manifest);
    expect(manifest ? await wf.batch(batchId()) : undefined).toBeUndefined();
    expect(await wf.derivedTables()).toEqual(tables);
    expect(await wf.fingerprint(LIVE)).toEqual(before);
  });

  it('publishes when the query leaves them out on purpose (IS NOT NULL)', async () => {
    deploy(undefined, `${salesOrderLines.sourceSql} AND ordered_at IS NOT NULL`);

    const result = await wf.run(inputFor(TO_DAY), 'null-times-excluded');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
  });
});

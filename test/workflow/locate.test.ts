// Where a failed gate's difference lies, on real parts: within the chunks
// that differ, the day (and declared dimension values) whose rows, sums or
// checksum disagree, and the business keys that differ in both directions,
// shown in the alert and recorded in check_results. A passing run issues no
// locating statement; a dimension the live table lacks is refused by Plan.
// The sample warehouse is arranged once; every test acts on a copy of its
// own (test/support/workflow.ts useFork, test/support/fork-per-test.ts).
import { afterAll, describe, expect, it } from 'vitest';
import type { BatchRef } from '../../domain/batch.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { correctAmountsInPlace, sampleDay } from '../../local/sample-data.ts';
import { dayStart, deploySampleChecks, latestChecks, restoreSample, sampleBatchId, sourceAmountOfDay } from '../support/check-results.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { type StatementLog, statementCounter } from '../support/statement-faults.ts';
import { caughtError, caughtMessage, inputFor, LIVE, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const ROWS_PER_DAY = 120;
/** The sample pipeline with measures (and the given checks) declared. */
const deploy = (checks: PipelineSpec['checks'] = {}) => deploySampleChecks({ allowEmpty: false, measures: ['quantity', 'amount'], ...checks });

const fixture = useWorkflowFixture('wf_locate', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 10, liveDays: 5 });
});
afterAll(() => restoreSample());

const batchId = sampleBatchId;
const day = dayStart;
const date = (n: number) => day(n).slice(0, 10);
const checks = (wf: Workflow, id: string) => latestChecks(wf, id);
/** Reconcile with every statement it waits for logged by name. */
const logReconcile = (wf: Workflow, log: StatementLog) => {
  const counter = statementCounter();
  wf.faults.Reconcile = (input, next) => counter.within({}, () => next(input), log);
};
const locating = (log: StatementLog) => log.names.filter((n) => n.includes(':reconcile:locate-'));
/** The first `limit` source rows of sample day n in key order. */
const firstKeys = (wf: Workflow, n: number, limit: number) =>
  wf.query<{ order_id: string; line_no: number; product_id: number }>(
    'SELECT order_id, line_no, product_id FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT $3',
    [day(n), day(n + 1), limit],
  );
const sourceAmount = (wf: Workflow, n: number) => sourceAmountOfDay(wf, n);

describe('a passing run', () => {
  const wf = useFork(fixture);

  it('issues no locating statement', async () => {
    deploy({ dimensions: ['product_id'] });
    const log: StatementLog = { names: [], fired: false };
    logReconcile(wf, log);

    const result = await wf.run(inputFor(6), 'passing');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(log.names.some((n) => n.includes(':reconcile:chunk-counts:'))).toBe(true);
    expect(locating(log)).toEqual([]);
    expect([...(await checks(wf, batchId(6))).keys()]).not.toContain('difference_located');
  });
});

describe('locating a difference the gate found', () => {
  const wf = useForkPerTest(fixture);

  it('names the chunk, the day and the amount of a correction in place, and the corrected keys', async () => {
    deploy();
    const live = await wf.fingerprint(LIVE);
    const loaded = await sourceAmount(wf, 3);
    const corrected = await firstKeys(wf, 3, 100);
    const log: StatementLog = { names: [], fired: false };
    const counter = statementCounter();
    // After day 3's chunk loaded, 100 of its source rows are corrected: +1,000.00 each, same count.
    wf.faults.Reconcile = async (input, next) => {
      await wf.withClient((db) => correctAmountsInPlace(db, { from: sampleDay(3), to: sampleDay(4) }, 100, '1000.00'));
      return counter.within({}, () => next(input), log);
    };

    const result = await wf.run(inputFor(7), 'correction-in-place');

    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('Publish');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(locating(log).map((n) => n.split(':')[3])).toEqual(['locate-segments', 'locate-keys']);
    const now = await sourceAmount(wf, 3);
    const recorded = await checks(wf, batchId(7));
    expect(recorded.get('difference_located')).toMatchObject({
      passed: false,
      observed: '1 segment(s) by day differ; chunk(s) #3 examined',
      details: `#3 ${date(3)}: rows source ${ROWS_PER_DAY}, staging ${ROWS_PER_DAY}; amount source ${now}, staging ${loaded}, source - staging 100000.00; checksum differs`,
    });
    expect(recorded.get('missing_in_staging')).toMatchObject({ passed: true, observed: expect.stringMatching(/^0 key\(s\)/) });
    expect(recorded.get('missing_in_source')).toMatchObject({ passed: true, observed: expect.stringMatching(/^0 key\(s\)/) });
    const changed = recorded.get('rows_changed')!;
    expect(changed.passed).toBe(false);
    expect(changed.observed).toMatch(/^100 key\(s\) \(order_id, line_no\) on both sides/);
    const first = corrected[0]!;
    expect(changed.details).toMatch(
      new RegExp(`^first keys: \\(order_id, line_no\\) = \\(${first.order_id}, ${first.line_no}\\): amount source [\\d.]+, staging [\\d.]+; .*; and 95 more$`),
    );

    const { message } = result.alerts[0]!;
    expect(message).toContain('Where the content differs (1 of 1 segment(s) by day; chunk(s) #3 examined):');
    expect(message).toMatch(
      new RegExp(
        `│ +3 │ ${date(3)} │ +${ROWS_PER_DAY} │ +${ROWS_PER_DAY} │ +(\\d+) │ +\\1 │ +0 │ +${now.replace('.', '\\.')} │ +${loaded.replace('.', '\\.')} │ +100000\\.00 │ differs +│`,
      ),
    );
    expect(message).toContain('  on both sides, rows differ: 100 (first keys: (order_id, line_no) = (');
    expect(message).toContain('  in the source, missing from staging: 0\n');
  });

  it('names the dimension value whose rows were corrected', async () => {
    deploy({ dimensions: ['product_id'] });
    const [row] = await firstKeys(wf, 4, 1);
    const product = row!.product_id;
    wf.faults.Reconcile = async (input, next) => {
      await wf.query('UPDATE source.sales_order_lines SET amount = amount + 1000.00 WHERE product_id = $1 AND ordered_at >= $2 AND ordered_at < $3', [
        product,
        day(4),
        day(5),
      ]);
      return next(input);
    };
    const rows = Number(
      (
        await wf.query<{ n: string }>('SELECT COUNT(*) AS n FROM source.sales_order_lines WHERE product_id = $1 AND ordered_at >= $2 AND ordered_at < $3', [
          product,
          day(4),
          day(5),
        ])
      )[0]!.n,
    );

    const result = await wf.run(inputFor(8), 'dimension');

    expect(result.status).toBe('FAILED');
    const located = (await checks(wf, batchId(8))).get('difference_located')!;
    expect(located.observed).toBe('1 segment(s) by day, product_id differ; chunk(s) #4 examined');
    expect(located.details).toMatch(
      new RegExp(
        `^#4 ${date(4)} product_id=${product}: rows source ${rows}, staging ${rows}; amount source [\\d.]+, staging [\\d.]+, source - staging ${rows * 1000}\\.00; checksum differs$`,
      ),
    );
    const { message } = result.alerts[0]!;
    expect(message).toMatch(new RegExp(`│ chunk │ day +│ product_id │ rows source │`));
    expect(message).toMatch(new RegExp(`│ +4 │ ${date(4)} │ ${product} +│ +${rows} │ +${rows} │`));
  });

  it('shows a swapped key in both anti-join directions', async () => {
    deploy();
    const [swapped] = await firstKeys(wf, 5, 1);
    // Same count, same sums: one order line of day 5 now carries another line number.
    wf.faults.Reconcile = async (input, next) => {
      await wf.query('UPDATE source.sales_order_lines SET line_no = line_no + 1000 WHERE order_id = $1 AND line_no = $2', [
        swapped!.order_id,
        swapped!.line_no,
      ]);
      return next(input);
    };

    const result = await wf.run(inputFor(9), 'swapped-key');

    expect(result.status).toBe('FAILED');
    const recorded = await checks(wf, batchId(9));
    const key = (line: number) => `(order_id, line_no) = (${swapped!.order_id}, ${line})`;
    expect(recorded.get('missing_in_staging')).toMatchObject({
      passed: false,
      observed: expect.stringMatching(/^1 key\(s\)/),
      details: `first keys: ${key(swapped!.line_no + 1000)}`,
    });
    expect(recorded.get('missing_in_source')).toMatchObject({
      passed: false,
      observed: expect.stringMatching(/^1 key\(s\)/),
      details: `first keys: ${key(swapped!.line_no)}`,
    });
    expect(recorded.get('rows_changed')).toMatchObject({ passed: true });
    expect(recorded.get('difference_located')!.details).toBe(`#5 ${date(5)}: rows source ${ROWS_PER_DAY}, staging ${ROWS_PER_DAY}; checksum differs`);
    const { message } = result.alerts[0]!;
    expect(message).toContain(`  in the source, missing from staging: 1 (first keys: ${key(swapped!.line_no + 1000)})`);
    expect(message).toContain(`  in staging, missing from the source: 1 (first keys: ${key(swapped!.line_no)})`);
  });

  it('shows a duplicate and an omission that cancel out in the count as a missing key and a key on two rows', async () => {
    deploy();
    const [kept, lost] = await firstKeys(wf, 6, 2);
    // A load that wrote one row of day 6 twice and lost another of the same day: staging's count is right.
    wf.faults.Reconcile = async (input, next) => {
      const staging = `analytics.${(input as { batch: BatchRef }).batch.stagingTable}`;
      await wf.query(`INSERT INTO ${staging} SELECT * FROM ${staging} WHERE order_id = $1 AND line_no = $2`, [kept!.order_id, kept!.line_no]);
      await wf.query(`DELETE FROM ${staging} WHERE order_id = $1 AND line_no = $2`, [lost!.order_id, lost!.line_no]);
      return next(input);
    };

    const result = await wf.run(inputFor(10), 'duplicate-and-omission');

    expect(result.status).toBe('FAILED');
    const recorded = await checks(wf, batchId(10));
    expect(recorded.get('staging_rows_match_source')?.passed).toBe(true);
    expect(recorded.get('missing_in_staging')?.details).toBe(`first keys: (order_id, line_no) = (${lost!.order_id}, ${lost!.line_no})`);
    expect(recorded.get('missing_in_source')?.passed).toBe(true);
    expect(recorded.get('rows_changed')?.details).toBe(`first keys: (order_id, line_no) = (${kept!.order_id}, ${kept!.line_no}): rows source 1, staging 2`);
    expect(recorded.get('difference_located')!.observed).toBe('1 segment(s) by day differ; chunk(s) #6 examined');
  });
});

describe('many chunks that differ', () => {
  const wf = useFork(fixture);

  it('examines the first 5 in order and says how many differ in all', async () => {
    deploy();
    // The batch up to day 10: one row of each of days 0 to 6 corrected after the loads.
    wf.faults.Reconcile = async (input, next) => {
      for (let n = 0; n <= 6; n++) await wf.withClient((db) => correctAmountsInPlace(db, { from: sampleDay(n), to: sampleDay(n + 1) }, 1, '0.01'));
      return next(input);
    };

    const result = await wf.run(inputFor(10), 'seven-chunks');

    expect(result.status).toBe('FAILED');
    const located = (await checks(wf, batchId(10))).get('difference_located')!;
    expect(located.observed).toBe('5 segment(s) by day differ; chunk(s) #0, #1, #2, #3, #4 examined: the first 5 of 7 that differ');
    expect(located.details.split('; #').map((d) => d.replace(/^#/, '').split(':')[0])).toEqual([0, 1, 2, 3, 4].map((n) => `${n} ${date(n)}`));
    expect((await checks(wf, batchId(10))).get('rows_changed')!.observed).toMatch(/^5 key\(s\)/);
    expect(result.alerts[0]!.message).toContain(
      'Where the content differs (5 of 5 segment(s) by day; chunk(s) #0, #1, #2, #3, #4 examined: the first 5 of 7 that differ):',
    );
  });
});

describe('a database error while locating', () => {
  // The key statement of locating fails with a database error.
  const wf = useFork(fixture, {
    statementError: ({ name }) => (name?.includes(':reconcile:locate-keys:') ? 'ERROR: out of memory DETAIL: injected while locating' : undefined),
  });

  it('leaves the gate failed and recorded, with the location named as not found', async () => {
    deploy();
    wf.faults.Reconcile = async (input, next) => {
      await wf.withClient((db) => correctAmountsInPlace(db, { from: sampleDay(2), to: sampleDay(3) }, 3, '1.00'));
      return next(input);
    };

    const result = await wf.run(inputFor(5), 'locating-fails');

    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    const recorded = await checks(wf, batchId(5));
    expect(recorded.get('staging_sums_match_source')?.passed).toBe(false);
    expect(recorded.get('difference_located')).toMatchObject({
      passed: false,
      observed: expect.stringMatching(/^not located: WarehouseError: .*out of memory/),
    });
    expect(result.alerts[0]!.message).toMatch(/Where the content differs: not located \(WarehouseError: .*out of memory.*\); the gate's checks above stand\./);
  });
});

describe('bad dimension specs', () => {
  const wf = useFork(fixture);

  it('are refused by Plan before any load, naming the pipeline and the check', async () => {
    deploy({ dimensions: ['region'] });

    const result = await wf.run(inputFor(9), 'no-such-dimension');

    expect(result.status).toBe('FAILED');
    expect(wf.loads.started).toEqual([]);
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toContain('pipeline sales_order_lines: checks.dimensions names region, which is not a column of analytics.sales_order_lines');
  });
});

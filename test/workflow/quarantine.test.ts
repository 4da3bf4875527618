// Row-level rules and the quarantine through the state machine: NULL business keys,
// rows breaking a check with action quarantine, and duplicate keys move with their
// reason; the rest publishes within checks.quarantine and is blocked over it; the
// gate's counts and checksum hold; a retry moves nothing twice; a stale chunk leaves
// none of its earlier rows behind. Why: docs/decisions/quarantine-for-row-level-rules.md
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { caughtError, caughtMessage, type Fingerprint, inputFor, LIVE, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
const original = pipelines[index]!;
const QUARANTINE = 'analytics.sales_order_lines__quarantine';
const TO_DAY = 6;
const RULES = {
  notNull: [{ column: 'product_id', action: 'quarantine' as const }],
  acceptedValues: [{ column: 'quantity', values: [1, 2, 3, 4, 5, 6, 7, 8, 9], action: 'quarantine' as const }],
  // A product code kept as text, as the order system writes it.
  pattern: [{ column: 'sku', regex: '^SKU-\\d+$', action: 'quarantine' as const }],
};
/** The sample pipeline with the text column sku loaded too. */
const sourceSql = salesOrderLines.sourceSql.replace('SELECT order_id,', 'SELECT sku, order_id,');
function deploy(checks: PipelineSpec['checks']): void {
  pipelines[index] = definePipeline({ ...salesOrderLines, sourceSql, checks: { allowEmpty: false, ...checks } });
}
const batchId = () => batchIdFor(pipelines[index]!, resolveInterval(inputFor(TO_DAY), pipelines[index]!, new Date()));

/** The source's rows the live table should hold: those breaking no rule, one copy of identical rows. */
const PUBLISHABLE = `(SELECT DISTINCT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount,
                             CAST(amount / quantity AS numeric(12, 4)) AS unit_price
                        FROM source.sales_order_lines AS s
                       WHERE ordered_at < '2026-01-07' AND line_no IS NOT NULL AND product_id IS NOT NULL AND quantity BETWEEN 1 AND 9 AND sku ~ '^SKU-[0-9]+$'
                         AND (SELECT COUNT(DISTINCT (c.customer_id, c.product_id, c.quantity, c.amount)) FROM source.sales_order_lines AS c
                               WHERE c.order_id = s.order_id AND c.line_no = s.line_no) = 1) AS publishable`;

interface Row {
  order_id: string;
  line_no: number | null;
  reason: string;
}
const quarantined = (wf: Workflow, id: string) =>
  wf.query<Row>(`SELECT order_id, line_no, reason FROM ${QUARANTINE} WHERE batch_id = $1 ORDER BY reason, order_id, line_no, amount`, [id]);
const check = (wf: Workflow, id: string, name: string) =>
  wf
    .query<{ passed: boolean; observed: string; expected: string; details: string }>(
      `SELECT passed, observed, expected, details FROM atomic_publish.check_results
        WHERE batch_id = $1 AND check_name = $2 ORDER BY attempt DESC LIMIT 1`,
      [id, name],
    )
    .then((rows) => rows[0]);

const fixture = useWorkflowFixture('wf_quarantine', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 8, liveDays: 3 });
  for (const table of ['source.sales_order_lines', LIVE]) {
    for (const column of ['line_no', 'product_id']) await wf.query(`ALTER TABLE ${table} ALTER COLUMN ${column} DROP NOT NULL`);
    await wf.query(`ALTER TABLE ${table} ADD COLUMN sku varchar(16)`);
    await wf.query(`UPDATE ${table} SET sku = 'SKU-' || product_id`);
  }
  // Upstream mistakes, one of each rule, all before TO_DAY.
  await wf.query('UPDATE source.sales_order_lines SET line_no = NULL WHERE order_id = 5 AND line_no = 1');
  await wf.query('UPDATE source.sales_order_lines SET product_id = NULL WHERE order_id = 10 AND line_no = 2');
  await wf.query('UPDATE source.sales_order_lines SET quantity = 42 WHERE order_id = 20 AND line_no = 1');
  await wf.query(`UPDATE source.sales_order_lines SET sku = 'SKU-1O4' WHERE order_id = 35 AND line_no = 3`);
  // Order line (30, 1) twice, with different amounts; (40, 2) three times, the same.
  await wf.query(
    'INSERT INTO source.sales_order_lines SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount + 1 FROM source.sales_order_lines WHERE order_id = 30 AND line_no = 1',
  );
  for (let i = 0; i < 2; i++)
    await wf.query('INSERT INTO source.sales_order_lines SELECT * FROM source.sales_order_lines WHERE order_id = 40 AND line_no = 2 LIMIT 1');
  // A quarantine table from before row-level rules (NULL-time rows only), owned by the pipeline's user, with a row of another batch.
  await wf.query(
    `CREATE TABLE ${QUARANTINE} AS SELECT CAST('legacy' AS varchar(32)) AS batch_id, CAST(NULL AS timestamp) AS quarantined_at, * FROM ${LIVE} WHERE order_id = 1 AND line_no = 1`,
  );
  await wf.query(`ALTER TABLE ${QUARANTINE} OWNER TO "${LOCAL_PIPELINE_USER}"`);
});
afterAll(() => {
  pipelines[index] = original;
});

const QUARANTINED: Row[] = [
  { order_id: '5', line_no: null, reason: 'business key NULL' },
  { order_id: '20', line_no: 1, reason: 'accepted_values:quantity' },
  { order_id: '30', line_no: 1, reason: 'duplicate (conflicting)' },
  { order_id: '30', line_no: 1, reason: 'duplicate (conflicting)' },
  { order_id: '40', line_no: 2, reason: 'duplicate (identical)' },
  { order_id: '40', line_no: 2, reason: 'duplicate (identical)' },
  { order_id: '10', line_no: 2, reason: 'not_null:product_id' },
  { order_id: '35', line_no: 3, reason: 'pattern:sku' },
].sort((a, b) => (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : Number(a.order_id) - Number(b.order_id)));

describe('a pattern declared without the quarantine', () => {
  const wf = useFork(fixture);

  it('counts and blocks on a pattern declared without the quarantine, naming the rows, like any declared check', async () => {
    deploy({ pattern: [{ column: 'sku', regex: RULES.pattern[0]!.regex }] });

    const result = await wf.run(inputFor(TO_DAY), 'pattern-block');

    expect(result.status).toBe('FAILED');
    expect(await wf.tableExists(QUARANTINE)).toBe(true);
    expect(await wf.query(`SELECT * FROM ${QUARANTINE} WHERE batch_id <> 'legacy'`)).toEqual([]);
    expect(await check(wf, batchId(), 'pattern:sku')).toEqual({
      passed: false,
      observed: '1 row(s) whose sku does not match its pattern',
      expected: 'at most 0 (tolerance), severity block',
      details: 'sample: (order_id, line_no) = (35, 3): sku SKU-1O4',
    });
  });
});

describe('quarantined rows over the tolerance', () => {
  const wf = useFork(fixture);
  let live: Fingerprint;
  let result: ExecutionResult;
  let id: string;
  beforeAll(async () => {
    deploy({ ...RULES, quarantine: { maxRows: 2 } });
    id = batchId();
    live = await wf.fingerprint(LIVE);
    result = await wf.run(inputFor(TO_DAY), 'quarantine-over');
  });

  it('blocks the batch when the quarantined rows exceed the tolerance, naming the reasons, where they are and sample keys; live untouched', async () => {
    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('Publish');
    expect(caughtError(result)?.Error, caughtMessage(result)).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect(await quarantined(wf, id)).toEqual(QUARANTINED);
    const recorded = await check(wf, id, 'quarantine_within_tolerance');
    expect(recorded).toMatchObject({ passed: false, expected: 'at most 2 row(s) quarantined (checks.quarantine)' });
    expect(recorded!.observed).toMatch(
      new RegExp(
        `^8 row\\(s\\) quarantined \\([\\d.]+% of 123\\) in ${QUARANTINE} \\(batch_id = '${id}'\\): accepted_values:quantity: 1, business key NULL: 1, duplicate \\(conflicting\\): 2, duplicate \\(identical\\): 2, not_null:product_id: 1, pattern:sku: 1$`,
      ),
    );
    expect(recorded!.details).toContain('duplicate (conflicting): (order_id, line_no) = (30, 1); (order_id, line_no) = (30, 1)');
    expect(recorded!.details).toContain('business key NULL: (order_id, line_no) = (5, NULL)');
    const message = caughtMessage(result);
    expect(message).toContain(`quarantine_within_tolerance: observed 8 row(s) quarantined`);
    expect(message).toContain(`in ${QUARANTINE} (batch_id = '${id}')`);
    // Everything but the tolerance holds: the gate counts the quarantined rows with staging's.
    const failed = await wf.query<{ check_name: string }>(
      `SELECT check_name FROM atomic_publish.check_results WHERE batch_id = $1 AND NOT passed ORDER BY check_name`,
      [id],
    );
    expect(failed.map((c) => c.check_name)).toEqual(['quarantine_within_tolerance']);
    expect((await wf.batch(id))?.rows_rejected).toBe('8');
  });

  it('gave the quarantine table from before row-level rules their columns, leaving its rows as they were', async () => {
    const columns = await wf.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines__quarantine' ORDER BY ordinal_position`,
    );
    expect(columns.map((c) => c.column_name).slice(0, 3)).toEqual(['batch_id', 'quarantined_at', 'order_id']);
    expect(columns.map((c) => c.column_name).slice(-3)).toEqual(['reason', 'chunk_index', 'generation']);
    expect(await wf.query(`SELECT order_id, reason, chunk_index FROM ${QUARANTINE} WHERE batch_id = 'legacy'`)).toEqual([
      { order_id: '1', reason: null, chunk_index: null },
    ]);
  });
});

describe('a check of a batch whose run quarantined rows over the tolerance', () => {
  const wf = useFork(fixture);
  beforeAll(async () => {
    deploy({ ...RULES, quarantine: { maxRows: 2 } });
    // The run's rejected rows, which the check must leave as they are.
    const run = await wf.run(inputFor(TO_DAY), 'quarantine-over');
    expect(run.status).toBe('FAILED');
  });

  it('a check judges the quarantine as a run does, and leaves none of its rows in the quarantine table: it holds only what runs rejected', async () => {
    deploy({ ...RULES, quarantine: { maxRows: 2 } });
    const live = await wf.fingerprint(LIVE);
    const checkId = batchIdFor(pipelines[index]!, resolveInterval(inputFor(TO_DAY), pipelines[index]!, new Date()), { kind: 'check', n: 1 });

    const result = await wf.run({ ...inputFor(TO_DAY), check: true }, 'quarantine-check');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(visited(result)).toContain('Checked');
    expect((result.output?.reconcile as { passed: boolean }).passed).toBe(false);
    expect(await check(wf, checkId, 'quarantine_within_tolerance')).toMatchObject({
      passed: false,
      observed: expect.stringMatching(/^8 row\(s\) quarantined/),
    });
    expect(await quarantined(wf, checkId)).toEqual([]);
    // The run's rejected rows stay.
    expect(await quarantined(wf, batchId())).toEqual(QUARANTINED);
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    expect((await wf.batch(checkId))?.status).toBe('CHECK_FAILED');
  });
});

describe('quarantined rows within the tolerance', () => {
  const wf = useFork(fixture);

  it('publishes the rest within the tolerance, with the gate passing; a retried Reconcile quarantines nothing twice', async () => {
    deploy({ ...RULES, quarantine: { maxRows: 10, maxPct: 10 } });
    // Reconcile runs twice (a retry after a lost response): the second finds nothing left to move.
    wf.faults.Reconcile = async (input, next) => {
      await next(input);
      return next(input);
    };

    const result = await wf.run(inputFor(TO_DAY), 'quarantine-within');
    wf.reset();

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.fingerprint(PUBLISHABLE));
    expect(await wf.fingerprint(LIVE)).not.toEqual(await wf.expected(TO_DAY));
    const id = batchId();
    expect(await quarantined(wf, id)).toEqual(QUARANTINED);
    for (const name of [
      'staging_rows_match_source',
      'staging_rows_match_load_record',
      'staging_content_matches_source',
      'business_key_unique',
      'quarantine_within_tolerance',
    ]) {
      expect((await check(wf, id, name))?.passed, name).toBe(true);
    }
    expect((await check(wf, id, 'quarantine_within_tolerance'))!.expected).toBe(
      'at most 10 row(s) and 10% of 123 source row(s) quarantined (checks.quarantine)',
    );
    for (const name of ['not_null:product_id', 'accepted_values:quantity', 'pattern:sku']) expect((await check(wf, id, name))?.passed, name).toBe(true);
    const batch = await wf.batch(id);
    expect(batch).toMatchObject({ status: 'PUBLISHED', rows_read: '123', rows_rejected: '8', rows_written: '115' });
  });
});

describe('a chunk reloaded as stale', () => {
  const wf = useFork(fixture);

  it('judges a chunk reloaded as stale afresh, leaving none of its earlier quarantined rows', async () => {
    deploy({ ...RULES, quarantine: { maxRows: 3 } });
    const id = batchId();
    const over = await wf.run(inputFor(TO_DAY), 'quarantine-over-again');
    expect(over.status).toBe('FAILED');
    expect(await quarantined(wf, id)).toEqual(QUARANTINED);
    // The same batch again, after upstream fixed most rows.
    await wf.query('UPDATE source.sales_order_lines SET product_id = 7 WHERE order_id = 10 AND line_no = 2');
    await wf.query('UPDATE source.sales_order_lines SET quantity = 3 WHERE order_id = 20 AND line_no = 1');
    await wf.query('UPDATE source.sales_order_lines SET line_no = 1 WHERE order_id = 5 AND line_no IS NULL');
    await wf.query(`UPDATE source.sales_order_lines SET sku = 'SKU-104' WHERE order_id = 35 AND line_no = 3`);
    await wf.query(
      'DELETE FROM source.sales_order_lines WHERE order_id = 30 AND line_no = 1 AND amount = (SELECT MAX(amount) FROM source.sales_order_lines WHERE order_id = 30 AND line_no = 1)',
    );

    // The chunks whose rows changed differ from what staging and the quarantine hold: found stale.
    const stale = await wf.run(inputFor(TO_DAY), 'quarantine-stale');
    expect(stale.status).toBe('FAILED');
    expect((await check(wf, id, 'staging_content_matches_source'))?.passed).toBe(false);

    const reloaded = await wf.run(inputFor(TO_DAY), 'quarantine-reloaded');

    expect(reloaded.status, `${reloaded.error}: ${reloaded.cause}`).toBe('SUCCEEDED');
    expect(await quarantined(wf, id)).toEqual(QUARANTINED.filter((r) => r.reason === 'duplicate (identical)'));
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.fingerprint(PUBLISHABLE));
    expect((await wf.batch(id))?.rows_rejected).toBe('2');
    expect((await check(wf, id, 'staging_content_matches_source'))?.passed).toBe(true);
  });
});

describe('row-level rules the warehouse does not fit', () => {
  const wf = useForkPerTest(fixture);

  it.each<[string, PipelineSpec['checks'], RegExp]>([
    [
      'a quarantining check on a column the live table lacks',
      { notNull: [{ column: 'discount', action: 'quarantine' }], quarantine: { maxRows: 1 } },
      /check not_null:discount names discount, which is not a column of analytics\.sales_order_lines/,
    ],
    [
      'a pattern on a column that is not text',
      { pattern: [{ column: 'quantity', regex: '^[0-9]+$', action: 'quarantine' }], quarantine: { maxRows: 1 } },
      /check pattern:quantity matches quantity of analytics\.sales_order_lines, which is integer: a pattern reads a text column/,
    ],
  ])('refuses %s in Plan, before any load', async (what, checks, message) => {
    deploy(checks);

    const result = await wf.run(inputFor(TO_DAY + 1), `quarantine-bad-${what.replace(/\W+/g, '-').slice(0, 40)}`);

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toMatch(message);
  });
});

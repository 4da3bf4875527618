// Declared checks on staging's rows (notNull, acceptedValues, references, custom
// SQL) through the state machine: the sample passes; rows breaking a blocking check
// fail the run, live untouched, naming the check and a few keys; as warnings they
// are recorded and the batch publishes; a check naming what the warehouse lacks is
// refused in Plan. Why: docs/decisions/declared-checks-with-severity.md

// First: it replaces the pipelines before any other module reads them.
import '../support/declared-checks-pipeline.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { CUSTOMERS, DECLARED_CHECKS, index, withChecks } from '../support/declared-checks-pipeline.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { caughtError, caughtMessage, inputFor, LIVE, stateEvents, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

/** The sample pipeline with DECLARED_CHECKS (test/support/declared-checks-pipeline.ts). */
const declared = pipelines[index]!;
const fixture = useWorkflowFixture('wf_declared_checks', async (wf) => {
  // The parent table exists before the setup grants reading it.
  await wf.query('DROP SCHEMA IF EXISTS crm CASCADE');
  await wf.query('CREATE SCHEMA crm');
  await wf.query(`CREATE TABLE ${CUSTOMERS} (customer_id int NOT NULL, name varchar(64))`);
  await wf.query(`INSERT INTO ${CUSTOMERS} SELECT n, 'customer ' || n FROM generate_series(1, 50000) AS n`);
  await wf.sample({ rowsPerDay: 24, sourceDays: 10, liveDays: 5 });
  // Product may be unknown upstream: a NULL the load carries and notNull catches.
  for (const table of ['source.sales_order_lines', LIVE]) await wf.query(`ALTER TABLE ${table} ALTER COLUMN product_id DROP NOT NULL`);
});
afterAll(() => {
  pipelines[index] = declared;
});

interface Recorded {
  check_name: string;
  passed: boolean;
  severity: string;
  observed: string;
  expected: string;
  details: string;
}
const batchId = (day: number) => batchIdFor(pipelines[index]!, resolveInterval(inputFor(day), pipelines[index]!, new Date()));
/** The declared checks' results of the batch's latest attempt, by name. */
async function declaredResults(wf: Workflow, id: string): Promise<Record<string, Recorded>> {
  const rows = await wf.query<Recorded>(
    `SELECT check_name, passed, severity, observed, expected, details FROM atomic_publish.check_results
      WHERE batch_id = $1 AND attempt = (SELECT MAX(attempt) FROM atomic_publish.check_results WHERE batch_id = $1)
        AND check_name ~ '^(not_null|accepted_values|references|sql):' ORDER BY check_name`,
    [id],
  );
  return Object.fromEntries(rows.map((r) => [r.check_name, r]));
}
const NAMES = ['accepted_values:quantity', 'not_null:product_id', 'references:customer_id', 'sql:amount_too_large'];
/** Upstream mistakes, one for each kind, loaded as they are (the gate's counts and checksum agree with the source). */
async function breakEachKind(wf: Workflow): Promise<void> {
  await wf.query('UPDATE source.sales_order_lines SET product_id = NULL WHERE order_id = 10');
  await wf.query('UPDATE source.sales_order_lines SET quantity = 42 WHERE order_id = 20 AND line_no = 1');
  await wf.query('UPDATE source.sales_order_lines SET customer_id = 99999999 WHERE order_id = 30 AND line_no = 2');
  await wf.query('UPDATE source.sales_order_lines SET amount = 9999.00 WHERE order_id = 40 AND line_no = 3');
}

describe('declared checks on the sample data', () => {
  const wf = useFork(fixture);

  it('passes every kind on the sample data, records each with its severity, and publishes', async () => {
    pipelines[index] = declared;

    const result = await wf.run(inputFor(6), 'declared-pass');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
    const recorded = await declaredResults(wf, batchId(6));
    expect(Object.keys(recorded)).toEqual(NAMES);
    for (const name of NAMES) expect(recorded[name]).toMatchObject({ passed: true, severity: 'block', details: '' });
    expect(recorded['not_null:product_id']!.observed).toBe('0 row(s) with NULL product_id');
    expect(recorded['references:customer_id']!.expected).toBe('at most 0 (tolerance), severity block');
  });
});

describe('declared checks on rows that break them', () => {
  const wf = useFork(fixture);

  it('fails on rows that break each kind, names every check with its offending keys, and leaves live untouched', async () => {
    pipelines[index] = declared;
    await breakEachKind(wf);
    const live = await wf.fingerprint(LIVE);

    const result = await wf.run(inputFor(7), 'declared-block');

    expect(result.status).toBe('FAILED');
    expect(visited(result)).not.toContain('Publish');
    expect(caughtError(result)?.Error).toBe('CheckFailedError');
    expect(await wf.fingerprint(LIVE)).toEqual(live);
    const failedGate = await wf.query<{ check_name: string }>(
      `SELECT check_name FROM atomic_publish.check_results WHERE batch_id = $1 AND NOT passed ORDER BY check_name`,
      [batchId(7)],
    );
    expect(failedGate.map((c) => c.check_name)).toEqual(NAMES);
    const recorded = await declaredResults(wf, batchId(7));
    expect(recorded['not_null:product_id']).toMatchObject({
      passed: false,
      severity: 'block',
      observed: '3 row(s) with NULL product_id',
      details: 'sample: (order_id, line_no) = (10, 1); (order_id, line_no) = (10, 2); (order_id, line_no) = (10, 3)',
    });
    expect(recorded['accepted_values:quantity']).toMatchObject({ passed: false, details: 'sample: (order_id, line_no) = (20, 1): quantity 42' });
    expect(recorded['accepted_values:quantity']!.observed).toBe('1 row(s) whose quantity is not one of 1, 2, 3, 4, 5, 6, 7, 8, 9');
    expect(recorded['references:customer_id']).toMatchObject({
      passed: false,
      observed: '1 row(s) whose (customer_id) is not in crm.customers (customer_id)',
      details: 'sample: (customer_id) = (99999999) on 1 row(s)',
    });
    expect(recorded['sql:amount_too_large']).toMatchObject({
      passed: false,
      observed: '1 row(s) returned',
      details: 'sample: order_id = 40, line_no = 3, amount = 9999.00',
    });

    const { message } = result.alerts[0]!;
    expect(message).toContain('4 check(s) failed for batch');
    expect(message).toContain('  not_null:product_id: observed 3 row(s) with NULL product_id; expected at most 0 (tolerance), severity block');
    expect(message).toContain('Declared checks that failed (4):');
    expect(message).toMatch(
      /│ references:customer_id +│ block +│ 1 row\(s\) whose \(customer_id\) is not in crm\.customers \(customer_id\) +│ +0 │ \(customer_id\) = \(99999999\) on 1 row\(s\) +│/,
    );
  });
});

describe('declared checks as warnings', () => {
  const wf = useFork(fixture);

  it('records the same rows as warnings, returns them from Reconcile, and publishes; a tolerance lets rows within it pass', async () => {
    await breakEachKind(wf);
    const warn = { severity: 'warn' as const };
    pipelines[index] = withChecks({
      notNull: [{ column: 'product_id', ...warn }],
      acceptedValues: [{ ...DECLARED_CHECKS.acceptedValues[0]!, ...warn, tolerance: 1 }],
      references: [{ ...DECLARED_CHECKS.references[0]!, ...warn }],
      sql: [{ ...DECLARED_CHECKS.sql[0]!, ...warn }],
    });

    const result = await wf.run(inputFor(8), 'declared-warn');

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(8));
    const recorded = await declaredResults(wf, batchId(8));
    expect(recorded['not_null:product_id']).toMatchObject({ passed: false, severity: 'warn', observed: '3 row(s) with NULL product_id' });
    expect(recorded['references:customer_id']).toMatchObject({ passed: false, severity: 'warn', details: 'sample: (customer_id) = (99999999) on 1 row(s)' });
    expect(recorded['sql:amount_too_large']).toMatchObject({ passed: false, severity: 'warn' });
    expect(recorded['accepted_values:quantity']).toMatchObject({
      passed: true,
      severity: 'warn',
      observed: '1 row(s) whose quantity is not one of 1, 2, 3, 4, 5, 6, 7, 8, 9',
      details: '',
    });
    const output = stateEvents(result, 'StateExited', 'Reconcile')[0]!.state!.output as { reconcile: { warnings: { check: string }[] } };
    expect(output.reconcile.warnings.map((w) => w.check)).toEqual(['not_null:product_id', 'references:customer_id', 'sql:amount_too_large']);
    expect((await wf.batch(batchId(8)))?.status).toBe('PUBLISHED');
  });
});

describe('declared checks the warehouse does not fit, refused in Plan before any load', () => {
  const wf = useForkPerTest(fixture);

  it.each<[string, PipelineSpec['checks'], RegExp]>([
    [
      'a notNull column the live table lacks',
      { notNull: ['discount'] },
      /^pipeline sales_order_lines: check not_null:discount names discount, which is not a column of analytics\.sales_order_lines/,
    ],
    [
      'accepted values of another type than the column',
      { acceptedValues: [{ column: 'quantity', values: ['one'] }] },
      /check accepted_values:quantity lists "one" for quantity of analytics\.sales_order_lines, which is integer: list numbers/,
    ],
    [
      'a parent table that does not exist',
      { references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'clients', columns: ['id'] } }] },
      /check references:customer_id references crm\.clients, which does not exist/,
    ],
    [
      'a parent column that does not exist',
      { references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['id'] } }] },
      /check references:customer_id references id, which is not a column of crm\.customers/,
    ],
    [
      'custom SQL reading a table that does not exist',
      { sql: [{ name: 'orphans', sql: 'SELECT s.order_id FROM {staging} AS s JOIN crm.orders AS o ON o.order_id = s.order_id' }] },
      /check sql:orphans does not run on the live table in place of staging: .*crm\.orders/,
    ],
  ])('refuses %s, naming the pipeline and the check', async (what, checks, message) => {
    pipelines[index] = withChecks(checks);
    const live = await wf.fingerprint(LIVE);

    const result = await wf.run(inputFor(9), `bad-${what.replace(/\W+/g, '-').slice(0, 40)}`);

    expect(result.status).toBe('FAILED');
    expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toMatch(message);
    expect(await wf.fingerprint(LIVE)).toEqual(live);
  });
});

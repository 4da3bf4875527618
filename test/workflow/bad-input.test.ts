// Bad input and a warehouse that does not fit the pipeline: every such run
// fails in Plan with a ValidationError that names the problem, pages, and
// writes NOTHING to the warehouse: on this fresh database the manifest
// schema never comes into existence and no staging table appears.
// The sample is arranged once. Runs that must write nothing share a copy of
// it per describe; a test that changes the warehouse, and the run that would
// publish if its check regressed, each get a copy of their own
// (test/support/workflow.ts useFork).
import { beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { STAND_IN_SCHEMAS } from '../../local/data-api/system-views.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { caughtError, caughtMessage, type Fingerprint, inputFor, LIVE, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const SOURCE_FINGERPRINT = `
  SELECT count(*)::int AS rows, COALESCE(sum(order_id * 1000 + line_no), 0)::text AS "keySum",
         md5(COALESCE(string_agg(concat_ws(':', order_id, line_no, ordered_at, quantity, amount), ',' ORDER BY order_id, line_no), '')) AS digest
    FROM source.sales_order_lines`;

const fixture = useWorkflowFixture('wf_bad_input', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: 10, liveDays: 5 });
  return { live: await wf.fingerprint(LIVE), source: (await wf.query<Fingerprint>(SOURCE_FINGERPRINT))[0]! };
});
let live: Fingerprint;
let source: Fingerprint;
beforeAll(() => {
  ({ live, source } = fixture.arranged);
});

/** Nothing of atomic-publish exists in the warehouse, and what was there is unchanged. */
async function expectNothingWritten(wf: Workflow, options: { liveTable?: boolean } = {}): Promise<void> {
  expect(await wf.schemaExists('atomic_publish'), 'manifest schema atomic_publish').toBe(false);
  expect(await wf.derivedTables(), 'staging or old version tables').toEqual([]);
  const tables = await wf.query<{ name: string }>(
    `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
      WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND NOT table_schema = ANY($1) ORDER BY 1`,
    [STAND_IN_SCHEMAS],
  );
  expect(tables.map((t) => t.name)).toEqual(['analytics.daily_sales', ...(options.liveTable === false ? [] : [LIVE]), 'source.sales_order_lines']);
  if (options.liveTable !== false) expect(await wf.fingerprint(LIVE)).toEqual(live);
  expect((await wf.query<Fingerprint>(SOURCE_FINGERPRINT))[0]).toEqual(source);
}

/** Failed in Plan with a ValidationError matching `message`, reported once through RecordFailure and Notify. */
function expectRejected(result: ExecutionResult, message: RegExp, pipeline = 'sales_order_lines'): void {
  expect(result.status).toBe('FAILED');
  expect(result.error).toBe('AtomicPublishFailed');
  expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
  expect(caughtError(result)?.Error).toBe('ValidationError');
  expect(caughtMessage(result)).toMatch(message);
  expect(result.alerts).toHaveLength(1);
  const [alert] = result.alerts;
  expect(alert!.subject).toBe(`atomic-publish: ${pipeline} failed (ValidationError)`);
  expect(alert!.message).toContain(`ValidationError: ${caughtMessage(result)}`);
  expect(alert!.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything.');
  expect(alert!.message).toContain('Manifest:   not updated');
  const failures = result.metrics.filter((m) => 'BatchFailed' in m.values);
  expect(failures).toHaveLength(1);
  expect(failures[0]!.values.BatchFailed).toBe(1);
}

const day = (n: number) => inputFor(n).to;

// Each of these runs writes nothing (what each test proves), so they share one copy.
describe('a refused run', () => {
  const wf = useFork(fixture);

  describe('execution input rejected before anything is written', () => {
    const cases: [string, unknown, RegExp, string?][] = [
      [
        'an unknown pipeline',
        { pipeline: 'sales_order_line', to: day(3) },
        /^unknown pipeline "sales_order_line"; known pipelines: sales_order_lines, daily_sales$/,
        'sales_order_line',
      ],
      ['no pipeline', { to: day(3) }, /^input\.pipeline is required$/, 'run'],
      ['a `to` that is not a date', { pipeline: 'sales_order_lines', to: 'tomorrow' }, /^input\.to must be an ISO 8601 date .*got "tomorrow"$/],
      ['a numeric `to`', { pipeline: 'sales_order_lines', to: 123 }, /^input\.to must be an ISO 8601 date .*got 123$/],
      ['a `to` with an hour past 23', { pipeline: 'sales_order_lines', to: '2026-01-05T25:00:00Z' }, /^input\.to is not a real date: 2026-01-05T25:00:00Z$/],
      [
        'a reversed interval',
        { pipeline: 'sales_order_lines', from: '2026-01-05', to: '2026-01-01' },
        /^interval is empty or reversed: from 2026-01-05T00:00:00\.000Z is not before to 2026-01-01T00:00:00\.000Z$/,
      ],
      ['an empty interval', { pipeline: 'sales_order_lines', to: '2026-01-01' }, /^interval is empty or reversed/],
      [
        'a `to` off the day grain',
        { pipeline: 'sales_order_lines', to: '2026-01-05T12:00:00Z' },
        /^input\.to 2026-01-05T12:00:00\.000Z is not on a day boundary in UTC \(nearest earlier boundary: 2026-01-05T00:00:00\.000Z\)$/,
      ],
      [
        'a `from` other than historyStart on a swap pipeline',
        { pipeline: 'sales_order_lines', from: '2026-01-02', to: day(4) },
        /^pipeline sales_order_lines publishes by swap, which rebuilds the whole table: input\.from must be omitted or equal historyStart/,
      ],
      ['a `to` in the future', { pipeline: 'sales_order_lines', to: '2099-01-01' }, /^input\.to 2099-01-01T00:00:00\.000Z is in the future$/],
      [
        'an unknown extra field',
        { pipeline: 'sales_order_lines', to: day(3), force: true },
        /^input has unknown field\(s\): force \(allowed: pipeline, from, to, restate, check\)$/,
      ],
    ];

    it.each(cases)('rejects %s, pages, and writes nothing', async (_what, input, message, pipeline) => {
      const result = await wf.run(input);
      expectRejected(result, message, pipeline);
      await expectNothingWritten(wf);
    });

    // An input that is not a JSON object cannot take the Catch's `$.error` (States.ResultPathMatchFailure),
    // and a JSONPath `$` over null, 0, "" or false points to no value (States.Runtime): both are terminal,
    // so the run would end with no RecordFailure and no page. The state starts empty instead, and Plan and
    // RecordFailure read the input from the context object (lib/publish-workflow.ts, the Input state).
    it.each([
      ['a string', 'sales_order_lines', '"sales_order_lines"'],
      ['an array', [{ pipeline: 'sales_order_lines' }], '[{"pipeline":"sales_order_lines"}]'],
      ['a number', 42, '42'],
      ['JSON null', null, 'null'],
      ['zero', 0, '0'],
      ['an empty string', '', '""'],
      ['false', false, 'false'],
    ] as [string, unknown, string][])('rejects %s as execution input with a ValidationError and an alert', async (_what, input, shown) => {
      const result = await wf.run(input);
      expect(result.status).toBe('FAILED');
      await expectNothingWritten(wf);
      expect(result.error).toBe('AtomicPublishFailed');
      expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
      expect(caughtError(result)?.Error).toBe('ValidationError');
      expect(caughtMessage(result)).toBe(`execution input must be a JSON object like {"pipeline": "name"}, got ${shown}`);
      expect(result.alerts).toHaveLength(1);
      expect(result.alerts[0]!.message).toContain(`got ${shown}`);
    });
  });

  // An error or alert that quoted a huge input whole would be refused by SNS (256 KB), so the page itself
  // would fail: errors quote outside values through domain/text.ts echo, and the alert is bounded
  // (domain/record-failure/record-failure.ts). Step Functions takes at most 256 KB of input; the local runner refuses
  // more the same way.
  describe('a huge execution input', () => {
    const HUGE = 200_000;

    it.each([
      [
        'a `to` value',
        { pipeline: 'sales_order_lines', to: 'x'.repeat(HUGE) },
        /^input\.to must be an ISO 8601 date .*got "x{100,}\.\.\. \(200002 characters\)$/,
        'sales_order_lines',
      ],
      [
        'a pipeline name',
        { pipeline: 'p'.repeat(HUGE) },
        /^unknown pipeline "p{100,}\.\.\. \(200002 characters\); known pipelines: sales_order_lines, daily_sales$/,
        undefined,
      ],
      [
        'an unknown field name',
        { pipeline: 'sales_order_lines', ['f'.repeat(HUGE)]: 1 },
        /^input has unknown field\(s\): f{100,}\.\.\. \(200000 characters\) \(allowed: pipeline, from, to, restate, check\)$/,
        'sales_order_lines',
      ],
    ] as [string, unknown, RegExp, string | undefined][])(
      'with %s of 200 KB is rejected, pages, and the error and alert stay small',
      async (_what, input, message, pipeline) => {
        const result = await wf.run(input);
        expect(result.status).toBe('FAILED');
        expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
        expect(caughtError(result)?.Error).toBe('ValidationError');
        expect(caughtMessage(result)).toMatch(message);
        expect(Buffer.byteLength(caughtMessage(result))).toBeLessThan(1_024);
        expect(result.alerts).toHaveLength(1);
        const [alert] = result.alerts;
        expect(Buffer.byteLength(alert!.message)).toBeLessThan(4_096);
        expect(alert!.subject!.length).toBeLessThan(100);
        if (pipeline) expect(alert!.subject).toBe(`atomic-publish: ${pipeline} failed (ValidationError)`);
        await expectNothingWritten(wf);
      },
    );

    it('over 256 KB is refused at start, as StartExecution refuses it, and nothing runs', async () => {
      const alerts = wf.runner.alerts.length;
      await expect(wf.run({ pipeline: 'sales_order_lines', to: 'x'.repeat(300_000) })).rejects.toThrow(
        /the execution input is \d+ bytes, more than the 262144 bytes/,
      );
      expect(wf.runner.alerts).toHaveLength(alerts);
      await expectNothingWritten(wf);
    });
  });

  describe("checks.measures that do not fit the live table's columns", () => {
    it.each([
      [
        'a column the live table lacks',
        ['amount', 'discount'],
        /^pipeline sales_order_lines: checks\.measures names discount, which is not a column of analytics\.sales_order_lines: name a numeric column/,
      ],
      [
        'a column that is not a number',
        ['ordered_at'],
        /^pipeline sales_order_lines: checks\.measures names ordered_at of analytics\.sales_order_lines, which is timestamp without time zone; a measure must be a number/,
      ],
    ])('rejects checks.measures naming %s, and writes nothing', async (_label, measures, message) => {
      const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
      const original = pipelines[index]!;
      pipelines[index] = definePipeline({ ...salesOrderLines, checks: { allowEmpty: false, measures } });
      try {
        expectRejected(await wf.run(inputFor(4)), message);
        await expectNothingWritten(wf);
      } finally {
        pipelines[index] = original;
      }
    });
  });
});

describe('a warehouse that does not fit the pipeline', () => {
  describe('without its live table', () => {
    const wf = useFork(fixture);

    it('rejects a run whose live table does not exist, naming the table, and writes nothing', async () => {
      await wf.query(`ALTER TABLE ${LIVE} RENAME TO sales_order_lines_moved`);
      try {
        const result = await wf.run(inputFor(4));
        expectRejected(result, /^live table analytics\.sales_order_lines does not exist: create it once with its DDL/);
        expect(await wf.schemaExists('atomic_publish')).toBe(false);
        expect(await wf.tableExists(LIVE)).toBe(false);
        expect(await wf.derivedTables()).toEqual([]);
      } finally {
        await wf.query(`ALTER TABLE analytics.sales_order_lines_moved RENAME TO sales_order_lines`);
      }
      await expectNothingWritten(wf);
    });
  });

  describe('with a column the source query does not produce', () => {
    const wf = useFork(fixture);

    it('rejects a live table with a column the source query does not produce, naming the column, and writes nothing', async () => {
      await wf.query(`ALTER TABLE ${LIVE} ADD COLUMN discount numeric(12, 2)`);
      try {
        const result = await wf.run(inputFor(4));
        expectRejected(
          result,
          /^pipeline sales_order_lines: the source query does not produce column\(s\) discount of analytics\.sales_order_lines \(it produces: order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price\)$/,
        );
        await expectNothingWritten(wf);
      } finally {
        await wf.query(`ALTER TABLE ${LIVE} DROP COLUMN discount`);
      }
    });
  });

  describe('without its time column', () => {
    const wf = useFork(fixture);

    it('rejects a live table missing the time column, naming it, and writes nothing', async () => {
      await wf.query(`ALTER TABLE ${LIVE} RENAME COLUMN ordered_at TO order_time`);
      try {
        const result = await wf.run(inputFor(4));
        expectRejected(result, /^pipeline sales_order_lines: timeColumn ordered_at is not a column of analytics\.sales_order_lines$/);
        expect(await wf.schemaExists('atomic_publish')).toBe(false);
        expect(await wf.derivedTables()).toEqual([]);
      } finally {
        await wf.query(`ALTER TABLE ${LIVE} RENAME COLUMN order_time TO ordered_at`);
      }
    });
  });

  describe('whose source query no longer compiles', () => {
    const wf = useFork(fixture);

    it('fails a source query that no longer compiles in Plan, with the database message, and writes nothing', async () => {
      await wf.query(`ALTER TABLE source.sales_order_lines RENAME COLUMN quantity TO qty`);
      try {
        const result = await wf.run(inputFor(4));
        expect(result.status).toBe('FAILED');
        expect(visited(result)).toEqual(['Input', 'Plan', 'RecordFailure', 'Notify', 'Failed']);
        expect(caughtError(result)?.Error).toBe('WarehouseError');
        expect(caughtMessage(result)).toMatch(/plan:source-shape.* failed: ERROR: column "quantity" does not exist/);
        expect(result.alerts).toHaveLength(1);
        expect(await wf.schemaExists('atomic_publish')).toBe(false);
        expect(await wf.derivedTables()).toEqual([]);
      } finally {
        await wf.query(`ALTER TABLE source.sales_order_lines RENAME COLUMN qty TO quantity`);
      }
      await expectNothingWritten(wf);
    });
  });
});

// On a copy of its own: if this regresses, the run publishes and writes the manifest.
// (parseInstant once let V8 roll 2026-02-30 over to 2026-03-02, and the run
// published source data up to March 2.)
describe('a `to` that is not a calendar day', () => {
  const wf = useFork(fixture);

  it('rejects 2026-02-30 instead of publishing up to March 2, and writes nothing', async () => {
    const result = await wf.run({ pipeline: 'sales_order_lines', to: '2026-02-30' });
    const published = await wf.schemaExists('atomic_publish');
    expect({ status: result.status, manifestWritten: published }).toEqual({ status: 'FAILED', manifestWritten: false });
    expectRejected(result, /^input\.to is not a real date: 2026-02-30$/);
    await expectNothingWritten(wf);
  });
});

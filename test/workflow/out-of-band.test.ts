// Out-of-band changes are caught, not erased: a write to or ALTER of the live table
// between Plan and Publish makes the swap refuse, naming what changed, while
// readers see the table as it is, never a published batch; a re-run after the
// refusal publishes; an expected writer's rows at or after the batch end are
// carried over. Why: docs/decisions/publishing.md
import { beforeAll, describe, expect, it } from 'vitest';
import { definePipelines } from '../../domain/define-pipeline.ts';
import { warehouseFromEnv } from '../../functions/commons/warehouse.ts';
import { watchLive } from '../../functions/freshness-monitor/live-watch.ts';
import type { PlanEvent } from '../../functions/plan/batch.ts';
import { plan } from '../../functions/plan/index.ts';
import { localCloudWatchClient, localHandlerEnvironment, localWarehouse } from '../../local/aws-clients.ts';
import { startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { suiteTargetKind } from '../support/target-kind.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  PIPELINE,
  planOf,
  type TaskOverride,
  useFork,
  useWorkflowFixture,
  type Workflow,
} from '../support/workflow.ts';

const ROWS_PER_DAY = 10;

const liveRows = async (wf: Workflow) => Number((await wf.query<{ n: string }>(`SELECT count(*) AS n FROM ${LIVE}`))[0]!.n);
const hasOrder = async (wf: Workflow, table: string, orderId: number) =>
  Number((await wf.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE order_id = $1`, [orderId]))[0]!.n);

/** An order line written straight into the live table, as another tool would. */
async function insertLiveRow(wf: Workflow, orderId: number, at: Date): Promise<void> {
  await wf.query(
    `INSERT INTO ${LIVE} (order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price)
     VALUES ($1, 1, $2::timestamp, 1, 1, 2, 10.00, 5.0000)`,
    [orderId, at.toISOString().slice(0, 19)],
  );
}

interface Observed {
  result: ExecutionResult;
  reads: ReaderSample[];
  before: Fingerprint;
  /** The live table right after the out-of-band change, before Publish ran. */
  changed: Fingerprint;
}

/**
 * Runs up to `day` with `change` made to the live table after Plan, just
 * before Publish, while two readers poll the live table; wf.reset() after.
 */
async function runWithChange(wf: Workflow, day: number, name: string, change: () => Promise<void>, extra: { plan?: TaskOverride } = {}): Promise<Observed> {
  const before = await wf.fingerprint(LIVE);
  let changed: Fingerprint | undefined;
  const readers = new ReaderPool(wf.wh.pg, 2, { keyExpression: 'order_id * 1000 + line_no', pauseMs: 1 });
  readers.watch(LIVE, 'before');
  let reads: ReaderSample[];
  try {
    await readers.readAll();
    if (extra.plan) wf.faults.Plan = extra.plan;
    wf.faults.Publish = async (input, next) => {
      await change();
      changed = await wf.fingerprint(LIVE);
      readers.phase('changed');
      await readers.readAll();
      readers.phase('publishing');
      const output = await next(input);
      readers.phase('after');
      await readers.readAll();
      return output;
    };
    const result = await wf.run(inputFor(day), name);
    return { result, reads: (reads = await readers.close()), before, changed: changed! };
  } finally {
    wf.reset();
    await readers.close();
  }
}

/** Runs up to `day` with `change` made to the live table just before Publish, no reader watching; wf.reset() after. */
async function runChangedBeforePublish(
  wf: Workflow,
  day: number,
  name: string,
  change: () => Promise<void>,
  extra: { plan?: TaskOverride } = {},
): Promise<ExecutionResult> {
  try {
    if (extra.plan) wf.faults.Plan = extra.plan;
    wf.faults.Publish = async (input, next) => {
      await change();
      return next(input);
    };
    return await wf.run(inputFor(day), name);
  } finally {
    wf.reset();
  }
}

/** Every read saw the table before the change or after it (never another version), and from the change on only after it. */
function expectReadersSawOnlyTheChange(observed: Observed): void {
  const { reads, before, changed } = observed;
  expect(reads.filter((r) => r.error)).toEqual([]);
  const version = (r: ReaderSample) => `${r.count}/${r.keySum}`;
  const allowed = [`${before.rows}/${before.keySum}`, `${changed.rows}/${changed.keySum}`];
  for (const read of reads) expect(allowed, `${read.phase} read`).toContain(version(read));
  const later = reads.filter((r) => ['changed', 'publishing', 'after'].includes(r.phase));
  expect(later.length).toBeGreaterThanOrEqual(4);
  for (const read of later) expect(version(read), `${read.phase} read`).toBe(allowed[1]);
}

function expectRefused(observed: Pick<Observed, 'result'>, pattern: RegExp): void {
  const { result } = observed;
  expect(result.status, `${result.error}: ${result.cause}`).toBe('FAILED');
  expect(caughtError(result)?.Error).toBe('OutOfBandChangeError');
  expect(caughtMessage(result)).toMatch(pattern);
}

const fixture = useWorkflowFixture('wf_out_of_band', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 16, liveDays: 5 });
  return { noChange: await wf.run(inputFor(6), 'oob-no-change') };
});

describe('with no change to the live table', () => {
  const wf = useFork(fixture);

  it('Plan records its columns and fingerprint and the run publishes', async () => {
    const result = fixture.arranged.noChange;
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const live = (planOf(result).batch as { live?: { columns: string[]; rows: number; checksum: string } }).live;
    expect(live?.rows).toBe(5 * ROWS_PER_DAY);
    expect(live?.columns).toEqual([
      'order_id bigint',
      'line_no integer',
      'ordered_at timestamp without time zone',
      'customer_id integer',
      'product_id integer',
      'quantity integer',
      'amount numeric(12,2)',
      'unit_price numeric(12,4)',
    ]);
    expect(live?.checksum).toMatch(/^-?[1-9]\d*$/);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
  });
});

describe('a row inserted into the live table mid-run', () => {
  const wf = useFork(fixture);
  let observed: Observed;
  beforeAll(async () => {
    observed = await runWithChange(wf, 7, 'oob-insert', () => insertLiveRow(wf, 900001, sampleDay(2)));
  });

  it('refuses the publish, naming the row counts', () => {
    const rows = 6 * ROWS_PER_DAY;
    expectRefused(observed, new RegExp(`its rows changed: ${rows} row\\(s\\) at Plan, ${rows + 1} now \\(1 more\\)`));
    expect(caughtMessage(observed.result)).toContain('Nothing was published');
  });

  it('leaves the live table as it is, with the row, and readers never saw anything else', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(observed.changed);
    expect(await hasOrder(wf, LIVE, 900001)).toBe(1);
    expect((await wf.publications()).length).toBe(1);
    expectReadersSawOnlyTheChange(observed);
  });

  it('pages saying what readers see and what to do', async () => {
    expect(observed.result.alerts).toHaveLength(1);
    const [alert] = observed.result.alerts;
    expect(alert!.subject).toBe('atomic-publish: sales_order_lines failed (OutOfBandChangeError)');
    const [first] = await wf.publications();
    expect(alert!.message).toContain(
      `Live table: ${LIVE} untouched by this batch; readers still see publication 1 (batch ${String(first!.batch_id)}, published at `,
    );
    expect(alert!.message).toContain(`) with the out-of-band change in it (see the error).`);
    expect(alert!.message).toContain(
      `Next:       decide about the out-of-band change the error names, then start an execution with input ${JSON.stringify(inputFor(7))}`,
    );
    expect(alert!.message).toContain('declare the writer expected');
    expect(alert!.message).toContain(`Re-run:     once someone has decided about the change`);
    expect(alert!.message).toContain(`start an execution with input ${JSON.stringify(inputFor(7))}`);
  });

  it('counts the refusal as OutOfBandChange for the pipeline (its drift alarm), not also as a publish failure', () => {
    const [record, ...others] = observed.result.metrics.filter((m) => 'BatchFailed' in m.values);
    expect(others).toEqual([]);
    expect(record).toMatchObject({ dimensions: { service: 'atomic-publish', Pipeline: 'sales_order_lines' }, values: { BatchFailed: 1, OutOfBandChange: 1 } });
    expect(record!.values).not.toHaveProperty('PublishFailed');
  });
});

describe('the re-run after a refusal', () => {
  const wf = useFork(fixture);
  beforeAll(async () => {
    // The publish a row inserted mid-run refused.
    const refused = await runChangedBeforePublish(wf, 7, 'oob-insert', () => insertLiveRow(wf, 900001, sampleDay(2)));
    expectRefused({ result: refused }, /its rows changed/);
  });

  it('publishes: its fresh Plan takes the changed table as its base; the row stays in the retained old version', async () => {
    const result = await wf.run(inputFor(7), 'oob-insert-rerun');
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(7));
    expect(await hasOrder(wf, LIVE, 900001)).toBe(0);
    expect(await hasOrder(wf, namesFor(7).previous, 900001)).toBe(1);
  });
});

describe('a column added to the live table mid-run', () => {
  const wf = useFork(fixture);
  let observed: Observed;
  beforeAll(async () => {
    observed = await runWithChange(wf, 8, 'oob-column', () => wf.query(`ALTER TABLE ${LIVE} ADD COLUMN note varchar(20)`).then(() => undefined));
  });

  it('refuses the publish naming the column and saying to add it to the source query', async () => {
    expectRefused(observed, /its columns changed: column\(s\) added: note character varying\(20\)/);
    expect(caughtMessage(observed.result)).toContain('add it to the source query');
    const columns = await wf.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines'`);
    expect(columns.map((c) => c.column_name)).toContain('note');
    // Still the one publication the copy started with.
    expect((await wf.publications()).length).toBe(1);
    expectReadersSawOnlyTheChange(observed);
  });
});

describe('a row deleted or updated in the live table mid-run', () => {
  const wf = useForkPerTest(fixture);

  it('a deletion is refused, naming the counts', async () => {
    const rows = await liveRows(wf);
    const observed = await runWithChange(wf, 8, 'oob-delete', () =>
      wf.query(`DELETE FROM ${LIVE} WHERE order_id = (SELECT min(order_id) FROM ${LIVE}) AND line_no = 1`).then(() => undefined),
    );
    expectRefused(observed, new RegExp(`${rows} row\\(s\\) at Plan, ${rows - 1} now \\(1 fewer\\)`));
    expect(await liveRows(wf)).toBe(rows - 1);
    expectReadersSawOnlyTheChange(observed);
  });

  it('an update is refused by the checksum, the count unchanged', async () => {
    const rows = await liveRows(wf);
    const observed = await runWithChange(wf, 8, 'oob-update', () =>
      wf.query(`UPDATE ${LIVE} SET quantity = quantity + 1 WHERE order_id = (SELECT max(order_id) FROM ${LIVE})`).then(() => undefined),
    );
    expectRefused(observed, new RegExp(`${rows} row\\(s\\) at Plan, ${rows} now, checksum -?\\d+ then, -?\\d+ now \\(rows updated`));
    expectReadersSawOnlyTheChange(observed);
    const rerun = await wf.run(inputFor(8), 'oob-update-rerun');
    expect(rerun.status, `${rerun.error}: ${rerun.cause}`).toBe('SUCCEEDED');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(8));
  });
});

describe('an expected writer (outOfBand.expectedWriters)', () => {
  const registry = definePipelines([{ ...salesOrderLines, outOfBand: { expectedWriters: true } }]);
  /** Plan with the registry that declares the writer expected, on this workflow's warehouse. */
  const planWithExpectedWriters =
    (wf: Workflow): TaskOverride =>
    async (input) => {
      const env = localHandlerEnvironment(wf.wh.endpoint, wf.wh.pg.database, { pollMaxDelayMs: 100 }, suiteTargetKind());
      return JSON.parse(JSON.stringify(await plan(input as PlanEvent, warehouseFromEnv(env), registry))) as unknown;
    };
  /** An hour into sample day 9: at or after the end of the batch up to day 9. */
  const tail = new Date(sampleDay(9).getTime() + 3_600_000);

  it('is a setting outside the spec hash: batches in flight keep what their Plan froze', () => {
    expect(registry[0]!.outOfBand.expectedWriters).toBe(true);
    expect(registry[0]!.specHash).toBe(PIPELINE.specHash);
  });

  describe('in runs', () => {
    const wf = useForkPerTest(fixture);

    it('has its rows at or after the batch end carried over into the new live table', async () => {
      const observed = await runWithChange(wf, 9, 'oob-expected', () => insertLiveRow(wf, 900002, tail), { plan: planWithExpectedWriters(wf) });
      expect(observed.result.status, `${observed.result.error}: ${observed.result.cause}`).toBe('SUCCEEDED');
      expect(await hasOrder(wf, LIVE, 900002)).toBe(1);
      const expected = await wf.expected(9);
      expect(await liveRows(wf)).toBe(expected.rows + 1);
      expect((await wf.publications()).at(-1)!.rows_published).toBe(String(expected.rows + 1));
      expect(observed.reads.filter((r) => r.error)).toEqual([]);
      // A reader saw the old table (with the row) until the commit, then the new one: never a table without the tail row.
      for (const read of observed.reads.filter((r) => r.phase === 'after')) expect(read.count).toBe(expected.rows + 1);
    });

    it('has the live watch fingerprint only the rows before the batch end: a row the writer appends later is no drift, one before the end is', async () => {
      // A publication under the expected writer, its row after the batch end written mid-run.
      const published = await runChangedBeforePublish(wf, 9, 'oob-expected', () => insertLiveRow(wf, 900002, tail), { plan: planWithExpectedWriters(wf) });
      expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
      const [recorded] = await wf.query<{ live_rows_before: Date; live_fingerprint: string }>(
        `SELECT live_rows_before, live_fingerprint FROM atomic_publish.publications ORDER BY seq DESC LIMIT 1`,
      );
      expect(recorded!.live_rows_before).toEqual(sampleDay(9));
      expect(recorded!.live_fingerprint).toMatch(new RegExp(`^${(await wf.expected(9)).rows}:`));
      const cw = await startLocalCloudWatchApi({ alarms: [] });
      try {
        const watch = () =>
          watchLive({
            warehouse: localWarehouse(wf.wh.endpoint, wf.wh.pg.database),
            cloudWatch: localCloudWatchClient(cw.endpoint),
            now: new Date(),
            pipelines: registry,
          });
        await insertLiveRow(wf, 900004, new Date(sampleDay(10).getTime() + 3_600_000));
        expect((await watch()).watched[PIPELINE.name]).toEqual({ outcome: 'matches', seq: expect.any(Number) });
        await insertLiveRow(wf, 900005, sampleDay(4));
        expect((await watch()).watched[PIPELINE.name]).toMatchObject({
          outcome: 'drifted',
          differences: [expect.stringMatching(/later rows are expected writers'/)],
        });
      } finally {
        await cw.close();
      }
    });

    it('still refuses rows written before the batch end', async () => {
      const observed = await runWithChange(wf, 10, 'oob-expected-late', () => insertLiveRow(wf, 900003, sampleDay(3)), { plan: planWithExpectedWriters(wf) });
      expectRefused(observed, /rows before .* are carried over from expected writers/);
      expect(await hasOrder(wf, LIVE, 900003)).toBe(1);
      expectReadersSawOnlyTheChange(observed);
    });
  });
});

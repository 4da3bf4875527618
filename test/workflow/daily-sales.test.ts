// The second sample pipeline, daily_sales, published by replacing intervals, with
// two days corrected upstream: a scheduled run publishes only the newest days, a
// backfill of the corrected days them and no other, a rollback puts them back; a
// source in Redshift's own syntax passes the synth-time check and publishes.
// Why: docs/decisions/replacing-some-intervals.md
import { beforeAll, describe, expect, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { correctAmountsInPlace, dailySalesPipeline, sampleDay } from '../../local/sample-data.ts';
import { dailySales } from '../../pipelines/daily-sales.ts';
import { pipelines } from '../../pipelines/index.ts';
import { scheduledRunOn } from '../support/scheduled-run.ts';
import { caughtMessage, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const PIPELINE = dailySalesPipeline();
const [SOURCE_DAYS, LIVE_DAYS] = [10, 8];
const [CORRECTED_FROM, CORRECTED_TO] = [2, 4];
const LINES_CORRECTED_PER_DAY = 5;

interface Day {
  readonly day: string;
  readonly order_lines: string;
  readonly units: string;
  readonly amount: string;
}

const dayOf = (d: Date | string) => new Date(d).toISOString().slice(0, 10);

/** analytics.daily_sales, oldest day first. */
async function live(wf: Workflow): Promise<Day[]> {
  return wf.query<Day>(
    `SELECT to_char(sales_day, 'YYYY-MM-DD') AS day, order_lines::text, units::text, amount::text FROM analytics.daily_sales ORDER BY sales_day`,
  );
}

/** What the source says each day holds now. */
async function source(wf: Workflow): Promise<Day[]> {
  return wf.query<Day>(
    `SELECT to_char(date_trunc('day', ordered_at), 'YYYY-MM-DD') AS day, count(*)::text AS order_lines, sum(quantity)::text AS units, sum(amount)::text AS amount
       FROM source.sales_order_lines GROUP BY 1 ORDER BY 1`,
  );
}

const days = (rows: readonly Day[], from: number, to: number) => rows.filter((r) => r.day >= dayOf(sampleDay(from)) && r.day < dayOf(sampleDay(to)));

const fixture = useWorkflowFixture('wf_daily', async (wf) => {
  await wf.sample({ rowsPerDay: 20, sourceDays: SOURCE_DAYS, liveDays: LIVE_DAYS });
  for (let day = CORRECTED_FROM; day < CORRECTED_TO; day++) {
    await wf.withClient((db) => correctAmountsInPlace(db, { from: sampleDay(day), to: sampleDay(day + 1) }, LINES_CORRECTED_PER_DAY, '5.00'));
  }
  return { before: await live(wf) };
});

describe('a scheduled run of daily_sales', () => {
  const wf = useFork(fixture);
  let run: ExecutionResult;
  beforeAll(async () => {
    run = await scheduledRunOn(wf, SOURCE_DAYS, 'daily-scheduled', PIPELINE.name);
  });

  it('publishes the newest complete day and the one before it (lookback 1), and leaves every other day as it was', async () => {
    expect(run.status).toBe('SUCCEEDED');
    const [now, truth, { before }] = [await live(wf), await source(wf), fixture.arranged];
    expect(before.map((d) => d.day)).toEqual(days(truth, 0, LIVE_DAYS).map((d) => d.day));
    expect(now).toHaveLength(SOURCE_DAYS);
    expect(days(now, LIVE_DAYS, SOURCE_DAYS)).toEqual(days(truth, LIVE_DAYS, SOURCE_DAYS));
    expect(days(now, 0, LIVE_DAYS)).toEqual(before);
    // The corrected days are outside the run's interval: live still has the amounts from before the correction.
    expect(days(now, CORRECTED_FROM, CORRECTED_TO)).not.toEqual(days(truth, CORRECTED_FROM, CORRECTED_TO));
    const [publication] = await wf.publications();
    expect([dayOf(publication!.interval_start as Date), dayOf(publication!.interval_end as Date)]).toEqual([
      dayOf(sampleDay(LIVE_DAYS)),
      dayOf(sampleDay(SOURCE_DAYS)),
    ]);
  });
});

describe('a backfill of the corrected days, then a rollback', () => {
  const wf = useFork(fixture);
  let backfill: ExecutionResult;
  let afterBackfill: Day[];
  let rollback: ExecutionResult;
  beforeAll(async () => {
    backfill = await wf.run(
      { pipeline: PIPELINE.name, from: sampleDay(CORRECTED_FROM).toISOString(), to: sampleDay(CORRECTED_TO).toISOString() },
      'daily-backfill',
    );
    afterBackfill = await live(wf);
    rollback = await wf.run({ pipeline: PIPELINE.name, rollback: {} }, 'daily-rollback');
  });

  it('publishes the corrected amounts of those days and touches no other day', async () => {
    expect(backfill.status).toBe('SUCCEEDED');
    const [truth, { before }] = [await source(wf), fixture.arranged];
    expect(days(afterBackfill, CORRECTED_FROM, CORRECTED_TO)).toEqual(days(truth, CORRECTED_FROM, CORRECTED_TO));
    const untouched = (rows: readonly Day[]) => rows.filter((r) => r.day < dayOf(sampleDay(CORRECTED_FROM)) || r.day >= dayOf(sampleDay(CORRECTED_TO)));
    expect(untouched(afterBackfill)).toEqual(untouched(before));
    // Each corrected day's amount grew by the correction, its order lines and units did not change.
    for (const [i, day] of days(afterBackfill, CORRECTED_FROM, CORRECTED_TO).entries()) {
      const old = days(before, CORRECTED_FROM, CORRECTED_TO)[i]!;
      expect({ ...day, amount: Number(day.amount) - Number(old.amount) }).toEqual({ ...old, amount: LINES_CORRECTED_PER_DAY * 5 });
    }
  });

  it('rolls back to the live table as it was before the backfill', async () => {
    expect(rollback.status).toBe('SUCCEEDED');
    expect(await live(wf)).toEqual(fixture.arranged.before);
  });
});

// r_COUNT and r_LISTAGG: each day's orders (three order lines each) and its customers, in order, in two
// columns added to the live table. Published by a swap, whose transaction re-checks the source inside a
// stored procedure's EXECUTE (domain/publish/sql/swap.ts sourceRecheck): that query is Redshift's SQL too.
describe("daily_sales in Redshift's own syntax: APPROXIMATE COUNT(DISTINCT ...), LISTAGG(DISTINCT ...) WITHIN GROUP", () => {
  const wf = useFork(fixture);
  const TO = 4;
  const sourceSql = `
    SELECT CAST(DATE_TRUNC('day', ordered_at) AS TIMESTAMP) AS sales_day,
           COUNT(*) AS order_lines,
           SUM(quantity) AS units,
           SUM(amount) AS amount,
           APPROXIMATE COUNT(DISTINCT order_id) AS orders,
           LISTAGG(DISTINCT customer_id, ',') WITHIN GROUP (ORDER BY customer_id) AS customers
      FROM source.sales_order_lines
     WHERE ordered_at >= :start AND ordered_at < :end
     GROUP BY 1`;
  interface Counted {
    readonly day: string;
    readonly order_lines: string;
    readonly orders: string | null;
    readonly customers: string | null;
  }
  let run: ExecutionResult;
  beforeAll(async () => {
    await wf.query('ALTER TABLE analytics.daily_sales ADD COLUMN orders bigint, ADD COLUMN customers varchar(4000)');
    const index = pipelines.findIndex((p) => p.name === PIPELINE.name);
    // The synth-time check: definePipeline refuses what it cannot parse.
    const redshiftSyntax = definePipeline({ ...dailySales, sourceSql, publishMode: 'swap', lookback: 0 });
    pipelines[index] = redshiftSyntax;
    try {
      run = await wf.run({ pipeline: PIPELINE.name, to: sampleDay(TO).toISOString() }, 'daily-redshift-syntax');
    } finally {
      pipelines[index] = PIPELINE;
    }
  });

  it("publishes each day's distinct orders and customers as the source holds them", async () => {
    expect(run.status, caughtMessage(run)).toBe('SUCCEEDED');
    const published = await wf.query<Counted>(
      `SELECT to_char(sales_day, 'YYYY-MM-DD') AS day, order_lines::text, orders::text, customers FROM analytics.daily_sales ORDER BY sales_day`,
    );
    const truth = await wf.query<Counted>(
      `SELECT to_char(date_trunc('day', ordered_at), 'YYYY-MM-DD') AS day, count(*)::text AS order_lines, count(DISTINCT order_id)::text AS orders,
              array_to_string(array_agg(DISTINCT customer_id ORDER BY customer_id), ',') AS customers
         FROM source.sales_order_lines WHERE ordered_at < $1 GROUP BY 1 ORDER BY 1`,
      [sampleDay(TO).toISOString().slice(0, 19)],
    );
    expect(published).toEqual(truth);
    expect(published).toHaveLength(TO);
    for (const day of published) {
      // Distinct, not every line: fewer orders than order lines, and each customer once.
      expect(Number(day.orders)).toBeLessThan(Number(day.order_lines));
      const customers = day.customers!.split(',');
      expect(customers.length).toBeGreaterThan(1);
      expect(new Set(customers).size).toBe(customers.length);
    }
  });
});

/**
 * The sample warehouse the demo, the tests and `local up` run on: an order
 * system's `source.sales_order_lines` and the reporting tables the sample
 * pipelines publish, `analytics.sales_order_lines`
 * (pipelines/sales-order-lines.ts) and `analytics.daily_sales`
 * (pipelines/daily-sales.ts). Set up directly in PostgreSQL: this is the
 * world before atomic-publish arrives, not part of the pipelines.
 */
import type pg from 'pg';
import { definePipeline } from '../domain/define-pipeline.ts';
import { quoteIdent } from '../domain/identifiers.ts';
import type { Pipeline } from '../domain/spec.ts';
import { pipelines } from '../pipelines/index.ts';
import { salesOrderLines } from '../pipelines/sales-order-lines.ts';
import { DEFAULT_SAMPLE_START } from '../pipelines/sample-start.ts';

/** The tests' and the demo's sample start: the sample pipelines' fixed history start. */
export const SAMPLE_HISTORY_START = new Date(`${DEFAULT_SAMPLE_START}T00:00:00Z`);
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The pipeline that publishes the sample live table. */
export function samplePipeline(): Pipeline {
  return pipelines.find((p) => p.name === 'sales_order_lines')!;
}

/** The pipeline that publishes the sample's `analytics.daily_sales`, by replacing intervals. */
export function dailySalesPipeline(): Pipeline {
  return pipelines.find((p) => p.name === 'daily_sales')!;
}

export interface HourlySampleOptions {
  /** Hours of history in the batch, ending at the start of sample day `toDay`. */
  readonly hours: number;
  readonly toDay: number;
  /** Chunks loaded at once. */
  readonly maxConcurrency: number;
}

/**
 * Makes this process's sample pipeline hourly, with `hours` hours of
 * history before sample day `toDay` (the sample's rows fill only its last
 * days): a batch of that many chunks. It replaces the registry's entry
 * (pipelines/index.ts), which the handlers read, so call it before
 * anything takes samplePipeline() (test/support/workflow.ts does at import).
 */
export function useHourlySample(options: HourlySampleOptions): Pipeline {
  const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
  pipelines[index] = definePipeline({
    ...salesOrderLines,
    chunk: { ...salesOrderLines.chunk, grain: 'hour', maxConcurrency: options.maxConcurrency },
    historyStart: new Date(sampleDay(options.toDay).getTime() - options.hours * HOUR_MS).toISOString(),
  });
  return pipelines[index]!;
}

export function sampleDay(index: number): Date {
  return new Date(SAMPLE_HISTORY_START.getTime() + index * DAY_MS);
}

const SOURCE_TABLE_COLUMNS = `
  order_id bigint NOT NULL,
  line_no int NOT NULL,
  ordered_at timestamp NOT NULL,
  customer_id int NOT NULL,
  product_id int NOT NULL,
  quantity int NOT NULL,
  amount numeric(12, 2) NOT NULL`;

/** The live table's DDL: the table must exist before atomic-publish rebuilds it. */
export const LIVE_TABLE_COLUMNS = `${SOURCE_TABLE_COLUMNS},
  unit_price numeric(12, 4) NOT NULL`;

/**
 * The rows the live table holds once every source row before `$1` (a
 * timestamp) is published: the sample pipeline's sourceSql over all of
 * its history, columns in the live table's order.
 */
export const SAMPLE_EXPECTED_ROWS_SQL = `
  SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount,
         CAST(amount / quantity AS numeric(12, 4)) AS unit_price
    FROM source.sales_order_lines
   WHERE ordered_at >= '2026-01-01' AND ordered_at < $1::timestamp`;

export interface SampleOptions {
  /** Order lines per day in the source. */
  readonly rowsPerDay: number;
  /** The sample's first day. @default SAMPLE_HISTORY_START */
  readonly start?: Date;
  /** Days of source data from `start`. */
  readonly sourceDays: number;
  /** Days the current live table (the previous build) covers. */
  readonly liveDays: number;
  /** Extra schemas holding a copy of the live table (the demo's naive path). */
  readonly copies?: readonly string[];
}

/** Deterministic pseudo-random order lines: same options, same rows. */
export async function createSampleWarehouse(db: pg.ClientBase, options: SampleOptions): Promise<{ sourceRows: number; liveRows: number }> {
  const { rowsPerDay, sourceDays, liveDays } = options;
  const start = options.start ?? SAMPLE_HISTORY_START;
  const liveEnd = new Date(start.getTime() + liveDays * DAY_MS);
  await db.query(`DROP SCHEMA IF EXISTS source CASCADE`);
  await db.query(`DROP SCHEMA IF EXISTS analytics CASCADE`);
  await db.query(`CREATE SCHEMA source`);
  await db.query(`CREATE SCHEMA analytics`);
  await db.query(`CREATE TABLE source.sales_order_lines (${SOURCE_TABLE_COLUMNS})`);
  // Row n of the whole history: day n / rowsPerDay, spread over the day.
  await db.query(
    `INSERT INTO source.sales_order_lines
     SELECT n / 3 + 1,
            n % 3 + 1,
            $1::timestamp + (n / $2) * interval '1 day' + ((n % $2) * (86399.0 / $2)) * interval '1 second',
            (n * 7919) % 50000 + 1,
            (n * 104729) % 2000 + 1,
            (n * 31) % 9 + 1,
            ((n * 7907) % 100000) / 100.0 + 1
       FROM generate_series(0::bigint, $3::bigint - 1) AS n`,
    [start.toISOString().slice(0, 19), rowsPerDay, rowsPerDay * sourceDays],
  );
  // The index a real source has as its sort key on the time column: each
  // chunk's load reads its own rows, not the whole table.
  await db.query(`CREATE INDEX sales_order_lines_ordered_at ON source.sales_order_lines (ordered_at)`);
  const schemas = ['analytics', ...(options.copies ?? [])];
  for (const schema of schemas) {
    const quoted = quoteIdent(schema);
    if (schema !== 'analytics') {
      await db.query(`DROP SCHEMA IF EXISTS ${quoted} CASCADE`);
      await db.query(`CREATE SCHEMA ${quoted}`);
    }
    await db.query(`CREATE TABLE ${quoted}.sales_order_lines (${LIVE_TABLE_COLUMNS})`);
    await db.query(
      `INSERT INTO ${quoted}.sales_order_lines
       SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, CAST(amount / quantity AS numeric(12, 4))
         FROM source.sales_order_lines WHERE ordered_at < $1`,
      [liveEnd.toISOString().slice(0, 19)],
    );
  }
  await createDailySales(db, liveEnd);
  await db.query('ANALYZE source.sales_order_lines');
  return { sourceRows: rowsPerDay * sourceDays, liveRows: rowsPerDay * liveDays };
}

/** `analytics.daily_sales`'s DDL: one row a day (pipelines/daily-sales.ts). */
export const DAILY_SALES_COLUMNS = `
  sales_day timestamp NOT NULL,
  order_lines bigint NOT NULL,
  units bigint NOT NULL,
  amount numeric(14, 2) NOT NULL`;

/** `analytics.daily_sales` as the previous build left it: the days before `liveEnd`. */
export async function createDailySales(db: pg.ClientBase, liveEnd: Date): Promise<void> {
  await db.query(`CREATE TABLE analytics.daily_sales (${DAILY_SALES_COLUMNS})`);
  await db.query(
    `INSERT INTO analytics.daily_sales
     SELECT date_trunc('day', ordered_at), count(*), sum(quantity), sum(amount)
       FROM source.sales_order_lines WHERE ordered_at < $1 GROUP BY 1`,
    [liveEnd.toISOString().slice(0, 19)],
  );
}

/** An upstream mistake: an order line with quantity 0, which makes the unit price a division by zero. */
export async function addBadSourceRow(db: pg.ClientBase, day: Date): Promise<void> {
  await db.query(`INSERT INTO source.sales_order_lines VALUES (999999999, 1, $1::timestamp + interval '12 hours', 1, 1, 0, 10.00)`, [
    day.toISOString().slice(0, 19),
  ]);
}

/** The upstream fix: the bad order lines are gone. */
export async function removeBadSourceRows(db: pg.ClientBase): Promise<void> {
  await db.query(`DELETE FROM source.sales_order_lines WHERE quantity = 0`);
}

/**
 * An upstream correction in place: the first `rows` order lines (in key
 * order) of [from, to) get `by` added to their amount; the row count stays.
 */
export async function correctAmountsInPlace(db: pg.ClientBase, range: { from: Date; to: Date }, rows: number, by: string): Promise<void> {
  await db.query(
    `UPDATE source.sales_order_lines SET amount = amount + CAST($4 AS numeric(12, 2))
      WHERE (order_id, line_no) IN (SELECT order_id, line_no FROM source.sales_order_lines
                                     WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT $3)`,
    [range.from.toISOString().slice(0, 19), range.to.toISOString().slice(0, 19), rows, by],
  );
}

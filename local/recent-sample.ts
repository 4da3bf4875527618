/**
 * `local up`'s sample: whole days ending today, so a plain run covers the
 * sample's days and nothing else (docs/decisions/sample-ends-today.md). Its
 * first day is the sample pipelines' history start: exported for the
 * shells that run the CLI (pipelines/sample-start.ts) and set in this
 * process's registry. Two days were corrected upstream after the live
 * tables were built: the range a newcomer backfills.
 */
import type pg from 'pg';
import { definePipeline } from '../domain/define-pipeline.ts';
import { dailySales } from '../pipelines/daily-sales.ts';
import { pipelines } from '../pipelines/index.ts';
import { salesOrderLines } from '../pipelines/sales-order-lines.ts';
import { SAMPLE_START_ENV, sampleHistoryStart } from '../pipelines/sample-start.ts';
import { correctAmountsInPlace, createDailySales, createSampleWarehouse } from './sample-data.ts';

const DAY_MS = 86_400_000;
/** Days the live tables lack at the sample's end: the morning's run publishes them. */
export const SAMPLE_UNPUBLISHED_DAYS = 2;
/** The corrected days (from the sample's day `from`, 0 the first): inside live, before a scheduled run's lookback. */
export const SAMPLE_CORRECTED_DAYS = { from: 2, days: 2 } as const;
const { from: CORRECTED_FROM_DAY, days: CORRECTED_DAYS } = SAMPLE_CORRECTED_DAYS;
/** Fewest sample days that hold the corrected days, published, and the unpublished ones after them. */
export const MIN_SAMPLE_DAYS = CORRECTED_FROM_DAY + CORRECTED_DAYS + SAMPLE_UNPUBLISHED_DAYS;
/** Order lines of each corrected day whose amount changed, and by how much. */
const CORRECTED_LINES_PER_DAY = 5;
const CORRECTION = '5.00';

export const SAMPLE_CORRECTED_FROM_ENV = 'ATOMIC_PUBLISH_SAMPLE_CORRECTED_FROM';
export const SAMPLE_CORRECTED_TO_ENV = 'ATOMIC_PUBLISH_SAMPLE_CORRECTED_TO';

export interface RecentSample {
  /** First day (the pipelines' history start). */
  readonly start: Date;
  /** End of the last day (exclusive): today's start when it was created. */
  readonly end: Date;
  /** End of what the live tables hold (exclusive). */
  readonly liveEnd: Date;
  /** The days corrected upstream after the live tables were built, `[from, to)`. */
  readonly corrected: { readonly from: Date; readonly to: Date };
}

const dayOf = (d: Date) => d.toISOString().slice(0, 10);
const plusDays = (d: Date, days: number) => new Date(d.getTime() + days * DAY_MS);

/** The sample of `days` whole days that ends at the start of `today` (UTC). */
export function recentSample(today: Date, days: number): RecentSample {
  const end = new Date(`${dayOf(today)}T00:00:00Z`);
  return sampleBetween(plusDays(end, -days), end);
}

function sampleBetween(start: Date, end: Date): RecentSample {
  const from = plusDays(start, CORRECTED_FROM_DAY);
  return { start, end, liveEnd: plusDays(end, -SAMPLE_UNPUBLISHED_DAYS), corrected: { from, to: plusDays(from, CORRECTED_DAYS) } };
}

/**
 * Creates the sample in an empty database: the source, the live tables as
 * the previous build left them (all but the last days), then the upstream
 * correction of two days, which the live tables do not have yet.
 */
export async function createRecentSample(db: pg.ClientBase, sample: RecentSample, rowsPerDay: number): Promise<void> {
  const days = Math.round((sample.end.getTime() - sample.start.getTime()) / DAY_MS);
  await createSampleWarehouse(db, { rowsPerDay, start: sample.start, sourceDays: days, liveDays: days - SAMPLE_UNPUBLISHED_DAYS });
  for (let day = sample.corrected.from; day < sample.corrected.to; day = plusDays(day, 1)) {
    await correctAmountsInPlace(db, { from: day, to: plusDays(day, 1) }, CORRECTED_LINES_PER_DAY, CORRECTION);
  }
}

/**
 * The sample a database already holds (its source's first and last day), or
 * undefined when it has none. A database created before `daily_sales`
 * existed gets its live table, built to the same day as the order lines'.
 */
export async function existingSample(db: pg.ClientBase): Promise<RecentSample | undefined> {
  const { rows } = await db.query<{ present: boolean; daily: boolean }>(
    "SELECT to_regclass('source.sales_order_lines') IS NOT NULL AS present, to_regclass('analytics.daily_sales') IS NOT NULL AS daily",
  );
  if (!rows[0]?.present) return undefined;
  const range = await db.query<{ first: string | null; last: string | null }>(
    `SELECT to_char(min(ordered_at), 'YYYY-MM-DD') AS first, to_char(max(ordered_at), 'YYYY-MM-DD') AS last FROM source.sales_order_lines`,
  );
  const { first, last } = range.rows[0]!;
  if (first === null || last === null) return undefined;
  const sample = sampleBetween(new Date(`${first}T00:00:00Z`), plusDays(new Date(`${last}T00:00:00Z`), 1));
  if (!rows[0].daily) await createDailySales(db, sample.liveEnd);
  return sample;
}

/**
 * Sets this process's sample pipelines to the sample's history start: the
 * handlers `local up` runs read the registry (pipelines/index.ts), as
 * local/sample-data.ts's useHourlySample does for the tests.
 */
export function useSampleStart(sample: RecentSample): void {
  const historyStart = sampleHistoryStart(dayOf(sample.start));
  for (const spec of [salesOrderLines, dailySales]) {
    const index = pipelines.findIndex((p) => p.name === spec.name);
    pipelines[index] = definePipeline({ ...spec, historyStart });
  }
}

/** The variables `local up` exports for the sample: the history start the CLI needs, and the corrected days. */
export function sampleEnvironment(sample: RecentSample): Record<string, string> {
  return {
    [SAMPLE_START_ENV]: dayOf(sample.start),
    [SAMPLE_CORRECTED_FROM_ENV]: dayOf(sample.corrected.from),
    [SAMPLE_CORRECTED_TO_ENV]: dayOf(sample.corrected.to),
  };
}

/** What `local up` says of its sample, and the commands a newcomer runs next, with its dates. */
export function describeSample(sample: RecentSample, database: string): string[] {
  const last = dayOf(plusDays(sample.end, -1));
  return [
    `# Sample          ${database}: order lines of [${dayOf(sample.start)}, ${dayOf(sample.end)}) (to ${last});`,
    `#                 the live tables hold the days before ${dayOf(sample.liveEnd)}; the order lines of`,
    `#                 [${dayOf(sample.corrected.from)}, ${dayOf(sample.corrected.to)}) were corrected upstream after they were built`,
  ];
}

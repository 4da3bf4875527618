// `local up`'s sample (local/recent-sample.ts): whole days ending today,
// the live tables two days behind, two days corrected upstream after they
// were built, and the same sample read back from the database on the next
// start.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { resolveInterval } from '../../domain/plan/plan.ts';
import { withClient } from '../../local/pg-clients.ts';
import { dropDatabase, ensureDatabase } from '../../local/postgres.ts';
import {
  createRecentSample,
  existingSample,
  MIN_SAMPLE_DAYS,
  type RecentSample,
  recentSample,
  sampleEnvironment,
  useSampleStart,
} from '../../local/recent-sample.ts';
import { dailySalesPipeline, samplePipeline } from '../../local/sample-data.ts';
import { dailySales } from '../../pipelines/daily-sales.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { sampleHistoryStart } from '../../pipelines/sample-start.ts';

const TODAY = new Date('2026-12-02T09:30:00Z');
const day = (d: Date) => d.toISOString().slice(0, 10);

describe('the sample of local up', () => {
  const sample = recentSample(TODAY, 10);

  it('is whole days that end at the start of today, the live tables two days behind', () => {
    expect([day(sample.start), day(sample.end), day(sample.liveEnd)]).toEqual(['2026-11-22', '2026-12-02', '2026-11-30']);
  });

  it('has its corrected days inside what live holds, before the days a scheduled run replaces', () => {
    const { from, to } = sample.corrected;
    expect([day(from), day(to)]).toEqual(['2026-11-24', '2026-11-26']);
    // The morning's run of daily_sales: the newest complete day and its lookback.
    const scheduled = resolveInterval({ pipeline: dailySales.name }, definePipeline({ ...dailySales, historyStart: sample.start.toISOString() }), TODAY);
    expect(to.getTime()).toBeLessThanOrEqual(scheduled.from.getTime());
    expect(to.getTime()).toBeLessThanOrEqual(sample.liveEnd.getTime());
    expect(recentSample(TODAY, MIN_SAMPLE_DAYS).corrected.to.getTime()).toBeLessThanOrEqual(recentSample(TODAY, MIN_SAMPLE_DAYS).liveEnd.getTime());
  });

  it('exports its first day and corrected days as the variables a shell pastes', () => {
    expect(sampleEnvironment(sample)).toEqual({
      ATOMIC_PUBLISH_SAMPLE_START: '2026-11-22',
      ATOMIC_PUBLISH_SAMPLE_CORRECTED_FROM: '2026-11-24',
      ATOMIC_PUBLISH_SAMPLE_CORRECTED_TO: '2026-11-26',
    });
  });

  it('sets this process’s sample pipelines to what a CLI with the exported start defines: the same spec hash', () => {
    useSampleStart(sample);
    const start = sampleHistoryStart(sampleEnvironment(sample).ATOMIC_PUBLISH_SAMPLE_START);
    expect(samplePipeline().specHash).toBe(definePipeline({ ...salesOrderLines, historyStart: start }).specHash);
    expect(dailySalesPipeline().specHash).toBe(definePipeline({ ...dailySales, historyStart: start }).specHash);
    expect(new Date(samplePipeline().historyStart)).toEqual(sample.start);
  });
});

/** A database of its own holding `sample`, created before the calling describe's tests and dropped after them. */
function useSampleDatabase(sample: RecentSample) {
  const server = inject('pg');
  const conn = { ...server, database: `recent_sample_${randomBytes(4).toString('hex')}` };
  beforeAll(async () => {
    await ensureDatabase(server, conn.database);
    await withClient(conn, (db) => createRecentSample(db, sample, 12));
  });
  afterAll(() => dropDatabase(server, conn.database));
  const perDay = (sql: string) => withClient(conn, async (db) => (await db.query<{ day: string; amount: string }>(sql)).rows.map((r) => [r.day, r.amount]));
  return { conn, perDay };
}

const SOURCE = `SELECT to_char(date_trunc('day', ordered_at), 'YYYY-MM-DD') AS day, sum(amount)::text AS amount FROM source.sales_order_lines GROUP BY 1 ORDER BY 1`;
const LIVE = `SELECT to_char(sales_day, 'YYYY-MM-DD') AS day, amount::text FROM analytics.daily_sales ORDER BY 1`;

describe('the sample in a database', () => {
  const sample = recentSample(TODAY, 8);
  const { conn, perDay } = useSampleDatabase(sample);

  it('holds the order lines of its days, and live daily_sales differs from them on the corrected days only', async () => {
    const [source, live] = [await perDay(SOURCE), await perDay(LIVE)];
    expect(source.map(([d]) => d)).toEqual(Array.from({ length: 8 }, (_, i) => day(new Date(sample.start.getTime() + i * 86_400_000))));
    expect(live.map(([d]) => d)).toEqual(source.slice(0, 6).map(([d]) => d));
    const differing = live.filter(([d, amount]) => source.find(([s]) => s === d)![1] !== amount).map(([d]) => d);
    expect(differing).toEqual([day(sample.corrected.from), day(new Date(sample.corrected.to.getTime() - 86_400_000))]);
  });

  it('is read back from the database as the same sample', async () => {
    expect(await withClient(conn, (db) => existingSample(db))).toEqual(sample);
  });
});

describe('a sample database made before daily_sales', () => {
  const sample = recentSample(TODAY, 7);
  const { conn, perDay } = useSampleDatabase(sample);

  it('gets analytics.daily_sales, built to the day the order lines are, when it is read back', async () => {
    await withClient(conn, async (db) => {
      await db.query('DROP TABLE analytics.daily_sales');
      expect(await existingSample(db)).toEqual(sample);
    });
    expect((await perDay(LIVE)).map(([d]) => d)).toEqual((await perDay(SOURCE)).slice(0, 5).map(([d]) => d));
  });
});

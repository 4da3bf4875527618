import type { PipelineSpec } from '../domain/spec.ts';
import { sampleHistoryStart } from './sample-start.ts';

/**
 * The second sample pipeline: one row a day of the order system's sales,
 * published by replacing intervals. A scheduled run replaces yesterday and
 * the day before (order lines that arrive a day late); a backfill replaces
 * the days it names and leaves every other day as it is.
 */
export const dailySales: PipelineSpec = {
  name: 'daily_sales',
  description: 'Order lines, units and amount per day, from the order system',
  target: { schema: 'analytics', table: 'daily_sales' },
  sourceSql: `
    SELECT CAST(DATE_TRUNC('day', ordered_at) AS TIMESTAMP) AS sales_day,
           COUNT(*) AS order_lines,
           SUM(quantity) AS units,
           SUM(amount) AS amount
      FROM source.sales_order_lines
     WHERE ordered_at >= :start AND ordered_at < :end
     GROUP BY 1`,
  timeColumn: 'sales_day',
  chunk: { grain: 'day', timezone: 'UTC', maxConcurrency: 4 },
  historyStart: sampleHistoryStart(),
  businessKey: ['sales_day'],
  publishMode: 'replace-intervals',
  lookback: 1,
  checks: { allowEmpty: false },
  freshness: { slaMinutes: 1440 },
  schedule: { expression: 'cron(30 6 * * ? *)', timezone: 'Europe/Berlin' },
  retention: { keepVersions: 3 },
};

import type { PipelineSpec } from '../domain/spec.ts';
import { sampleHistoryStart } from './sample-start.ts';

/**
 * The sample pipeline the local demo and the tests run: order lines copied
 * from the source system with a derived unit price, rebuilt in full every
 * morning and published by swap.
 */
export const salesOrderLines: PipelineSpec = {
  name: 'sales_order_lines',
  description: 'Sales order lines with unit price, rebuilt daily from the order system',
  target: { schema: 'analytics', table: 'sales_order_lines' },
  sourceSql: `
    SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount,
           CAST(amount / quantity AS NUMERIC(12, 4)) AS unit_price
      FROM source.sales_order_lines
     WHERE ordered_at >= :start AND ordered_at < :end`,
  timeColumn: 'ordered_at',
  chunk: { grain: 'day', timezone: 'UTC', maxConcurrency: 4 },
  historyStart: sampleHistoryStart(),
  businessKey: ['order_id', 'line_no'],
  publishMode: 'swap',
  checks: { allowEmpty: false },
  freshness: { slaMinutes: 1440 },
  schedule: { expression: 'cron(0 6 * * ? *)', timezone: 'Europe/Berlin' },
  retention: { keepVersions: 3 },
};

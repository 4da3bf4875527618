// Imported first by a test file (before workflow.ts): the sample pipeline
// published by merge, in that file's module graph. Its rows carry the
// source's modification time `updated_at` (the version that decides which
// row of a key wins, and the column rows are extracted by) and a
// soft-delete flag `deleted`, which the sample tables lack:
// addMergeColumns adds them. Vitest gives each test file its own modules,
// so other files keep the swap.

import { definePipeline } from '../../domain/define-pipeline.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

/** Days before the newest complete one that a scheduled run loads again. */
export const LOOKBACK = 1;

/** The sample pipeline as a merge of rows modified in `[:start, :end)`. */
export const mergeSpec: PipelineSpec = {
  ...salesOrderLines,
  sourceSql: `
    SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, amount,
           CAST(amount / quantity AS NUMERIC(12, 4)) AS unit_price, updated_at, deleted
      FROM source.sales_order_lines
     WHERE updated_at >= :start AND updated_at < :end`,
  modifiedColumn: 'updated_at',
  publishMode: 'merge',
  merge: { versionColumn: 'updated_at', softDeleteColumn: 'deleted' },
  lookback: LOOKBACK,
};

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = definePipeline(mergeSpec);

/**
 * The source and the live table with `updated_at` (each row last modified
 * an hour after its event) and `deleted` (false), and the source sorted on
 * `updated_at` (locally: an index), as a change-tracked source is.
 */
export async function addMergeColumns(query: (sql: string) => Promise<unknown>): Promise<void> {
  for (const table of ['source.sales_order_lines', 'analytics.sales_order_lines']) {
    await query(`ALTER TABLE ${table} ADD COLUMN updated_at timestamp, ADD COLUMN deleted boolean NOT NULL DEFAULT false`);
    await query(`UPDATE ${table} SET updated_at = ordered_at + interval '1 hour'`);
    await query(`ALTER TABLE ${table} ALTER COLUMN updated_at SET NOT NULL`);
  }
  await query(`CREATE INDEX sales_order_lines_updated_at ON source.sales_order_lines (updated_at)`);
  await query(`ANALYZE source.sales_order_lines`);
}

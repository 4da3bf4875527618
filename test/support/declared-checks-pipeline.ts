// Imported first by a test file (before workflow.ts): the sample pipeline
// with one declared check of each kind, in that file's module graph.
// Vitest gives each test file its own modules, so other files keep the
// sample's checks.

import { definePipeline } from '../../domain/define-pipeline.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

/** The parent table of the references check: the customers the order lines name. */
export const CUSTOMERS = 'crm.customers';

/** One check of each kind, all blocking; the sample data passes every one. */
export const DECLARED_CHECKS = {
  notNull: ['product_id'],
  acceptedValues: [{ column: 'quantity', values: [1, 2, 3, 4, 5, 6, 7, 8, 9] }],
  references: [{ columns: ['customer_id'], parent: { schema: 'crm', table: 'customers', columns: ['customer_id'] } }],
  sql: [{ name: 'amount_too_large', sql: 'SELECT order_id, line_no, amount FROM {staging} WHERE amount > 5000' }],
} satisfies PipelineSpec['checks'];

/** The sample pipeline with `checks` (the gate's own left at their defaults). */
export function withChecks(checks: PipelineSpec['checks']) {
  return definePipeline({ ...salesOrderLines, checks: { allowEmpty: false, ...checks } });
}

export const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = withChecks(DECLARED_CHECKS);

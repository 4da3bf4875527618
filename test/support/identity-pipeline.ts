// Imported first by a test file (before workflow.ts): the sample pipeline
// as a swap with snapshotReaders 'in-place', whose live table gets an
// identity column (addIdentity), and two pipelines of the same live table
// that Plan must refuse (docs/decisions/identity-columns.md): one whose
// source query produces the identity column, one that publishes by the
// rename swap. In that file's module graph only: other files keep the
// deployment's one pipeline.
import type pg from 'pg';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { applyPipelineSetup } from '../../local/database-users.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { addIdentityColumn, IDENTITY_COLUMN } from './identity-column.ts';

export { IDENTITY_COLUMN, SEED, STEP } from './identity-column.ts';

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = definePipeline({ ...salesOrderLines, snapshotReaders: 'in-place' });

/** The sample's query, also producing the identity column: refused at Plan. */
export const NUMBERING = definePipeline({
  ...salesOrderLines,
  name: 'sales_order_lines_numbered',
  snapshotReaders: 'in-place',
  sourceSql: salesOrderLines.sourceSql.replace('SELECT order_id,', `SELECT CAST(order_id * 100 + line_no AS bigint) AS ${IDENTITY_COLUMN}, order_id,`),
});

/** The sample pipeline as shipped, published by the rename swap: refused at Plan once the live table has an identity. */
export const RENAMING = definePipeline({ ...salesOrderLines, name: 'sales_order_lines_renamed' });

pipelines.push(NUMBERING, RENAMING);

/**
 * After the sample warehouse is created: the live table's identity column
 * `IDENTITY(SEED, STEP)` (its rows numbered as it is added), and the other
 * pipelines' setup SQL applied.
 */
export async function addIdentity(db: pg.ClientBase): Promise<void> {
  await db.query(addIdentityColumn('analytics.sales_order_lines'));
  for (const pipeline of [NUMBERING, RENAMING]) await applyPipelineSetup(db, pipeline);
}

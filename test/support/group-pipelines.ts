// Imported first by a test file (before workflow.ts): a second pipeline,
// `order_lines_mirror` (the sample pipeline's query over its own source
// table `source.order_lines_mirror`, into `analytics.order_lines_mirror`),
// and the publish group `sales` of it and the sample pipeline, in that
// file's module graph. Vitest gives each test file its own modules, so
// other files keep the deployment's one pipeline and no group.
import type pg from 'pg';
import { definePipeline } from '../../domain/define-pipeline.ts';
import { defineGroups } from '../../domain/publish/groups.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { applyPipelineSetup } from '../../local/database-users.ts';
import { LIVE_TABLE_COLUMNS } from '../../local/sample-data.ts';
import { groups, pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

/** The mirror's spec (in-place-group-pipelines.ts varies it). */
export const MIRROR_SPEC: PipelineSpec = {
  ...salesOrderLines,
  name: 'order_lines_mirror',
  description: 'The sample order lines from a second source table: the other member of the sample group',
  target: { schema: 'analytics', table: 'order_lines_mirror' },
  sourceSql: salesOrderLines.sourceSql.replace('source.sales_order_lines', 'source.order_lines_mirror'),
};
export const MIRROR = definePipeline(MIRROR_SPEC);
export const MIRROR_LIVE = 'analytics.order_lines_mirror';
export const GROUP = 'sales';

/** The group `sales` of the sample pipeline and the mirror, as `pipelines` now defines them. */
export function defineSalesGroup(): void {
  const [group] = defineGroups([{ name: GROUP, members: [salesOrderLines.name, MIRROR.name] }], pipelines);
  const index = groups.findIndex((g) => g.name === GROUP);
  if (index < 0) groups.push(group!);
  else groups[index] = group!;
}

pipelines.push(MIRROR);
defineSalesGroup();

/** After the sample warehouse is created: the mirror's source and live table, copies of the sample's, and its setup SQL applied. */
export async function createMirror(db: pg.ClientBase): Promise<void> {
  // LIKE keeps the NOT NULL of ordered_at (CREATE TABLE AS would not): Plan refuses a time filter on a nullable column.
  await db.query('CREATE TABLE source.order_lines_mirror (LIKE source.sales_order_lines)');
  await db.query('INSERT INTO source.order_lines_mirror SELECT * FROM source.sales_order_lines');
  await db.query(`CREATE TABLE ${MIRROR_LIVE} (${LIVE_TABLE_COLUMNS})`);
  await db.query(`INSERT INTO ${MIRROR_LIVE} SELECT * FROM analytics.sales_order_lines`);
  await applyPipelineSetup(db, MIRROR);
}

// Imported first by a test file (before workflow.ts): the sample pipeline
// shipped with a migration (spec migration.ddl) and the source query that
// produces the new table's columns, in that file's module graph (vitest
// gives each test file its own modules, so other files keep the sample).
import { definePipeline } from '../../domain/define-pipeline.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

/**
 * The new table: amount widened, a new column with a DEFAULT, encodings,
 * a distribution key, a compound sort key and a declared primary key.
 */
export const MIGRATION_DDL = `(
  order_id bigint NOT NULL ENCODE az64,
  line_no integer NOT NULL ENCODE az64,
  ordered_at timestamp NOT NULL ENCODE raw,
  customer_id integer NOT NULL ENCODE az64,
  product_id integer NOT NULL ENCODE az64,
  quantity integer NOT NULL ENCODE az64,
  amount numeric(14, 2) NOT NULL ENCODE az64,
  unit_price numeric(12, 4) NOT NULL ENCODE az64,
  channel varchar(16) DEFAULT 'web' ENCODE zstd,
  PRIMARY KEY (order_id, line_no)
) DISTSTYLE KEY DISTKEY (customer_id) COMPOUND SORTKEY (ordered_at, order_id)`;

export const migratingSpec: PipelineSpec = {
  ...salesOrderLines,
  sourceSql: `
    SELECT order_id, line_no, ordered_at, customer_id, product_id, quantity, CAST(amount AS NUMERIC(14, 2)) AS amount,
           CAST(amount / quantity AS NUMERIC(12, 4)) AS unit_price, CAST('web' AS VARCHAR(16)) AS channel
      FROM source.sales_order_lines
     WHERE ordered_at >= :start AND ordered_at < :end`,
  migration: { ddl: MIGRATION_DDL },
};

const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
pipelines[index] = definePipeline(migratingSpec);

/** The same migration, with unit_price renamed to price_per_unit (migration.renames). */
export const renamingSpec: PipelineSpec = {
  ...migratingSpec,
  sourceSql: migratingSpec.sourceSql.replace('AS unit_price', 'AS price_per_unit'),
  migration: { ddl: MIGRATION_DDL.replace('unit_price numeric', 'price_per_unit numeric'), renames: { price_per_unit: 'unit_price' } },
};

/**
 * Deploys a spec of the sample pipeline in this file's module graph: as it
 * was before the migration, with it, or with the renaming one; `extra`
 * changed on it.
 */
export function deployMigration(spec: 'before' | 'migration' | 'renaming', extra: Partial<PipelineSpec> = {}): void {
  pipelines[index] = definePipeline({ ...(spec === 'before' ? salesOrderLines : spec === 'migration' ? migratingSpec : renamingSpec), ...extra });
}

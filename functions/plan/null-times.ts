// Plan's check that the source query cannot drop rows with no time unseen
// (domain/plan/plan.ts checkNullTimes), from the catalog's nullability of the
// columns the query filters the interval on.
import { checkNullTimes } from '../../domain/plan/plan.ts';
import { nullableSourceColumns } from '../../domain/plan/sql/plan.ts';
import { intervalFilterColumns, sourceTables } from '../../domain/redshift-sql/source-sql.ts';
import type { Pipeline } from '../../domain/spec.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/** Refuses, before anything is written, a source query that filters the interval on a nullable column it never tests for NULL. */
export async function checkSourceNullTimes(warehouse: Warehouse, pipeline: Pipeline, name: (step: string) => string): Promise<void> {
  const columns = intervalFilterColumns(pipeline.sourceSql);
  const tables = sourceTables(pipeline.sourceSql).filter((t): t is { schema: string; table: string } => t.schema !== undefined);
  if (columns.length === 0 || tables.length === 0) return;
  const rows = await warehouse.query(nullableSourceColumns(tables, columns), name('source-nullable'));
  checkNullTimes(
    pipeline,
    rows.map((r) => ({ table: `${String(r.table_schema)}.${String(r.table_name)}`, column: String(r.column_name) })),
  );
}

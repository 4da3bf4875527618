import { ValidationError, WarehouseError } from '../../domain/errors.ts';
import { sqlCheckName } from '../../domain/gate/config.ts';
import { checkDeclaredColumns } from '../../domain/gate/declared-checks.ts';
import { checkQuarantineColumns } from '../../domain/gate/quarantine.ts';
import { customCheckSql } from '../../domain/gate/sql/reconcile.ts';
import type { LiveColumn } from '../../domain/plan/live-column.ts';
import { tableColumns } from '../../domain/plan/sql/plan.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { clip } from '../../domain/text.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/**
 * The declared checks against the warehouse, before any load: their
 * columns are the live table's, each referenced parent exists with its key
 * columns, and each custom check's SQL compiles (`LIMIT 0`, reading no
 * rows) with the live table in place of staging, which has its columns.
 */
export async function checkDeclaredChecks(
  warehouse: Warehouse,
  pipeline: Pipeline,
  live: readonly LiveColumn[],
  name: (step: string) => string,
): Promise<void> {
  const parents = new Map<string, LiveColumn[]>();
  for (const { parent } of pipeline.checks.references) {
    const key = `${parent.schema}.${parent.table}`;
    if (parents.has(key)) continue;
    const rows = await warehouse.query(tableColumns(parent.schema, parent.table), name('parent-columns'));
    parents.set(
      key,
      rows.map((r) => ({ name: String(r.column_name), dataType: String(r.data_type) })),
    );
  }
  checkDeclaredColumns(pipeline, live, parents);
  checkQuarantineColumns(pipeline, live);
  for (const check of pipeline.checks.sql) {
    try {
      await warehouse.columns({ sql: `SELECT * FROM (${customCheckSql(pipeline, pipeline.target.table, check)}\n) AS src LIMIT 0` }, name('check-sql'));
    } catch (error) {
      if (!(error instanceof WarehouseError)) throw error;
      throw new ValidationError(
        `pipeline ${pipeline.name}: check ${sqlCheckName(check)} does not run on the live table in place of staging: ${clip(error.message, 500)}`,
      );
    }
  }
}

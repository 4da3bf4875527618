/**
 * Plan for a migration input (`{"pipeline": ..., "migrate": true}`):
 * checks everything before writing anything (the live table, the views
 * that read it, rows the copy would miss, the source query against the new
 * columns), then starts or resumes the migration batch like any other
 * (startOrResume): staging created from migration.ddl, chunks copying the
 * live table, the watermark the batch end (domain/migration/migration.ts).
 */

import { BatchStatus } from '../../domain/batch.ts';
import { ValidationError } from '../../domain/errors.ts';
import { liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import {
  isMigrated,
  migrationInterval,
  migrationPipeline,
  migrationProblems,
  migrationRefusal,
  migrationSpecHash,
  unmigratedRefusal,
} from '../../domain/migration/migration.ts';
import { rowsOutsideHistory } from '../../domain/migration/sql/migration.ts';
import { batchIdFor, checkSourceColumns, checkSourceTypes, planningTime, resolvePipeline, stagingTableFor } from '../../domain/plan/plan.ts';
import { findBatch, sourceShape } from '../../domain/plan/sql/plan.ts';
import { type FactRow, liveTableFacts } from '../../domain/publish/dependents.ts';
import { dependentsFacts } from '../../domain/publish/sql/swap.ts';
import type { Pipeline } from '../../domain/spec.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { checkPrivileges, ensureManifest, type PlanEvent, type PlanResult, startOrResume } from './batch.ts';
import { checkSourceNullTimes } from './null-times.ts';

/** The live table's columns as `name type` (empty: it does not exist). */
async function liveColumnTypes(warehouse: Warehouse, pipeline: Pipeline, name: (step: string) => string): Promise<string[]> {
  const { schema, table } = pipeline.target;
  return (await warehouse.query(liveColumnsQuery(schema, table), name('live-columns'))).map((r) => String(r.col));
}

/** A normal run of a pipeline whose live table does not have migration.ddl's columns yet is refused (its source produces them). */
export async function refuseUnmigrated(warehouse: Warehouse, pipeline: Pipeline, name: (step: string) => string): Promise<void> {
  const live = await liveColumnTypes(warehouse, pipeline, name);
  if (live.length > 0 && !isMigrated(pipeline, live)) throw unmigratedRefusal(pipeline);
}

export async function planMigration(event: PlanEvent, warehouse: Warehouse, registry: readonly Pipeline[]): Promise<PlanResult> {
  const base = resolvePipeline(event.input, registry);
  const interval = migrationInterval(event.input as Record<string, unknown>, base, planningTime(event.startedAt, new Date()));
  const batchId = batchIdFor({ ...base, specHash: migrationSpecHash(base) }, interval);
  const name = (step: string) => `atomic-publish:${base.name}:plan:migrate-${step}:${batchId}`;
  const { schema, table } = base.target;
  if (base.publishVia === 'view') {
    throw new ValidationError(
      `pipeline ${base.name} publishes through a view; a migration swaps tables: re-create the version table the view reads by hand. Nothing was written`,
    );
  }

  await checkPrivileges(warehouse, base, name);
  const live = await liveColumnTypes(warehouse, base, name);
  if (live.length === 0)
    throw new ValidationError(`live table ${schema}.${table} does not exist: there is nothing to migrate; create it with migration.ddl instead`);
  const pipeline = migrationPipeline(
    base,
    live.map((c) => c.split(' ')[0]!),
  );
  const start = { batchId, name, columns: pipeline.migrating!.columns, stagingDdl: base.migration!.ddl };

  if (isMigrated(base, live)) {
    // A replay of the migration that published finds its batch done; any other run has nothing to migrate.
    await ensureManifest(warehouse, name('manifest'));
    const [existing] = await warehouse.query(findBatch(batchId), name('find-batch'));
    if (existing?.status === BatchStatus.PUBLISHED) return startOrResume(event, warehouse, pipeline, interval, start);
    throw new ValidationError(`pipeline ${base.name}: ${schema}.${table} already has the columns of migration.ddl: nothing to migrate. Nothing was written`);
  }

  const facts = liveTableFacts(
    (await warehouse.query(dependentsFacts(schema, table, stagingTableFor(pipeline, batchId)), name('dependents'))) as unknown as FactRow[],
  );
  const problems = migrationProblems(base, live, facts.views);
  const outside = Number((await warehouse.query(rowsOutsideHistory(base), name('outside-history')))[0]?.n ?? 0);
  if (outside > 0) {
    problems.push(
      `${outside} row(s) of ${schema}.${table} have no ${base.timeColumn} or one before historyStart ${base.historyStart}, and the migration copies [historyStart, now); ` +
        `move historyStart back (or delete those rows) and run the migration again`,
    );
  }
  if (problems.length > 0) throw migrationRefusal(base, problems);

  // Normal runs after the migration load the spec's source query into a table LIKE the new one.
  const ddl = base.migration!.table.columns;
  const sourceColumns = await warehouse.columns(sourceShape(base, interval), name('source-shape'));
  try {
    checkSourceColumns(
      base,
      ddl.map((c) => c.name),
      sourceColumns.map((c) => c.name),
    );
    checkSourceTypes(
      base,
      ddl.map((c) => ({ name: c.name, dataType: c.type.replace(/\(.*$/, '') })),
      sourceColumns,
    );
    await checkSourceNullTimes(warehouse, base, name);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw migrationRefusal(base, [
      `after the migration, normal runs load the source query into the new table: ${error.message} (the columns of migration.ddl)`,
    ]);
  }
  return startOrResume(event, warehouse, pipeline, interval, start);
}

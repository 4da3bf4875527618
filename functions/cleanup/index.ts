import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { retiredTable } from '../../domain/cleanup/cleanup.ts';
import { cleanupCandidates, dropRetired, endCheck } from '../../domain/cleanup/sql/cleanup.ts';
import { stagingTableFor } from '../../domain/plan/plan.ts';
import { quarantineTableFor } from '../../domain/plan/sql/null-times.ts';
import { tableColumns } from '../../domain/plan/sql/plan.ts';
import { dependentViews, referencingTables } from '../../domain/publish/sql/swap.ts';
import { stepHandler } from '../commons/handler.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

export interface CleanupEvent {
  readonly batch: BatchRef;
  /** `$$.Execution.Id`: Cleanup ends a published run, so it releases the pipeline lease. */
  readonly executionId?: string;
}

/** A retired table Cleanup kept because views still read it or other tables' foreign keys reference it. */
export interface KeptTable {
  readonly table: string;
  /** The views that read it and the tables whose foreign keys reference it. */
  readonly readBy: readonly string[];
}

export interface CleanupResult {
  readonly dropped: readonly string[];
  /** Retired tables still read by a view or referenced by a foreign key: kept, and tried again by the next Cleanup. */
  readonly kept: readonly KeptTable[];
}

/**
 * Ends a check (staging dropped, quarantined rows deleted, the batch CHECK_PASSED
 * or CHECK_FAILED: domain/cleanup/sql/cleanup.ts endCheck), drops old versions past
 * `retention.keepVersions` and the staging of earlier failed, superseded or
 * abandoned batches, then releases the pipeline's lease. Only `<live table>__*`
 * tables are dropped, never with CASCADE; one a view reads or a foreign key
 * references is kept and reported: docs/decisions/publishing.md ("Cleanup never drops").
 */
export async function cleanup(event: CleanupEvent, warehouse: Warehouse = warehouseFromEnv()): Promise<CleanupResult> {
  const pipeline = frozenPipeline(event.batch);
  const { schema } = pipeline.target;
  const name = (step: string) => `atomic-publish:${pipeline.name}:cleanup:${step}:${event.batch.batchId}`;
  // A check (state CheckCleanup) ends here: its own staging goes too, and the batch records the gate's verdict.
  if (event.batch.check !== undefined) {
    const quarantine = (await warehouse.query(tableColumns(schema, quarantineTableFor(pipeline)), name('quarantine-columns'))).length > 0;
    await warehouse.batch(endCheck(pipeline, event.batch.batchId, stagingTableFor(pipeline, event.batch.batchId), quarantine, new Date()), name('end-check'));
  }
  const candidates = await warehouse.query(cleanupCandidates(pipeline, event.batch.batchId, new Date()), name('candidates'));
  const dropped: string[] = [];
  const kept: KeptTable[] = [];
  for (const candidate of candidates) {
    const retired = retiredTable(pipeline, { kind: candidate.kind, name: candidate.name, batchId: candidate.batch_id });
    const views = await warehouse.query(dependentViews(schema, retired.table), name('dependents'));
    const tables = await warehouse.query(referencingTables(schema, retired.table), name('referencing'));
    if (views.length + tables.length > 0) {
      const readBy = [
        ...views.map((v) => `${String(v.view_schema)}.${String(v.view_name)}`),
        ...tables.map((t) => `${String(t.table_schema)}.${String(t.table_name)}`),
      ];
      kept.push({ table: `${schema}.${retired.table}`, readBy });
      logger.warn('kept a retired table that views still read or foreign keys still reference; drop or re-point them, and the next cleanup drops it', {
        table: `${schema}.${retired.table}`,
        readBy,
      });
      continue;
    }
    await warehouse.batch(dropRetired(pipeline, retired.kind, retired.table, retired.batchId, new Date()), name('drop'));
    dropped.push(`${schema}.${retired.table}`);
  }
  await releaseExecutionLease(warehouse, event.executionId ?? '', name('lease'));
  logger.info('cleanup done', { batchId: event.batch.batchId, dropped, kept });
  return { dropped, kept };
}

export const handler = stepHandler((event: CleanupEvent, context: Context) => cleanup(event, warehouseFor(context)));

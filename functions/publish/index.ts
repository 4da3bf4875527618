import type { Context } from 'aws-lambda';
import { DependentViewError, PublishConflictError, WarehouseError } from '../../domain/errors.ts';
import { carryOverCorrections, dependentViewProblems, type FactRow, type LiveTableFacts, liveTableFacts } from '../../domain/dependents.ts';
import { previousVersionTableFor } from '../../domain/plan.ts';
import { BatchStatus, type BatchRef } from '../../domain/batch.ts';
import { CATALOG_CHANGED, isOlderDataRefusal, publishGuardRefusal } from '../../domain/sql/manifest.ts';
import { batchState, carryOverStatements, dependentsFacts, markSuperseded, swapPublish } from '../../domain/sql/publish.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { type Row, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

export interface PublishEvent {
  readonly batch: BatchRef;
  /** `$$.Execution.Id`: a superseded batch ends the execution, so Publish then releases its pipeline lease. */
  readonly executionId?: string;
}

export interface PublishResult {
  readonly publication: number;
  readonly publishedAt: string;
  readonly liveTable: string;
  readonly oldVersionTable: string;
  readonly rowsPublished: number;
  /** True when an earlier attempt had already published (a retry after a lost response). */
  readonly alreadyPublished: boolean;
  /**
   * The pipeline already publishes newer data than this batch holds: nothing
   * was published, the batch is SUPERSEDED, and the execution ends there
   * (state Superseded) without a page. `reason` is the guard's refusal.
   */
  readonly superseded: boolean;
  readonly reason?: string;
}

function toResult(row: Row, liveTable: string, alreadyPublished: boolean): PublishResult {
  return {
    publication: Number(row.seq),
    publishedAt: String(row.published_at),
    liveTable,
    oldVersionTable: String(row.old_version_table),
    rowsPublished: Number(row.rows_published ?? 0),
    alreadyPublished,
    superseded: false,
  };
}

/**
 * Newest data wins: a batch older than what the pipeline publishes ends
 * SUPERSEDED, logged, not paged (nothing is wrong: newer data is live). Its
 * staging table is left to the next Cleanup, which drops it.
 */
async function superseded(
  event: PublishEvent,
  warehouse: Warehouse,
  reason: string,
  liveTable: string,
  name: (step: string) => string,
  marked = false,
): Promise<PublishResult> {
  const { batch } = event;
  if (!marked) await warehouse.batch(markSuperseded(batch.batchId, reason, new Date()), name('superseded'));
  await releaseExecutionLease(warehouse, event.executionId ?? '', name('superseded'));
  logger.warn('batch superseded: the pipeline already publishes newer data; nothing published', { batchId: batch.batchId, reason });
  return { publication: 0, publishedAt: '', liveTable, oldVersionTable: '', rowsPublished: 0, alreadyPublished: false, superseded: true, reason };
}

/** How often the swap is rebuilt when the live table's grants, defaults, comments or views changed between the read and the swap. */
export const CATALOG_CHANGE_ATTEMPTS = 3;

/**
 * The swap, in one BatchExecuteStatement transaction. Readers see the old
 * table until the commit and the new one after it; if anything in the
 * transaction fails, nothing of it happened. The live table's grants,
 * defaults, comments and bound views are read just before and carried over
 * in the same transaction, which re-checks them under its locks (a change
 * in between makes it read again and rebuild the swap).
 */
export async function publish(event: PublishEvent, warehouse: Warehouse = warehouseFromEnv()): Promise<PublishResult> {
  const { batch } = event;
  const pipeline = frozenPipeline(batch);
  const liveTable = `${pipeline.target.schema}.${pipeline.target.table}`;
  const name = (step: string) => `atomic-publish:${pipeline.name}:publish:${step}:${batch.batchId}`;

  const [before] = await warehouse.query(batchState(batch.batchId), name('state'));
  if (before?.status === BatchStatus.PUBLISHED) {
    logger.info('batch already published; nothing to do', { batchId: batch.batchId });
    return toResult(before, liveTable, true);
  }
  // A retry after an attempt that found the batch superseded but failed before answering (e.g. releasing the lease).
  if (before?.status === BatchStatus.SUPERSEDED) {
    return superseded(event, warehouse, 'an earlier attempt of Publish found newer data live (see batches.error)', liveTable, name, true);
  }

  const previous = previousVersionTableFor(pipeline, batch.batchId);
  let carried: LiveTableFacts;
  try {
    for (let attempt = 1; ; attempt += 1) {
      const factsQuery = dependentsFacts(pipeline.target.schema, pipeline.target.table, batch.stagingTable);
      const facts = liveTableFacts((await warehouse.query(factsQuery, name('dependents'))) as unknown as FactRow[]);
      const refusal = dependentViewProblems(liveTable, facts);
      if (refusal !== undefined) throw new DependentViewError(refusal);
      try {
        await warehouse.batch(swapPublish(pipeline, batch, previous, new Date(), facts, factsQuery), name('swap'));
        carried = facts;
        break;
      } catch (error) {
        if (!(error instanceof WarehouseError) || !error.message.includes(`${CATALOG_CHANGED}: `) || attempt >= CATALOG_CHANGE_ATTEMPTS) throw error;
        logger.warn('the live table changed between reading its dependents and the swap; reading them again', { attempt, error: error.message });
      }
    }
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    // An earlier attempt whose response was lost (or whose wait was
    // abandoned) may have committed meanwhile: then the guard, or the
    // staging table already renamed away, fails this one. That publish is
    // this batch's own.
    const [now] = await warehouse.query(batchState(batch.batchId), name('state'));
    if (now?.status === BatchStatus.PUBLISHED) return toResult(now, liveTable, true);
    const refusal = publishGuardRefusal(error.message);
    if (refusal !== undefined && isOlderDataRefusal(refusal)) return superseded(event, warehouse, refusal, liveTable, name);
    if (refusal !== undefined) throw new PublishConflictError(refusal, { cause: error });
    throw error;
  }
  // A GRANT, REVOKE, default or comment issued on the live table while the
  // swap waited for its locks reached the old version: carry it over now.
  const oldVersion = liveTableFacts(
    (await warehouse.query(dependentsFacts(pipeline.target.schema, previous, previous), name('old-version'))) as unknown as FactRow[],
  );
  const corrections = carryOverCorrections(carried, oldVersion);
  if (corrections !== undefined) {
    const statements = carryOverStatements(pipeline, corrections);
    logger.warn('the live table changed while the swap waited; carrying the change over to the new live table', { statements });
    await warehouse.batch(statements, name('carry-over'));
  }
  const [after] = await warehouse.query(batchState(batch.batchId), name('state'));
  const result = toResult(after!, liveTable, false);
  logger.info('published', { batchId: batch.batchId, ...result });
  return result;
}

export const handler = stepHandler((event: PublishEvent, context: Context) => publish(event, warehouseFor(context)));

import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { PublishConflictError } from '../../domain/errors.ts';
import { liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { publishGuardRefusal } from '../../domain/manifest/sql/manifest.ts';
import { PublishWaitEnv, type PublishWaits, publishWaitsFromEnv } from '../../domain/publish/waits.ts';
import type { RollbackTarget } from '../../domain/rollback/rollback.ts';
import { rewriteRollback } from '../../domain/rollback/sql/rewrite.ts';
import { restoreIntervals, rollbackState, swapRollback } from '../../domain/rollback/sql/rollback.ts';
import { MANIFEST_SCHEMA } from '../../domain/sql/statement.ts';
import { stepHandler } from '../commons/handler.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { retryPublishTransaction, type Swap, swapAndCarryOver } from '../commons/swap.ts';
import { type Row, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { liveWatchStatements } from '../publish/live-watch.ts';
import { type PublishResult, toResult } from '../publish/result.ts';

export interface RollbackEvent {
  /** The batch going live again, as Plan describes it (the spec is today's). */
  readonly batch: BatchRef;
  /** What Plan resolved from the manifest (domain/rollback/rollback.ts resolveRollback). */
  readonly rollback: RollbackTarget;
  readonly executionId?: string;
}

/**
 * Swaps a retained version back in, in one transaction, with everything
 * Publish's swap does (domain/rollback/sql/rollback.ts swapRollback, through
 * functions/commons/swap.ts): the wait for older snapshots, the bounded
 * lock wait retried by Step Functions, the catalog check, the grants,
 * defaults, comments and views re-applied, the carry-over after the
 * commit. Answers as Publish does, so EmitMetrics and Cleanup follow.
 */
export async function rollback(
  event: RollbackEvent,
  warehouse: Warehouse = warehouseFromEnv(),
  waits: PublishWaits = publishWaitsFromEnv(),
): Promise<PublishResult> {
  const { batch, rollback: target } = event;
  const pipeline = frozenPipeline(batch);
  const liveTable = `${pipeline.target.schema}.${pipeline.target.table}`;
  const name = (step: string) => `atomic-publish:${pipeline.name}:rollback:${step}:${target.batchId}`;
  const recorded = async () => (await warehouse.query(rollbackState(pipeline.name, target.rolledBackSeq), name('state')))[0];

  const before = await recorded();
  if (before) {
    logger.info('rollback already done; nothing to do', { ...target });
    return toResult(before, liveTable, true);
  }
  if (target.interval !== undefined) return rollbackIntervals(event, warehouse, waits, name, recorded);
  // In place, as it publishes (docs/decisions/snapshot-readers-without-locks.md), unless a migration changed the columns since.
  if (pipeline.snapshotReaders === 'in-place') {
    if (await sameColumns(warehouse, pipeline.target.schema, pipeline.target.table, target.restoreTable, name))
      return rollbackIntervals(event, warehouse, waits, name, recorded);
    logger.warn(
      'the restored version has other columns than the live table (a migration since): rolled back by the rename swap, which waits only for transactions holding a lock',
      { ...target },
    );
  }
  // The restored version becomes live: the watch's record is taken of it, with its columns.
  const watched = pipeline.outOfBand.watch ? await liveWatchStatements(warehouse, pipeline, batch, name, target.restoreTable) : [];
  const swap: Swap = {
    pipeline,
    step: 'Rollback',
    incoming: target.restoreTable,
    incomingLabel: 'the version it restores',
    retainedAs: target.retainedTable,
    waits,
    name,
    statements: (facts, factsQuery) => [...swapRollback(pipeline, target, new Date(), { facts, factsQuery }, waits.lockWaitMs), ...watched],
  };
  const recovered = await swapAndCarryOver(warehouse, swap, async (error) => {
    // An earlier attempt whose response was lost may have committed.
    const done = await recorded();
    if (done) return toResult(done, liveTable, true);
    const refusal = publishGuardRefusal(error.message);
    if (refusal !== undefined)
      throw new PublishConflictError(`rollback refused: ${refusal}; nothing was changed. Start the rollback again: Plan resolves it anew`, { cause: error });
    throw error;
  });
  if (recovered) return recovered;
  const result = toResult((await recorded())!, liveTable, false);
  logger.info('rolled back', { ...target, ...result });
  return result;
}

/** Whether two tables of a schema have the same columns, of the same types, in the same order. */
async function sameColumns(warehouse: Warehouse, schema: string, a: string, b: string, name: (step: string) => string): Promise<boolean> {
  const columns = async (table: string) =>
    (await warehouse.query(liveColumnsQuery(schema, table), name('rollback-columns'))).map((r) => String(r.col)).join(';');
  return (await columns(a)) === (await columns(b));
}

/**
 * The rollback of a publication that replaced some intervals: its
 * replaced rows put back in one transaction (domain/rollback/sql/rollback.ts
 * restoreIntervals), with the bounded lock wait of its publish; nothing is
 * renamed, so no snapshot wait. Answers as Publish does.
 */
async function rollbackIntervals(
  event: RollbackEvent,
  warehouse: Warehouse,
  waits: PublishWaits,
  name: (step: string) => string,
  recorded: () => Promise<Row | undefined>,
): Promise<PublishResult> {
  const { batch, rollback: target } = event;
  const pipeline = frozenPipeline(batch);
  const { schema, table } = pipeline.target;
  const liveTable = `${schema}.${table}`;
  const watched = pipeline.outOfBand.watch ? await liveWatchStatements(warehouse, pipeline, batch, name) : [];
  try {
    await retryPublishTransaction(
      warehouse,
      name,
      async () => ({
        statements: [
          ...(target.interval === undefined
            ? rewriteRollback(pipeline, target, batch.columns, new Date(), waits.lockWaitMs, batch.generated)
            : restoreIntervals(pipeline, target, batch.columns, new Date(), waits.lockWaitMs, batch.generated)),
          ...watched,
        ],
        locks: [
          { schema, table: target.restoreTable },
          { schema: MANIFEST_SCHEMA, table: 'publications' },
          { schema, table },
        ],
        carried: undefined,
      }),
      (holders) =>
        `the rollback ${target.interval === undefined ? `to batch ${target.batchId}` : `of ${target.interval.from} to ${target.interval.to}`} in ${liveTable} gave up after waiting ${waits.lockWaitMs} ms for its locks and is retried; ` +
        `holding the rows it restores, the publications or writing ${liveTable}: ${holders}. Nothing was changed. End those transactions, or raise ${PublishWaitEnv.LOCK_WAIT_MS}.`,
    );
  } catch (error) {
    // An earlier attempt whose response was lost may have committed.
    const done = await recorded();
    if (done) return toResult(done, liveTable, true);
    const refusal = error instanceof Error ? publishGuardRefusal(error.message) : undefined;
    if (refusal !== undefined)
      throw new PublishConflictError(`rollback refused: ${refusal}; nothing was changed. Start the rollback again: Plan resolves it anew`, { cause: error });
    throw error;
  }
  const result = toResult((await recorded())!, liveTable, false);
  logger.info(
    target.interval === undefined
      ? "rolled back in place: the restored version's rows are live again"
      : 'rolled back: the replaced rows of the interval are live again',
    { ...target, ...result },
  );
  return result;
}

export const handler = stepHandler((event: RollbackEvent, context: Context) => rollback(event, warehouseFor(context)));

import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { PublishConflictError } from '../../domain/errors.ts';
import { type PublishWaits, publishWaitsFromEnv } from '../../domain/publish-waits.ts';
import type { RollbackTarget } from '../../domain/rollback.ts';
import { publishGuardRefusal } from '../../domain/sql/manifest.ts';
import { rollbackState, swapRollback } from '../../domain/sql/rollback.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { swapAndCarryOver, type Swap } from '../commons/swap.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { type PublishResult, toResult } from '../publish/index.ts';

export interface RollbackEvent {
  /** The batch going live again, as Plan describes it (the spec is today's). */
  readonly batch: BatchRef;
  /** What Plan resolved from the manifest (domain/rollback.ts resolveRollback). */
  readonly rollback: RollbackTarget;
  readonly executionId?: string;
}

/**
 * Swaps a retained version back in, in one transaction, with everything
 * Publish's swap does (domain/sql/rollback.ts swapRollback, through
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
  const swap: Swap = {
    pipeline,
    step: 'Rollback',
    incoming: target.restoreTable,
    incomingLabel: 'the version it restores',
    retainedAs: target.retainedTable,
    waits,
    name,
    statements: (facts, factsQuery) => swapRollback(pipeline, target, new Date(), { facts, factsQuery }, waits.lockWaitMs),
  };
  const recovered = await swapAndCarryOver(warehouse, swap, async (error) => {
    // An earlier attempt whose response was lost may have committed.
    const done = await recorded();
    if (done) return toResult(done, liveTable, true);
    const refusal = publishGuardRefusal(error.message);
    if (refusal !== undefined) throw new PublishConflictError(`rollback refused: ${refusal}; nothing was changed. Start the rollback again: Plan resolves it anew`, { cause: error });
    throw error;
  });
  if (recovered) return recovered;
  const result = toResult((await recorded())!, liveTable, false);
  logger.info('rolled back', { ...target, ...result });
  return result;
}

export const handler = stepHandler((event: RollbackEvent, context: Context) => rollback(event, warehouseFor(context)));

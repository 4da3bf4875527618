import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { retiredTable } from '../../domain/cleanup.ts';
import { cleanupCandidates, dropRetired } from '../../domain/sql/cleanup.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

export interface CleanupEvent {
  readonly batch: BatchRef;
}

export interface CleanupResult {
  readonly dropped: readonly string[];
}

/**
 * Drops old versions past `retention.keepVersions` and staging tables of
 * earlier failed or abandoned batches. Only tables named after the live table with a
 * `__` suffix are ever dropped, and never with CASCADE.
 */
export async function cleanup(event: CleanupEvent, warehouse: Warehouse = warehouseFromEnv()): Promise<CleanupResult> {
  const pipeline = frozenPipeline(event.batch);
  const { schema } = pipeline.target;
  const name = (step: string) => `atomic-publish:${pipeline.name}:cleanup:${step}:${event.batch.batchId}`;
  const candidates = await warehouse.query(cleanupCandidates(pipeline, event.batch.batchId, new Date()), name('candidates'));
  const dropped: string[] = [];
  for (const candidate of candidates) {
    const retired = retiredTable(pipeline, { kind: candidate.kind, name: candidate.name, batchId: candidate.batch_id });
    await warehouse.batch(dropRetired(pipeline, retired.kind, retired.table, retired.batchId, new Date()), name('drop'));
    dropped.push(`${schema}.${retired.table}`);
  }
  logger.info('cleanup done', { batchId: event.batch.batchId, dropped });
  return { dropped };
}

export const handler = stepHandler((event: CleanupEvent, context: Context) => cleanup(event, warehouseFor(context)));

import type { Context } from 'aws-lambda';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { ValidationError } from '../../domain/errors.ts';
import type { BatchRef } from '../../domain/batch.ts';
import { cleanupCandidates, dropRetired } from '../../domain/sql/cleanup.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
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
  const { schema, table } = pipeline.target;
  const name = (step: string) => `atomic-publish:${pipeline.name}:cleanup:${step}:${event.batch.batchId}`;
  const candidates = await warehouse.query(cleanupCandidates(pipeline, event.batch.batchId, new Date()), name('candidates'));
  const dropped: string[] = [];
  for (const candidate of candidates) {
    const full = String(candidate.name);
    const bare = full.startsWith(`${schema}.`) ? full.slice(schema.length + 1) : full;
    if (!bare.startsWith(`${table}__`)) {
      throw new ValidationError(`cleanup refused to drop ${full}: not a retired version or staging table of ${schema}.${table}`);
    }
    const kind = candidate.kind === 'old_version' ? 'old_version' : 'staging';
    await warehouse.batch(dropRetired(pipeline, kind, bare, String(candidate.batch_id), new Date()), name('drop'));
    dropped.push(`${schema}.${bare}`);
  }
  logger.info('cleanup done', { batchId: event.batch.batchId, dropped });
  return { dropped };
}

export const handler = middy((event: CleanupEvent, context: Context) => cleanup(event, warehouseFor(context))).use(injectLambdaContext(logger));

import type { Context } from 'aws-lambda';
import type { Chunk } from '../../domain/plan.ts';
import { type BatchRef, ChunkStatus } from '../../domain/batch.ts';
import {
  chunkStatus,
  clearStagingInterval,
  loadStagingInterval,
  markChunkDone,
  markChunkLoading,
  recordChunkStatement,
} from '../../domain/sql/load-chunk.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { retryTransient, STILL_RUNNING, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

export interface LoadChunkEvent {
  readonly batch: BatchRef;
  readonly chunk: Chunk;
}

export interface LoadChunkResult {
  readonly index: number;
  readonly skipped: boolean;
  readonly rowsInserted: number;
  readonly statementId?: string;
  readonly durationMs: number;
}

/** Logged when a retry waits for (or counts) the INSERT an earlier attempt submitted, instead of submitting one. */
export const REATTACHED_MESSAGE = 're-attached to the insert of an earlier attempt';

/**
 * Replace-in-staging for one interval: mark the chunk LOADING, clear what an
 * earlier attempt may have left (only a chunk found LOADING, STALE or CANCELLED can have any),
 * insert the source rows, mark the chunk DONE with the rows the insert
 * reported. A replay (a retry, a resumed batch) ends with the same staging
 * rows; a chunk already DONE is skipped. An INSERT an earlier attempt
 * submitted is waited for if it still runs, and counted if it finished:
 * never run twice.
 */
export async function loadChunk(event: LoadChunkEvent, warehouse: Warehouse = warehouseFromEnv()): Promise<LoadChunkResult> {
  const { batch, chunk } = event;
  const pipeline = frozenPipeline(batch);
  const name = (step: string) => `atomic-publish:${pipeline.name}:load-chunk:${step}:${batch.batchId}:${chunk.index}`;
  const started = Date.now();

  const [current] = await warehouse.query(chunkStatus(batch.batchId, chunk), name('status'));
  if (current?.status === ChunkStatus.DONE) {
    logger.info('chunk already loaded; skipped', { batchId: batch.batchId, chunk: chunk.index });
    return { index: chunk.index, skipped: true, rowsInserted: 0, durationMs: Date.now() - started };
  }

  if (current?.status === ChunkStatus.LOADING && current.statement_id) {
    const earlierId = String(current.statement_id);
    const earlier = await warehouse.status(earlierId, name('insert'));
    if (earlier && (STILL_RUNNING.has(earlier.status) || earlier.status === 'FINISHED')) {
      logger.info(REATTACHED_MESSAGE, { batchId: batch.batchId, chunk: chunk.index, statementId: earlierId });
      const inserted = await warehouse.wait(earlierId, name('insert'));
      await retryTransient(() =>
        warehouse.execute(markChunkDone(batch.batchId, chunk, earlierId, inserted.resultRows, new Date()), name('mark-done')),
      );
      return { index: chunk.index, skipped: false, rowsInserted: inserted.resultRows, statementId: earlierId, durationMs: Date.now() - started };
    }
  }

  await warehouse.execute(markChunkLoading(batch.batchId, chunk, new Date()), name('mark-loading'));
  if (current?.status === ChunkStatus.LOADING || current?.status === ChunkStatus.STALE || current?.status === ChunkStatus.CANCELLED) {
    await warehouse.execute(clearStagingInterval(pipeline, batch, chunk), name('clear'));
  }
  const statementId = await warehouse.submit(loadStagingInterval(pipeline, batch, chunk), name('insert'));
  // From here until the INSERT's id is in the manifest, a retry of this step
  // could not see the INSERT and would run a second one beside it: record
  // the id with retries of its own, and if that still fails, let the INSERT
  // finish before failing (a retry then clears its rows and loads again).
  const record = () => retryTransient(() => warehouse.execute(recordChunkStatement(batch.batchId, chunk, statementId), name('record-statement')));
  const recorded = await record().then(
    () => undefined,
    (error: unknown) => error,
  );
  const inserted = await warehouse.wait(statementId, name('insert'));
  if (recorded !== undefined) await record();
  await retryTransient(() =>
    warehouse.execute(markChunkDone(batch.batchId, chunk, statementId, inserted.resultRows, new Date()), name('mark-done')),
  );

  logger.info('chunk loaded', {
    batchId: batch.batchId,
    chunk: chunk.index,
    start: chunk.start,
    end: chunk.end,
    rowsInserted: inserted.resultRows,
    statementId,
  });
  return { index: chunk.index, skipped: false, rowsInserted: inserted.resultRows, statementId, durationMs: Date.now() - started };
}

export const handler = stepHandler((event: LoadChunkEvent, context: Context) => loadChunk(event, warehouseFor(context)));

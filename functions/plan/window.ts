/**
 * PlanWindow: the first step of a window's child execution (a batch of
 * more chunks than one window holds, domain/plan/windows.ts). It records the
 * window's chunks, as Plan records a short batch's, and hands the inline
 * Map those still to load: a resumed batch skips the ones already done,
 * and a chunk an earlier attempt may have written is cleared first.
 */
import type { BatchRef } from '../../domain/batch.ts';
import { ValidationError } from '../../domain/errors.ts';
import { type ChunkStateRow, chunksToLoad } from '../../domain/load-chunk/chunk-loads.ts';
import type { Chunk } from '../../domain/plan/chunk.ts';
import { doneChunks, recordedWindow, windowChunkRows } from '../../domain/plan/sql/plan.ts';
import { type WindowItem, windowChunks } from '../../domain/plan/windows.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { echo } from '../../domain/text.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { readWindow, withLoadsStillRunning } from './chunks.ts';

/** PlanWindow's input: the batch and the window's item. */
export interface WindowEvent {
  readonly batch: BatchRef;
  readonly window: WindowItem;
}

export interface WindowPlan {
  /** The window's chunks still to load. */
  readonly chunks: readonly Chunk[];
  readonly chunkCount: number;
}

/** A Plan input that is a window's (PlanWindow invokes Plan's function). */
export function isWindowEvent(event: unknown): event is WindowEvent {
  return typeof event === 'object' && event !== null && 'window' in event && 'batch' in event;
}

export async function planWindow(event: WindowEvent, warehouse: Warehouse, registry?: readonly Pipeline[]): Promise<WindowPlan> {
  const { batch, window: item } = event;
  const pipeline = frozenPipeline(batch, registry);
  if (!Number.isInteger(item?.index) || item.index < 0) throw new ValidationError(`window input needs a whole window index, got ${echo(item?.index)}`);
  const name = (step: string) => `atomic-publish:${pipeline.name}:plan-window:${step}:${batch.batchId}:${item.index}`;
  const [row] = await warehouse.query(recordedWindow(batch.batchId, item.index), name('window'));
  if (row === undefined) throw new ValidationError(`batch ${batch.batchId} has no window ${item.index} in atomic_publish.batch_windows`);
  const window = readWindow(row);
  const chunks = windowChunks(window, pipeline);
  await warehouse.batch(windowChunkRows(batch.batchId, chunks), name('chunks'));
  const rows = (await warehouse.query(doneChunks(batch.batchId, window), name('done-chunks'))) as unknown as ChunkStateRow[];
  const { done, remaining } = chunksToLoad(chunks, rows);
  const toLoad = await withLoadsStillRunning(warehouse, pipeline, batch, remaining);
  logger.info('window planned', {
    batchId: batch.batchId,
    window: window.index,
    firstChunk: window.firstChunk,
    chunks: chunks.length,
    resumedChunksDone: done.size,
    loadsStillRunning: toLoad.filter((c) => c.running !== undefined).length,
  });
  return { chunks: toLoad, chunkCount: chunks.length };
}

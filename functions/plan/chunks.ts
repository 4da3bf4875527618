/**
 * The chunks of a batch, and its windows when it has more chunks than one
 * window holds (domain/plan/windows.ts): those it was planned with when it
 * exists (a resumed batch keeps its boundaries, whatever the source holds
 * now), else one per grain unit, or, with `chunk.targetRows`, grain units
 * merged up to the target by the source's volume (domain/plan/chunk-sizing.ts).
 * And Plan's warning when the source is not sorted on the time column.
 */

import type { BatchRef } from '../../domain/batch.ts';
import { ValidationError, WarehouseError } from '../../domain/errors.ts';
import { withRunningLoads } from '../../domain/load-chunk/reattach.ts';
import { type ChunkToLoad, loadStatementName, loadStatementPrefix } from '../../domain/load-chunk/sql/load-chunk.ts';
import type { BatchInterval, Chunk } from '../../domain/plan/chunk.ts';
import { grainUnits, type SortKeyFact, sizeChunks, sortKeyWarning, volumeByUnit, warehouseInstant } from '../../domain/plan/chunk-sizing.ts';
import { planChunks } from '../../domain/plan/plan.ts';
import { recordedChunks, recordedWindows, sourceSortKeys, sourceVolume } from '../../domain/plan/sql/plan.ts';
import { type ChunkWindow, checkWindowsCover, chunkWindows, MAX_WINDOWS_PER_BATCH, windowChunks } from '../../domain/plan/windows.ts';
import { sourceTables } from '../../domain/redshift-sql/source-sql.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';

export async function batchChunks(
  warehouse: Warehouse,
  pipeline: Pipeline,
  interval: BatchInterval,
  batchId: string,
  existing: boolean,
  name: (step: string) => string,
  windowSize: number,
): Promise<{ chunks: Chunk[]; windows: ChunkWindow[] }> {
  if (existing) {
    const windows = (await warehouse.query(recordedWindows(batchId), name('recorded-windows'))).map(readWindow);
    if (windows.length > 0) {
      const chunks = windows.flatMap((w) => windowChunks(w, pipeline));
      checkWindowsCover(windows, interval, chunks.length);
      return { chunks, windows };
    }

    const recorded = (await warehouse.query(recordedChunks(batchId), name('recorded-chunks'))).map((r) => ({
      index: Number(r.chunk_index),
      start: warehouseInstant(String(r.interval_start)).toISOString(),
      end: warehouseInstant(String(r.interval_end)).toISOString(),
    }));
    if (recorded.length > 0) return { chunks: recorded, windows: [] };
  }
  const chunks = await plannedChunks(warehouse, pipeline, interval, name);
  const windows = chunkWindows(chunks, pipeline, windowSize);
  if (windows.length > MAX_WINDOWS_PER_BATCH) {
    throw new ValidationError(
      `interval ${interval.from.toISOString()} to ${interval.to.toISOString()} needs ${chunks.length} chunks in ${windows.length} windows of ${windowSize}, more than ${MAX_WINDOWS_PER_BATCH} windows; use a coarser chunk.grain, a larger chunk.targetRows or a shorter interval`,
    );
  }
  return { chunks, windows };
}

/** A row of recordedWindows as a window. */
export function readWindow(row: Record<string, unknown>): ChunkWindow {
  return {
    index: Number(row.window_index),
    firstChunk: Number(row.first_chunk),
    chunkCount: Number(row.chunk_count),
    start: warehouseInstant(String(row.interval_start)).toISOString(),
    end: warehouseInstant(String(row.interval_end)).toISOString(),
    ...(row.unit_counts === null || row.unit_counts === undefined ? {} : { unitCounts: String(row.unit_counts) }),
  };
}

/** A new batch's chunks: calendar ones, or sized by the source's volume. */
async function plannedChunks(warehouse: Warehouse, pipeline: Pipeline, interval: BatchInterval, name: (step: string) => string): Promise<Chunk[]> {
  const { targetRows } = pipeline.chunk;
  if (targetRows === undefined) return planChunks(interval, pipeline);
  const rows = (await warehouse.query(sourceVolume(pipeline, interval), name('source-volume'))).map((r) => ({
    firstAt: String(r.first_at),
    rows: Number(r.n),
  }));
  const chunks = sizeChunks(grainUnits(interval, pipeline), volumeByUnit(rows, pipeline), targetRows);
  logger.info('chunks sized by the source volume', {
    pipeline: pipeline.name,
    targetRows,
    sourceRows: rows.reduce((sum, r) => sum + r.rows, 0),
    chunks: chunks.length,
  });
  return chunks;
}

/**
 * The sort-key warning (logged, and returned for Plan's output), or
 * undefined. A catalog that cannot be read is a warning too, naming why:
 * the check advises, it never stops a run.
 */
export async function sortKeyCheck(warehouse: Warehouse, pipeline: Pipeline, name: (step: string) => string): Promise<string | undefined> {
  const tables = sourceTables(pipeline.sourceSql);
  if (tables.length === 0) return undefined;
  let warning: string | undefined;
  try {
    const rows = await warehouse.query(sourceSortKeys(tables), name('source-sort-keys'));
    const facts: SortKeyFact[] = tables.map((table) => {
      const first = rows.find(
        (r) =>
          String(r.table_name) === table.table && (table.schema === undefined || String(r.schema_name) === table.schema) && Math.abs(Number(r.sortkey)) === 1,
      );
      return { table, firstSortColumn: first === undefined ? undefined : String(first.column_name) };
    });
    warning = sortKeyWarning(pipeline, facts);
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    warning = `pipeline ${pipeline.name}: could not read the sort keys of the source's tables (${error.message}); whether each chunk's load scans the whole source is unknown`;
  }
  if (warning !== undefined) logger.warn(warning, { pipeline: pipeline.name });
  return warning;
}

/**
 * The chunks to load, each carrying the id of its generation's load that an
 * ended execution left running (`running`: LoadChunk waits for it instead of
 * submitting). One listing per batch or window, not one per chunk; a batch
 * planned for the first time has none to find.
 */
export async function withLoadsStillRunning(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  remaining: readonly ChunkToLoad[],
): Promise<ChunkToLoad[]> {
  if (remaining.length === 0) return [];
  const running = await warehouse.runningStatements(loadStatementPrefix(pipeline.name, batch.batchId));
  return withRunningLoads(remaining, running, (chunk) => loadStatementName(pipeline, batch, chunk));
}

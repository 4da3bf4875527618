import type { BatchRef } from '../../domain/batch.ts';
import { type ColumnNulls, type DriftOutcome, driftChecks, driftOf, NO_DRIFT } from '../../domain/gate/drift.ts';
import { liveDriftCounts, nullAggregate } from '../../domain/gate/sql/drift.ts';
import type { Pipeline } from '../../domain/spec.ts';
import type { Warehouse } from '../commons/warehouse.ts';

/**
 * The drift checks against the live table, as results to record: staging's
 * rows and NULL counts per chunk from the gate's pass (`counted`, the rows
 * of chunkCounts, with the NULL counts of `nullColumns` as
 * `staging_null_<i>`), live's from one grouped pass over its rows of the
 * batch interval. None declared, or a migration batch: no statement.
 */
export async function driftResults(
  warehouse: Warehouse,
  pipeline: Pipeline,
  batch: BatchRef,
  counted: readonly Record<string, unknown>[],
  nullColumns: readonly string[],
  name: (step: string) => string,
): Promise<DriftOutcome> {
  const drift = driftOf(pipeline);
  if (drift === undefined) return NO_DRIFT;
  const live = new Map((await warehouse.query(liveDriftCounts(pipeline, batch, nullColumns), name('live-drift'))).map((r) => [Number(r.chunk_index), r]));
  const chunks = counted.map((r) => ({
    index: Number(r.chunk_index),
    start: String(r.interval_start),
    stagingRows: Number(r.staging_rows),
    liveRows: Number(live.get(Number(r.chunk_index))?.live_rows ?? 0),
  }));
  const total = (rows: Iterable<Record<string, unknown>>, column: string) => [...rows].reduce((sum, r) => sum + Number(r[column] ?? 0), 0);
  const stagingRows = total(counted, 'staging_rows');
  const liveRows = total(live.values(), 'live_rows');
  const nulls: ColumnNulls[] = nullColumns.map((column, i) => ({
    column,
    stagingNulls: total(counted, `staging_${nullAggregate(i)}`),
    stagingRows,
    liveNulls: total(live.values(), `live_${nullAggregate(i)}`),
    liveRows,
  }));
  return driftChecks(drift, chunks, nulls);
}

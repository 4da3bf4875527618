import type { BatchRef, CheckResult } from '../../domain/batch.ts';
import { WarehouseError } from '../../domain/errors.ts';
import {
  chunksToLocate,
  keySample,
  LOCATED_KEY_SAMPLES,
  type LocatedKeys,
  type LocatedSegment,
  type Location,
  locationChecks,
  locationText,
  MAX_LOCATED_SEGMENTS,
  notLocated,
  type SideFigure,
  segmentText,
  shownValue,
} from '../../domain/gate/locate.ts';
import type { Reconciliation } from '../../domain/gate/reconcile.ts';
import { differingKeys, differingSegments, dimensionColumn, KeyClass, keyColumn, SEGMENT_COLUMN, segmentUnit } from '../../domain/gate/sql/locate.ts';
import { CHECKSUM_AGGREGATE, type ChunkAggregate, measureAggregate } from '../../domain/gate/sql/reconcile.ts';
import { liveColumnsQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';

type Row = Record<string, unknown>;

const figure = (row: Row, name: string): SideFigure => ({ source: String(row[`source_${name}`] ?? 0), staging: String(row[`staging_${name}`] ?? 0) });

/** What locating reads: Reconcile's warehouse, frozen pipeline, batch and statement names, the gate's result and its figures. */
export interface LocateInput {
  readonly warehouse: Warehouse;
  readonly pipeline: Pipeline;
  readonly batch: BatchRef;
  readonly name: (step: string) => string;
  readonly result: Reconciliation;
  readonly aggregates: readonly ChunkAggregate[];
}

/**
 * What Reconcile records and pages about where a failed gate's difference
 * lies (undefined: nothing to locate). A database error while locating
 * does not hide the gate's failure: it is recorded and shown in place of
 * the location (a transient one still fails the step, whose Retry runs
 * Reconcile again).
 */
export async function located(at: LocateInput): Promise<{ checks: CheckResult[]; text: string } | undefined> {
  try {
    const location = await locateDifference(at);
    return location === undefined ? undefined : { checks: locationChecks(location), text: locationText(location) };
  } catch (error) {
    if (!(error instanceof WarehouseError)) throw error;
    logger.warn('could not locate the difference', { batchId: at.batch.batchId, error: error.message });
    return notLocated(error);
  }
}

/**
 * Where the failed gate's difference lies, in two statements over the
 * chunks whose rows, checksum or sums differ (the first few): the segments
 * that disagree, then the keys that differ in both directions. Undefined,
 * and no statement, when no loaded chunk differs (the gate failed on
 * something else).
 */
async function locateDifference({ warehouse, pipeline, batch, name, result, aggregates }: LocateInput): Promise<Location | undefined> {
  const { chunks, differing } = chunksToLocate([...result.mismatches, ...(result.contentMismatches ?? [])]);
  if (chunks.length === 0) return undefined;
  const dimensions = pipeline.checks.dimensions ?? [];
  const measures = pipeline.checks.measures;
  const unit = segmentUnit(pipeline);
  const hasChecksum = aggregates.some((a) => a.name === CHECKSUM_AGGREGATE);
  // Staging's column types, so the source's dimension values are cast as the load casts them (only with dimensions).
  const stagingTypes = new Map(
    dimensions.length === 0
      ? []
      : (await warehouse.query(liveColumnsQuery(pipeline.target.schema, batch.stagingTable), name('locate-columns'))).map((r) => {
          const column = String(r.col);
          return [column.split(' ')[0]!, column.slice(column.indexOf(' ') + 1)] as [string, string];
        }),
  );

  const segmentRows = await warehouse.query(
    differingSegments(pipeline, batch, chunks, aggregates, stagingTypes, MAX_LOCATED_SEGMENTS),
    name('locate-segments'),
  );
  const segments: LocatedSegment[] = segmentRows.map((r) => ({
    chunk: Number(r.chunk_index),
    segment: segmentText(r[SEGMENT_COLUMN], unit),
    dimensions: dimensions.map((_, i) => shownValue(r[dimensionColumn(i)])),
    rows: figure(r, 'rows'),
    ...(hasChecksum ? { checksum: figure(r, CHECKSUM_AGGREGATE) } : {}),
    measures: measures.map((_, i) => figure(r, measureAggregate(i))),
  }));

  const keyRows = await warehouse.query(differingKeys(pipeline, batch, chunks, aggregates, LOCATED_KEY_SAMPLES), name('locate-keys'));
  const keysOf = (kind: KeyClass): LocatedKeys => {
    const rows = keyRows.filter((r) => Number(r.ap_class) === kind);
    return {
      count: Number(rows[0]?.ap_keys ?? 0),
      samples: rows.map((r) =>
        keySample(
          pipeline.businessKey,
          pipeline.businessKey.map((_, i) => r[keyColumn(i)]),
          { rows: figure(r, 'rows'), measures: measures.map((_, i) => figure(r, measureAggregate(i))) },
          measures,
        ),
      ),
    };
  };

  return {
    chunks,
    differingChunks: differing,
    unit,
    dimensions,
    measures,
    segments,
    segmentCount: Number(segmentRows[0]?.ap_groups ?? 0),
    missingInStaging: keysOf(KeyClass.MISSING_IN_STAGING),
    missingInSource: keysOf(KeyClass.MISSING_IN_SOURCE),
    rowsChanged: keysOf(KeyClass.ROWS_CHANGED),
    businessKey: pipeline.businessKey,
  };
}

/**
 * Chunks sized by data (`chunk.targetRows`): the interval's grain units,
 * the source's rows per unit (one grouped count, sql/plan.ts
 * sourceVolume), and adjacent units merged up to the target. Every
 * boundary is a grain boundary in the pipeline's zone, as planChunks
 * computes them; chunks stay half-open, gapless and in order.
 */
import { ValidationError } from '../errors.ts';
import { extractColumn } from '../extract-column.ts';
import type { SourceTable } from '../redshift-sql/source-sql.ts';
import type { Pipeline } from '../spec.ts';
import { floorToGrain, nextBoundary, parseWarehouseTime } from '../time.ts';
import type { BatchInterval, Chunk } from './chunk.ts';

/** One grain unit `[start, end)` of an interval. */
export interface GrainUnit {
  readonly start: Date;
  readonly end: Date;
}

/** Every grain unit of `[from, to)`, in order (no ceiling: they are merged before they become chunks). */
export function grainUnits(interval: BatchInterval, pipeline: Pipeline): GrainUnit[] {
  const { grain, timezone } = pipeline.chunk;
  const units: GrainUnit[] = [];
  for (let start = interval.from; start.getTime() < interval.to.getTime(); ) {
    const end = nextBoundary(start, grain, timezone);
    units.push({ start, end });
    start = end;
  }
  return units;
}

/** A warehouse timestamp (`2026-01-02 03:04:05.678`, UTC without a zone, or ISO) as an instant. */
export function warehouseInstant(value: string): Date {
  const instant = parseWarehouseTime(value.trim());
  if (Number.isNaN(instant.getTime())) throw new ValidationError(`the warehouse returned ${JSON.stringify(value)} where a timestamp was expected`);
  return instant;
}

/**
 * Rows per unit start (epoch milliseconds) from the grouped count's rows:
 * each group's earliest time, floored to the grain in the pipeline's zone
 * exactly as the chunk boundaries are, names its unit.
 */
export function volumeByUnit(rows: readonly { firstAt: string; rows: number }[], pipeline: Pipeline): Map<number, number> {
  const { grain, timezone } = pipeline.chunk;
  const volume = new Map<number, number>();
  for (const row of rows) {
    const unit = floorToGrain(warehouseInstant(row.firstAt), grain, timezone).getTime();
    volume.set(unit, (volume.get(unit) ?? 0) + row.rows);
  }
  return volume;
}

/**
 * Adjacent units merged while the chunk stays within `targetRows`; a unit
 * holding more than the target is a chunk of its own. Empty units cost
 * nothing: leading ones join the first chunk with rows, the others the
 * chunk being filled.
 */
export function sizeChunks(units: readonly GrainUnit[], volume: ReadonlyMap<number, number>, targetRows: number): Chunk[] {
  const chunks: { start: Date; end: Date; rows: number }[] = [];
  let current: { start: Date; end: Date; rows: number } | undefined;
  for (const unit of units) {
    const rows = volume.get(unit.start.getTime()) ?? 0;
    if (current && current.rows > 0 && current.rows + rows > targetRows) {
      chunks.push(current);
      current = undefined;
    }
    current = current ? { ...current, end: unit.end, rows: current.rows + rows } : { start: unit.start, end: unit.end, rows };
  }
  if (current) chunks.push(current);
  return chunks.map((c, index) => ({ index, start: c.start.toISOString(), end: c.end.toISOString() }));
}

/** A source table and the first column of its sort key (undefined: it has none), as the catalog lists them. */
export interface SortKeyFact {
  readonly table: SourceTable;
  readonly firstSortColumn: string | undefined;
}

/**
 * The warning Plan gives when no table the source reads is sorted first on
 * the time column: then each chunk's load (and its clearing) scans the
 * whole source instead of the chunk's blocks, and the run costs about
 * chunks x source. Undefined when one is.
 */
export function sortKeyWarning(pipeline: Pipeline, facts: readonly SortKeyFact[]): string | undefined {
  if (facts.length === 0) return undefined;
  const t = extractColumn(pipeline);
  if (facts.some((f) => f.firstSortColumn === t)) return undefined;
  const listed = facts
    .map(
      (f) =>
        `${f.table.schema === undefined ? '' : `${f.table.schema}.`}${f.table.table} (${f.firstSortColumn === undefined ? 'no sort key' : `sorted first on ${f.firstSortColumn}`})`,
    )
    .join(', ');
  return (
    `pipeline ${pipeline.name}: no table the source reads is sorted first on the ${t === pipeline.timeColumn ? 'time column' : 'modification time column'} ${t}: ${listed}. ` +
    `Each chunk's load then scans the whole source rather than the chunk's rows; give the source table a sort key starting with ${t} ` +
    `(locally: an index on it), or use fewer, larger chunks (chunk.grain, chunk.targetRows)`
  );
}

/**
 * Where a failed gate's difference lies: the chunks to examine, what Plan
 * checks of `checks.dimensions`, and the located segments and keys as
 * check results and as the alert's table. Split the chunk and compare per
 * segment (day, or hour, and the dimension values), then per business key
 * in both directions: the checksum-diff idea, one level deep plus the row.
 */
import { type CheckResult, ChunkStatus } from '../batch.ts';
import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';
import { clip } from '../text.ts';
import { renderTable } from '../text-table.ts';
import { decimalDifference, decimalEqual } from './decimal.ts';
import type { ChunkCount } from './reconcile.ts';

/** Chunks examined at most: each costs a read of its rows on both sides, twice. */
export const MAX_LOCATED_CHUNKS = 5;
/** Differing segments fetched and listed at most. */
export const MAX_LOCATED_SEGMENTS = 20;
/** Keys sampled per class (missing in staging, missing in the source, changed). */
export const LOCATED_KEY_SAMPLES = 5;
/** A dimension value or key value as an alert shows it, at most. */
const VALUE_CHARS = 60;

const FLOATING = ['real', 'double precision'];

/** Every `checks.dimensions` column is a column of the live table, and not a floating-point one. */
export function checkDimensionColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): void {
  const { schema, table } = pipeline.target;
  for (const column of pipeline.checks.dimensions ?? []) {
    const type = columns.find((c) => c.name === column)?.dataType;
    if (type === undefined) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: checks.dimensions names ${column}, which is not a column of ${schema}.${table}: name a column of the live table or remove it`,
      );
    }
    if (FLOATING.includes(type)) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: checks.dimensions names ${column} of ${schema}.${table}, which is ${type}: a floating-point value is no business dimension to group by (equal-looking values may differ); name a text, integer, numeric, date or boolean column or remove it`,
      );
    }
  }
}

/** The chunks whose rows, checksum or sums differ and that loaded (a chunk not loaded is missing whole), the first few in order. */
export function chunksToLocate(chunks: readonly ChunkCount[]): { chunks: number[]; differing: number } {
  const differing = [...new Set(chunks.filter((c) => c.status === ChunkStatus.DONE).map((c) => c.index))].sort((a, b) => a - b);
  return { chunks: differing.slice(0, MAX_LOCATED_CHUNKS), differing: differing.length };
}

/** One figure of the gate (rows, checksum, a measure's sum) on both sides of a segment or key. */
export interface SideFigure {
  readonly source: string;
  readonly staging: string;
}

/** A segment whose figures disagree: a chunk's day (or hour) and dimension values. */
export interface LocatedSegment {
  readonly chunk: number;
  /** `2026-01-04`, or `2026-01-04 05:00` for an hourly grain. */
  readonly segment: string;
  readonly dimensions: readonly string[];
  readonly rows: SideFigure;
  readonly checksum?: SideFigure;
  /** In the order of checks.measures. */
  readonly measures: readonly SideFigure[];
}

/** The keys of one class that differ: how many, and the first few in key order. */
export interface LocatedKeys {
  readonly count: number;
  readonly samples: readonly string[];
}

export interface Location {
  /** Chunks examined, and how many differ in all (more than examined: capped). */
  readonly chunks: readonly number[];
  readonly differingChunks: number;
  readonly unit: 'day' | 'hour';
  readonly dimensions: readonly string[];
  readonly measures: readonly string[];
  /** The first MAX_LOCATED_SEGMENTS differing segments, and how many differ in all. */
  readonly segments: readonly LocatedSegment[];
  readonly segmentCount: number;
  readonly missingInStaging: LocatedKeys;
  readonly missingInSource: LocatedKeys;
  readonly rowsChanged: LocatedKeys;
  readonly businessKey: readonly string[];
}

/** A value as the alert shows it. */
export function shownValue(value: unknown): string {
  return value === null || value === undefined ? 'NULL' : clip(String(value), VALUE_CHARS);
}

/** The segment's start as the table shows it: the day, or day and hour. */
export function segmentText(value: unknown, unit: 'day' | 'hour'): string {
  const text = String(value);
  return /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}/.test(text) ? (unit === 'day' ? text.slice(0, 10) : text.slice(0, 16).replace('T', ' ')) : text;
}

const differs = (f: SideFigure) => !decimalEqual(f.source, f.staging);
const difference = (f: SideFigure) => decimalDifference(f.source, f.staging) ?? '?';

/** `#3 2026-01-04 product_id=7`. */
function segmentName(location: Location, s: LocatedSegment): string {
  return [`#${s.chunk}`, s.segment, ...location.dimensions.map((d, i) => `${d}=${s.dimensions[i]}`)].join(' ');
}

/** `rows source 120, staging 120; amount source ..., staging ..., source - staging 100000.00; checksum differs`: the figures that differ. */
function segmentFigures(location: Location, s: LocatedSegment): string {
  const parts = [`rows source ${s.rows.source}, staging ${s.rows.staging}`];
  location.measures.forEach((m, i) => {
    const f = s.measures[i];
    if (f !== undefined && differs(f)) parts.push(`${m} source ${f.source}, staging ${f.staging}, source - staging ${difference(f)}`);
  });
  if (s.checksum !== undefined) parts.push(`checksum ${differs(s.checksum) ? 'differs' : 'same'}`);
  return parts.join('; ');
}

function examined(location: Location): string {
  const listed = location.chunks.map((c) => `#${c}`).join(', ');
  return location.differingChunks > location.chunks.length
    ? `chunk(s) ${listed} examined: the first ${location.chunks.length} of ${location.differingChunks} that differ`
    : `chunk(s) ${listed} examined`;
}

function keysText(keys: LocatedKeys): string {
  if (keys.samples.length === 0) return '';
  const more = keys.count - keys.samples.length;
  return `first keys: ${keys.samples.join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}

/** The checks that say where the content differs (locationChecks), in their order. */
export const LOCATION_CHECKS = ['difference_located', 'missing_in_staging', 'missing_in_source', 'rows_changed'] as const;

/**
 * The location as check results, recorded beside the gate's (all blocking:
 * the gate already failed): the segments that differ, then the keys
 * missing from staging, missing from the source, and changed.
 */
export function locationChecks(location: Location): CheckResult[] {
  const by = [location.unit, ...location.dimensions].join(', ');
  const segments = location.segments.map((s) => `${segmentName(location, s)}: ${segmentFigures(location, s)}`);
  if (location.segmentCount > location.segments.length) segments.push(`... and ${location.segmentCount - location.segments.length} more`);
  const key = `(${location.businessKey.join(', ')})`;
  const [located, missingInStaging, missingInSource, rowsChanged] = LOCATION_CHECKS;
  const keyCheck = (check: string, keys: LocatedKeys, what: string): CheckResult => ({
    check,
    passed: keys.count === 0,
    observed: `${keys.count} key(s) ${what}`,
    expected: '0 keys',
    details: keysText(keys),
  });
  return [
    {
      check: located,
      passed: location.segmentCount === 0,
      observed: `${location.segmentCount} segment(s) by ${by} differ; ${examined(location)}`,
      expected: `every ${by} of the chunks equal on both sides`,
      details: segments.join('; '),
    },
    keyCheck(missingInStaging, location.missingInStaging, `${key} of the source missing from staging`),
    keyCheck(missingInSource, location.missingInSource, `${key} in staging missing from the source`),
    keyCheck(rowsChanged, location.rowsChanged, `${key} on both sides whose rows differ (a value, or the rows per key)`),
  ];
}

/** In place of the location, when locating failed: the check that says so, and the alert's line. */
export function notLocated(error: Error): { checks: CheckResult[]; text: string } {
  const reason = `${error.name}: ${clip(error.message, 300)}`;
  return {
    checks: [{ check: LOCATION_CHECKS[0], passed: false, observed: `not located: ${reason}`, expected: 'the segments and keys that differ', details: '' }],
    text: `Where the content differs: not located (${reason}); the gate's checks above stand.`,
  };
}

/** The location for the alert: a table of the segments that differ, then the keys that differ in each direction. */
export function locationText(location: Location): string {
  const { unit } = location;
  const lines = [
    `Where the content differs (${location.segments.length} of ${location.segmentCount} segment(s) by ${[unit, ...location.dimensions].join(', ')}; ${examined(location)}):`,
  ];
  if (location.segments.length > 0) {
    const measureHeads = location.measures.flatMap((m) => [`${m} source`, `${m} staging`, `${m} source - staging`]);
    const hasChecksum = location.segments.some((s) => s.checksum !== undefined);
    lines.push(
      renderTable(
        ['chunk', unit, ...location.dimensions, 'rows source', 'rows staging', ...measureHeads, ...(hasChecksum ? ['checksum'] : [])],
        location.segments.map((s) => [
          s.chunk,
          s.segment,
          ...s.dimensions,
          s.rows.source,
          s.rows.staging,
          ...location.measures.flatMap((_, i) => {
            const f = s.measures[i];
            return f === undefined ? ['-', '-', '-'] : [f.source, f.staging, difference(f)];
          }),
          ...(hasChecksum ? [s.checksum === undefined ? '-' : differs(s.checksum) ? 'differs' : 'same'] : []),
        ]),
        ['r', 'l', ...location.dimensions.map((): 'l' => 'l'), 'r', 'r', ...measureHeads.map((): 'r' => 'r'), ...(hasChecksum ? ['l' as const] : [])],
      ),
    );
  }
  const key = `(${location.businessKey.join(', ')})`;
  lines.push(`Keys ${key} that differ in those chunks:`);
  const classes: [string, LocatedKeys][] = [
    ['in the source, missing from staging', location.missingInStaging],
    ['in staging, missing from the source', location.missingInSource],
    ['on both sides, rows differ', location.rowsChanged],
  ];
  for (const [what, keys] of classes) lines.push(`  ${what}: ${keys.count}${keys.count > 0 ? ` (${keysText(keys)})` : ''}`);
  return lines.join('\n');
}

/** The figures of one key on both sides, as the statement returns them. */
export interface KeyFigures {
  readonly rows: SideFigure;
  readonly measures: readonly SideFigure[];
}

/**
 * One differing key as the alert lists it: `(order_id, line_no) = (17, 1)`,
 * and for a key on both sides what differs: `rows source 1, staging 2`,
 * `amount source 1234.00, staging 234.00`, or `a value differs` (seen
 * only by the checksum).
 */
export function keySample(businessKey: readonly string[], values: readonly unknown[], figures: KeyFigures, measures: readonly string[]): string {
  const key = `(${businessKey.join(', ')}) = (${values.map(shownValue).join(', ')})`;
  const { rows } = figures;
  if (decimalEqual(rows.source, '0') || decimalEqual(rows.staging, '0')) return key;
  if (differs(rows)) return `${key}: rows source ${rows.source}, staging ${rows.staging}`;
  const sums = measures.flatMap((m, i) => {
    const f = figures.measures[i];
    return f !== undefined && differs(f) ? [`${m} source ${f.source}, staging ${f.staging}`] : [];
  });
  return `${key}: ${sums.length > 0 ? sums.join(', ') : 'a value differs'}`;
}

/**
 * The SQL of locating a difference the gate found (Reconcile, only when it
 * failed): within a few chunks, the segments (day, or hour for an hourly
 * grain, and the declared dimension values) whose figures disagree, then
 * the business keys that differ in both directions.
 */
import type { BatchRef } from '../../batch.ts';
import { extractColumn } from '../../extract-column.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { CATALOG_TYPE } from '../../sql/row-hash.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import { quarantines } from '../quarantine.ts';
import { stagingWithQuarantined } from './quarantine.ts';
import type { ChunkAggregate } from './reconcile.ts';

/** Result columns: the segment's start, dimension i's value (`ap_d<i>`), the chunk, a key's class and its place in it. */
export const SEGMENT_COLUMN = 'ap_segment';
export const dimensionColumn = (index: number) => `ap_d${index}`;
export const keyColumn = (index: number) => `ap_k${index}`;

/** What a key that differs is (`ap_class`): missing from staging, missing from the source, or on both sides with other rows. */
export const KeyClass = { MISSING_IN_STAGING: 1, MISSING_IN_SOURCE: 2, ROWS_CHANGED: 3 } as const;
export type KeyClass = (typeof KeyClass)[keyof typeof KeyClass];

/** The unit a chunk is split into: the day, or the hour for an hourly grain (a day is then many chunks). */
export function segmentUnit(pipeline: Pipeline): 'day' | 'hour' {
  return pipeline.chunk.grain === 'hour' ? 'hour' : 'day';
}

/**
 * The start of a time's segment in the chunk timezone, as a timestamp:
 * DATE_TRUNC of the local time, as Plan's grain units are cut
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_DATE_TRUNC.html,
 * https://docs.aws.amazon.com/redshift/latest/dg/r_AT_TIME_ZONE.html).
 */
function segmentOf(pipeline: Pipeline, column: string): string {
  const unit = sqlLiteral(segmentUnit(pipeline));
  const { timezone } = pipeline.chunk;
  return timezone === 'UTC' ? `DATE_TRUNC(${unit}, ${column})` : `DATE_TRUNC(${unit}, (${column} AT TIME ZONE 'UTC') AT TIME ZONE ${sqlLiteral(timezone)})`;
}

/** The chunks examined, with their intervals, from the manifest. */
function examinedChunks(chunks: readonly number[]): string {
  return `SELECT chunk_index, interval_start, interval_end FROM ${M}.chunk_state
             WHERE batch_id = :batch_id AND chunk_index IN (${chunks.map((c) => sqlLiteral(Math.floor(c))).join(', ')})`;
}

/** The rows of one side inside the examined chunks, as `s`, with the chunk each lies in (`c`). */
function sideRows(pipeline: Pipeline, from: string): string {
  const t = `s.${quoteIdent(extractColumn(pipeline))}`;
  // A handful of chunks: the range join reads each row once against at most that many intervals.
  return `${from} AS s JOIN chunk AS c ON ${t} >= c.interval_start AND ${t} < c.interval_end
             WHERE ${t} >= :start AND ${t} < :end`;
}

/**
 * The two sides as FROM items. With a quarantine, staging's side is
 * staging and the batch's quarantined rows together, as the gate counted
 * them (quarantine.ts stagingWithQuarantined): a quarantined row is not
 * missing. `columns`: those the statement reads.
 */
function sources(pipeline: Pipeline, batch: BatchRef, columns: readonly string[]): { source: string; staging: string } {
  const staging = quarantines(pipeline)
    ? stagingWithQuarantined(pipeline, batch, [...new Set([extractColumn(pipeline), ...pipeline.businessKey, ...columns])])
    : qualifiedName(pipeline.target.schema, batch.stagingTable);
  return { source: `(${pipeline.sourceSql}\n) `, staging };
}

/** The columns the gate's aggregates read. */
const aggregateColumns = (aggregates: readonly ChunkAggregate[]) => aggregates.flatMap((a) => a.columns);

/**
 * The two sides' groups side by side: each side grouped on its own, then
 * the groups of both stacked (the other side's figures 0) and added up by
 * group. A GROUP BY treats NULLs as equal, so a NULL dimension value or key
 * meets its counterpart, which a join on `=` would not. The other side's
 * 0 is an integer beside a sum of the same (numeric) category, which a set
 * operation allows (https://docs.aws.amazon.com/redshift/latest/dg/r_UNION.html).
 */
function sideBySide(groups: readonly string[], aggregates: readonly ChunkAggregate[], side: (name: 'source' | 'staging') => string): string {
  const figures = (name: 'source' | 'staging') =>
    aggregates.flatMap((a) => (['source', 'staging'] as const).map((s) => (s === name ? `${s}_${a.name}` : `0 AS ${s}_${a.name}`))).join(', ');
  return `SELECT ${groups.join(', ')}, ${figures('source')} FROM (${side('source')}) AS src
             UNION ALL
            SELECT ${groups.join(', ')}, ${figures('staging')} FROM (${side('staging')}) AS stg`;
}

/** A group whose figures differ on the two sides. */
function differs(aggregates: readonly ChunkAggregate[]): string {
  return aggregates.map((a) => `SUM(b.source_${a.name}) <> SUM(b.staging_${a.name})`).join(' OR ');
}

const totals = (aggregates: readonly ChunkAggregate[]) =>
  aggregates.flatMap((a) => [`SUM(b.source_${a.name}) AS source_${a.name}`, `SUM(b.staging_${a.name}) AS staging_${a.name}`]).join(', ');

/**
 * Per chunk examined, segment and dimension values, the gate's figures
 * (gateAggregates) on both sides in one statement: the first `limit` groups that
 * disagree, each with how many disagree in all (`ap_groups`, counted before the
 * LIMIT); source dimension values cast to staging's type (`stagingTypes`) first.
 * Why: docs/decisions/where-a-difference-lies.md
 */
export function differingSegments(
  pipeline: Pipeline,
  batch: BatchRef,
  chunks: readonly number[],
  aggregates: readonly ChunkAggregate[],
  stagingTypes: ReadonlyMap<string, string>,
  limit: number,
): Statement {
  const dimensions = pipeline.checks.dimensions ?? [];
  const dimension = (column: string, cast: boolean) => {
    const type = stagingTypes.get(column) ?? '';
    return cast && CATALOG_TYPE.test(type) ? `CAST(s.${quoteIdent(column)} AS ${type})` : `s.${quoteIdent(column)}`;
  };
  const groups = ['chunk_index', SEGMENT_COLUMN, ...dimensions.map((_, i) => dimensionColumn(i))];
  const { source, staging } = sources(pipeline, batch, [...dimensions, ...aggregateColumns(aggregates)]);
  const side = (name: 'source' | 'staging') =>
    `SELECT c.chunk_index, ${segmentOf(pipeline, `s.${quoteIdent(extractColumn(pipeline))}`)} AS ${SEGMENT_COLUMN},
                    ${[...dimensions.map((d, i) => `${dimension(d, name === 'source')} AS ${dimensionColumn(i)}`), ...aggregates.map((a) => `SUM(${a.perRow('s')}) AS ${name}_${a.name}`)].join(', ')}
               FROM ${sideRows(pipeline, name === 'source' ? source : staging)}
              GROUP BY ${groups.map((_, i) => i + 1).join(', ')}`;
  return {
    sql: `WITH chunk AS (
            ${examinedChunks(chunks)}
          ),
          b AS (
            ${sideBySide(groups, aggregates, side)}
          )
          SELECT ${groups.map((g) => `b.${g}`).join(', ')}, ${totals(aggregates)}, COUNT(*) OVER () AS ap_groups
            FROM b
           GROUP BY ${groups.map((g) => `b.${g}`).join(', ')}
          HAVING ${differs(aggregates)}
           ORDER BY ${groups.map((g) => `b.${g}`).join(', ')}
           LIMIT ${Math.max(1, Math.floor(limit))}`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

/**
 * The anti-joins both ways within the chunks examined, in one statement: each
 * side's gate figures summed per business key, each key classed missing in
 * staging, missing in the source, or on both with other rows; per class its count
 * and the first `limit` keys in key order
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_WF_ROW_NUMBER.html).
 * Why: docs/decisions/where-a-difference-lies.md
 */
export function differingKeys(pipeline: Pipeline, batch: BatchRef, chunks: readonly number[], aggregates: readonly ChunkAggregate[], limit: number): Statement {
  const keys = pipeline.businessKey.map((_, i) => keyColumn(i));
  const { source, staging } = sources(pipeline, batch, aggregateColumns(aggregates));
  const side = (name: 'source' | 'staging') =>
    `SELECT ${[...pipeline.businessKey.map((k, i) => `s.${quoteIdent(k)} AS ${keyColumn(i)}`), ...aggregates.map((a) => `SUM(${a.perRow('s')}) AS ${name}_${a.name}`)].join(', ')}
               FROM ${sideRows(pipeline, name === 'source' ? source : staging)}
              GROUP BY ${keys.map((_, i) => i + 1).join(', ')}`;
  const rows = aggregates.find((a) => a.perRow('s') === '1')?.name ?? 'rows';
  return {
    sql: `WITH chunk AS (
            ${examinedChunks(chunks)}
          ),
          b AS (
            ${sideBySide(keys, aggregates, side)}
          ),
          k AS (
            SELECT ${keys.map((g) => `b.${g}`).join(', ')}, ${totals(aggregates)}
              FROM b
             GROUP BY ${keys.map((g) => `b.${g}`).join(', ')}
            HAVING ${differs(aggregates)}
          ),
          classed AS (
            SELECT k.*, CASE WHEN k.staging_${rows} = 0 THEN ${sqlLiteral(KeyClass.MISSING_IN_STAGING)}
                             WHEN k.source_${rows} = 0 THEN ${sqlLiteral(KeyClass.MISSING_IN_SOURCE)}
                             ELSE ${sqlLiteral(KeyClass.ROWS_CHANGED)} END AS ap_class
              FROM k
          )
          SELECT * FROM (
            SELECT classed.*, ROW_NUMBER() OVER (PARTITION BY ap_class ORDER BY ${keys.join(', ')}) AS ap_n,
                   COUNT(*) OVER (PARTITION BY ap_class) AS ap_keys
              FROM classed
          ) AS r
           WHERE ap_n <= ${Math.max(1, Math.floor(limit))}
           ORDER BY ap_class, ap_n`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

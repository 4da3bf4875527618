/** The SQL of the drift checks against the live table (domain/gate/drift.ts): staging's NULL counts in the gate's pass, live's side in one grouped pass. */
import type { BatchRef } from '../../batch.ts';
import { extractColumn } from '../../extract-column.ts';
import { qualifiedName, quoteIdent } from '../../identifiers.ts';
import { grainKey } from '../../plan/sql/plan.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import type { ChunkAggregate } from './reconcile.ts';

/** Result column suffix of the NULL count of the i-th compared column (`null_<i>`: a column name may not fit an alias). */
export const nullAggregate = (index: number) => `null_${index}`;

/**
 * Per column, its NULLs, as more entries of the gate's one grouped pass
 * over each side (domain/gate/sql/reconcile.ts chunkCounts): a row adds 1 when
 * the column is NULL. No other pass over staging; the source's side comes
 * with it.
 */
export function nullCountAggregates(columns: readonly string[]): ChunkAggregate[] {
  return columns.map((column, i) => ({
    name: nullAggregate(i),
    perRow: (row) => `CASE WHEN ${row}.${quoteIdent(column)} IS NULL THEN 1 ELSE 0 END`,
    columns: [column],
  }));
}

/**
 * Live's side, in one grouped pass over the live rows of the batch
 * interval (time column, extractColumn, in `[start, end)`): per chunk,
 * its rows (`live_rows`) and the NULLs of each of `columns`
 * (`live_null_<i>`). Rows are bucketed by grain unit and a unit belongs to
 * the chunk that starts at or before it, as Reconcile's chunkCounts
 * places them; a chunk live holds no rows of has no result row.
 */
export function liveDriftCounts(pipeline: Pipeline, batch: BatchRef, columns: readonly string[]): Statement {
  const t = quoteIdent(extractColumn(pipeline));
  const nulls = columns.map((c, i) => `SUM(CASE WHEN l.${quoteIdent(c)} IS NULL THEN 1 ELSE 0 END) AS live_${nullAggregate(i)}`);
  const rolled = columns.map((_, i) => `SUM(lv.live_${nullAggregate(i)}) AS live_${nullAggregate(i)}`);
  return {
    sql: `WITH chunk AS (
            SELECT chunk_index, ${grainKey(pipeline, 'interval_start')} AS k FROM ${M}.chunk_state WHERE batch_id = :batch_id
          ),
          lv AS (
            SELECT ${grainKey(pipeline, `l.${t}`)} AS k, COUNT(*) AS live_rows${nulls.map((n) => `, ${n}`).join('')}
              FROM ${qualifiedName(pipeline.target.schema, pipeline.target.table)} AS l
             WHERE l.${t} >= :start AND l.${t} < :end
             GROUP BY 1
          ),
          unit AS (
            SELECT k FROM chunk UNION SELECT k FROM lv
          ),
          owner AS (
            SELECT unit.k, MAX(chunk.chunk_index) OVER (ORDER BY unit.k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS chunk_index
              FROM unit LEFT JOIN chunk ON chunk.k = unit.k
          )
          SELECT owner.chunk_index, SUM(lv.live_rows) AS live_rows${rolled.map((r) => `, ${r}`).join('')}
            FROM lv JOIN owner ON owner.k = lv.k
           GROUP BY owner.chunk_index
           ORDER BY owner.chunk_index`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

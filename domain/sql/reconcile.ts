/** The SQL of Reconcile: per-chunk figures and whole-table checks from one pass over each side, and the recorded results. */
import { BatchStatus, type BatchRef, type CheckResult, ChunkStatus } from '../batch.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../identifiers.ts';
import type { Pipeline } from '../spec.ts';
import { LOCK_MANIFEST } from './manifest.ts';
import { grainKey } from './plan.ts';
import { MANIFEST as M, type Statement, timestampParam } from './statement.ts';

/**
 * A per-row value summed per chunk on both sides, in the one pass over
 * each: the row count now; the column sums and content checksums of the
 * reconciliation gate are more entries (each must add up: partial sums per
 * business-key value, then per grain unit, then per chunk).
 */
export interface ChunkAggregate {
  /** Result column, `source_<name>` and `staging_<name>`. */
  readonly name: string;
  /** The value one row adds, over the row's alias (`s`). */
  readonly perRow: (row: string) => string;
  /** The columns perRow reads (staging's pass reads only these, the key and the time). */
  readonly columns: readonly string[];
}

export const CHUNK_AGGREGATES: readonly ChunkAggregate[] = [{ name: 'rows', perRow: () => '1', columns: [] }];

/**
 * Per chunk: what the source has now and what staging has, from one
 * grouped pass over the source and one over staging, with the rows the
 * load recorded; and, from the same staging pass, the rows outside the
 * batch interval (or with no time) and the business-key values held by
 * more than one row, on every row of the result.
 *
 * Rows are bucketed by grain unit (grainKey: a hash-join key, no range
 * join); a unit belongs to the chunk that starts at or before it (chunks
 * are whole grain units, merged or not, in time order), found by carrying
 * the last chunk index forward over the units in time order. Staging is
 * grouped by business-key value first (for the duplicate check), each
 * value counted in its earliest unit; `split_keys` counts values whose rows
 * lie in more than one unit (never when the key holds the time column),
 * and only then are the per-chunk staging figures inexact: the gate has
 * failed (those values are duplicates) and Reconcile takes them from
 * chunkRowCounts instead.
 */
export function chunkCounts(pipeline: Pipeline, batch: BatchRef, aggregates: readonly ChunkAggregate[] = CHUNK_AGGREGATES): Statement {
  return chunkFigures(pipeline, batch, aggregates, 'by-key');
}

/**
 * chunkCounts with staging grouped by unit instead of by business-key
 * value: exact per-chunk staging figures whatever the keys (a second pass,
 * run only when chunkCounts found values split across units).
 */
export function chunkRowCounts(pipeline: Pipeline, batch: BatchRef, aggregates: readonly ChunkAggregate[] = CHUNK_AGGREGATES): Statement {
  return chunkFigures(pipeline, batch, aggregates, 'by-unit');
}

function chunkFigures(pipeline: Pipeline, batch: BatchRef, aggregates: readonly ChunkAggregate[], staging: 'by-key' | 'by-unit'): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const table = qualifiedName(pipeline.target.schema, batch.stagingTable);
  const key = pipeline.businessKey.map((c) => `s.${quoteIdent(c)}`).join(', ');
  // Staging's columns a pass reads: the business key and the time, bucketed.
  const stagingRows = (columns: readonly string[]) =>
    `(SELECT ${[...new Set(columns)].map((c) => `s.${quoteIdent(c)}`).join(', ')}, CASE WHEN s.${t} >= :start AND s.${t} < :end THEN ${grainKey(pipeline, `s.${t}`)} END AS ap_unit_key
                      FROM ${table} AS s) AS s`;
  const sums = (side: string, expression: (a: ChunkAggregate) => string) => aggregates.map((a) => `${expression(a)} AS ${side}_${a.name}`).join(', ');
  const rolled = (side: string, from: string) => aggregates.map((a) => `SUM(${from}.${side}_${a.name}) AS ${side}_${a.name}`).join(', ');
  const stagingPass =
    staging === 'by-key'
      ? `stg_key AS (
            SELECT MIN(s.ap_unit_key) AS k, MAX(s.ap_unit_key) AS k_last, COUNT(*) - COUNT(s.ap_unit_key) AS outside, COUNT(*) AS key_rows,
                   ${sums('staging', (a) => `SUM(CASE WHEN s.ap_unit_key IS NOT NULL THEN ${a.perRow('s')} END)`)}
              FROM ${stagingRows([...pipeline.businessKey, pipeline.timeColumn, ...aggregates.flatMap((a) => a.columns)])}
             GROUP BY ${key}
          ),
          stg AS (
            SELECT k, ${rolled('staging', 'stg_key')}, SUM(outside) AS outside,
                   SUM(CASE WHEN key_rows > 1 THEN 1 ELSE 0 END) AS duplicate_keys,
                   SUM(CASE WHEN k <> k_last THEN 1 ELSE 0 END) AS split_keys
              FROM stg_key GROUP BY k
          )`
      : `stg AS (
            SELECT s.ap_unit_key AS k, ${sums('staging', (a) => `SUM(CASE WHEN s.ap_unit_key IS NOT NULL THEN ${a.perRow('s')} END)`)},
                   COUNT(*) - COUNT(s.ap_unit_key) AS outside, 0 AS duplicate_keys, 0 AS split_keys
              FROM ${stagingRows([pipeline.timeColumn, ...aggregates.flatMap((a) => a.columns)])}
             GROUP BY s.ap_unit_key
          )`;
  const figures = (side: string, from: string) => aggregates.map((a) => `COALESCE(${from}.${side}_${a.name}, 0) AS ${side}_${a.name}`);
  return {
    sql: `WITH chunk AS (
            SELECT chunk_index, interval_start, status, rows_written, ${grainKey(pipeline, 'interval_start')} AS k
              FROM ${M}.chunks WHERE batch_id = :batch_id
          ),
          src AS (
            SELECT ${grainKey(pipeline, `s.${t}`)} AS k, ${sums('source', (a) => `SUM(${a.perRow('s')})`)}
              FROM (${pipeline.sourceSql}
) AS s
             WHERE s.${t} >= :start AND s.${t} < :end
             GROUP BY 1
          ),
          ${stagingPass},
          unit AS (
            SELECT k FROM chunk UNION SELECT k FROM src UNION SELECT k FROM stg WHERE k IS NOT NULL
          ),
          owner AS (
            SELECT unit.k, MAX(chunk.chunk_index) OVER (ORDER BY unit.k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS chunk_index
              FROM unit LEFT JOIN chunk ON chunk.k = unit.k
          ),
          src_chunk AS (
            SELECT owner.chunk_index, ${rolled('source', 'src')} FROM src JOIN owner ON owner.k = src.k GROUP BY owner.chunk_index
          ),
          stg_chunk AS (
            SELECT owner.chunk_index, ${rolled('staging', 'stg')} FROM stg JOIN owner ON owner.k = stg.k GROUP BY owner.chunk_index
          ),
          whole AS (
            SELECT COALESCE(SUM(outside), 0) AS outside_interval, COALESCE(SUM(duplicate_keys), 0) AS duplicate_keys,
                   COALESCE(SUM(split_keys), 0) AS split_keys
              FROM stg
          )
          SELECT chunk.chunk_index, chunk.interval_start, chunk.status, chunk.rows_written,
                 ${[...figures('source', 'sc'), ...figures('staging', 'gc')].join(', ')},
                 whole.outside_interval, whole.duplicate_keys, whole.split_keys
            FROM chunk
            LEFT JOIN src_chunk AS sc ON sc.chunk_index = chunk.chunk_index
            LEFT JOIN stg_chunk AS gc ON gc.chunk_index = chunk.chunk_index
           CROSS JOIN whole
           ORDER BY chunk.chunk_index`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

/** Records check results and moves the batch to CHECKED (all passed) or leaves it for RecordFailure. */
export function recordChecks(
  batchId: string,
  results: readonly CheckResult[],
  totals: { rowsRead: number; rowsWritten: number },
  now: Date,
  staleChunks: readonly number[] = [],
): string[] {
  const id = sqlLiteral(batchId);
  const attempt = `(SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`;
  // Replaces this attempt's results, so a retried Reconcile records them
  // once, also when an earlier invocation's transaction is still running.
  const statements = [LOCK_MANIFEST, `DELETE FROM ${M}.check_results WHERE batch_id = ${id} AND attempt = ${attempt}`];
  statements.push(...results.map(
    (r) => `INSERT INTO ${M}.check_results (batch_id, attempt, check_name, passed, observed, expected, details, checked_at)
            SELECT ${id}, ${attempt}, ${sqlLiteral(r.check)}, ${sqlLiteral(r.passed)}, ${sqlLiteral(r.observed)},
                   ${sqlLiteral(r.expected)}, ${sqlLiteral(r.details)}, ${sqlLiteral(now)}`,
  ));
  const allPassed = results.every((r) => r.passed);
  if (staleChunks.length > 0) {
    statements.push(
      `UPDATE ${M}.chunks SET status = ${sqlLiteral(ChunkStatus.STALE)}
        WHERE batch_id = ${id} AND status = ${sqlLiteral(ChunkStatus.DONE)} AND chunk_index IN (${staleChunks.map((i) => sqlLiteral(i)).join(', ')})`,
    );
  }
  statements.push(
    `UPDATE ${M}.batches SET rows_read = ${sqlLiteral(totals.rowsRead)}, rows_written = ${sqlLiteral(totals.rowsWritten)},
            rows_rejected = 0${allPassed ? `, status = ${sqlLiteral(BatchStatus.CHECKED)}` : ''}
      WHERE batch_id = ${id} AND status = ${sqlLiteral(BatchStatus.RUNNING)}`,
  );
  return statements;
}

/** The SQL of Reconcile: counts per chunk, whole-table checks of staging, and the recorded results. */
import { BatchStatus, type BatchRef, type CheckResult, ChunkStatus } from '../batch.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../identifiers.ts';
import type { Pipeline } from '../spec.ts';
import { LOCK_MANIFEST } from './manifest.ts';
import { MANIFEST as M, type Statement, timestampParam } from './statement.ts';

/**
 * The chunk a timestamp falls in, as a key both sides of a hash join can
 * use (a range join on [start, end) is quadratic on engines without
 * indexes). Days and months: the local calendar bucket in the pipeline's
 * zone. Hours: whole hours since the batch start, which stays unique
 * across a DST change where local hours repeat.
 */
function chunkKey(pipeline: Pipeline, column: string): string {
  const { grain, timezone } = pipeline.chunk;
  if (grain === 'hour') {
    return `FLOOR((EXTRACT(EPOCH FROM ${column}) - EXTRACT(EPOCH FROM CAST(:start AS timestamp))) / 3600)`;
  }
  return `DATE_TRUNC(${sqlLiteral(grain)}, (${column} AT TIME ZONE 'UTC') AT TIME ZONE ${sqlLiteral(timezone)})`;
}

/**
 * Per chunk: rows the source has now, rows staging has, rows the load
 * recorded. Chunks come from the manifest, so an unloaded chunk shows up.
 */
export function chunkCounts(pipeline: Pipeline, batch: BatchRef): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const staging = qualifiedName(pipeline.target.schema, batch.stagingTable);
  return {
    sql: `WITH chunk AS (
            SELECT chunk_index, interval_start, status, rows_written, ${chunkKey(pipeline, 'interval_start')} AS k
              FROM ${M}.chunk_state WHERE batch_id = :batch_id
          ),
          src AS (
            SELECT ${chunkKey(pipeline, `s.${t}`)} AS k, COUNT(*) AS n
              FROM (${pipeline.sourceSql}
) AS s
             WHERE s.${t} >= :start AND s.${t} < :end
             GROUP BY 1
          ),
          stg AS (
            SELECT ${chunkKey(pipeline, `s.${t}`)} AS k, COUNT(*) AS n
              FROM ${staging} AS s
             WHERE s.${t} >= :start AND s.${t} < :end
             GROUP BY 1
          )
          SELECT chunk.chunk_index, chunk.interval_start, chunk.status, chunk.rows_written,
                 COALESCE(src.n, 0) AS source_rows, COALESCE(stg.n, 0) AS staging_rows
            FROM chunk
            LEFT JOIN src ON src.k = chunk.k
            LEFT JOIN stg ON stg.k = chunk.k
           ORDER BY chunk.chunk_index`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

/**
 * Whole-table checks of staging: rows outside the batch interval (a load
 * that escaped its chunk) and business-key values on more than one row (a
 * duplicated load, or a source that breaks the key).
 */
export function stagingProblems(pipeline: Pipeline, batch: BatchRef): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const staging = qualifiedName(pipeline.target.schema, batch.stagingTable);
  const key = pipeline.businessKey.map(quoteIdent).join(', ');
  return {
    sql: `SELECT (SELECT COUNT(*) FROM ${staging} WHERE ${t} IS NULL OR ${t} < :start OR ${t} >= :end) AS outside_interval,
                 (SELECT COUNT(*) FROM (SELECT 1 AS one FROM ${staging} GROUP BY ${key} HAVING COUNT(*) > 1) AS d) AS duplicate_keys`,
    parameters: { start: timestampParam(batch.from), end: timestampParam(batch.to) },
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
      // A new generation: the loads of the old one no longer count (chunk_state).
      `UPDATE ${M}.chunks SET status = ${sqlLiteral(ChunkStatus.STALE)}, attempt = attempt + 1
        WHERE batch_id = ${id} AND chunk_index IN (${staleChunks.map((i) => sqlLiteral(i)).join(', ')})`,
    );
  }
  statements.push(
    `UPDATE ${M}.batches SET rows_read = ${sqlLiteral(totals.rowsRead)}, rows_written = ${sqlLiteral(totals.rowsWritten)},
            rows_rejected = 0${allPassed ? `, status = ${sqlLiteral(BatchStatus.CHECKED)}` : ''}
      WHERE batch_id = ${id} AND status = ${sqlLiteral(BatchStatus.RUNNING)}`,
  );
  return statements;
}

/** The SQL of Cleanup: what is past retention or abandoned, and dropping it. */
import { BatchStatus } from '../batch.ts';
import type { RetiredKind } from '../cleanup.ts';
import { qualifiedName, sqlLiteral } from '../identifiers.ts';
import type { Pipeline } from '../spec.ts';
import { MANIFEST as M, type Statement, timestampParam } from './statement.ts';

/**
 * A batch still RUNNING or CHECKED this long after it (re)started belongs to
 * an execution that ended without RecordFailure (aborted, or past the state
 * machine's 12-hour timeout): its staging table is abandoned.
 */
export const ABANDONED_AFTER_MS = 24 * 3_600_000;

/**
 * Old versions past retention (but none a rollback made live again: it is
 * no longer where the publication put it), and staging tables of earlier failed,
 * superseded or abandoned batches: what Cleanup drops. A dropped staging table is
 * recorded, and a re-run of that batch reloads every chunk.
 */
export function cleanupCandidates(pipeline: Pipeline, currentBatchId: string, now: Date): Statement {
  return {
    sql: `SELECT ${sqlLiteral('old_version' satisfies RetiredKind)} AS kind, old_version_table AS name, batch_id FROM ${M}.publications
           WHERE pipeline = :pipeline AND dropped_at IS NULL AND restored_at IS NULL
             AND seq <= (SELECT COALESCE(MAX(seq), 0) FROM ${M}.publications WHERE pipeline = :pipeline) - CAST(:keep AS int)
          UNION ALL
          SELECT ${sqlLiteral('staging' satisfies RetiredKind)} AS kind, staging_table AS name, batch_id FROM ${M}.batches
           WHERE pipeline = :pipeline AND staging_dropped_at IS NULL AND batch_id <> :batch_id
             AND (status IN (${sqlLiteral(BatchStatus.FAILED)}, ${sqlLiteral(BatchStatus.SUPERSEDED)})
                  OR (status IN (${sqlLiteral(BatchStatus.RUNNING)}, ${sqlLiteral(BatchStatus.CHECKED)}) AND started_at < :abandoned_before))`,
    parameters: {
      pipeline: pipeline.name,
      keep: String(pipeline.retention.keepVersions),
      batch_id: currentBatchId,
      abandoned_before: timestampParam(new Date(now.getTime() - ABANDONED_AFTER_MS)),
    },
  };
}

/** Drops one table (never CASCADE: a dependent view makes this fail loudly instead of vanishing) and records it. */
export function dropRetired(pipeline: Pipeline, kind: RetiredKind, table: string, batchId: string, now: Date): string[] {
  const qualified = `${pipeline.target.schema}.${table}`;
  const record =
    kind === 'old_version'
      ? `UPDATE ${M}.publications SET dropped_at = ${sqlLiteral(now)} WHERE pipeline = ${sqlLiteral(pipeline.name)} AND old_version_table = ${sqlLiteral(qualified)}`
      : `UPDATE ${M}.batches SET staging_dropped_at = ${sqlLiteral(now)} WHERE batch_id = ${sqlLiteral(batchId)}`;
  return [`DROP TABLE IF EXISTS ${qualifiedName(pipeline.target.schema, table)}`, record];
}

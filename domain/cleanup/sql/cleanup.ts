/** The SQL of Cleanup: what is past retention or abandoned, and dropping it. */
import { AttemptStatus, BatchPurpose, BatchStatus } from '../../batch.ts';
import { qualifiedName, sqlLiteral } from '../../identifiers.ts';
import { LOCK_MANIFEST } from '../../manifest/sql/manifest.ts';
import { quarantineTableFor } from '../../plan/sql/null-times.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import type { RetiredKind } from '../cleanup.ts';

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

/**
 * Ends a check (`batches.purpose` 'check') in one transaction: staging dropped,
 * its rows in the quarantine deleted (which holds only what runs rejected), the
 * batch and attempt ended CHECK_PASSED if CHECKED, else CHECK_FAILED. Only an
 * open check is ended, so run again it changes nothing.
 * Why: docs/decisions/checking-an-interval-without-publishing.md
 */
export function endCheck(pipeline: Pipeline, batchId: string, stagingTable: string, quarantine: boolean, now: Date): string[] {
  const id = sqlLiteral(batchId);
  const CHECKED = sqlLiteral(BatchStatus.CHECKED);
  const verdict = (status: string) =>
    `CASE WHEN ${status} = ${CHECKED} THEN ${sqlLiteral(BatchStatus.CHECK_PASSED)} ELSE ${sqlLiteral(BatchStatus.CHECK_FAILED)} END`;
  const open = `${sqlLiteral(BatchStatus.RUNNING)}, ${CHECKED}`;
  const isOpenCheck = `batch_id = ${id} AND purpose = ${sqlLiteral(BatchPurpose.check)} AND status IN (${open})`;
  return [
    LOCK_MANIFEST,
    `DROP TABLE IF EXISTS ${qualifiedName(pipeline.target.schema, stagingTable)}`,
    ...(quarantine ? [`DELETE FROM ${qualifiedName(pipeline.target.schema, quarantineTableFor(pipeline))} WHERE batch_id = ${id}`] : []),
    `UPDATE ${M}.batch_attempts
        SET status = ${verdict(`(SELECT status FROM ${M}.batches WHERE ${isOpenCheck})`)}, finished_at = ${sqlLiteral(now)}
      WHERE batch_id = ${id} AND status = ${sqlLiteral(AttemptStatus.RUNNING)}
        AND attempt = (SELECT attempt FROM ${M}.batches WHERE ${isOpenCheck})`,
    `UPDATE ${M}.batches
        SET status = ${verdict('status')}, finished_at = ${sqlLiteral(now)}, staging_dropped_at = ${sqlLiteral(now)}
      WHERE ${isOpenCheck}`,
  ];
}

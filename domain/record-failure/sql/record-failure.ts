/** The SQL of RecordFailure: the batch and its attempt marked FAILED. */
import { AttemptStatus, BatchStatus } from '../../batch.ts';
import { sqlLiteral } from '../../identifiers.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import { truncateUtf8 } from '../../text.ts';

/** Marks the batch and its current attempt FAILED with the error (never a published batch). */
export function markBatchFailed(batchId: string, error: string, now: Date): Statement[] {
  const PUBLISHED = sqlLiteral(BatchStatus.PUBLISHED);
  const parameters = { batch_id: batchId, error: truncateUtf8(error || 'unknown error', 60_000), now: timestampParam(now) };
  return [
    {
      sql: `UPDATE ${M}.batch_attempts SET status = ${sqlLiteral(AttemptStatus.FAILED)}, error = :error, finished_at = :now
             WHERE batch_id = :batch_id AND status = ${sqlLiteral(AttemptStatus.RUNNING)}
               AND attempt = (SELECT attempt FROM ${M}.batches WHERE batch_id = :batch_id AND status <> ${PUBLISHED})`,
      parameters,
    },
    {
      sql: `UPDATE ${M}.batches SET status = ${sqlLiteral(BatchStatus.FAILED)}, error = :error, finished_at = :now
             WHERE batch_id = :batch_id AND status <> ${PUBLISHED}`,
      parameters,
    },
  ];
}

/** The pipeline's latest publication: what its live table shows, by the manifest (no row: nothing published yet). */
export function livePublication(pipeline: string): Statement {
  return {
    sql: `SELECT seq, batch_id, published_at FROM ${M}.publications WHERE pipeline = :pipeline ORDER BY seq DESC LIMIT 1`,
    parameters: { pipeline },
  };
}

/**
 * Whether the live table is there, by the catalog: what readers get when
 * they query it. pg_class and pg_namespace are among the PostgreSQL catalog
 * tables Redshift has (https://docs.aws.amazon.com/redshift/latest/dg/c_join_PG.html).
 */
export function liveTablePresent(schema: string, table: string): Statement {
  return {
    sql: `SELECT COUNT(*) AS present FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = :schema AND c.relname = :table`,
    parameters: { schema, table },
  };
}

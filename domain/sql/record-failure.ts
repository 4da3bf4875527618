/** The SQL of RecordFailure: the batch and its attempt marked FAILED. */
import { AttemptStatus, BatchStatus } from '../batch.ts';
import { sqlLiteral } from '../identifiers.ts';
import { truncateUtf8 } from '../text.ts';
import { MANIFEST as M, type Statement, timestampParam } from './statement.ts';

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

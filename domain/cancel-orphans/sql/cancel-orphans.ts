/**
 * The SQL of CancelOrphans (also run by RecordFailure): the statements a
 * batch's manifest records as submitted and maybe still running, the chunks
 * whose INSERT a cancel ended, and the batch an aborted or timed-out
 * execution leaves behind.
 */
import { AttemptStatus, BatchStatus, ChunkStatus } from '../../batch.ts';
import { sqlLiteral } from '../../identifiers.ts';
import { CHUNKS_LOCK } from '../../manifest/sql/manifest.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';

const LOADING = sqlLiteral(ChunkStatus.LOADING);

/**
 * Chunk INSERTs submitted and not known to have ended: a LOADING chunk with
 * the id of its INSERT (LoadChunk records it right after submitting).
 */
export function submittedStatements(batchId: string): Statement {
  return {
    sql: `SELECT chunk_index, statement_id FROM ${M}.chunks
           WHERE batch_id = :batch_id AND status = ${LOADING} AND statement_id IS NOT NULL
           ORDER BY chunk_index`,
    parameters: { batch_id: batchId },
  };
}

/**
 * A chunk whose INSERT the cancel ended: CANCELLED, so a re-run clears its
 * interval before loading it. Only while the chunk still records that
 * INSERT: a newer attempt that took the chunk over is left alone.
 */
export function markChunkCancelled(batchId: string, chunkIndex: number, statementId: string, now: Date): Statement {
  return {
    lock: CHUNKS_LOCK,
    sql: `UPDATE ${M}.chunks SET status = ${sqlLiteral(ChunkStatus.CANCELLED)}, finished_at = :now
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)
             AND status = ${LOADING} AND statement_id = :statement_id`,
    parameters: { batch_id: batchId, chunk_index: String(chunkIndex), statement_id: statementId, now: timestampParam(now) },
  };
}

/** The batch whose current attempt this execution ran, and its status. */
export function batchOfExecution(executionId: string): Statement {
  return {
    sql: `SELECT batch_id, pipeline, status, attempt FROM ${M}.batches WHERE execution_id = :execution_id`,
    parameters: { execution_id: executionId },
  };
}

/**
 * The batch and its attempt FAILED with why the execution stopped, if the
 * execution's attempt is still the batch's current one and the batch is
 * still RUNNING or CHECKED (never a published or already failed batch).
 */
export function markExecutionStopped(batchId: string, executionId: string, error: string, now: Date): Statement[] {
  const open = `${sqlLiteral(BatchStatus.RUNNING)}, ${sqlLiteral(BatchStatus.CHECKED)}`;
  const parameters = { batch_id: batchId, execution_id: executionId, error, now: timestampParam(now) };
  return [
    {
      sql: `UPDATE ${M}.batch_attempts SET status = ${sqlLiteral(AttemptStatus.FAILED)}, error = :error, finished_at = :now
             WHERE batch_id = :batch_id AND execution_id = :execution_id AND status = ${sqlLiteral(AttemptStatus.RUNNING)}
               AND attempt = (SELECT attempt FROM ${M}.batches
                               WHERE batch_id = :batch_id AND execution_id = :execution_id AND status IN (${open}))`,
      parameters,
    },
    {
      sql: `UPDATE ${M}.batches SET status = ${sqlLiteral(BatchStatus.FAILED)}, error = :error, finished_at = :now
             WHERE batch_id = :batch_id AND execution_id = :execution_id AND status IN (${open})`,
      parameters,
    },
  ];
}

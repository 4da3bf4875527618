/** The SQL of LoadChunk: replace-in-staging for one interval, and the chunk's bookkeeping. */
import { type BatchRef, ChunkStatus } from '../batch.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../identifiers.ts';
import type { Chunk } from '../plan.ts';
import type { Pipeline } from '../spec.ts';
import { CHUNKS_LOCK } from './manifest.ts';
import { MANIFEST as M, type Statement, timestampParam } from './statement.ts';

const LOADING = sqlLiteral(ChunkStatus.LOADING);
const DONE = sqlLiteral(ChunkStatus.DONE);

export function chunkStatus(batchId: string, chunk: Chunk): Statement {
  return {
    sql: `SELECT status, statement_id FROM ${M}.chunks WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index) },
  };
}

/** Replace-in-staging, step 1: whatever an earlier attempt left in this interval goes. */
export function clearStagingInterval(pipeline: Pipeline, batch: BatchRef, chunk: Chunk): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  return {
    sql: `DELETE FROM ${qualifiedName(pipeline.target.schema, batch.stagingTable)} WHERE ${t} >= :start AND ${t} < :end`,
    parameters: { start: timestampParam(chunk.start), end: timestampParam(chunk.end) },
  };
}

/**
 * Replace-in-staging, step 2: the source rows of `[start, end)`. The outer
 * filter keeps the half-open interval even if the source query is looser.
 */
export function loadStagingInterval(pipeline: Pipeline, batch: BatchRef, chunk: Chunk): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const columns = batch.columns.map(quoteIdent).join(', ');
  return {
    sql: `INSERT INTO ${qualifiedName(pipeline.target.schema, batch.stagingTable)} (${columns})
          SELECT ${columns} FROM (${pipeline.sourceSql}
) AS src
           WHERE src.${t} >= :start AND src.${t} < :end`,
    parameters: { start: timestampParam(chunk.start), end: timestampParam(chunk.end) },
  };
}

/**
 * Marks a chunk LOADING before its INSERT is submitted: a chunk found
 * PENDING therefore never had rows written, and only a LOADING one needs
 * its interval cleared first.
 */
export function markChunkLoading(batchId: string, chunk: Chunk, now: Date): Statement {
  return {
    lock: CHUNKS_LOCK,
    sql: `UPDATE ${M}.chunks
             SET status = ${LOADING}, statement_id = NULL, attempt = attempt + 1, started_at = :now
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int) AND status <> ${DONE}`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index), now: timestampParam(now) },
  };
}

/** Recorded as soon as the INSERT is submitted, so the running statement can be found from the manifest. */
export function recordChunkStatement(batchId: string, chunk: Chunk, statementId: string): Statement {
  return {
    lock: CHUNKS_LOCK,
    sql: `UPDATE ${M}.chunks SET statement_id = :statement_id
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index), statement_id: statementId },
  };
}

/**
 * Rows written as the Data API reported them for the INSERT. Reconcile
 * compares this record with what staging holds (reading staging here would
 * make concurrent chunk loads conflict under serializable isolation).
 */
export function markChunkDone(batchId: string, chunk: Chunk, statementId: string, rowsWritten: number, now: Date): Statement {
  return {
    lock: CHUNKS_LOCK,
    // Only the attempt whose INSERT this was may close the chunk: a late or
    // overtaken attempt updates nothing.
    sql: `UPDATE ${M}.chunks
             SET status = ${DONE}, finished_at = :now, rows_written = CAST(:rows_written AS bigint)
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)
             AND status = ${LOADING} AND statement_id = :statement_id`,
    parameters: {
      batch_id: batchId,
      chunk_index: String(chunk.index),
      statement_id: statementId,
      rows_written: String(rowsWritten),
      now: timestampParam(now),
    },
  };
}

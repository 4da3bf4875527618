/**
 * The SQL the command line (bin/atomic-publish.ts) reads the manifest with:
 * read-only, one statement each.
 */
import { BatchPurpose, ChunkStatus } from '../../batch.ts';
import { sqlLiteral } from '../../identifiers.ts';
import { MANIFEST as M, MANIFEST_SCHEMA, type Statement, timestampParam } from '../../sql/statement.ts';

const DONE = sqlLiteral(ChunkStatus.DONE);

/** A batch's chunks (`chunks`), those loaded (`done`) and the rows they wrote (`rows`), from chunk_state. */
export function batchProgress(batchId: string): Statement {
  return {
    sql: `SELECT COUNT(*) AS chunks, COALESCE(SUM(CASE WHEN status = ${DONE} THEN 1 ELSE 0 END), 0) AS done,
                 COALESCE(SUM(CASE WHEN status = ${DONE} THEN rows_written ELSE 0 END), 0) AS rows
            FROM ${M}.chunk_state WHERE batch_id = :batch_id`,
    parameters: { batch_id: batchId },
  };
}

/** The pipeline's publications that are not rolled back and wrote some of `[from, to)`, oldest first. */
export function publishedIntervals(pipeline: string, interval: { from: Date; to: Date }): Statement {
  return {
    sql: `SELECT seq, batch_id, published_at, publish_mode, interval_start, interval_end, rows_published
            FROM ${M}.publications
           WHERE pipeline = :pipeline AND rolled_back_at IS NULL AND rollback_of IS NULL
             AND interval_start < :to AND interval_end > :from
           ORDER BY seq`,
    parameters: { pipeline, from: timestampParam(interval.from), to: timestampParam(interval.to) },
  };
}

/** The pipeline's newest publication (a rollback too): what readers see. */
export function newestPublication(pipeline: string): Statement {
  return {
    sql: `SELECT seq, batch_id, published_at, publish_mode, interval_start, interval_end, rows_published, rollback_of
            FROM ${M}.publications WHERE pipeline = :pipeline ORDER BY seq DESC LIMIT 1`,
    parameters: { pipeline },
  };
}

/**
 * The pipeline's newest publication in effect: not a rollback, not rolled
 * back. After a rollback of some intervals it names the batch live newest
 * (domain/rollback/rollback.ts isIntervalRollback).
 */
export function newestInEffect(pipeline: string): Statement {
  return {
    sql: `SELECT seq, batch_id, published_at, publish_mode, interval_start, interval_end, rows_published, rollback_of
            FROM ${M}.publications WHERE pipeline = :pipeline AND rollback_of IS NULL AND rolled_back_at IS NULL
           ORDER BY seq DESC LIMIT 1`,
    parameters: { pipeline },
  };
}

/**
 * Whether `batches` has `purpose` (`present` 1 or 0): manifest version 11
 * on (with `publications.event_sent_at`: the same version's DDL, one
 * transaction), installed by the first Plan after a deploy; the command
 * line may read a manifest before that.
 */
export function batchPurposePresent(): Statement {
  return {
    sql: `SELECT COUNT(*) AS present FROM information_schema.columns WHERE table_schema = :schema AND table_name = :table AND column_name = :column`,
    parameters: { schema: MANIFEST_SCHEMA, table: 'batches', column: 'purpose' },
  };
}

/**
 * The pipeline's batches, newest first, at most `limit`; with their
 * publications (a publish, and rollbacks back to the batch) and how many of
 * those had their event sent (domain/publication-events/sql/event-redelivery.ts). `version11`
 * says whether the manifest has version 11's columns (batchPurposePresent):
 * then checks are left out unless `withChecks`; before it, no purpose was
 * recorded, and every publication counts as sent (as the upgrade marks them).
 */
export function recentBatches(pipeline: string, limit: number, version11: boolean, withChecks = true): Statement {
  return {
    sql: `SELECT b.batch_id, b.mode, ${version11 ? 'b.purpose' : 'CAST(NULL AS varchar(16)) AS purpose'}, b.interval_start, b.interval_end, b.status, b.attempt,
                 b.chunk_count, b.rows_written, b.rows_rejected, b.started_at, b.finished_at, b.execution_id, b.error,
                 COALESCE(p.publications, 0) AS publications, COALESCE(p.events_sent, 0) AS events_sent
            FROM ${M}.batches b
            LEFT JOIN (SELECT batch_id, COUNT(*) AS publications, ${version11 ? 'COUNT(event_sent_at)' : 'COUNT(*)'} AS events_sent
                         FROM ${M}.publications WHERE pipeline = :pipeline GROUP BY batch_id) p ON p.batch_id = b.batch_id
           WHERE b.pipeline = :pipeline${version11 && !withChecks ? ` AND (b.purpose IS NULL OR b.purpose <> ${sqlLiteral(BatchPurpose.check)})` : ''}
           ORDER BY b.started_at DESC LIMIT CAST(:limit AS int)`,
    parameters: { pipeline, limit: String(limit) },
  };
}

/** A batch's status and the check results of its latest attempt (what `check` prints). */
export function batchCheckResults(batchId: string): Statement {
  return {
    sql: `SELECT b.status, r.check_name, r.passed, r.observed, r.expected, r.details
            FROM ${M}.batches b LEFT JOIN ${M}.check_results r ON r.batch_id = b.batch_id AND r.attempt = b.attempt
           WHERE b.batch_id = :batch_id
           ORDER BY r.check_name`,
    parameters: { batch_id: batchId },
  };
}

/** The check results of each batch's latest attempt, for the pipeline's batches. */
export function latestCheckResults(pipeline: string): Statement {
  return {
    sql: `SELECT r.batch_id, r.check_name, r.passed
            FROM ${M}.check_results r JOIN ${M}.batches b ON b.batch_id = r.batch_id AND r.attempt = b.attempt
           WHERE b.pipeline = :pipeline
           ORDER BY r.batch_id, r.check_name`,
    parameters: { pipeline },
  };
}

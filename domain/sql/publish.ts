/** The SQL of Publish: the swap transaction and the batch state it is judged by. */
import { AttemptStatus, BatchStatus, type BatchRef } from '../batch.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../identifiers.ts';
import type { Pipeline } from '../spec.ts';
import { MANIFEST as M, type Statement } from './statement.ts';

export function batchState(batchId: string): Statement {
  return {
    sql: `SELECT b.status, b.attempt, p.seq, p.published_at, p.old_version_table, p.rows_published
            FROM ${M}.batches b LEFT JOIN ${M}.publications p ON p.batch_id = b.batch_id
           WHERE b.batch_id = :batch_id`,
    parameters: { batch_id: batchId },
  };
}

/**
 * The swap, as ONE transaction: lock the publications (one publisher at a
 * time) and staging (no late writer); check nothing was published since
 * this batch was planned, nothing newer is live, and staging still holds
 * the rows Reconcile checked; rename live to its retained old version and
 * staging to live; record it all.
 */
export function swapPublish(pipeline: Pipeline, batch: BatchRef, previousVersionTable: string, now: Date): string[] {
  const { schema, table } = pipeline.target;
  const id = sqlLiteral(batch.batchId);
  const name = sqlLiteral(pipeline.name);
  return [
    `LOCK ${M}.publications`,
    `LOCK ${qualifiedName(schema, batch.stagingTable)}`,
    `CALL ${M}.assert_publishable(${name}, ${id}, ${sqlLiteral(batch.basePublication)}, ${sqlLiteral(schema)}, ${sqlLiteral(batch.stagingTable)})`,
    `ALTER TABLE ${qualifiedName(schema, table)} RENAME TO ${quoteIdent(previousVersionTable)}`,
    `ALTER TABLE ${qualifiedName(schema, batch.stagingTable)} RENAME TO ${quoteIdent(table)}`,
    `INSERT INTO ${M}.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table, rows_published)
     SELECT ${name}, COALESCE(MAX(seq), 0) + 1, ${id}, ${sqlLiteral(now)}, ${sqlLiteral(`${schema}.${table}`)},
            ${sqlLiteral(`${schema}.${previousVersionTable}`)},
            (SELECT rows_written FROM ${M}.batches WHERE batch_id = ${id})
       FROM ${M}.publications WHERE pipeline = ${name}`,
    `UPDATE ${M}.batch_attempts SET status = ${sqlLiteral(AttemptStatus.PUBLISHED)}, finished_at = ${sqlLiteral(now)}
      WHERE batch_id = ${id} AND attempt = (SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`,
    `UPDATE ${M}.batches SET status = ${sqlLiteral(BatchStatus.PUBLISHED)}, finished_at = ${sqlLiteral(now)} WHERE batch_id = ${id}`,
  ];
}

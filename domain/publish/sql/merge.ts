/**
 * The SQL of Publish for `merge`: staging upserted into the live table by
 * the business key in one transaction, newer versions winning, soft
 * deletes deleting, and the replaced live rows kept for rollback.
 */
import type { BatchRef } from '../../batch.ts';
import { ValidationError } from '../../errors.ts';
import { qualifiedName, quoteIdent } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M } from '../../sql/statement.ts';
import { retainedColumns } from './intervals.ts';
import { boundLockWaits, LOCKS_HELD } from './lock-waits.ts';
import { fitSwap, publishGuard, recordPublished } from './swap.ts';

/**
 * The merge as ONE transaction, locked and guarded as replaceIntervals is; then,
 * without a time limit, the live rows a staging row wins against (same key, greater
 * version, or none live) copied to the old version and deleted (DELETE ... USING:
 * https://docs.aws.amazon.com/redshift/latest/dg/r_DELETE.html), staging's rows whose
 * key live no longer holds inserted unless soft-deleted; the publication recorded.
 * Why DELETE then INSERT, not MERGE: docs/decisions/merge.md
 */
export function mergeIntoLive(pipeline: Pipeline, batch: BatchRef, retainedAs: string, now: Date, lockWaitMs: number): string[] {
  const { merge } = pipeline;
  if (merge === undefined) throw new ValidationError(`pipeline ${pipeline.name} publishes by ${pipeline.publishMode}, not merge: it has no merge section`);
  const { schema, table } = pipeline.target;
  const live = qualifiedName(schema, table);
  const staging = qualifiedName(schema, batch.stagingTable);
  const retained = qualifiedName(schema, retainedAs);
  const columns = batch.columns.map(quoteIdent);
  const list = columns.join(', ');
  // The old version keeps the live rows' identity numbers too (retainedColumns).
  const kept = retainedColumns(batch.columns, batch.generated).map(quoteIdent);
  const version = quoteIdent(merge.versionColumn);
  // The live table's columns as DELETE ... USING names them: by the table's name.
  const l = quoteIdent(table);
  const sameKey = (liveRef: string) => pipeline.businessKey.map((c) => `${liveRef}.${quoteIdent(c)} = s.${quoteIdent(c)}`).join(' AND ');
  const stagingWins = (liveRef: string) => `${sameKey(liveRef)} AND (${liveRef}.${version} IS NULL OR s.${version} > ${liveRef}.${version})`;
  const firstKey = quoteIdent(pipeline.businessKey[0]!);
  // In the WHERE clause, where Redshift takes IS TRUE on a boolean (a NULL flag is not a delete):
  // https://docs.aws.amazon.com/redshift/latest/dg/r_Boolean_type.html
  const notDeleted = merge.softDeleteColumn === undefined ? '' : ` AND NOT (s.${quoteIdent(merge.softDeleteColumn)} IS TRUE)`;
  const statements = [
    boundLockWaits(lockWaitMs),
    `LOCK ${staging}`,
    `LOCK ${M}.publications`,
    publishGuard(pipeline, batch),
    LOCKS_HELD,
    `CREATE TABLE ${retained} (LIKE ${live})`,
    `INSERT INTO ${retained} (${kept.join(', ')})
     SELECT ${kept.map((c) => `o.${c}`).join(', ')} FROM ${live} AS o JOIN ${staging} AS s ON ${stagingWins('o')}`,
    `DELETE FROM ${live} USING ${staging} AS s WHERE ${stagingWins(l)}`,
    `INSERT INTO ${live} (${list})
     SELECT ${columns.map((c) => `s.${c}`).join(', ')} FROM ${staging} AS s LEFT JOIN ${live} AS o ON ${sameKey('o')}
      WHERE o.${firstKey} IS NULL${notDeleted}`,
    ...recordPublished(pipeline, batch.batchId, retainedAs, now),
  ];
  return fitSwap(pipeline, statements);
}

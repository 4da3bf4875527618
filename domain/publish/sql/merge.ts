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
 * The merge, as ONE transaction, in the lock order of the replace
 * (domain/publish/sql/intervals.ts):
 * 1. the statement timeout that bounds each lock wait;
 * 2. LOCK staging, then the publications (one publisher at a time; the
 *    transaction's snapshot is taken after them,
 *    https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html);
 * 3. the publish guard: nothing published since Plan, the batch CHECKED
 *    (Reconcile refused duplicate business keys in staging), staging
 *    holding the rows Reconcile checked;
 * 4. without a time limit: the live rows a staging row wins against (same
 *    key, and the staging version greater, or the live one NULL) copied to
 *    the retained old version (created LIKE the live table) and deleted
 *    from live; then staging's rows inserted whose key live no longer
 *    holds and that are not soft-deleted;
 * 5. the publication recorded and the batch PUBLISHED.
 * A live row whose version is greater than or equal to staging's stays:
 * an older source row never overwrites a newer one, and a re-read of the
 * same version (a lookback, a replay) changes nothing. A staging row with
 * no version wins only for a key live does not hold.
 *
 * DELETE then INSERT rather than Redshift's MERGE: MERGE takes one WHEN
 * MATCHED action (UPDATE or DELETE) with no further condition, so it can
 * neither keep a newer live row nor delete some matched keys and update
 * others (https://docs.aws.amazon.com/redshift/latest/dg/r_MERGE.html).
 * DELETE ... USING names the target by its table name in the WHERE clause
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_DELETE.html); deleting
 * before inserting keeps clear of the deadlock a DELETE after an INSERT
 * of one table can meet beside concurrent writers
 * (https://docs.aws.amazon.com/redshift/latest/dg/c_write_readwrite.html).
 * The live table is not LOCKed: readers read it throughout and see the
 * old rows until the commit and the new ones after it.
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

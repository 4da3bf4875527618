/**
 * The SQL of Publish for `replace-intervals`: the batch's intervals of the
 * live table replaced by staging in one transaction, the replaced rows kept
 * for rollback, and what the manifest says of the intervals a table holds.
 */
import type { BatchRef } from '../../batch.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';
import { boundLockWaits, LOCKS_HELD } from './lock-waits.ts';
import { fitSwap, publishGuard, recordPublished } from './swap.ts';

/** `timeColumn` in `[from, to)`: the rows of a batch's intervals. */
function inIntervals(pipeline: Pipeline, from: string, to: string): string {
  const t = quoteIdent(pipeline.timeColumn);
  return `${t} >= ${sqlLiteral(new Date(from))} AND ${t} < ${sqlLiteral(new Date(to))}`;
}

/**
 * The replace as ONE transaction: the bounded lock wait; LOCK staging, then the
 * publications (https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html); the
 * guard; then, without a time limit, the intervals' live rows copied to the old
 * version, deleted and replaced by staging's; the publication recorded. No LOCK of
 * live, no TRUNCATE (https://docs.aws.amazon.com/redshift/latest/dg/r_TRUNCATE.html):
 * readers see the old rows or the new. Why: docs/decisions/replacing-some-intervals.md
 */
export function replaceIntervals(pipeline: Pipeline, batch: BatchRef, retainedAs: string, now: Date, lockWaitMs: number, wholeTable = false): string[] {
  const statements = [
    ...replaceRows(pipeline, { ...batchRows(batch, retainedAs, wholeTable), guard: publishGuard(pipeline, batch), lockWaitMs }),
    ...recordPublished(pipeline, batch.batchId, retainedAs, now),
  ];
  return fitSwap(pipeline, statements);
}

/** A batch's replace: its staging's rows for the live rows of its intervals (or, `wholeTable`, every live row). */
export function batchRows(batch: BatchRef, retainedAs: string, wholeTable: boolean): Omit<RowsReplace, 'guard' | 'lockWaitMs'> {
  return {
    incoming: batch.stagingTable,
    retainedAs,
    columns: batch.columns,
    ...(batch.generated === undefined ? {} : { generated: batch.generated }),
    from: batch.from,
    to: batch.to,
    wholeTable,
  };
}

/** One replace of the live rows of `[from, to)` by the rows of `incoming`, as replaceIntervals describes it. */
export interface RowsReplace {
  /** The table whose rows go live (staging; for a rollback, the rows a publication replaced), in the target schema. */
  readonly incoming: string;
  /** Where the live rows of the interval are kept, in the target schema. */
  readonly retainedAs: string;
  /** The columns `incoming`'s rows are written into the live table with. */
  readonly columns: readonly string[];
  /**
   * The live table's identity columns left out of `columns`: Redshift
   * numbers the rows written into live; the copy of live rows into
   * `retainedAs` keeps their numbers (docs/decisions/identity-columns.md).
   * @default none
   */
  readonly generated?: readonly string[];
  readonly from: string;
  readonly to: string;
  /** The guard procedure's CALL, run under the locks. */
  readonly guard: string;
  readonly lockWaitMs: number;
  /** Every live row instead of those of `[from, to)` (domain/publish/sql/rewrite.ts). */
  readonly wholeTable?: boolean;
}

/**
 * The statements of a replace up to its records: the bounded lock wait,
 * LOCK `incoming` and the publications, the guard, then without a time
 * limit the rows replaced (rowsReplaced).
 */
export function replaceRows(pipeline: Pipeline, replace: RowsReplace): string[] {
  return [
    boundLockWaits(replace.lockWaitMs),
    `LOCK ${qualifiedName(pipeline.target.schema, replace.incoming)}`,
    `LOCK ${M}.publications`,
    replace.guard,
    // Held: the work runs to completion (publish.ts LOCKS_HELD).
    LOCKS_HELD,
    ...rowsReplaced(pipeline, replace),
  ];
}

/**
 * The rows of a replace, run under its locks: the live rows of the
 * interval copied to `retainedAs` (created LIKE live), deleted, and
 * `incoming`'s rows inserted. The live table is written, never renamed.
 */
export function rowsReplaced(pipeline: Pipeline, replace: Omit<RowsReplace, 'guard' | 'lockWaitMs'>): string[] {
  const { schema, table } = pipeline.target;
  const live = qualifiedName(schema, table);
  const retained = qualifiedName(schema, replace.retainedAs);
  const columns = replace.columns.map(quoteIdent).join(', ');
  const kept = retainedColumns(replace.columns, replace.generated).map(quoteIdent).join(', ');
  const rows = replace.wholeTable === true ? 'TRUE' : inIntervals(pipeline, replace.from, replace.to);
  return [
    `CREATE TABLE ${retained} (LIKE ${live})`,
    `INSERT INTO ${retained} (${kept}) SELECT ${kept} FROM ${live} WHERE ${rows}`,
    `DELETE FROM ${live} WHERE ${rows}`,
    `INSERT INTO ${live} (${columns}) SELECT ${columns} FROM ${qualifiedName(schema, replace.incoming)}`,
  ];
}

/**
 * The columns a copy of live rows into a retained old version writes:
 * those written into live and the identity columns Redshift numbers there,
 * whose values the old version keeps (created LIKE live, without defaults,
 * it holds them as plain NOT NULL columns).
 */
export function retainedColumns(columns: readonly string[], generated: readonly string[] = []): string[] {
  return [...columns, ...generated.filter((c) => !columns.includes(c))];
}

/**
 * The publications not rolled back, newest first, with mode and interval: the
 * newest covering an instant wrote it (domain/publish/intervals.ts). A swap wrote
 * all history up to its end, a replace its intervals; a rollback and a merge write
 * no stretch (a merge's interval is of modification time).
 * Why: docs/decisions/replacing-some-intervals.md
 */
export function intervalWriters(pipeline: string): Statement {
  return {
    sql: `SELECT seq, batch_id, publish_mode, interval_start, interval_end, published_at
            FROM ${M}.publications
           WHERE pipeline = :pipeline AND rolled_back_at IS NULL AND rollback_of IS NULL AND interval_start IS NOT NULL AND publish_mode <> 'merge'
           ORDER BY seq DESC`,
    parameters: { pipeline },
  };
}

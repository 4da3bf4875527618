/**
 * The SQL of Publish for a swap pipeline with `snapshotReaders: 'in-place'`:
 * the whole live table rewritten in one transaction instead of renamed, so
 * that a snapshot taken before the publish, found by no catalog view,
 * reads the old rows and a later one the new
 * (docs/decisions/snapshot-readers-without-locks.md).
 */
import type { BatchRef } from '../../batch.ts';
import type { Pipeline } from '../../spec.ts';
import { batchRows, replaceIntervals, rowsReplaced } from './intervals.ts';

/**
 * Whether a swap pipeline's publish rewrites the live table's rows rather
 * than renaming staging into place: `snapshotReaders: 'in-place'`, unless
 * a migration changes the table's columns (rows cannot be rewritten into
 * it, so it renames).
 */
export function rewritesInPlace(pipeline: Pipeline): boolean {
  return pipeline.publishMode === 'swap' && pipeline.snapshotReaders === 'in-place' && pipeline.migrating === undefined;
}

/**
 * replaceIntervals (domain/publish/sql/intervals.ts) over every live row: the
 * old rows copied to the retained old version (a whole version, as a
 * rename swap keeps, so a rollback restores it), deleted from live, and
 * staging's rows inserted; then the publication recorded. Nothing is
 * renamed: grants, policies, comments and views stay on the table.
 */
export function rewriteLive(pipeline: Pipeline, batch: BatchRef, retainedAs: string, now: Date, lockWaitMs: number): string[] {
  return replaceIntervals(pipeline, batch, retainedAs, now, lockWaitMs, true);
}

/** rewriteLive's rows alone, for a transaction that takes the locks and runs the guard itself (a publish group's). */
export function rewrittenRows(pipeline: Pipeline, batch: BatchRef, retainedAs: string): string[] {
  return rowsReplaced(pipeline, batchRows(batch, retainedAs, true));
}

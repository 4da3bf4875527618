/**
 * The SQL of Publish for a swap pipeline with `snapshotReaders: 'in-place'`:
 * the whole live table rewritten in one transaction instead of renamed, so
 * that a snapshot taken before the publish, found by no catalog view,
 * reads the old rows and a later one the new
 * (docs/decisions/snapshot-readers-without-locks.md).
 */
import type { BatchRef } from '../batch.ts';
import type { Pipeline } from '../spec.ts';
import { replaceIntervals } from './publish-intervals.ts';

/**
 * replaceIntervals (domain/sql/publish-intervals.ts) over every live row: the
 * old rows copied to the retained old version (a whole version, as a
 * rename swap keeps, so a rollback restores it), deleted from live, and
 * staging's rows inserted; then the publication recorded. Nothing is
 * renamed: grants, policies, comments and views stay on the table.
 */
export function rewriteLive(pipeline: Pipeline, batch: BatchRef, retainedAs: string, now: Date, lockWaitMs: number): string[] {
  return replaceIntervals(pipeline, batch, retainedAs, now, lockWaitMs, true);
}

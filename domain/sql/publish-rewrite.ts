/**
 * The SQL of Publish for a swap pipeline with `snapshotReaders: 'in-place'`:
 * the whole live table rewritten in one transaction instead of renamed, so
 * that a snapshot taken before the publish, found by no catalog view,
 * reads the old rows and a later one the new
 * (docs/decisions/snapshot-readers-without-locks.md).
 */
import type { BatchRef } from '../batch.ts';
import type { Pipeline } from '../spec.ts';
import { checkSwapSize, publishGuard, recordPublished } from './publish.ts';
import { replaceRows } from './publish-intervals.ts';

/**
 * replaceRows (domain/sql/publish-intervals.ts) over every live row: the
 * old rows copied to the retained old version (a whole version, as a
 * rename swap keeps, so a rollback restores it), deleted from live, and
 * staging's rows inserted; then the publication recorded. Nothing is
 * renamed: grants, policies, comments and views stay on the table.
 */
export function rewriteLive(pipeline: Pipeline, batch: BatchRef, retainedAs: string, now: Date, lockWaitMs: number): string[] {
  const statements = [
    ...replaceRows(pipeline, {
      incoming: batch.stagingTable,
      retainedAs,
      columns: batch.columns,
      from: batch.from,
      to: batch.to,
      guard: publishGuard(pipeline, batch),
      lockWaitMs,
      wholeTable: true,
    }),
    ...recordPublished(pipeline, batch.batchId, retainedAs, now),
  ];
  checkSwapSize(pipeline, statements);
  return statements;
}

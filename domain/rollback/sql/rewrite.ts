/**
 * The rollback of a swap pipeline with `snapshotReaders: 'in-place'`: the
 * restored version's rows written back into the live table in one
 * transaction instead of renamed in, so that every snapshot reads the
 * rows before or after it (docs/decisions/snapshot-readers-without-locks.md).
 */
import { sqlLiteral } from '../../identifiers.ts';
import { replaceRows } from '../../publish/sql/intervals.ts';
import { fitSwap, recordPublication } from '../../publish/sql/swap.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M } from '../../sql/statement.ts';
import type { RollbackTarget } from '../rollback.ts';

/**
 * replaceRows over every live row: the live rows kept in `retainedTable`
 * (so the rollback can itself be undone), deleted, and the restored
 * version's rows inserted (with `columns`: an IDENTITY(seed, step) column,
 * in `generated`, takes no value, and its rows are numbered anew), under the rollback guard; then recorded as
 * swapRollback records it (domain/rollback/sql/rollback.ts).
 */
export function rewriteRollback(
  pipeline: Pipeline,
  target: RollbackTarget,
  columns: readonly string[],
  now: Date,
  lockWaitMs: number,
  generated: readonly string[] = [],
): string[] {
  const name = sqlLiteral(pipeline.name);
  const at = sqlLiteral(now);
  const statements = [
    ...replaceRows(pipeline, {
      incoming: target.restoreTable,
      retainedAs: target.retainedTable,
      columns,
      generated,
      from: '',
      to: '',
      guard: `CALL ${M}.assert_rollback(${name}, ${sqlLiteral(target.rolledBackSeq)}, ${sqlLiteral(target.restoreSeq)})`,
      lockWaitMs,
      wholeTable: true,
    }),
    recordPublication(pipeline, target.batchId, target.retainedTable, now, { rollbackOf: target.rolledBackSeq }),
    `UPDATE ${M}.publications SET restored_at = ${at} WHERE pipeline = ${name} AND seq = ${sqlLiteral(target.restoreSeq)}`,
    `UPDATE ${M}.publications SET rolled_back_at = ${at} WHERE pipeline = ${name} AND seq = ${sqlLiteral(target.rolledBackSeq)}`,
  ];
  return fitSwap(pipeline, statements);
}

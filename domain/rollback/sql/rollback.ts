/** The SQL of a rollback: the publications it is resolved from, and its swap transaction. */

import { sqlLiteral } from '../../identifiers.ts';
import type { LiveTableFacts } from '../../publish/dependents.ts';
import { replaceRows } from '../../publish/sql/intervals.ts';
import { fitSwap, recordPublication, swapLockStatements, swapRenames } from '../../publish/sql/swap.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';
import type { RollbackTarget } from '../rollback.ts';

/**
 * Every publication of a pipeline, oldest first, as domain/rollback/rollback.ts
 * resolves a rollback from them (one row per publish or rollback: a few
 * thousand in years of daily runs).
 */
export function publicationHistory(pipeline: string): Statement {
  return {
    sql: `SELECT seq, batch_id, published_at, old_version_table,
                 CASE WHEN dropped_at IS NULL THEN 0 ELSE 1 END AS dropped,
                 CASE WHEN restored_at IS NULL THEN 0 ELSE 1 END AS restored,
                 rollback_of, publish_mode, interval_start, interval_end
            FROM ${M}.publications WHERE pipeline = :pipeline ORDER BY seq`,
    parameters: { pipeline },
  };
}

/** The batch a rollback names, if it is one of the pipeline's: `status`, `interval_start`, `interval_end`. */
export function rollbackBatch(pipeline: string, batchId: string): Statement {
  return {
    sql: `SELECT status, interval_start, interval_end FROM ${M}.batches WHERE pipeline = :pipeline AND batch_id = :batch_id`,
    parameters: { pipeline, batch_id: batchId },
  };
}

/** The publication a rollback recorded, if it committed: the one after the publication it rolled back. */
export function rollbackState(pipeline: string, rolledBackSeq: number): Statement {
  return {
    sql: `SELECT seq, batch_id, published_at, old_version_table, rows_published, rollback_of
            FROM ${M}.publications WHERE pipeline = :pipeline AND seq = CAST(:seq AS int) + 1 AND rollback_of = CAST(:seq AS int)`,
    parameters: { pipeline, seq: String(rolledBackSeq) },
  };
}

/**
 * The rollback as ONE transaction under Publish's swap locks (swapLockStatements),
 * the restored version in staging's place: the guard (assert_rollback: nothing
 * published since Plan, the version still retained), live renamed to its retained
 * name (so the rollback can be undone), the version to live, the catalog carried
 * over, the publication recorded (`rollback_of`, rolled_back_at, restored_at).
 * Why: docs/decisions/rollback.md
 */
export function swapRollback(
  pipeline: Pipeline,
  target: RollbackTarget,
  now: Date,
  catalog: { facts: LiveTableFacts; factsQuery: Statement },
  lockWaitMs: number,
): string[] {
  const { facts, factsQuery } = catalog;
  const name = sqlLiteral(pipeline.name);
  const at = sqlLiteral(now);
  const statements = [
    ...swapLockStatements(pipeline, target.restoreTable, facts, lockWaitMs),
    `CALL ${M}.assert_rollback(${name}, ${sqlLiteral(target.rolledBackSeq)}, ${sqlLiteral(target.restoreSeq)})`,
    ...swapRenames(pipeline, target.restoreTable, target.retainedTable, facts, factsQuery),
    recordPublication(pipeline, target.batchId, target.retainedTable, now, { rollbackOf: target.rolledBackSeq }),
    `UPDATE ${M}.publications SET restored_at = ${at} WHERE pipeline = ${name} AND seq = ${sqlLiteral(target.restoreSeq)}`,
    `UPDATE ${M}.publications SET rolled_back_at = ${at} WHERE pipeline = ${name} AND seq = ${sqlLiteral(target.rolledBackSeq)}`,
  ];
  return fitSwap(pipeline, statements);
}

/**
 * The rollback of a publication of some intervals as ONE transaction under its
 * publish's locks (its old version LOCKed, then the publications), then the guard:
 * live's rows of the interval kept in `retainedTable` (so it can be undone) and
 * deleted, the old version's inserted, the rollback recorded; when the publication
 * undone was itself such a rollback, the one it undid is live again.
 * Why: docs/decisions/replacing-some-intervals.md, docs/decisions/rollback.md
 */
export function restoreIntervals(
  pipeline: Pipeline,
  target: RollbackTarget,
  columns: readonly string[],
  now: Date,
  lockWaitMs: number,
  generated: readonly string[] = [],
): string[] {
  const name = sqlLiteral(pipeline.name);
  const at = sqlLiteral(now);
  const interval = target.interval!;
  const { schema } = pipeline.target;
  const statements = [
    ...replaceRows(pipeline, {
      incoming: target.restoreTable,
      retainedAs: target.retainedTable,
      columns,
      generated,
      from: interval.from,
      to: interval.to,
      guard: `CALL ${M}.assert_rollback(${name}, ${sqlLiteral(target.rolledBackSeq)}, ${sqlLiteral(target.restoreSeq)})`,
      lockWaitMs,
    }),
    recordPublication(pipeline, target.batchId, target.retainedTable, now, {
      rollbackOf: target.rolledBackSeq,
      rowsOf: { schema, table: target.restoreTable },
    }),
    `UPDATE ${M}.publications SET restored_at = ${at}, rolled_back_at = ${at} WHERE pipeline = ${name} AND seq = ${sqlLiteral(target.rolledBackSeq)}`,
    ...(target.reinstates === undefined
      ? []
      : [`UPDATE ${M}.publications SET rolled_back_at = NULL WHERE pipeline = ${name} AND seq = ${sqlLiteral(target.reinstates)}`]),
  ];
  return fitSwap(pipeline, statements);
}

/** The SQL of a migration's own checks in Plan (domain/migration/migration.ts). */
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import type { Statement } from '../../sql/statement.ts';

/**
 * Live rows a migration would not copy: those with no time or a time
 * before historyStart (the copy covers `[historyStart, to)`, the swap's
 * carry-over `to` and after).
 */
export function rowsOutsideHistory(pipeline: Pipeline): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  return {
    sql: `SELECT COUNT(*) AS n FROM ${qualifiedName(pipeline.target.schema, pipeline.target.table)}
           WHERE ${t} IS NULL OR ${t} < ${sqlLiteral(new Date(pipeline.historyStart))}`,
  };
}

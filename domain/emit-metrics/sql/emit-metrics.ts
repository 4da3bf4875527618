/** The SQL of EmitMetrics: the newest event time in the live table, for the data lag. */
import { qualifiedName, quoteIdent } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import type { Statement } from '../../sql/statement.ts';

export function latestEventTime(pipeline: Pipeline): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  return { sql: `SELECT MAX(${t}) AS latest FROM ${qualifiedName(pipeline.target.schema, pipeline.target.table)}` };
}

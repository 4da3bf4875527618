/**
 * A pipeline's source query inside the statements Plan and LoadChunk build
 * around it: each must hold it as its `src` subquery, so nothing in the
 * source escapes their parentheses. definePipeline
 * (domain/define-pipeline.ts) checks it once the spec's schema has checked
 * the query itself.
 */
import type { BatchRef } from '../batch.ts';
import { ValidationError } from '../errors.ts';
import { insertIntervalSql } from '../load-chunk/sql/load-chunk.ts';
import { sourceSqlProblem } from '../redshift-sql/source-sql.ts';
import type { Pipeline } from '../spec.ts';
import { sourceShape } from './sql/plan.ts';

/** Refuses a pipeline whose source query does not stay inside the statements built around it, worded as the schema words a wrong sourceSql. */
export function checkSourceWrappings(pipeline: Pipeline): void {
  const problem = sourceSqlProblem(pipeline.sourceSql, sourceWrappings(pipeline.sourceSql));
  if (problem !== undefined) throw new ValidationError(`pipeline ${pipeline.name}: sourceSql ${problem}`);
}

/**
 * The statements Plan (sourceShape) and LoadChunk (insertIntervalSql)
 * build around a source query, for names that do not matter to their shape.
 */
function sourceWrappings(sourceSql: string): string[] {
  const probe = { sourceSql, timeColumn: 'source_time', target: { schema: 'target_schema', table: 'target_table' } } as Pipeline;
  const [from, to] = ['2000-01-01T00:00:00.000Z', '2000-01-02T00:00:00.000Z'];
  const batch: BatchRef = {
    pipeline: 'probe',
    batchId: 'probe',
    specHash: '',
    liveTable: 'target_schema.target_table',
    from,
    to,
    stagingTable: 'staging_table',
    columns: ['source_time'],
    basePublication: 0,
  };
  return [sourceShape(probe, { from: new Date(from), to: new Date(to) }).sql, insertIntervalSql(probe, batch)];
}

/**
 * The SQL of Reconcile for source rows whose time column (the column chunks
 * are placed by: extractColumn) is NULL: no chunk
 * loads them (each load keeps `[start, end)`), so they are counted over the
 * batch's interval and, with `nullTimes: 'quarantine'`, copied aside.
 */
import type { BatchRef } from '../batch.ts';
import { qualifiedName, quoteIdent } from '../identifiers.ts';
import { extractColumn } from '../extract-column.ts';
import type { Pipeline } from '../spec.ts';
import { type Statement, timestampParam } from './statement.ts';

/** Business keys of NULL-time rows an alert names. */
export const NULL_TIME_SAMPLES = 5;

/** The pipeline's quarantine table, in the target schema (a table name of at most 40 characters leaves room). */
export function quarantineTableFor(pipeline: Pipeline): string {
  return `${pipeline.target.table}__quarantine`;
}

/** The source query over the batch's interval, its rows with no time: a FROM clause. */
function nullTimeRows(pipeline: Pipeline): string {
  return `(${pipeline.sourceSql}
) AS src WHERE src.${quoteIdent(extractColumn(pipeline))} IS NULL`;
}

const intervalParameters = (batch: BatchRef) => ({ start: timestampParam(batch.from), end: timestampParam(batch.to) });

/**
 * The source's rows with no time for the batch's interval: up to
 * NULL_TIME_SAMPLES of their business keys (ordered), each row with the
 * count of all of them (`null_rows`); no row when there are none.
 */
export function nullTimeCount(pipeline: Pipeline, batch: BatchRef): Statement {
  const keys = pipeline.businessKey.map((k) => `src.${quoteIdent(k)}`).join(', ');
  return {
    sql: `SELECT ${keys}, COUNT(*) OVER () AS null_rows FROM ${nullTimeRows(pipeline)} ORDER BY ${keys} LIMIT ${NULL_TIME_SAMPLES}`,
    parameters: intervalParameters(batch),
  };
}

/**
 * Creates the quarantine table, when missing, from the live table's
 * columns: CREATE TABLE AS inherits no constraint, so every column takes
 * NULL (https://docs.aws.amazon.com/redshift/latest/dg/r_CTAS_usage_notes.html).
 */
export function createQuarantine(pipeline: Pipeline, columns: readonly string[]): string {
  const { schema, table } = pipeline.target;
  return `CREATE TABLE ${qualifiedName(schema, quarantineTableFor(pipeline))} AS
          SELECT CAST('' AS varchar(32)) AS batch_id, CAST(NULL AS timestamp) AS quarantined_at, ${columns.map(quoteIdent).join(', ')}
            FROM ${qualifiedName(schema, table)} WHERE 1 = 0`;
}

/**
 * The batch's NULL-time rows into the quarantine table, as one transaction
 * that first removes what an earlier attempt of the batch put there: a
 * replay leaves them there once.
 */
export function quarantineRows(pipeline: Pipeline, batch: BatchRef, now: Date): { sqls: string[]; parameters: Record<string, string> } {
  const quarantine = qualifiedName(pipeline.target.schema, quarantineTableFor(pipeline));
  const columns = batch.columns.map(quoteIdent).join(', ');
  return {
    sqls: [
      `DELETE FROM ${quarantine} WHERE batch_id = :batch_id`,
      `INSERT INTO ${quarantine} (batch_id, quarantined_at, ${columns})
       SELECT CAST(:batch_id AS varchar(32)), CAST(:now AS timestamp), ${batch.columns.map((c) => `src.${quoteIdent(c)}`).join(', ')} FROM ${nullTimeRows(pipeline)}`,
    ],
    parameters: { ...intervalParameters(batch), batch_id: batch.batchId, now: timestampParam(now) },
  };
}

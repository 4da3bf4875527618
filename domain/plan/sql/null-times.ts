/**
 * The SQL of Reconcile for source rows whose time column (the column chunks
 * are placed by: extractColumn) is NULL: no chunk
 * loads them (each load keeps `[start, end)`), so they are counted over the
 * batch's interval and, with `nullTimes: 'quarantine'`, copied aside.
 */
import type { BatchRef } from '../../batch.ts';
import { extractColumn } from '../../extract-column.ts';
import { REASON } from '../../gate/quarantine.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { type Statement, timestampParam } from '../../sql/statement.ts';

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
 * Beside them: the batch, the time, the reason, and the chunk (index and
 * generation) a row-level rule took the row from (domain/gate/sql/quarantine.ts;
 * none for a NULL-time row, which belongs to no chunk).
 */
export function createQuarantine(pipeline: Pipeline, columns: readonly string[]): string {
  const { schema, table } = pipeline.target;
  return `CREATE TABLE ${qualifiedName(schema, quarantineTableFor(pipeline))} AS
          SELECT CAST('' AS varchar(32)) AS batch_id, CAST(NULL AS timestamp) AS quarantined_at, ${ADDED_COLUMNS.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdent(c.name)}`).join(', ')},
                 ${columns.map(quoteIdent).join(', ')}
            FROM ${qualifiedName(schema, table)} WHERE 1 = 0`;
}

/** The columns row-level rules added to the quarantine table, with their types. */
const ADDED_COLUMNS = [
  { name: 'reason', type: 'varchar(256)' },
  { name: 'chunk_index', type: 'int' },
  { name: 'generation', type: 'int' },
] as const;

/**
 * A quarantine table created before row-level rules (batch_id,
 * quarantined_at and the live columns) given their columns, one ALTER
 * TABLE ADD COLUMN each (one column per statement; a new column takes
 * NULL in existing rows: https://docs.aws.amazon.com/redshift/latest/dg/r_ALTER_TABLE.html).
 */
export function addQuarantineColumns(pipeline: Pipeline, existing: readonly string[]): string[] {
  const quarantine = qualifiedName(pipeline.target.schema, quarantineTableFor(pipeline));
  return ADDED_COLUMNS.filter((c) => !existing.includes(c.name)).map((c) => `ALTER TABLE ${quarantine} ADD COLUMN ${quoteIdent(c.name)} ${c.type}`);
}

/**
 * The batch's NULL-time rows into the quarantine table, as one transaction
 * that first removes what an earlier attempt of the batch put there (its
 * rows of no chunk: those of row-level rules stay): a replay leaves them
 * there once.
 */
export function quarantineRows(pipeline: Pipeline, batch: BatchRef, now: Date): { sqls: string[]; parameters: Record<string, string> } {
  const quarantine = qualifiedName(pipeline.target.schema, quarantineTableFor(pipeline));
  const columns = batch.columns.map(quoteIdent).join(', ');
  return {
    sqls: [
      `DELETE FROM ${quarantine} WHERE batch_id = :batch_id AND chunk_index IS NULL`,
      `INSERT INTO ${quarantine} (batch_id, quarantined_at, reason, ${columns})
       SELECT CAST(:batch_id AS varchar(32)), CAST(:now AS timestamp), CAST(${sqlLiteral(REASON.nullTime)} AS varchar(256)), ${batch.columns.map((c) => `src.${quoteIdent(c)}`).join(', ')} FROM ${nullTimeRows(pipeline)}`,
    ],
    parameters: { ...intervalParameters(batch), batch_id: batch.batchId, now: timestampParam(now) },
  };
}

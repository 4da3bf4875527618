/** The SQL of Reconcile: per-chunk figures and whole-table checks from one pass over each side, and the recorded results. */
import { type BatchRef, BatchStatus, type CheckResult, ChunkStatus } from '../../batch.ts';
import { extractColumn } from '../../extract-column.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import { LOCK_MANIFEST } from '../../manifest/sql/manifest.ts';
import { grainKey } from '../../plan/sql/plan.ts';
import type { Pipeline } from '../../spec.ts';
import { CATALOG_TYPE, hashedColumns, rowHashValue } from '../../sql/row-hash.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import { type ReferencesCheck, type SqlCheck, STAGING_PLACEHOLDER } from '../config.ts';
import { DECLARED_SAMPLES, isBlocking, patternParameter } from '../declared-checks.ts';
import { quarantines } from '../quarantine.ts';
import { stagingWithQuarantined } from './quarantine.ts';

/**
 * A per-row value summed per chunk on both sides, in the one grouped pass
 * over each: the row count now; the column sums and content checksums of
 * the reconciliation gate are more entries (partial sums per grain unit,
 * then per chunk, must add up).
 */
export interface ChunkAggregate {
  /** Result column, `source_<name>` and `staging_<name>`. */
  readonly name: string;
  /** The value one row adds, over the row's alias (`s`); `1` counts rows. */
  readonly perRow: (row: string) => string;
  /** The columns perRow reads (staging's pass reads only these, the key and the time). */
  readonly columns: readonly string[];
}

const CHUNK_AGGREGATES: readonly ChunkAggregate[] = [{ name: 'rows', perRow: () => '1', columns: [] }];

/** Result column suffix of the content checksum, and of the sum of `checks.measures[i]` (`sum_<i>`: a column name may not fit an alias). */
export const CHECKSUM_AGGREGATE = 'checksum';
export const measureAggregate = (index: number) => `sum_${index}`;

/** Integer types: summed as DECIMAL(38,0), since Redshift's SUM of a BIGINT is a BIGINT (https://docs.aws.amazon.com/redshift/latest/dg/r_SUM.html). */
const INTEGER_TYPES = new Set(['smallint', 'integer', 'bigint']);

/**
 * The gate's aggregates beside the row count, over the columns the loads insert
 * (`stagingColumns`, `name type`): with `checks.contentChecksum` the sum of each
 * row's rowHashValue; per `checks.measures` column its sum, cast to the staging
 * type (integers to DECIMAL(38,0); a NUMERIC(p,s) sums to NUMERIC(38,s), same
 * page), so neither side overflows or rounds differently.
 * Why: docs/decisions/content-checksum-in-the-gate.md
 */
export function gateAggregates(pipeline: Pipeline, stagingColumns: readonly string[]): ChunkAggregate[] {
  const typeOf = new Map(stagingColumns.map((c) => [c.split(' ')[0]!, c.slice(c.indexOf(' ') + 1)]));
  const hashed = hashedColumns(stagingColumns);
  const aggregates: ChunkAggregate[] = [...CHUNK_AGGREGATES];
  if (pipeline.checks.contentChecksum && hashed.length > 0) {
    aggregates.push({ name: CHECKSUM_AGGREGATE, perRow: (row) => rowHashValue(hashed, row, true), columns: hashed.map((c) => c.split(' ')[0]!) });
  }
  pipeline.checks.measures.forEach((column, i) => {
    const type = typeOf.get(column) ?? '';
    const base = type.replace(/\(.*$/, '');
    aggregates.push({
      name: measureAggregate(i),
      perRow: (row) => {
        const value = CATALOG_TYPE.test(type) ? `CAST(${row}.${quoteIdent(column)} AS ${type})` : `${row}.${quoteIdent(column)}`;
        return INTEGER_TYPES.has(base) ? `CAST(${value} AS decimal(38, 0))` : value;
      },
      columns: [column],
    });
  });
  return aggregates;
}

/** True when the business key holds the column chunks are placed by: then a key value's rows all lie in one chunk. */
function keyImpliesTime(pipeline: Pipeline): boolean {
  return pipeline.businessKey.includes(extractColumn(pipeline));
}

/**
 * Per chunk, in one statement of one grouped pass per side: the source's figures
 * now, staging's, and the rows the load recorded; on every row, staging's rows
 * outside the interval (or with no time) and its repeated business keys, as
 * uncorrelated scalar subqueries. Rows are bucketed by grain unit (grainKey), each
 * unit in the chunk starting at or before it. Why: docs/decisions/reconciling.md
 */
export function chunkCounts(pipeline: Pipeline, batch: BatchRef, aggregates: readonly ChunkAggregate[] = CHUNK_AGGREGATES): Statement {
  const t = quoteIdent(extractColumn(pipeline));
  const table = qualifiedName(pipeline.target.schema, batch.stagingTable);
  const key = pipeline.businessKey.map((c) => `s.${quoteIdent(c)}`).join(', ');
  const aggregateColumns = aggregates.flatMap((a) => a.columns);
  const sums = (side: string, expression: (a: ChunkAggregate) => string) => aggregates.map((a) => `${expression(a)} AS ${side}_${a.name}`).join(', ');
  const rolled = (side: string, from: string) => aggregates.map((a) => `SUM(${from}.${side}_${a.name}) AS ${side}_${a.name}`).join(', ');
  // Staging's rows as a pass reads them: the columns it needs, and the unit
  // of the row's time where that lies in the batch interval (else NULL).
  // With the quarantine, the batch's quarantined rows too (source = staging
  // + quarantined, per chunk; domain/gate/sql/quarantine.ts), marked `ap_q`.
  const quarantined = quarantines(pipeline);
  const stagingRows = (columns: readonly string[]) =>
    `(SELECT ${[...new Set(columns)].map((c) => `s.${quoteIdent(c)}`).join(', ')},${quarantined ? ' s.ap_q,' : ''}
                           CASE WHEN s.${t} >= :start AND s.${t} < :end THEN ${grainKey(pipeline, `s.${t}`)} END AS ap_unit
                      FROM ${quarantined ? `${stagingWithQuarantined(pipeline, batch, [...new Set([extractColumn(pipeline), ...columns])])} AS s` : `${table} AS s`}) AS s`;
  // A key's rows in staging: the quarantined ones of the key are not.
  const keyRows = quarantined ? 'SUM(1 - s.ap_q)' : 'COUNT(*)';
  // Rows in the interval: the unit is not NULL.
  const inside = (a: ChunkAggregate) => (a.perRow('s') === '1' ? 'COUNT(s.ap_unit)' : `SUM(CASE WHEN s.ap_unit IS NOT NULL THEN ${a.perRow('s')} END)`);
  const stagingPass = keyImpliesTime(pipeline)
    ? `stg_key AS (
            SELECT s.ap_unit AS k, ${keyRows} AS key_rows, COUNT(*) - COUNT(s.ap_unit) AS outside, ${sums('staging', inside)}
              FROM ${stagingRows([...pipeline.businessKey, ...aggregateColumns])}
             GROUP BY s.ap_unit, ${key}
          ),
          stg AS (
            SELECT k, ${rolled('staging', 'stg_key')}, SUM(outside) AS outside, SUM(CASE WHEN key_rows > 1 THEN 1 ELSE 0 END) AS duplicate_keys
              FROM stg_key GROUP BY k
          ),
          dup AS (
            SELECT COALESCE(SUM(duplicate_keys), 0) AS duplicate_keys FROM stg
          )`
    : `stg AS (
            SELECT s.ap_unit AS k, ${sums('staging', inside)}, COUNT(*) - COUNT(s.ap_unit) AS outside
              FROM ${stagingRows([extractColumn(pipeline), ...aggregateColumns])}
             GROUP BY s.ap_unit
          ),
          dup AS (
            SELECT COUNT(*) AS duplicate_keys FROM (SELECT 1 AS one FROM ${table} AS s GROUP BY ${key} HAVING COUNT(*) > 1) AS d
          )`;
  const figures = (side: string, from: string) => aggregates.map((a) => `COALESCE(${from}.${side}_${a.name}, 0) AS ${side}_${a.name}`);
  return {
    sql: `WITH chunk AS (
            SELECT chunk_index, interval_start, status, rows_written, ${grainKey(pipeline, 'interval_start')} AS k
              FROM ${M}.chunk_state WHERE batch_id = :batch_id
          ),
          src AS (
            SELECT ${grainKey(pipeline, `s.${t}`)} AS k, ${sums('source', (a) => `SUM(${a.perRow('s')})`)}
              FROM (${pipeline.sourceSql}
) AS s
             WHERE s.${t} >= :start AND s.${t} < :end
             GROUP BY 1
          ),
          ${stagingPass},
          unit AS (
            SELECT k FROM chunk UNION SELECT k FROM src UNION SELECT k FROM stg WHERE k IS NOT NULL
          ),
          owner AS (
            SELECT unit.k, MAX(chunk.chunk_index) OVER (ORDER BY unit.k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS chunk_index
              FROM unit LEFT JOIN chunk ON chunk.k = unit.k
          ),
          src_chunk AS (
            SELECT owner.chunk_index, ${rolled('source', 'src')} FROM src JOIN owner ON owner.k = src.k GROUP BY owner.chunk_index
          ),
          stg_chunk AS (
            SELECT owner.chunk_index, ${rolled('staging', 'stg')} FROM stg JOIN owner ON owner.k = stg.k GROUP BY owner.chunk_index
          )
          SELECT chunk.chunk_index, chunk.interval_start, chunk.status, chunk.rows_written,
                 ${[...figures('source', 'sc'), ...figures('staging', 'gc')].join(', ')},
                 (SELECT COALESCE(SUM(outside), 0) FROM stg) AS outside_interval, (SELECT duplicate_keys FROM dup) AS duplicate_keys,
                 (SELECT chunk_count FROM ${M}.batches WHERE batch_id = :batch_id) AS planned_chunks
            FROM chunk
            LEFT JOIN src_chunk AS sc ON sc.chunk_index = chunk.chunk_index
            LEFT JOIN stg_chunk AS gc ON gc.chunk_index = chunk.chunk_index
           ORDER BY chunk.chunk_index`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

/** Business-key values sampled when Reconcile found some on more than one row. */
export const DUPLICATE_KEY_SAMPLES = 5;

/**
 * A few business-key values staging holds on more than one row, with how
 * many rows hold each, in key order (the first `limit`): asked only when
 * Reconcile counted some, so the alert shows which keys to look for.
 */
export function duplicateKeySamples(pipeline: Pipeline, batch: BatchRef, limit = DUPLICATE_KEY_SAMPLES): Statement {
  const key = pipeline.businessKey.map(quoteIdent);
  return {
    sql: `SELECT ${key.join(', ')}, COUNT(*) AS ap_rows
            FROM ${qualifiedName(pipeline.target.schema, batch.stagingTable)}
           GROUP BY ${key.join(', ')} HAVING COUNT(*) > 1
           ORDER BY ${key.join(', ')} LIMIT ${Math.max(1, Math.floor(limit))}`,
  };
}

/** Result column of notNull[i] (`nn_<i>`), acceptedValues[i] (`av_<i>`) and pattern[i] (`pt_<i>`) in declaredRowChecks and declaredRowSamples. */
export const notNullColumn = (index: number) => `nn_${index}`;
export const acceptedValuesColumn = (index: number) => `av_${index}`;
export const patternColumn = (index: number) => `pt_${index}`;

/** The rows each row check counts, over staging's alias `s`: keyed by its result column, with the parameters it binds. */
function rowCheckConditions(pipeline: Pipeline): { column: string; condition: string; value: string; parameters?: Record<string, string> }[] {
  return [
    ...pipeline.checks.notNull.map((c, i) => ({ column: notNullColumn(i), condition: `s.${quoteIdent(c.column)} IS NULL`, value: 'NULL' })),
    // A NULL is no value outside the list: notNull is the check for it.
    ...pipeline.checks.acceptedValues.map((c, i) => ({
      column: acceptedValuesColumn(i),
      condition: `s.${quoteIdent(c.column)} NOT IN (${c.values.map((v) => sqlLiteral(v)).join(', ')})`,
      value: `s.${quoteIdent(c.column)}`,
    })),
    // A POSIX match (https://docs.aws.amazon.com/redshift/latest/dg/pattern-matching-conditions-posix.html); NULL is notNull's.
    ...pipeline.checks.pattern.map((c, i) => ({
      column: patternColumn(i),
      condition: `NOT (s.${quoteIdent(c.column)} ~ :${patternParameter(i)})`,
      value: `s.${quoteIdent(c.column)}`,
      parameters: { [patternParameter(i)]: c.regex },
    })),
  ];
}

/** The parameters of the row checks a statement reads. */
function rowCheckParameters(checks: readonly { parameters?: Record<string, string> }[]): { parameters?: Record<string, string> } {
  const parameters = Object.assign({}, ...checks.map((c) => c.parameters ?? {})) as Record<string, string>;
  return Object.keys(parameters).length > 0 ? { parameters } : {};
}

/**
 * The declared row checks (notNull, acceptedValues, pattern) of staging in one pass:
 * per check, the rows that break it; undefined when none is declared.
 */
export function declaredRowChecks(pipeline: Pipeline, batch: BatchRef): Statement | undefined {
  const checks = rowCheckConditions(pipeline);
  if (checks.length === 0) return undefined;
  return {
    sql: `SELECT ${checks.map((c) => `SUM(CASE WHEN ${c.condition} THEN 1 ELSE 0 END) AS ${c.column}`).join(', ')}
            FROM ${qualifiedName(pipeline.target.schema, batch.stagingTable)} AS s`,
    ...rowCheckParameters(checks),
  };
}

/**
 * The business keys (and the value, as text) of the first `limit` rows in key
 * order breaking each row check `failing` (declaredRowChecks' result columns), in
 * one statement, asked only when some failed. Each branch casts its value to one
 * text type: a set operation converts no type category to another implicitly
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_UNION.html).
 */
export function declaredRowSamples(pipeline: Pipeline, batch: BatchRef, failing: readonly string[], limit = DECLARED_SAMPLES): Statement {
  const table = qualifiedName(pipeline.target.schema, batch.stagingTable);
  const key = pipeline.businessKey.map(quoteIdent);
  const sampled = rowCheckConditions(pipeline).filter((c) => failing.includes(c.column));
  const branches = sampled.map(
    (c) => `SELECT ${sqlLiteral(c.column)} AS ap_check, ${key.map((k) => `s.${k}`).join(', ')}, CAST(${c.value} AS varchar(256)) AS ap_value
                 FROM ${table} AS s WHERE ${c.condition}`,
  );
  return {
    sql: `SELECT ap_check, ${key.join(', ')}, ap_value
            FROM (SELECT u.*, ROW_NUMBER() OVER (PARTITION BY u.ap_check ORDER BY ${key.map((k) => `u.${k}`).join(', ')}) AS ap_n
                    FROM (${branches.join('\n                 UNION ALL ')}) AS u) AS r
           WHERE ap_n <= ${Math.max(1, Math.floor(limit))}
           ORDER BY ap_check, ap_n`,
    ...rowCheckParameters(sampled),
  };
}

/**
 * Staging's rows whose key (all its columns not NULL, as a foreign key
 * reads it) the parent table lacks: `ap_rows` counts them; with `sample`,
 * the first few missing keys in key order with their rows instead. The
 * parent's keys are made distinct first, so a parent row repeated does not
 * repeat the child's.
 */
export function missingReferences(pipeline: Pipeline, batch: BatchRef, check: ReferencesCheck, sample?: number): Statement {
  const child = check.columns.map((c) => `s.${quoteIdent(c)}`);
  const parentKey = (i: number) => `p.ap_k${i}`;
  const from = `${qualifiedName(pipeline.target.schema, batch.stagingTable)} AS s
            LEFT JOIN (SELECT DISTINCT ${check.parent.columns.map((c, i) => `p.${quoteIdent(c)} AS ap_k${i}`).join(', ')}
                         FROM ${qualifiedName(check.parent.schema, check.parent.table)} AS p) AS p
              ON ${child.map((c, i) => `${c} = ${parentKey(i)}`).join(' AND ')}
           WHERE ${parentKey(0)} IS NULL AND ${child.map((c) => `${c} IS NOT NULL`).join(' AND ')}`;
  if (sample === undefined) return { sql: `SELECT COUNT(*) AS ap_rows FROM ${from}` };
  return {
    sql: `SELECT ${child.join(', ')}, COUNT(*) AS ap_rows FROM ${from}
           GROUP BY ${child.join(', ')} ORDER BY ${child.join(', ')} LIMIT ${Math.max(1, Math.floor(sample))}`,
  };
}

/** A custom check's SQL with the staging placeholder replaced by the quoted staging table. */
export function customCheckSql(pipeline: Pipeline, stagingTable: string, check: SqlCheck): string {
  return check.sql.replaceAll(STAGING_PLACEHOLDER, qualifiedName(pipeline.target.schema, stagingTable));
}

/** The rows a custom check returns: counted (`ap_rows`), or with `sample` the first few of them. */
export function customCheckRows(pipeline: Pipeline, batch: BatchRef, check: SqlCheck, sample?: number): Statement {
  const sql = customCheckSql(pipeline, batch.stagingTable, check);
  return sample === undefined
    ? { sql: `SELECT COUNT(*) AS ap_rows FROM (${sql}\n) AS src` }
    : { sql: `SELECT * FROM (${sql}\n) AS src LIMIT ${Math.max(1, Math.floor(sample))}` };
}

/** Records check results and moves the batch to CHECKED (all passed) or leaves it for RecordFailure. */
export function recordChecks(
  batchId: string,
  results: readonly CheckResult[],
  totals: { rowsRead: number; rowsWritten: number; rowsRejected?: number },
  now: Date,
  staleChunks: readonly number[] = [],
): string[] {
  const id = sqlLiteral(batchId);
  const attempt = `(SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`;
  // Replaces this attempt's results, so a retried Reconcile records them
  // once, also when an earlier invocation's transaction is still running.
  const statements = [LOCK_MANIFEST, `DELETE FROM ${M}.check_results WHERE batch_id = ${id} AND attempt = ${attempt}`];
  statements.push(
    ...results.map(
      (r) => `INSERT INTO ${M}.check_results (batch_id, attempt, check_name, passed, observed, expected, details, checked_at, severity)
            SELECT ${id}, ${attempt}, ${sqlLiteral(r.check)}, ${sqlLiteral(r.passed)}, ${sqlLiteral(r.observed)},
                   ${sqlLiteral(r.expected)}, ${sqlLiteral(r.details)}, ${sqlLiteral(now)}, ${sqlLiteral(r.severity ?? 'block')}`,
    ),
  );
  // A failed warning is recorded; only blocking failures keep the batch from CHECKED.
  const allPassed = !results.some(isBlocking);
  if (staleChunks.length > 0) {
    statements.push(
      // A new generation: the loads of the old one no longer count (chunk_state).
      `UPDATE ${M}.chunks SET status = ${sqlLiteral(ChunkStatus.STALE)}, attempt = attempt + 1
        WHERE batch_id = ${id} AND chunk_index IN (${staleChunks.map((i) => sqlLiteral(i)).join(', ')})`,
    );
  }
  statements.push(
    `UPDATE ${M}.batches SET rows_read = ${sqlLiteral(totals.rowsRead)}, rows_written = ${sqlLiteral(totals.rowsWritten)},
            rows_rejected = ${sqlLiteral(totals.rowsRejected ?? 0)}${allPassed ? `, status = ${sqlLiteral(BatchStatus.CHECKED)}` : ''}
      WHERE batch_id = ${id} AND status = ${sqlLiteral(BatchStatus.RUNNING)}`,
  );
  return statements;
}

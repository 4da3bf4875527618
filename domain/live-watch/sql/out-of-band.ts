/**
 * The SQL of out-of-band detection, shared by Plan (which records the
 * live table's columns and fingerprint) and Publish (whose swap checks
 * them under the live table's lock and carries expected writers' rows
 * over). The same query texts run in both places, so the two sides
 * compute the same text from the same table.
 */

import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import { boundLockWaits, LOCKS_HELD } from '../../publish/sql/lock-waits.ts';
import type { Pipeline } from '../../spec.ts';
import { CATALOG_TYPE, isUnhashed, rowHashValue } from '../../sql/row-hash.ts';
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';
import type { LiveBaseline, RowHash } from '../baseline.ts';
import { fingerprintText } from '../out-of-band.ts';

/**
 * One row per column of the table, in order: `col`, its `name type` text
 * (length for character types, precision and scale for numeric), from
 * information_schema.columns, as Plan's other column reads (domain/plan/sql/plan.ts
 * tableColumns).
 */
export function liveColumnsQuery(schema: string, table: string): Statement {
  const sql = `SELECT CAST(column_name AS varchar(128)) || ' ' || CAST(data_type AS varchar(128)) ||
      CASE WHEN character_maximum_length IS NOT NULL THEN '(' || CAST(character_maximum_length AS varchar(16)) || ')'
           WHEN data_type = 'numeric' THEN '(' || CAST(numeric_precision AS varchar(16)) || ',' || CAST(numeric_scale AS varchar(16)) || ')'
           ELSE '' END AS col
      FROM information_schema.columns
     WHERE table_schema = ${sqlLiteral(schema)} AND table_name = ${sqlLiteral(table)}
     ORDER BY ordinal_position`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/** How the columns travel and compare: `name type` joined by `;` (a type may hold a comma). */
export function columnsText(columns: readonly string[]): string {
  return columns.join(';');
}

/**
 * A column's value as text for the row digest: `v<text>` or `n` for NULL
 * (booleans by CASE: no cast to text is needed; NULL is neither branch). With `alias`, the column
 * is read as `alias.column`; with `castToType`, the value is first cast to
 * the column's type, so a source value hashes as the staging value an
 * INSERT of it becomes (rounded to the column's scale).
 */
function valueText(column: string, alias?: string, castToType = false): string | undefined {
  const [name, ...type] = column.split(' ');
  const fullType = type.join(' ');
  const dataType = fullType.replace(/\(.*$/, '');
  if (isUnhashed(column)) return undefined;
  const read = `${alias === undefined ? '' : `${alias}.`}${quoteIdent(name!)}`;
  const c = castToType && CATALOG_TYPE.test(fullType) ? `CAST(${read} AS ${fullType})` : read;
  const text = dataType === 'boolean' ? `CASE WHEN ${c} THEN 't' WHEN NOT ${c} THEN 'f' END` : `CAST(${c} AS varchar(65535))`;
  return `COALESCE('v' || ${text}, 'n')`;
}

/** The text a row's MD5 is taken over: its hashed columns' texts joined by `|`. */
function rowText(columns: readonly string[], alias?: string, castToType = false): string {
  const values = columns.map((c) => valueText(c, alias, castToType)).filter((v): v is string => v !== undefined);
  return values.length > 0 ? values.join(` || '|' || `) : `''`;
}

/**
 * The 60-bit number the first 15 hex digits of an MD5 stand for, as
 * Redshift's idiom writes it: STRTOL(SUBSTRING(md5, 1, 15), 16)
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_MD5.html,
 * https://docs.aws.amazon.com/redshift/latest/dg/r_STRTOL.html; BIGINT,
 * and 15 hex digits fit it). PostgreSQL lacks STRTOL: the local endpoint
 * provides it (local/data-api/system-views.ts).
 */
function hexValue(hex: string): string {
  return `STRTOL(SUBSTRING(${hex}, 1, 15), 16)`;
}

/**
 * The live table's fingerprint in one scan, one text `<rows>:<checksum>`: the row
 * count and the DECIMAL(38,0) sum of each row's hash (by default row-hash.ts's
 * FNV chain; `md5` for a baseline older than that chain), independent of row order;
 * any row inserted, deleted or updated changes it. With `carryFrom`, only rows
 * before it (or with no time) count. Why: docs/decisions/publishing.md
 */
export function liveFingerprintQuery(
  pipeline: Pipeline,
  columns: readonly string[],
  carryFrom?: string,
  rowHash: RowHash = 'fnv',
  table: string = pipeline.target.table,
): Statement {
  const { schema } = pipeline.target;
  const t = quoteIdent(pipeline.timeColumn);
  const where = carryFrom === undefined ? '' : ` WHERE ${t} IS NULL OR ${t} < ${sqlLiteral(new Date(carryFrom))}`;
  const value = rowHash === 'md5' ? `CAST(${hexValue(`MD5(${rowText(columns)})`)} AS decimal(38, 0))` : rowHashValue(columns);
  const sql = `SELECT CAST(COUNT(*) AS varchar(32)) || ':' || CAST(COALESCE(SUM(r.v), 0) AS varchar(64)) AS fingerprint
      FROM (SELECT ${value} AS v FROM ${qualifiedName(schema, table)}${where}) AS r`;
  return { sql: sql.replace(/\s+/g, ' ').trim() };
}

/**
 * The swap's check, run under the live table's lock: raises `out-of-band
 * change: ...` unless the columns and the fingerprint are what Plan saw.
 */
export function assertLiveUnchanged(pipeline: Pipeline, baseline: LiveBaseline): string {
  const { schema, table } = pipeline.target;
  const fingerprint = liveFingerprintQuery(pipeline, baseline.columns, baseline.carryFrom, baseline.rowHash ?? 'md5');
  return `CALL ${M}.assert_live_unchanged(${sqlLiteral(`${schema}.${table}`)}, ${sqlLiteral(liveColumnsQuery(schema, table).sql)}, ${sqlLiteral(columnsText(baseline.columns))}, ${sqlLiteral(
    fingerprint.sql,
  )}, ${sqlLiteral(fingerprintText(baseline.rows, baseline.checksum))})`;
}

/**
 * Expected writers' rows carried over into staging before the renames:
 * every live row at or after the batch end (`carryFrom`), which the batch
 * does not hold (Reconcile found no staging row outside its interval).
 * Inside the swap transaction, so it happens once or not at all.
 */
export function carryOverRows(
  pipeline: Pipeline,
  stagingTable: string,
  columns: readonly string[],
  carryFrom: string,
  sources: readonly string[] = columns,
): string {
  const { schema, table } = pipeline.target;
  return `INSERT INTO ${qualifiedName(schema, stagingTable)} (${columnList(columns)}) SELECT ${columnList(sources)} FROM ${qualifiedName(schema, table)} WHERE ${quoteIdent(
    pipeline.timeColumn,
  )} >= ${sqlLiteral(new Date(carryFrom))}`;
}

/** Column names (or `name type` texts) as a quoted list, each prefixed with `alias.` when given. */
function columnList(columns: readonly string[], alias?: string): string {
  return columns.map((c) => `${alias === undefined ? '' : `${alias}.`}${quoteIdent(c.split(' ')[0]!)}`).join(', ');
}

/**
 * The catch-up after a swap that carried rows over, in a transaction of its own
 * right after the commit, its snapshot taken after both tables' LOCKs: the rows
 * at or after `carryFrom` that reached the old table (`retainedAs`) but not the
 * new live table, copied by business key. Run again it copies nothing.
 * Why: docs/decisions/migrating-a-live-table.md ("The catch-up after the swap")
 */
export function catchUpRows(
  pipeline: Pipeline,
  retainedAs: string,
  columns: readonly string[],
  carryFrom: string,
  lockWaitMs: number,
  sources: readonly string[] = columns,
): string[] {
  const { schema, table } = pipeline.target;
  const live = qualifiedName(schema, table);
  const old = qualifiedName(schema, retainedAs);
  const t = quoteIdent(pipeline.timeColumn);
  const sameKey = pipeline.businessKey.map((k) => `l.${quoteIdent(k)} = o.${quoteIdent(k)}`).join(' AND ');
  return [
    boundLockWaits(lockWaitMs),
    `LOCK ${live}`,
    `LOCK ${old}`,
    LOCKS_HELD,
    `INSERT INTO ${live} (${columnList(columns)}) SELECT ${columnList(sources, 'o')} FROM ${old} AS o
      WHERE o.${t} >= ${sqlLiteral(new Date(carryFrom))} AND NOT EXISTS (SELECT 1 FROM ${live} AS l WHERE ${sameKey})`,
  ];
}

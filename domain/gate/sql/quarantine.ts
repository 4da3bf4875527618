/**
 * The SQL of Reconcile's quarantine (domain/gate/quarantine.ts): the move of
 * the rows that break a row-level rule out of staging into
 * `<table>__quarantine` (created by null-times.ts createQuarantine), the
 * batch's quarantined rows as the gate's staging side reads them, and
 * their summary for the tolerance check.
 */
import type { BatchRef } from '../../batch.ts';
import { extractColumn } from '../../extract-column.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import { quarantineTableFor } from '../../plan/sql/null-times.ts';
import type { Pipeline } from '../../spec.ts';
import { hashedColumns, rowHashValue } from '../../sql/row-hash.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import { QUARANTINE_SAMPLES, quarantines, REASON, type RowRule, rowRules } from '../quarantine.ts';

function quarantineTable(pipeline: Pipeline): string {
  return qualifiedName(pipeline.target.schema, quarantineTableFor(pipeline));
}

/**
 * The move of `stagingColumns` (`name type`), one transaction under a LOCK of
 * staging: the batch's rows of old chunk generations dropped; the rows breaking a
 * rule moved with their chunk's index and generation; with checks.quarantine, a
 * key's conflicting rows, or all but one identical copy. A retry moves only what is
 * still in staging. DELETEs use EXISTS: Redshift's DELETE takes only tables in USING
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_DELETE.html). Why: docs/decisions/quarantine-for-row-level-rules.md
 */
export function moveToQuarantine(
  pipeline: Pipeline,
  batch: BatchRef,
  stagingColumns: readonly string[],
  now: Date,
): { sqls: string[]; parameters: Record<string, string> } {
  const staging = qualifiedName(pipeline.target.schema, batch.stagingTable);
  const stagingName = quoteIdent(batch.stagingTable);
  const quarantine = quarantineTable(pipeline);
  const quarantineName = quoteIdent(quarantineTableFor(pipeline));
  const t = quoteIdent(extractColumn(pipeline));
  const columns = batch.columns.map(quoteIdent);
  const keys = pipeline.businessKey.map(quoteIdent);
  const read = (alias: string) => columns.map((c) => `${alias}.${c}`).join(', ');
  const inInterval = (alias: string) => `${alias}.${t} >= :start AND ${alias}.${t} < :end`;
  const sameKey = (a: string, b: string) => keys.map((k) => `${a}.${k} = ${b}.${k}`).join(' AND ');
  const into = `INSERT INTO ${quarantine} (batch_id, quarantined_at, reason, chunk_index, generation, ${columns.join(', ')})`;
  const stamp = (reason: string) => `CAST(:batch_id AS varchar(32)), CAST(:now AS timestamp), CAST(${reason} AS varchar(256)), c.chunk_index, c.generation`;
  const chunkOf = (alias: string) =>
    `JOIN ${M}.chunk_state AS c ON c.batch_id = :batch_id AND ${alias}.${t} >= c.interval_start AND ${alias}.${t} < c.interval_end`;

  const rules: { reason: string; condition: (alias: string) => string }[] = [
    ...(quarantines(pipeline) ? [{ reason: REASON.nullKey, condition: (a: string) => keys.map((k) => `${a}.${k} IS NULL`).join(' OR ') }] : []),
    ...rowRules(pipeline).map((r) => ({ reason: r.reason, condition: (a: string) => ruleCondition(r, `${a}.${quoteIdent(r.column)}`) })),
  ];
  const patterns = Object.fromEntries(rowRules(pipeline).flatMap((r) => (r.pattern === undefined ? [] : [[r.pattern.parameter, r.pattern.regex]])));
  const sqls = [
    `LOCK ${staging}`,
    `DELETE FROM ${quarantine}
      WHERE batch_id = :batch_id AND chunk_index IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM ${M}.chunk_state AS c
                         WHERE c.batch_id = :batch_id AND c.chunk_index = ${quarantineName}.chunk_index AND c.generation = ${quarantineName}.generation)`,
  ];
  if (rules.length > 0) {
    const reason = `CASE ${rules.map((r) => `WHEN ${r.condition('s')} THEN ${sqlLiteral(r.reason)}`).join(' ')} END`;
    sqls.push(
      `${into}
       SELECT ${stamp('r.ap_reason')}, ${read('r')}
         FROM (SELECT ${read('s')}, ${reason} AS ap_reason FROM ${staging} AS s WHERE ${inInterval('s')}) AS r
         ${chunkOf('r')}
        WHERE r.ap_reason IS NOT NULL`,
      // The same rows: the same conditions, and a chunk holding them (as the INSERT's join).
      `DELETE FROM ${staging}
        WHERE ${inInterval(stagingName)} AND (${rules.map((r) => r.condition(stagingName)).join(' OR ')})
          AND EXISTS (SELECT 1 FROM ${M}.chunk_state AS c
                       WHERE c.batch_id = :batch_id AND ${stagingName}.${t} >= c.interval_start AND ${stagingName}.${t} < c.interval_end)`,
    );
  }
  if (quarantines(pipeline)) {
    const hashed = hashedColumns(stagingColumns.filter((c) => batch.columns.includes(c.split(' ')[0]!)));
    const digest = hashed.length > 0 ? rowHashValue(hashed, 's') : '0';
    const duplicated = (contents: string) => `(SELECT ${keys.map((k) => `s.${k}`).join(', ')} FROM ${staging} AS s WHERE ${inInterval('s')}
                 GROUP BY ${keys.map((k) => `s.${k}`).join(', ')} HAVING COUNT(*) > 1${contents})`;
    sqls.push(
      `${into}
       SELECT ${stamp(sqlLiteral(REASON.conflictingDuplicate))}, ${read('s')}
         FROM ${staging} AS s
         JOIN ${duplicated(` AND COUNT(DISTINCT ${digest}) > 1`)} AS d ON ${sameKey('s', 'd')}
         ${chunkOf('s')}
        WHERE ${inInterval('s')}`,
      `${into}
       SELECT ${stamp(sqlLiteral(REASON.identicalDuplicate))}, ${read('r')}
         FROM (SELECT ${read('s')}, ROW_NUMBER() OVER (PARTITION BY ${keys.map((k) => `s.${k}`).join(', ')} ORDER BY ${keys.map((k) => `s.${k}`).join(', ')}) AS ap_n
                 FROM ${staging} AS s
                 JOIN ${duplicated(` AND COUNT(DISTINCT ${digest}) = 1`)} AS d ON ${sameKey('s', 'd')}
                WHERE ${inInterval('s')}) AS r
         ${chunkOf('r')}
        WHERE r.ap_n > 1`,
      `DELETE FROM ${staging}
        WHERE ${inInterval(stagingName)} AND EXISTS (SELECT 1 FROM ${duplicated('')} AS d WHERE ${sameKey('d', stagingName)})`,
      `INSERT INTO ${staging} (${columns.join(', ')})
       SELECT DISTINCT ${read('q')} FROM ${quarantine} AS q
        WHERE q.batch_id = :batch_id AND q.reason = ${sqlLiteral(REASON.identicalDuplicate)} AND q.chunk_index IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM ${staging} AS s WHERE ${sameKey('s', 'q')})`,
    );
  }
  return {
    sqls,
    parameters: { batch_id: batch.batchId, now: timestampParam(now), start: timestampParam(batch.from), end: timestampParam(batch.to), ...patterns },
  };
}

/** The condition a row breaks a rule by, over its column's value: NULL matches no NOT IN and no pattern (notNull's to catch). */
function ruleCondition(rule: RowRule, value: string): string {
  if (rule.pattern !== undefined) return `NOT (${value} ~ :${rule.pattern.parameter})`;
  if (rule.values !== undefined) return `${value} NOT IN (${rule.values.map((v) => sqlLiteral(v)).join(', ')})`;
  return `${value} IS NULL`;
}

/**
 * Staging's rows with the batch's rows a row-level rule quarantined (those
 * of a chunk; NULL-time rows belong to none), each with `ap_q` (1 for a
 * quarantined row), over `columns`: a FROM clause the gate's staging pass
 * reads (domain/gate/sql/reconcile.ts chunkCounts), so that source = staging +
 * quarantined holds per chunk. Binds `:batch_id`.
 */
export function stagingWithQuarantined(pipeline: Pipeline, batch: BatchRef, columns: readonly string[]): string {
  const read = (alias: string) => columns.map((c) => `${alias}.${quoteIdent(c)}`).join(', ');
  return `(SELECT ${read('s')}, 0 AS ap_q FROM ${qualifiedName(pipeline.target.schema, batch.stagingTable)} AS s
                 UNION ALL
                SELECT ${read('q')}, 1 AS ap_q FROM ${quarantineTable(pipeline)} AS q WHERE q.batch_id = :batch_id AND q.chunk_index IS NOT NULL)`;
}

/** The same rows as stagingWithQuarantined, for a statement without parameters (the batch id a literal). */
export function stagingWithQuarantinedLiteral(pipeline: Pipeline, batch: BatchRef, columns: readonly string[]): string {
  return stagingWithQuarantined(pipeline, batch, columns).replace(':batch_id', sqlLiteral(batch.batchId));
}

/**
 * The batch's quarantined rows per reason (`ap_rows`), with the business
 * keys of the first few of each (in key order; ROW_NUMBER,
 * https://docs.aws.amazon.com/redshift/latest/dg/r_WF_ROW_NUMBER.html);
 * `ap_chunked` counts those of a chunk (a row-level rule's, not a
 * NULL-time row's). No row when there are none.
 */
export function quarantineSummary(pipeline: Pipeline, batch: BatchRef, limit = QUARANTINE_SAMPLES): Statement {
  const keys = pipeline.businessKey.map(quoteIdent);
  const reason = `COALESCE(q.reason, ${sqlLiteral(REASON.nullTime)})`;
  return {
    sql: `SELECT r.ap_reason, r.ap_rows, r.ap_chunked, ${keys.map((k) => `r.${k}`).join(', ')}
            FROM (SELECT ${reason} AS ap_reason, ${keys.map((k) => `q.${k}`).join(', ')},
                         COUNT(*) OVER (PARTITION BY ${reason}) AS ap_rows,
                         COUNT(q.chunk_index) OVER (PARTITION BY ${reason}) AS ap_chunked,
                         ROW_NUMBER() OVER (PARTITION BY ${reason} ORDER BY ${keys.map((k) => `q.${k}`).join(', ')}) AS ap_n
                    FROM ${quarantineTable(pipeline)} AS q WHERE q.batch_id = :batch_id) AS r
           WHERE r.ap_n <= ${Math.max(1, Math.floor(limit))}
           ORDER BY r.ap_reason, r.ap_n`,
    parameters: { batch_id: batch.batchId },
  };
}

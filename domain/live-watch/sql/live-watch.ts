/**
 * The SQL of the live watch (domain/live-watch/live-watch.ts): the publish
 * transaction records the live table's columns and fingerprint as it
 * publishes it; between runs the freshness monitor reads that record, the
 * lease, and the live table's fingerprint now. The fingerprint is the one
 * Plan's baseline takes (domain/live-watch/sql/out-of-band.ts liveFingerprintQuery),
 * so both compare the same text computed the same way.
 */
import { sqlLiteral } from '../../identifiers.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';
import { columnsText, liveColumnsQuery, liveFingerprintQuery } from './out-of-band.ts';

/**
 * The last statement of a watched publish transaction: record_live_fingerprint
 * reads the live table as the transaction leaves it and records it on the
 * publication just inserted. `columns`: the published table's `name type` texts;
 * `rowsBefore`, with expected writers, the publication's end (only rows before it
 * are the pipeline's). Why: docs/decisions/live-watch.md
 */
export function recordLiveFingerprint(pipeline: Pipeline, columns: readonly string[], rowsBefore?: string): string {
  const { schema, table } = pipeline.target;
  const fingerprint = liveFingerprintQuery(pipeline, columns, rowsBefore);
  const before = rowsBefore === undefined ? 'CAST(NULL AS timestamp)' : sqlLiteral(new Date(rowsBefore));
  return `CALL ${M}.record_live_fingerprint(${sqlLiteral(pipeline.name)}, ${sqlLiteral(liveColumnsQuery(schema, table).sql)}, ${sqlLiteral(
    columnsText(columns),
  )}, ${sqlLiteral(fingerprint.sql)}, ${before})`;
}

/**
 * A swap's record: staging's fingerprint with Plan's baseline columns, read
 * before the transaction and outside every lock, so live readers never wait for
 * it. It is the published table's because assert_publishable then checks under
 * staging's lock that staging holds the rows Reconcile checked. With expected
 * writers, only rows before `rowsBefore`. Why: docs/decisions/live-watch.md
 */
export function stagingFingerprintQuery(pipeline: Pipeline, stagingTable: string, columns: readonly string[], rowsBefore?: string): Statement {
  return liveFingerprintQuery(pipeline, columns, rowsBefore, 'fnv', stagingTable);
}

/**
 * Records a fingerprint taken before the transaction (stagingFingerprintQuery)
 * on the publication the transaction just inserted (the pipeline's newest,
 * under the publications' lock): no scan inside the swap.
 */
export function recordPublishedFingerprint(pipeline: Pipeline, columns: readonly string[], fingerprint: string, rowsBefore?: string): string {
  const name = sqlLiteral(pipeline.name);
  const before = rowsBefore === undefined ? 'CAST(NULL AS timestamp)' : sqlLiteral(new Date(rowsBefore));
  return `UPDATE ${M}.publications SET live_columns = ${sqlLiteral(columnsText(columns))}, live_fingerprint = ${sqlLiteral(fingerprint)}, live_rows_before = ${before}
     WHERE pipeline = ${name} AND seq = (SELECT MAX(seq) FROM ${M}.publications WHERE pipeline = ${name})`;
}

/**
 * The pipeline's newest publication and what it recorded of the live
 * table: `seq`, `live_columns`, `live_fingerprint`, `live_rows_before`
 * (all NULL for a publication that recorded nothing: made before version
 * 11, by a group, a view switch or a migration, or with the watch off).
 * No row when the pipeline never published.
 */
export function recordedLive(pipeline: string): Statement {
  return {
    sql: `SELECT seq, live_columns, live_fingerprint, live_rows_before FROM ${M}.publications
           WHERE pipeline = :pipeline ORDER BY seq DESC LIMIT 1`,
    parameters: { pipeline },
  };
}

/** The pipeline's newest publication's seq (0 when none) and whether a run holds its lease now (`leased` 1 or 0). */
export function publicationAndLease(pipeline: string, now: Date): Statement {
  return {
    sql: `SELECT (SELECT COALESCE(MAX(seq), 0) FROM ${M}.publications WHERE pipeline = :pipeline) AS seq,
                 (SELECT COUNT(*) FROM ${M}.pipeline_leases WHERE pipeline = :pipeline AND expires_at > CAST(:now AS timestamp)) AS leased`,
    parameters: { pipeline, now: timestampParam(now) },
  };
}

/**
 * Every SQL statement atomic-publish sends, generated in one place.
 * Identifiers go through quoteIdent/qualifiedName; values are `:name`
 * parameters, except in BatchExecuteStatement batches (which take no
 * parameters), where the tool's own values go through sqlLiteral.
 */
import { ValidationError } from './errors.ts';
import { formatTimestamp, qualifiedName, quoteIdent, sqlLiteral } from './identifiers.ts';
import type { Chunk } from './plan.ts';
import type { Pipeline } from './spec.ts';

/** One statement for ExecuteStatement. Parameter values are strings, as the Data API takes them. */
export interface Statement {
  readonly sql: string;
  readonly parameters?: Readonly<Record<string, string>>;
}

/** Timestamps travel as `2026-01-02 03:04:05.000` (UTC), which Redshift and PostgreSQL both read. */
export function timestampParam(instant: Date | string): string {
  return formatTimestamp(typeof instant === 'string' ? new Date(instant) : instant);
}

export const MANIFEST_SCHEMA = 'atomic_publish';
const M = quoteIdent(MANIFEST_SCHEMA);

export type BatchStatus = 'RUNNING' | 'CHECKED' | 'PUBLISHED' | 'FAILED';
/**
 * PENDING: never loaded (staging holds none of its rows). LOADING: an INSERT
 * may have run. DONE: loaded and counted. STALE: Reconcile found its staging
 * rows no longer match the source (late rows, a changed source): the next
 * run clears and reloads it.
 */
export type ChunkStatus = 'PENDING' | 'LOADING' | 'DONE' | 'STALE';

/** Data API batches hold at most 40 statements and 100 KB of SQL each. */
export const MAX_BATCH_STATEMENTS = 40;
export const MAX_SQL_BYTES = 100_000;

// ---------------------------------------------------------------- manifest

/**
 * Version of the manifest's DDL. Plan installs the DDL only when the
 * warehouse has an older version, so a replay writes nothing and no Plan
 * replaces the guard procedure while another pipeline's Publish runs it.
 */
export const MANIFEST_VERSION = 2;

/** The installed manifest version: 0 when the manifest does not exist yet. */
export function installedManifestVersion(): Statement[] {
  return [
    {
      sql: `SELECT COUNT(*) AS present FROM information_schema.tables
             WHERE table_schema = :schema AND table_name = 'manifest_version'`,
      parameters: { schema: MANIFEST_SCHEMA },
    },
    { sql: `SELECT COALESCE(MAX(version), 0) AS version FROM ${M}.manifest_version` },
  ];
}

/** Idempotent DDL of the manifest, run as one batch when the installed version is older. */
export function manifestDdl(now: Date): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${M}`,
    `CREATE TABLE IF NOT EXISTS ${M}.manifest_version (
      version int NOT NULL,
      installed_at timestamp NOT NULL,
      PRIMARY KEY (version)
    )`,
    `CREATE TABLE IF NOT EXISTS ${M}.batches (
      batch_id varchar(32) NOT NULL,
      pipeline varchar(128) NOT NULL,
      mode varchar(32) NOT NULL,
      interval_start timestamp NOT NULL,
      interval_end timestamp NOT NULL,
      spec_hash varchar(64) NOT NULL,
      code_version varchar(64) NOT NULL,
      execution_id varchar(512),
      status varchar(16) NOT NULL,
      attempt int NOT NULL,
      base_publication int NOT NULL,
      staging_table varchar(128) NOT NULL,
      chunk_count int NOT NULL,
      started_at timestamp NOT NULL,
      finished_at timestamp,
      rows_read bigint,
      rows_written bigint,
      rows_rejected bigint,
      error varchar(65535),
      staging_dropped_at timestamp,
      PRIMARY KEY (batch_id)
    )`,
    `CREATE TABLE IF NOT EXISTS ${M}.batch_attempts (
      batch_id varchar(32) NOT NULL,
      attempt int NOT NULL,
      execution_id varchar(512),
      status varchar(16) NOT NULL,
      started_at timestamp NOT NULL,
      finished_at timestamp,
      error varchar(65535),
      PRIMARY KEY (batch_id, attempt)
    )`,
    `CREATE TABLE IF NOT EXISTS ${M}.chunks (
      batch_id varchar(32) NOT NULL,
      chunk_index int NOT NULL,
      interval_start timestamp NOT NULL,
      interval_end timestamp NOT NULL,
      status varchar(16) NOT NULL,
      attempt int NOT NULL,
      rows_written bigint,
      statement_id varchar(128),
      started_at timestamp,
      finished_at timestamp,
      PRIMARY KEY (batch_id, chunk_index)
    )`,
    `CREATE TABLE IF NOT EXISTS ${M}.check_results (
      batch_id varchar(32) NOT NULL,
      attempt int NOT NULL,
      check_name varchar(128) NOT NULL,
      passed boolean NOT NULL,
      observed varchar(65535),
      expected varchar(65535),
      details varchar(65535),
      checked_at timestamp NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS ${M}.publications (
      pipeline varchar(128) NOT NULL,
      seq int NOT NULL,
      batch_id varchar(32) NOT NULL,
      published_at timestamp NOT NULL,
      live_table varchar(256) NOT NULL,
      old_version_table varchar(256) NOT NULL,
      rows_published bigint,
      rolled_back_at timestamp,
      dropped_at timestamp,
      PRIMARY KEY (pipeline, seq)
    )`,
    // The publish guard runs inside the swap transaction, after LOCK on
    // publications (one publisher at a time) and on staging (no late
    // writer). Every check raises, so the whole swap rolls back.
    `CREATE OR REPLACE PROCEDURE ${M}.assert_publishable(
      p_pipeline varchar, p_batch_id varchar, p_base int, p_schema varchar, p_staging varchar)
    AS $$
    DECLARE
      latest int;
      latest_end timestamp;
      batch_end timestamp;
      batch_status varchar(16);
      checked_rows bigint;
      staged_rows bigint;
    BEGIN
      SELECT INTO latest COALESCE(MAX(seq), 0) FROM ${M}.publications WHERE pipeline = p_pipeline;
      IF latest <> p_base THEN
        RAISE EXCEPTION 'publish guard: pipeline % is at publication % but batch % was planned on publication %', p_pipeline, latest, p_batch_id, p_base;
      END IF;
      SELECT INTO batch_status status FROM ${M}.batches WHERE batch_id = p_batch_id;
      SELECT INTO batch_end interval_end FROM ${M}.batches WHERE batch_id = p_batch_id;
      SELECT INTO checked_rows rows_written FROM ${M}.batches WHERE batch_id = p_batch_id;
      IF batch_status IS NULL OR batch_status <> 'CHECKED' THEN
        -- Redshift's RAISE takes variables only, not expressions.
        batch_status := COALESCE(batch_status, 'missing');
        RAISE EXCEPTION 'publish guard: batch % is %, not CHECKED', p_batch_id, batch_status;
      END IF;
      SELECT INTO latest_end b.interval_end FROM ${M}.publications p JOIN ${M}.batches b ON b.batch_id = p.batch_id
       WHERE p.pipeline = p_pipeline ORDER BY p.seq DESC LIMIT 1;
      IF latest_end IS NOT NULL AND latest_end > batch_end THEN
        RAISE EXCEPTION 'publish guard: pipeline % already publishes data up to %, later than the % of batch %', p_pipeline, latest_end, batch_end, p_batch_id;
      END IF;
      EXECUTE 'SELECT COUNT(*) FROM ' || quote_ident(p_schema) || '.' || quote_ident(p_staging) INTO staged_rows;
      IF staged_rows <> checked_rows THEN
        RAISE EXCEPTION 'publish guard: staging %.% holds % rows but Reconcile checked %', p_schema, p_staging, staged_rows, checked_rows;
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    `INSERT INTO ${M}.manifest_version (version, installed_at)
     SELECT ${MANIFEST_VERSION}, ${sqlLiteral(now)} WHERE NOT EXISTS (SELECT 1 FROM ${M}.manifest_version WHERE version = ${MANIFEST_VERSION})`,
  ];
}

// ---------------------------------------------------------------- plan

/** Columns of a table, in order; empty when the table does not exist. */
export function tableColumns(schema: string, table: string): Statement {
  return {
    sql: `SELECT column_name, data_type FROM information_schema.columns
           WHERE table_schema = :schema AND table_name = :table
           ORDER BY ordinal_position`,
    parameters: { schema, table },
  };
}

/** Compiles the source query without reading rows: its result's columns are what a load would insert. */
export function sourceShape(pipeline: Pipeline, interval: { from: Date; to: Date }): Statement {
  return {
    sql: `SELECT * FROM (${pipeline.sourceSql}
) AS src LIMIT 0`,
    parameters: { start: timestampParam(interval.from), end: timestampParam(interval.to) },
  };
}

export function findBatch(batchId: string): Statement {
  return {
    sql: `SELECT status, attempt, base_publication FROM ${M}.batches WHERE batch_id = :batch_id`,
    parameters: { batch_id: batchId },
  };
}

export function latestPublication(pipeline: string): Statement {
  return {
    sql: `SELECT COALESCE(MAX(seq), 0) AS seq FROM ${M}.publications WHERE pipeline = :pipeline`,
    parameters: { pipeline },
  };
}

export function doneChunks(batchId: string): Statement {
  return {
    sql: `SELECT chunk_index FROM ${M}.chunks WHERE batch_id = :batch_id AND status = 'DONE' ORDER BY chunk_index`,
    parameters: { batch_id: batchId },
  };
}

export interface BatchRecord {
  readonly batchId: string;
  readonly pipeline: Pipeline;
  readonly interval: { from: Date; to: Date };
  readonly codeVersion: string;
  readonly executionId: string;
  readonly basePublication: number;
  readonly stagingTable: string;
  readonly chunks: readonly Chunk[];
  readonly now: Date;
}

/**
 * One transaction that (re)starts a batch: staging created LIKE live, the
 * batch row inserted or, for a new execution of it, moved back to RUNNING
 * with the attempt counted, the attempt recorded, and chunk rows inserted
 * where missing. Running it twice in one execution (a retried Plan) leaves
 * the same rows.
 */
export function startBatch(record: BatchRecord): string[] {
  const { pipeline, batchId, now } = record;
  const live = qualifiedName(pipeline.target.schema, pipeline.target.table);
  const staging = qualifiedName(pipeline.target.schema, record.stagingTable);
  const id = sqlLiteral(batchId);
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${staging} (LIKE ${live})`,
    `INSERT INTO ${M}.batches (batch_id, pipeline, mode, interval_start, interval_end, spec_hash, code_version,
        execution_id, status, attempt, base_publication, staging_table, chunk_count, started_at)
     SELECT ${[
       id,
       sqlLiteral(pipeline.name),
       sqlLiteral(pipeline.publishMode),
       sqlLiteral(record.interval.from),
       sqlLiteral(record.interval.to),
       sqlLiteral(pipeline.specHash),
       sqlLiteral(record.codeVersion),
       sqlLiteral(record.executionId),
       `'RUNNING'`,
       '1',
       sqlLiteral(record.basePublication),
       sqlLiteral(record.stagingTable),
       sqlLiteral(record.chunks.length),
       sqlLiteral(now),
     ].join(', ')}
     WHERE NOT EXISTS (SELECT 1 FROM ${M}.batches WHERE batch_id = ${id})`,
    // Cleanup of a later run may have dropped this failed batch's staging
    // table: it was created empty again above, so every chunk reloads.
    `UPDATE ${M}.chunks SET status = 'PENDING', rows_written = NULL, statement_id = NULL
      WHERE batch_id = ${id}
        AND EXISTS (SELECT 1 FROM ${M}.batches WHERE batch_id = ${id} AND staging_dropped_at IS NOT NULL)`,
    `UPDATE ${M}.batches
        SET status = 'RUNNING', attempt = attempt + 1, execution_id = ${sqlLiteral(record.executionId)},
            base_publication = ${sqlLiteral(record.basePublication)}, started_at = ${sqlLiteral(now)},
            finished_at = NULL, error = NULL, staging_dropped_at = NULL
      WHERE batch_id = ${id} AND status <> 'PUBLISHED'${
        record.executionId ? ` AND (execution_id IS NULL OR execution_id <> ${sqlLiteral(record.executionId)})` : ''
      }`,
    `INSERT INTO ${M}.batch_attempts (batch_id, attempt, execution_id, status, started_at)
     SELECT b.batch_id, b.attempt, b.execution_id, 'RUNNING', ${sqlLiteral(now)} FROM ${M}.batches b
      WHERE b.batch_id = ${id} AND b.status = 'RUNNING'
        AND NOT EXISTS (SELECT 1 FROM ${M}.batch_attempts a WHERE a.batch_id = b.batch_id AND a.attempt = b.attempt)`,
  ];
  // Chunk rows in as few statements as fit the SQL size limit. Rows are
  // SELECTs joined by UNION ALL: Redshift has no VALUES list in FROM.
  const row = (c: Chunk, first: boolean) =>
    first
      ? `SELECT CAST(${id} AS varchar(32)), ${c.index}, ${sqlLiteral(new Date(c.start))}, ${sqlLiteral(new Date(c.end))}, CAST('PENDING' AS varchar(16)), 0`
      : `SELECT ${id}, ${c.index}, ${sqlLiteral(new Date(c.start))}, ${sqlLiteral(new Date(c.end))}, 'PENDING', 0`;
  const head = `INSERT INTO ${M}.chunks (batch_id, chunk_index, interval_start, interval_end, status, attempt)
     SELECT v.* FROM (`;
  const tail = `) AS v (batch_id, chunk_index, interval_start, interval_end, status, attempt)
     WHERE NOT EXISTS (SELECT 1 FROM ${M}.chunks c WHERE c.batch_id = v.batch_id AND c.chunk_index = v.chunk_index)`;
  const separator = '\nUNION ALL ';
  let group: string[] = [];
  let size = 0;
  const flush = () => {
    if (group.length > 0) statements.push(head + group.join(separator) + tail);
    group = [];
    size = 0;
  };
  for (const chunk of record.chunks) {
    let line = row(chunk, group.length === 0);
    if (group.length > 0 && head.length + tail.length + size + line.length > MAX_SQL_BYTES / 2) {
      flush();
      line = row(chunk, true);
    }
    group.push(line);
    size += line.length + separator.length;
  }
  flush();
  if (statements.length > MAX_BATCH_STATEMENTS) {
    throw new ValidationError(`a batch of ${record.chunks.length} chunks needs ${statements.length} statements, more than the Data API's ${MAX_BATCH_STATEMENTS}`);
  }
  return statements;
}

// ---------------------------------------------------------------- load chunk

/** Batch facts each later step receives in the state payload. */
export interface BatchRef {
  readonly pipeline: string;
  readonly batchId: string;
  readonly specHash: string;
  /** `schema.table` readers query. */
  readonly liveTable: string;
  readonly from: string;
  readonly to: string;
  readonly stagingTable: string;
  readonly columns: readonly string[];
  readonly basePublication: number;
}

export function chunkStatus(batchId: string, chunk: Chunk): Statement {
  return {
    sql: `SELECT status, statement_id FROM ${M}.chunks WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index) },
  };
}

/** Replace-in-staging, step 1: whatever an earlier attempt left in this interval goes. */
export function clearStagingInterval(pipeline: Pipeline, batch: BatchRef, chunk: Chunk): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  return {
    sql: `DELETE FROM ${qualifiedName(pipeline.target.schema, batch.stagingTable)} WHERE ${t} >= :start AND ${t} < :end`,
    parameters: { start: timestampParam(chunk.start), end: timestampParam(chunk.end) },
  };
}

/**
 * Replace-in-staging, step 2: the source rows of `[start, end)`. The outer
 * filter keeps the half-open interval even if the source query is looser.
 */
export function loadStagingInterval(pipeline: Pipeline, batch: BatchRef, chunk: Chunk): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const columns = batch.columns.map(quoteIdent).join(', ');
  return {
    sql: `INSERT INTO ${qualifiedName(pipeline.target.schema, batch.stagingTable)} (${columns})
          SELECT ${columns} FROM (${pipeline.sourceSql}
) AS src
           WHERE src.${t} >= :start AND src.${t} < :end`,
    parameters: { start: timestampParam(chunk.start), end: timestampParam(chunk.end) },
  };
}

/**
 * Marks a chunk LOADING before its INSERT is submitted: a chunk found
 * PENDING therefore never had rows written, and only a LOADING one needs
 * its interval cleared first.
 */
export function markChunkLoading(batchId: string, chunk: Chunk, now: Date): Statement {
  return {
    sql: `UPDATE ${M}.chunks
             SET status = 'LOADING', statement_id = NULL, attempt = attempt + 1, started_at = :now
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int) AND status <> 'DONE'`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index), now: timestampParam(now) },
  };
}

/** Recorded as soon as the INSERT is submitted, so the running statement can be found from the manifest. */
export function recordChunkStatement(batchId: string, chunk: Chunk, statementId: string): Statement {
  return {
    sql: `UPDATE ${M}.chunks SET statement_id = :statement_id
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index), statement_id: statementId },
  };
}

/**
 * Rows written as the Data API reported them for the INSERT. Reconcile
 * compares this record with what staging holds (reading staging here would
 * make concurrent chunk loads conflict under serializable isolation).
 */
export function markChunkDone(batchId: string, chunk: Chunk, statementId: string, rowsWritten: number, now: Date): Statement {
  return {
    // Only the attempt whose INSERT this was may close the chunk: a late or
    // overtaken attempt updates nothing.
    sql: `UPDATE ${M}.chunks
             SET status = 'DONE', finished_at = :now, rows_written = CAST(:rows_written AS bigint)
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int)
             AND status = 'LOADING' AND statement_id = :statement_id`,
    parameters: {
      batch_id: batchId,
      chunk_index: String(chunk.index),
      statement_id: statementId,
      rows_written: String(rowsWritten),
      now: timestampParam(now),
    },
  };
}

// ---------------------------------------------------------------- reconcile

/**
 * The chunk a timestamp falls in, as a key both sides of a hash join can
 * use (a range join on [start, end) is quadratic on engines without
 * indexes). Days and months: the local calendar bucket in the pipeline's
 * zone. Hours: whole hours since the batch start, which stays unique
 * across a DST change where local hours repeat.
 */
function chunkKey(pipeline: Pipeline, column: string): string {
  const { grain, timezone } = pipeline.chunk;
  if (grain === 'hour') {
    return `FLOOR((EXTRACT(EPOCH FROM ${column}) - EXTRACT(EPOCH FROM CAST(:start AS timestamp))) / 3600)`;
  }
  return `DATE_TRUNC(${sqlLiteral(grain)}, (${column} AT TIME ZONE 'UTC') AT TIME ZONE ${sqlLiteral(timezone)})`;
}

/**
 * Per chunk: rows the source has now, rows staging has, rows the load
 * recorded. Chunks come from the manifest, so an unloaded chunk shows up.
 */
export function chunkCounts(pipeline: Pipeline, batch: BatchRef): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const staging = qualifiedName(pipeline.target.schema, batch.stagingTable);
  return {
    sql: `WITH chunk AS (
            SELECT chunk_index, interval_start, status, rows_written, ${chunkKey(pipeline, 'interval_start')} AS k
              FROM ${M}.chunks WHERE batch_id = :batch_id
          ),
          src AS (
            SELECT ${chunkKey(pipeline, `s.${t}`)} AS k, COUNT(*) AS n
              FROM (${pipeline.sourceSql}
) AS s
             WHERE s.${t} >= :start AND s.${t} < :end
             GROUP BY 1
          ),
          stg AS (
            SELECT ${chunkKey(pipeline, `s.${t}`)} AS k, COUNT(*) AS n
              FROM ${staging} AS s
             WHERE s.${t} >= :start AND s.${t} < :end
             GROUP BY 1
          )
          SELECT chunk.chunk_index, chunk.interval_start, chunk.status, chunk.rows_written,
                 COALESCE(src.n, 0) AS source_rows, COALESCE(stg.n, 0) AS staging_rows
            FROM chunk
            LEFT JOIN src ON src.k = chunk.k
            LEFT JOIN stg ON stg.k = chunk.k
           ORDER BY chunk.chunk_index`,
    parameters: { batch_id: batch.batchId, start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

/**
 * Whole-table checks of staging: rows outside the batch interval (a load
 * that escaped its chunk) and business-key values on more than one row (a
 * duplicated load, or a source that breaks the key).
 */
export function stagingProblems(pipeline: Pipeline, batch: BatchRef): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  const staging = qualifiedName(pipeline.target.schema, batch.stagingTable);
  const key = pipeline.businessKey.map(quoteIdent).join(', ');
  return {
    sql: `SELECT (SELECT COUNT(*) FROM ${staging} WHERE ${t} IS NULL OR ${t} < :start OR ${t} >= :end) AS outside_interval,
                 (SELECT COUNT(*) FROM (SELECT 1 AS one FROM ${staging} GROUP BY ${key} HAVING COUNT(*) > 1) AS d) AS duplicate_keys`,
    parameters: { start: timestampParam(batch.from), end: timestampParam(batch.to) },
  };
}

export interface CheckResult {
  readonly check: string;
  readonly passed: boolean;
  readonly observed: string;
  readonly expected: string;
  readonly details: string;
}

/** Records check results and moves the batch to CHECKED (all passed) or leaves it for RecordFailure. */
export function recordChecks(
  batchId: string,
  results: readonly CheckResult[],
  totals: { rowsRead: number; rowsWritten: number },
  now: Date,
  staleChunks: readonly number[] = [],
): string[] {
  const id = sqlLiteral(batchId);
  const attempt = `(SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`;
  // Replaces this attempt's results, so a retried Reconcile records them once.
  const statements = [`DELETE FROM ${M}.check_results WHERE batch_id = ${id} AND attempt = ${attempt}`];
  statements.push(...results.map(
    (r) => `INSERT INTO ${M}.check_results (batch_id, attempt, check_name, passed, observed, expected, details, checked_at)
            SELECT ${id}, ${attempt}, ${sqlLiteral(r.check)}, ${sqlLiteral(r.passed)}, ${sqlLiteral(r.observed)},
                   ${sqlLiteral(r.expected)}, ${sqlLiteral(r.details)}, ${sqlLiteral(now)}`,
  ));
  const allPassed = results.every((r) => r.passed);
  if (staleChunks.length > 0) {
    statements.push(
      `UPDATE ${M}.chunks SET status = 'STALE'
        WHERE batch_id = ${id} AND status = 'DONE' AND chunk_index IN (${staleChunks.map((i) => sqlLiteral(i)).join(', ')})`,
    );
  }
  statements.push(
    `UPDATE ${M}.batches SET rows_read = ${sqlLiteral(totals.rowsRead)}, rows_written = ${sqlLiteral(totals.rowsWritten)},
            rows_rejected = 0${allPassed ? `, status = 'CHECKED'` : ''}
      WHERE batch_id = ${id} AND status = 'RUNNING'`,
  );
  return statements;
}

// ---------------------------------------------------------------- publish

export function batchState(batchId: string): Statement {
  return {
    sql: `SELECT b.status, b.attempt, p.seq, p.published_at, p.old_version_table, p.rows_published
            FROM ${M}.batches b LEFT JOIN ${M}.publications p ON p.batch_id = b.batch_id
           WHERE b.batch_id = :batch_id`,
    parameters: { batch_id: batchId },
  };
}

/**
 * The swap, as ONE transaction: lock the publications (one publisher at a
 * time) and staging (no late writer); check nothing was published since
 * this batch was planned, nothing newer is live, and staging still holds
 * the rows Reconcile checked; rename live to its retained old version and
 * staging to live; record it all.
 */
export function swapPublish(pipeline: Pipeline, batch: BatchRef, previousVersionTable: string, now: Date): string[] {
  const { schema, table } = pipeline.target;
  const id = sqlLiteral(batch.batchId);
  const name = sqlLiteral(pipeline.name);
  return [
    `LOCK ${M}.publications`,
    `LOCK ${qualifiedName(schema, batch.stagingTable)}`,
    `CALL ${M}.assert_publishable(${name}, ${id}, ${sqlLiteral(batch.basePublication)}, ${sqlLiteral(schema)}, ${sqlLiteral(batch.stagingTable)})`,
    `ALTER TABLE ${qualifiedName(schema, table)} RENAME TO ${quoteIdent(previousVersionTable)}`,
    `ALTER TABLE ${qualifiedName(schema, batch.stagingTable)} RENAME TO ${quoteIdent(table)}`,
    `INSERT INTO ${M}.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table, rows_published)
     SELECT ${name}, COALESCE(MAX(seq), 0) + 1, ${id}, ${sqlLiteral(now)}, ${sqlLiteral(`${schema}.${table}`)},
            ${sqlLiteral(`${schema}.${previousVersionTable}`)},
            (SELECT rows_written FROM ${M}.batches WHERE batch_id = ${id})
       FROM ${M}.publications WHERE pipeline = ${name}`,
    `UPDATE ${M}.batch_attempts SET status = 'PUBLISHED', finished_at = ${sqlLiteral(now)}
      WHERE batch_id = ${id} AND attempt = (SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`,
    `UPDATE ${M}.batches SET status = 'PUBLISHED', finished_at = ${sqlLiteral(now)} WHERE batch_id = ${id}`,
  ];
}

// ---------------------------------------------------------------- emit metrics

export function latestEventTime(pipeline: Pipeline): Statement {
  const t = quoteIdent(pipeline.timeColumn);
  return { sql: `SELECT MAX(${t}) AS latest FROM ${qualifiedName(pipeline.target.schema, pipeline.target.table)}` };
}

// ---------------------------------------------------------------- cleanup

/**
 * A batch still RUNNING or CHECKED this long after it (re)started belongs to
 * an execution that ended without RecordFailure (aborted, or past the state
 * machine's 12-hour timeout): its staging table is abandoned.
 */
export const ABANDONED_AFTER_MS = 24 * 3_600_000;

/**
 * Old versions past retention, and staging tables of earlier failed or
 * abandoned batches: what Cleanup drops. A dropped staging table is
 * recorded, and a re-run of that batch reloads every chunk.
 */
export function cleanupCandidates(pipeline: Pipeline, currentBatchId: string, now: Date): Statement {
  return {
    sql: `SELECT 'old_version' AS kind, old_version_table AS name, batch_id FROM ${M}.publications
           WHERE pipeline = :pipeline AND dropped_at IS NULL
             AND seq <= (SELECT COALESCE(MAX(seq), 0) FROM ${M}.publications WHERE pipeline = :pipeline) - CAST(:keep AS int)
          UNION ALL
          SELECT 'staging' AS kind, staging_table AS name, batch_id FROM ${M}.batches
           WHERE pipeline = :pipeline AND staging_dropped_at IS NULL AND batch_id <> :batch_id
             AND (status = 'FAILED' OR (status IN ('RUNNING', 'CHECKED') AND started_at < :abandoned_before))`,
    parameters: {
      pipeline: pipeline.name,
      keep: String(pipeline.retention.keepVersions),
      batch_id: currentBatchId,
      abandoned_before: timestampParam(new Date(now.getTime() - ABANDONED_AFTER_MS)),
    },
  };
}

/** Drops one table (never CASCADE: a dependent view makes this fail loudly instead of vanishing) and records it. */
export function dropRetired(pipeline: Pipeline, kind: 'old_version' | 'staging', table: string, batchId: string, now: Date): string[] {
  const qualified = `${pipeline.target.schema}.${table}`;
  const record =
    kind === 'old_version'
      ? `UPDATE ${M}.publications SET dropped_at = ${sqlLiteral(now)} WHERE pipeline = ${sqlLiteral(pipeline.name)} AND old_version_table = ${sqlLiteral(qualified)}`
      : `UPDATE ${M}.batches SET staging_dropped_at = ${sqlLiteral(now)} WHERE batch_id = ${sqlLiteral(batchId)}`;
  return [`DROP TABLE IF EXISTS ${qualifiedName(pipeline.target.schema, table)}`, record];
}

// ---------------------------------------------------------------- record failure

/** Cuts text to at most `maxBytes` of UTF-8 (Redshift measures varchar in bytes) without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char, 'utf8');
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

/** Marks the batch and its current attempt FAILED with the error (never a published batch). */
export function markBatchFailed(batchId: string, error: string, now: Date): Statement[] {
  const parameters = { batch_id: batchId, error: truncateUtf8(error || 'unknown error', 60_000), now: timestampParam(now) };
  return [
    {
      sql: `UPDATE ${M}.batch_attempts SET status = 'FAILED', error = :error, finished_at = :now
             WHERE batch_id = :batch_id AND status = 'RUNNING'
               AND attempt = (SELECT attempt FROM ${M}.batches WHERE batch_id = :batch_id AND status <> 'PUBLISHED')`,
      parameters,
    },
    {
      sql: `UPDATE ${M}.batches SET status = 'FAILED', error = :error, finished_at = :now
             WHERE batch_id = :batch_id AND status <> 'PUBLISHED'`,
      parameters,
    },
  ];
}

/** The manifest's DDL and the publish guard procedure, installed by Plan. */
import { BatchStatus, ChunkStatus } from '../../batch.ts';
import { sqlLiteral, validateIdentifier } from '../../identifiers.ts';
import { OUT_OF_BAND } from '../../live-watch/out-of-band.ts';
import { breakerDdl } from '../../neighbour/sql/neighbour.ts';
import { MANIFEST as M, MANIFEST_SCHEMA, MAX_BATCH_STATEMENTS, MAX_SQL_BYTES, type Statement } from '../../sql/statement.ts';

/**
 * Version of the manifest's DDL. Plan installs the DDL only when the
 * warehouse has an older version, so a replay writes nothing and no Plan
 * replaces the guard procedure while another pipeline's Publish runs it.
 */
export const MANIFEST_VERSION = 14;

/** Whether the manifest schema has table `table` (`present` 1 or 0). */
export function manifestTablePresent(table: string): Statement {
  return {
    sql: `SELECT COUNT(*) AS present FROM information_schema.tables WHERE table_schema = :schema AND table_name = :table`,
    parameters: { schema: MANIFEST_SCHEMA, table },
  };
}

/** The installed manifest version: 0 when the manifest does not exist yet. */
export function installedManifestVersion(): Statement[] {
  return [manifestTablePresent('manifest_version'), { sql: `SELECT COALESCE(MAX(version), 0) AS version FROM ${M}.manifest_version` }];
}

/**
 * The manifest's lease: the FIRST statement of every transaction that inserts
 * manifest rows guarded by `WHERE NOT EXISTS` (Plan's batch start, Reconcile's
 * check results), batches then chunks, so a second such transaction waits and its
 * snapshot then holds what the first committed: Redshift enforces no key.
 * https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html
 * Why: docs/decisions/failure-handling.md ("The manifest does not rely on keys")
 */
export const LOCK_MANIFEST = `LOCK ${M}.batches, ${M}.chunks`;

/**
 * Taken by each chunk's bookkeeping (LoadChunk's status updates, run by up to
 * 40 chunks at once): concurrent UPDATEs of one table fail each other under
 * SERIALIZABLE unless they queue for it.
 */
export const CHUNKS_LOCK = `LOCK ${M}.chunks`;

/**
 * Taken FIRST by every transaction that writes `pipeline_leases` (taking, taking
 * over or releasing a lease): one row per pipeline only because its writers queue
 * here. No transaction writes it with other manifest tables, so it has no place in
 * LOCK_MANIFEST's order. https://docs.aws.amazon.com/redshift/latest/dg/r_LOCK.html
 * Why: docs/decisions/failure-handling.md ("One execution per pipeline")
 */
export const LEASES_LOCK = `LOCK ${M}.pipeline_leases`;

/**
 * How the guard refuses a batch whose data is older than what the pipeline
 * already publishes: Publish ends such a batch SUPERSEDED (newest data
 * wins) instead of failing it.
 */
export const OLDER_DATA = 'already publishes data up to';

/** The guard refused because the pipeline already publishes newer data than the batch holds. */
export function isOlderDataRefusal(refusal: string): boolean {
  return refusal.includes(` ${OLDER_DATA} `);
}

/**
 * How the publish transaction's re-check of the source starts its refusal:
 * the source's newest chunk changed since Reconcile checked it.
 */
export const SOURCE_CHANGED = 'source changed';

/** The source re-check's refusal within a failed publish's error message, or undefined. */
export function sourceChangedRefusal(message: string): string | undefined {
  const at = message.indexOf(`${SOURCE_CHANGED}: `);
  return at < 0 ? undefined : message.slice(at);
}

/** Every refusal of the publish guard starts with `publish guard: `; Publish recognises a refusal by it. */
export const PUBLISH_GUARD = 'publish guard';

/**
 * The guard's refusal within a failed swap's error message (the database
 * prefixes its own words): from the guard's prefix on, or undefined when the
 * swap failed for another reason.
 */
export function publishGuardRefusal(message: string): string | undefined {
  const at = message.indexOf(`${PUBLISH_GUARD}: `);
  return at < 0 ? undefined : message.slice(at);
}

/**
 * How the swap's catalog check starts its refusal: the privileges, defaults,
 * comments or dependent views of the live table changed between Publish's
 * read and the swap. Publish reads them again and retries.
 */
export const CATALOG_CHANGED = 'publish catalog check';

/**
 * One RAISE of the guard procedure. Its text is rendered here, at
 * generation time, by sqlLiteral; after it come only variables, one per
 * `%`, because Redshift's RAISE takes variables, not expressions.
 */
function guardRaise(format: string, ...variables: string[]): string {
  return raise(PUBLISH_GUARD, format, ...variables);
}

function raise(prefix: string, format: string, ...variables: string[]): string {
  const placeholders = format.split('%').length - 1;
  if (placeholders !== variables.length) {
    throw new Error(`RAISE format "${format}" has ${placeholders} placeholder(s) for ${variables.length} variable(s)`);
  }
  for (const variable of variables) validateIdentifier(variable, 'RAISE variable');
  return `RAISE EXCEPTION ${sqlLiteral(`${prefix}: ${format}`)}, ${variables.join(', ')};`;
}

/**
 * The PL/pgSQL that reads `p_columns_query` (out-of-band.ts liveColumnsQuery)
 * into `cols`, `name type` joined by `;` as columnsText joins them (the
 * procedure declares `rec RECORD` and `cols varchar(65535) := ''`). Shared
 * by the swap's out-of-band check and the live watch's record.
 */
const COLLECT_LIVE_COLUMNS = `FOR rec IN EXECUTE p_columns_query LOOP
        IF cols = '' THEN
          cols := rec.col;
        ELSE
          cols := cols || ';' || rec.col;
        END IF;
      END LOOP;`;

/**
 * The view `chunk_state` (manifest version 6): a chunk is DONE when a load
 * of its current generation committed (or, from before version 6, when
 * chunks says so), with the rows that load wrote. `loads` above 1 means
 * two loads of one generation committed (Reconcile's counts then
 * disagree). One line: it travels as a literal.
 */
export const CHUNK_STATE_QUERY = [
  'SELECT c.batch_id, c.chunk_index, c.interval_start, c.interval_end,',
  `CASE WHEN l.loads IS NOT NULL THEN ${sqlLiteral(ChunkStatus.DONE)} ELSE c.status END AS status,`,
  'c.attempt AS generation,',
  'CASE WHEN l.loads IS NOT NULL THEN l.rows_written ELSE c.rows_written END AS rows_written,',
  'COALESCE(l.loads, 0) AS loads, c.statement_id, c.started_at,',
  'CASE WHEN l.loads IS NOT NULL THEN l.loaded_at ELSE c.finished_at END AS finished_at',
  `FROM ${M}.chunks c`,
  'LEFT JOIN (SELECT batch_id, chunk_index, generation, SUM(rows_written) AS rows_written, COUNT(*) AS loads, MAX(loaded_at) AS loaded_at',
  `FROM ${M}.chunk_loads GROUP BY batch_id, chunk_index, generation) l`,
  'ON l.batch_id = c.batch_id AND l.chunk_index = c.chunk_index AND l.generation = c.attempt',
].join(' ');

/**
 * manifestDdl as the transactions it is installed in, in order, each within a
 * Data API batch (MAX_BATCH_STATEMENTS statements, MAX_SQL_BYTES of SQL). The
 * version is recorded by the last: an install that stopped part way is
 * installed again, whole, by the next Plan (every statement is idempotent).
 */
export function manifestInstall(now: Date): string[][] {
  const parts: string[][] = [[]];
  let bytes = 0;
  for (const sql of manifestDdl(now)) {
    const size = Buffer.byteLength(sql);
    if (parts.at(-1)!.length >= MAX_BATCH_STATEMENTS || bytes + size > MAX_SQL_BYTES) {
      parts.push([]);
      bytes = 0;
    }
    parts.at(-1)!.push(sql);
    bytes += size;
  }
  return parts;
}

/** Idempotent DDL of the manifest, run (manifestInstall) when the installed version is older. */
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
    // One row per pipeline (written only under LEASES_LOCK): the execution
    // that runs the pipeline, until it releases the lease or expires_at.
    `CREATE TABLE IF NOT EXISTS ${M}.pipeline_leases (
      pipeline varchar(128) NOT NULL,
      execution_id varchar(512) NOT NULL,
      acquired_at timestamp NOT NULL,
      expires_at timestamp NOT NULL,
      PRIMARY KEY (pipeline)
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
      batch_mode varchar(32);
      checked_rows bigint;
      staged_rows bigint;
    BEGIN
      SELECT INTO latest COALESCE(MAX(seq), 0) FROM ${M}.publications WHERE pipeline = p_pipeline;
      IF latest <> p_base THEN
        ${guardRaise('pipeline % is at publication % but batch % was planned on publication %', 'p_pipeline', 'latest', 'p_batch_id', 'p_base')}
      END IF;
      SELECT INTO batch_status status FROM ${M}.batches WHERE batch_id = p_batch_id;
      SELECT INTO batch_end interval_end FROM ${M}.batches WHERE batch_id = p_batch_id;
      SELECT INTO batch_mode mode FROM ${M}.batches WHERE batch_id = p_batch_id;
      SELECT INTO checked_rows rows_written FROM ${M}.batches WHERE batch_id = p_batch_id;
      IF batch_status IS NULL OR batch_status <> ${sqlLiteral(BatchStatus.CHECKED)} THEN
        -- Redshift's RAISE takes variables only, not expressions.
        batch_status := COALESCE(batch_status, 'missing');
        ${guardRaise(`batch % is %, not ${BatchStatus.CHECKED}`, 'p_batch_id', 'batch_status')}
      END IF;
      SELECT INTO latest_end b.interval_end FROM ${M}.publications p JOIN ${M}.batches b ON b.batch_id = p.batch_id
       WHERE p.pipeline = p_pipeline ORDER BY p.seq DESC LIMIT 1;
      -- Newest data wins for a swap, which replaces all of history: one
      -- that ends earlier than what is live would take data away. A batch
      -- of some intervals (replace-intervals) replaces only its own, so an
      -- old month may be backfilled after newer days were published.
      IF batch_mode = ${sqlLiteral('swap')} AND latest_end IS NOT NULL AND latest_end > batch_end THEN
        ${guardRaise(`pipeline % ${OLDER_DATA} %, later than the % of batch %`, 'p_pipeline', 'latest_end', 'batch_end', 'p_batch_id')}
      END IF;
      EXECUTE 'SELECT COUNT(*) FROM ' || quote_ident(p_schema) || '.' || quote_ident(p_staging) INTO staged_rows;
      IF staged_rows <> checked_rows THEN
        ${guardRaise('staging %.% holds % rows but Reconcile checked %', 'p_schema', 'p_staging', 'staged_rows', 'checked_rows')}
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    // The swap's catalog check (domain/publish/dependents.ts): runs the facts query
    // Publish read before building the swap, under the swap's locks, and
    // raises unless the facts are what they were. md5 chained row by row,
    // as factsFingerprint does, so no text grows past varchar's limit.
    // FOR ... IN EXECUTE and RAISE with variables are in Redshift's
    // supported PL/pgSQL statements
    // (https://docs.aws.amazon.com/redshift/latest/dg/c_PLpgSQL-statements.html).
    `CREATE OR REPLACE PROCEDURE ${M}.assert_catalog_unchanged(p_query varchar(65535), p_expected varchar(32), p_what varchar(1024))
    AS $$
    DECLARE
      rec RECORD;
      fp varchar(32) := '';
    BEGIN
      FOR rec IN EXECUTE p_query LOOP
        fp := md5(fp || rec.fact);
      END LOOP;
      IF fp <> p_expected THEN
        ${raise(CATALOG_CHANGED, '% changed since Publish read them (fingerprint % now, % then)', 'p_what', 'fp', 'p_expected')}
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    // Version 5 (rollback; docs/decisions/rollback.md): rollback_of, restored_at,
    // rolled_back_at. add_column_if_missing adds a column only when the catalog
    // lacks it (Redshift has no ADD COLUMN IF NOT EXISTS), so a second upgrade or a
    // racing Plan changes nothing twice; ADD COLUMN runs in a transaction block on a
    // regular table (https://docs.aws.amazon.com/redshift/latest/dg/r_ALTER_TABLE.html).
    `CREATE OR REPLACE PROCEDURE ${M}.add_column_if_missing(p_table varchar, p_column varchar, p_type varchar)
    AS $$
    DECLARE
      present int;
    BEGIN
      SELECT INTO present COUNT(*) FROM information_schema.columns
       WHERE table_schema = ${sqlLiteral(MANIFEST_SCHEMA)} AND table_name = p_table AND column_name = p_column;
      IF present = 0 THEN
        EXECUTE 'ALTER TABLE ' || quote_ident(${sqlLiteral(MANIFEST_SCHEMA)}) || '.' || quote_ident(p_table) || ' ADD COLUMN ' || quote_ident(p_column) || ' ' || p_type;
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    `CALL ${M}.add_column_if_missing('publications', 'rollback_of', 'int')`,
    `CALL ${M}.add_column_if_missing('publications', 'restored_at', 'timestamp')`,
    // The rollback's guard, in its swap transaction after the LOCKs (as
    // assert_publishable): nothing was published since Plan chose the
    // version, and that version is still where Plan found it.
    `CREATE OR REPLACE PROCEDURE ${M}.assert_rollback(p_pipeline varchar, p_base int, p_restore_seq int)
    AS $$
    DECLARE
      latest int;
      gone int;
    BEGIN
      SELECT INTO latest COALESCE(MAX(seq), 0) FROM ${M}.publications WHERE pipeline = p_pipeline;
      IF latest <> p_base THEN
        ${guardRaise('pipeline % is at publication % but the rollback was planned on publication %', 'p_pipeline', 'latest', 'p_base')}
      END IF;
      SELECT INTO gone COUNT(*) FROM ${M}.publications
       WHERE pipeline = p_pipeline AND seq = p_restore_seq AND (dropped_at IS NOT NULL OR restored_at IS NOT NULL);
      IF gone > 0 THEN
        ${guardRaise('the old version of publication % of pipeline % was dropped or restored since the rollback was planned', 'p_restore_seq', 'p_pipeline')}
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    // The swap's out-of-band check (domain/live-watch/out-of-band.ts, version 5):
    // the live table's columns and fingerprint as Plan recorded them,
    // recomputed under the swap's lock on the live table by the same query
    // texts. Columns first: the fingerprint query names Plan's columns and
    // would fail on a dropped one. EXECUTE ... INTO and FOR ... IN EXECUTE
    // are among Redshift's PL/pgSQL statements
    // (https://docs.aws.amazon.com/redshift/latest/dg/c_PLpgSQL-statements.html).
    `CREATE OR REPLACE PROCEDURE ${M}.assert_live_unchanged(
      p_table varchar(256), p_columns_query varchar(65535), p_columns varchar(65535), p_fingerprint_query varchar(65535), p_fingerprint varchar(128))
    AS $$
    DECLARE
      rec RECORD;
      cols varchar(65535) := '';
      fp varchar(128);
    BEGIN
      ${COLLECT_LIVE_COLUMNS}
      IF cols <> p_columns THEN
        ${raise(OUT_OF_BAND, '%: live columns now [%], planned on [%]', 'p_table', 'cols', 'p_columns')}
      END IF;
      EXECUTE p_fingerprint_query INTO fp;
      IF fp <> p_fingerprint THEN
        ${raise(OUT_OF_BAND, '%: live rows now [%], planned on [%]', 'p_table', 'fp', 'p_fingerprint')}
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    // Version 6 (one round trip per chunk): a chunk's load inserts its rows into
    // staging and one row here with their count in one transaction, so a chunk is
    // loaded exactly when its rows are in staging, and reads no row another load
    // writes. `generation` is `chunks.attempt` when Plan handed the chunk out; loads
    // of an older generation no longer count. Why: docs/decisions/failure-handling.md
    `CREATE TABLE IF NOT EXISTS ${M}.chunk_loads (
      batch_id varchar(32) NOT NULL,
      chunk_index int NOT NULL,
      generation int NOT NULL,
      rows_written bigint NOT NULL,
      loaded_at timestamp NOT NULL
    )`,
    // What every reader of a chunk's state reads (CHUNK_STATE_QUERY).
    // Redshift has no CREATE VIEW IF NOT EXISTS, and CREATE OR REPLACE VIEW
    // locks the view until its transaction ends, so a Plan installing the
    // manifest would hold every reader of an installed view: the view is
    // created only when the catalog lacks a relation of its name
    // (information_schema.tables, as installedManifestVersion reads it).
    `CREATE OR REPLACE PROCEDURE ${M}.create_view_if_missing(p_view varchar, p_query varchar(65535))
    AS $$
    DECLARE
      present int;
    BEGIN
      SELECT INTO present COUNT(*) FROM information_schema.tables WHERE table_schema = ${sqlLiteral(MANIFEST_SCHEMA)} AND table_name = p_view;
      IF present = 0 THEN
        EXECUTE 'CREATE VIEW ' || quote_ident(${sqlLiteral(MANIFEST_SCHEMA)}) || '.' || quote_ident(p_view) || ' AS ' || p_query;
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    `CALL ${M}.create_view_if_missing('chunk_state', ${sqlLiteral(CHUNK_STATE_QUERY)})`,
    // Version 7 (a good neighbour, domain/neighbour/neighbour.ts): the warehouse's
    // circuit breaker, one row, so every execution of every pipeline reads
    // the same state.
    ...breakerDdl(),
    // Version 8 (no ceiling on length, domain/plan/windows.ts): a batch of more
    // chunks than one window holds records its windows here at Plan, and
    // each window's chunks in chunks when its child execution starts.
    `CREATE TABLE IF NOT EXISTS ${M}.batch_windows (
      batch_id varchar(32) NOT NULL,
      window_index int NOT NULL,
      first_chunk int NOT NULL,
      chunk_count int NOT NULL,
      interval_start timestamp NOT NULL,
      interval_end timestamp NOT NULL,
      unit_counts varchar(65535),
      PRIMARY KEY (batch_id, window_index)
    )`,
    // Version 9 (publish modes, domain/publish/sql/intervals.ts): each
    // publication records how it published and the interval it wrote, so
    // which publication last wrote each interval of a table is one query
    // (intervalWriters); a swap writes all of history up to its end.
    `CALL ${M}.add_column_if_missing('publications', 'publish_mode', 'varchar(32)')`,
    `CALL ${M}.add_column_if_missing('publications', 'interval_start', 'timestamp')`,
    `CALL ${M}.add_column_if_missing('publications', 'interval_end', 'timestamp')`,
    // Version 10 (declared checks): a check's severity; a failed 'warn' did not block the batch.
    `CALL ${M}.add_column_if_missing('check_results', 'severity', 'varchar(8)')`,
    // Also version 10 (a change between the check and the publish,
    // domain/publish/sql/swap.ts sourceRecheck): runs the source's fingerprint
    // of a chunk under the publish transaction's locks and raises unless it
    // is what staging holds. EXECUTE ... INTO and RAISE with variables:
    // https://docs.aws.amazon.com/redshift/latest/dg/c_PLpgSQL-statements.html.
    `CREATE OR REPLACE PROCEDURE ${M}.assert_source_unchanged(p_what varchar(1024), p_query varchar(65535), p_expected varchar(128))
    AS $$
    DECLARE
      fp varchar(128);
    BEGIN
      EXECUTE p_query INTO fp;
      IF fp IS NULL OR fp <> p_expected THEN
        fp := COALESCE(fp, 'nothing');
        ${raise(SOURCE_CHANGED, '% holds rows:checksum % in the source now, but % in staging, which Reconcile checked against the source', 'p_what', 'fp', 'p_expected')}
      END IF;
    END;
    $$ LANGUAGE plpgsql`,
    // Version 11 (publication events delivered at least once, domain/publication-events/sql/event-redelivery.ts):
    // when each publication's event was accepted by EventBridge, and a
    // restatement's number (on its batch, from Plan; on its publication, from
    // the batch), which its event tells. The publications made before
    // version 11 are marked sent as the column is added: their events went
    // out (or not) before delivery was recorded, and are not sent again.
    `CALL ${M}.add_column_if_missing('publications', 'event_sent_at', 'timestamp')`,
    `CALL ${M}.add_column_if_missing('publications', 'restatement', 'int')`,
    `CALL ${M}.add_column_if_missing('batches', 'restatement', 'int')`,
    `UPDATE ${M}.publications SET event_sent_at = ${sqlLiteral(now)}
      WHERE event_sent_at IS NULL AND NOT EXISTS (SELECT 1 FROM ${M}.manifest_version WHERE version >= 11)`,
    // Also version 11 (the live watch, domain/live-watch/sql/live-watch.ts): each
    // publication records the live table as it published it (its columns,
    // and the fingerprint of its rows, those before live_rows_before when
    // set), taken inside the publish transaction after the publish's last
    // write, so it is exactly what was published.
    `CALL ${M}.add_column_if_missing('publications', 'live_columns', 'varchar(65535)')`,
    `CALL ${M}.add_column_if_missing('publications', 'live_fingerprint', 'varchar(128)')`,
    `CALL ${M}.add_column_if_missing('publications', 'live_rows_before', 'timestamp')`,
    // Run last in the publish transaction: reads the live table's columns
    // and, when they are those the fingerprint query was generated for,
    // its fingerprint, and records both on the pipeline's newest
    // publication (the one the transaction inserted). Columns other than
    // expected (someone altered the table meanwhile) leave the fingerprint
    // NULL: the watch then reports the publication as not fingerprinted.
    `CREATE OR REPLACE PROCEDURE ${M}.record_live_fingerprint(
      p_pipeline varchar(128), p_columns_query varchar(65535), p_columns varchar(65535), p_fingerprint_query varchar(65535), p_rows_before timestamp)
    AS $$
    DECLARE
      rec RECORD;
      cols varchar(65535) := '';
      fp varchar(128);
      latest int;
    BEGIN
      ${COLLECT_LIVE_COLUMNS}
      IF cols = p_columns THEN
        EXECUTE p_fingerprint_query INTO fp;
      END IF;
      SELECT INTO latest MAX(seq) FROM ${M}.publications WHERE pipeline = p_pipeline;
      UPDATE ${M}.publications SET live_columns = cols, live_fingerprint = fp, live_rows_before = p_rows_before
       WHERE pipeline = p_pipeline AND seq = latest;
    END;
    $$ LANGUAGE plpgsql`,
    // Also version 11 (checks,
    // docs/decisions/checking-an-interval-without-publishing.md): what a batch is for: 'check' for the gate run without
    // publishing, 'publish' or NULL (rows from before) for any other.
    `CALL ${M}.add_column_if_missing('batches', 'purpose', 'varchar(16)')`,
    // Version 12 (swapRenames): what the swap copies inside the warehouse, so no
    // catalog text crosses the Data API: loops over a catalog query EXECUTing text
    // built by quote_ident and quote_literal
    // (https://docs.aws.amazon.com/redshift/latest/dg/c_PLpgSQL-statements.html).
    // copy_comments: the table's and each column's comment of p_from onto p_to, for
    // the columns p_to has. Why: docs/decisions/security-policies-through-a-swap.md
    `CREATE OR REPLACE PROCEDURE ${M}.copy_comments(p_schema varchar(128), p_from varchar(128), p_to varchar(128))
    AS $$
    DECLARE
      rec RECORD;
      target varchar(512) := quote_ident(p_schema) || '.' || quote_ident(p_to);
    BEGIN
      FOR rec IN SELECT d.objsubid AS sub, a.attname AS col, d.description AS body
          FROM pg_description d
          JOIN pg_class c ON c.oid = d.objoid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid AND d.objsubid > 0
         WHERE n.nspname = p_schema AND c.relname = p_from
           AND d.classoid = (SELECT k.oid FROM pg_class k JOIN pg_namespace kn ON kn.oid = k.relnamespace WHERE k.relname = 'pg_class' AND kn.nspname = 'pg_catalog')
           AND (d.objsubid = 0 OR a.attname IN (
             SELECT ta.attname FROM pg_attribute ta JOIN pg_class tc ON tc.oid = ta.attrelid
              WHERE tc.relnamespace = n.oid AND tc.relname = p_to AND ta.attnum > 0))
      LOOP
        IF rec.sub = 0 THEN
          EXECUTE 'COMMENT ON TABLE ' || target || ' IS ' || quote_literal(rec.body);
        ELSE
          EXECUTE 'COMMENT ON COLUMN ' || target || '.' || quote_ident(rec.col) || ' IS ' || quote_literal(rec.body);
        END IF;
      END LOOP;
    END;
    $$ LANGUAGE plpgsql`,
    // capture_views: the definitions of the bound views over p_schema.p_table
    // (as dependentViews finds them), kept in a temporary table of the
    // swap's session before its renames; recreate_views re-creates each
    // view from its own text after them (the text names the live table,
    // which then is the new one) and drops the table. A group swap
    // captures every member's views first and re-creates each once.
    `CREATE OR REPLACE PROCEDURE ${M}.capture_views(p_schema varchar(128), p_table varchar(128))
    AS $$
    DECLARE
      rec RECORD;
    BEGIN
      CREATE TEMP TABLE IF NOT EXISTS atomic_publish_captured_views (view_schema varchar(128), view_name varchar(128), definition varchar(65535));
      FOR rec IN SELECT DISTINCT vn.nspname AS view_schema, v.relname AS view_name, pg_get_viewdef(v.oid) AS definition
          FROM pg_class t
          JOIN pg_namespace tn ON tn.oid = t.relnamespace
          JOIN pg_depend d ON d.refobjid = t.oid
          JOIN pg_rewrite r ON r.oid = d.objid
          JOIN pg_class v ON v.oid = r.ev_class AND v.oid <> t.oid AND v.relkind = 'v'
          JOIN pg_namespace vn ON vn.oid = v.relnamespace
         WHERE tn.nspname = p_schema AND t.relname = p_table
      LOOP
        DELETE FROM atomic_publish_captured_views WHERE view_schema = rec.view_schema AND view_name = rec.view_name;
        INSERT INTO atomic_publish_captured_views VALUES (rec.view_schema, rec.view_name, rec.definition);
      END LOOP;
    END;
    $$ LANGUAGE plpgsql`,
    `CREATE OR REPLACE PROCEDURE ${M}.recreate_views()
    AS $$
    DECLARE
      rec RECORD;
    BEGIN
      FOR rec IN SELECT view_schema, view_name, definition FROM atomic_publish_captured_views ORDER BY view_schema, view_name LOOP
        EXECUTE 'CREATE OR REPLACE VIEW ' || quote_ident(rec.view_schema) || '.' || quote_ident(rec.view_name) || ' AS ' || rtrim(rtrim(rec.definition), ';');
      END LOOP;
      DROP TABLE atomic_publish_captured_views;
    END;
    $$ LANGUAGE plpgsql`,
    // Version 13 (a transaction of any size, domain/publish/sql/one-transaction.ts):
    // run_statements EXECUTEs, in order, the statements its argument
    // carries, each as `<characters>:<text>`, inside the caller's
    // transaction (https://docs.aws.amazon.com/redshift/latest/dg/r_SUBSTRING.html,
    // https://docs.aws.amazon.com/redshift/latest/dg/r_POSITION.html).
    `CREATE OR REPLACE PROCEDURE ${M}.run_statements(p_statements varchar(65535))
    AS $$
    DECLARE
      rest varchar(65535) := p_statements;
      colon integer;
      n integer;
    BEGIN
      WHILE LENGTH(rest) > 0 LOOP
        colon := POSITION(':' IN rest);
        n := CAST(SUBSTRING(rest FROM 1 FOR colon - 1) AS integer);
        EXECUTE SUBSTRING(rest FROM colon + 1 FOR n);
        rest := SUBSTRING(rest FROM colon + 1 + n);
      END LOOP;
    END;
    $$ LANGUAGE plpgsql`,
    // Version 14 (one read of the source per load, domain/load-chunk/sql/load-chunk.ts):
    // load_chunk EXECUTEs a chunk's INSERT (its interval inlined) and records
    // the rows it inserted, GET DIAGNOSTICS ROW_COUNT, in the same
    // transaction: the record needs no second pass over the source
    // (https://docs.aws.amazon.com/redshift/latest/dg/c_PLpgSQL-structure.html).
    `CREATE OR REPLACE PROCEDURE ${M}.load_chunk(p_batch varchar(32), p_chunk int, p_generation int, p_insert varchar(65535))
    AS $$
    DECLARE
      n bigint;
    BEGIN
      EXECUTE p_insert;
      GET DIAGNOSTICS n := ROW_COUNT;
      INSERT INTO ${M}.chunk_loads (batch_id, chunk_index, generation, rows_written, loaded_at) VALUES (p_batch, p_chunk, p_generation, n, GETDATE());
    END;
    $$ LANGUAGE plpgsql`,
    `INSERT INTO ${M}.manifest_version (version, installed_at)
     SELECT ${MANIFEST_VERSION}, ${sqlLiteral(now)} WHERE NOT EXISTS (SELECT 1 FROM ${M}.manifest_version WHERE version = ${MANIFEST_VERSION})`,
  ];
}

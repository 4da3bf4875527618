/** The SQL of Plan: the warehouse-side checks before anything is written, and the batch start. */
import { AttemptStatus, BatchPurpose, BatchStatus, ChunkStatus } from '../../batch.ts';
import { ValidationError } from '../../errors.ts';
import { extractColumn } from '../../extract-column.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import { CHUNKS_LOCK, LOCK_MANIFEST } from '../../manifest/sql/manifest.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, MAX_BATCH_STATEMENTS, MAX_SQL_BYTES, type Statement, timestampParam } from '../../sql/statement.ts';
import type { Chunk } from '../chunk.ts';
import type { ChunkWindow } from '../windows.ts';

/**
 * Columns of a table, in order, with their types and defaults (an identity
 * is one: domain/plan/live-column.ts identityOf); empty when the table does not exist.
 */
export function tableColumns(schema: string, table: string): Statement {
  return {
    sql: `SELECT column_name, data_type, column_default FROM information_schema.columns
           WHERE table_schema = :schema AND table_name = :table
           ORDER BY ordinal_position`,
    parameters: { schema, table },
  };
}

/**
 * Which of `columns` can hold NULL in the source tables (`table_schema`,
 * `table_name`, `column_name`), from the catalog alone. A view's columns
 * always can (information_schema says YES for them).
 */
export function nullableSourceColumns(tables: readonly { schema: string; table: string }[], columns: readonly string[]): Statement {
  const match = tables.map((_, i) => `(table_schema = :schema_${i} AND table_name = :table_${i})`);
  const names = columns.map((_, i) => `:column_${i}`);
  return {
    sql: `SELECT table_schema, table_name, column_name FROM information_schema.columns
           WHERE (${match.join(' OR ')}) AND column_name IN (${names.join(', ')}) AND is_nullable = 'YES'
           ORDER BY table_schema, table_name, column_name`,
    parameters: Object.fromEntries([
      ...tables.flatMap((t, i) => [
        [`schema_${i}`, t.schema],
        [`table_${i}`, t.table],
      ]),
      ...columns.map((c, i) => [`column_${i}`, c]),
    ]),
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

/**
 * The batch's chunks that are not fresh: loaded, stale, left by an earlier
 * load, or of a later generation (chunk_state, manifest version 6). A new
 * batch has none.
 */
export function doneChunks(batchId: string, window?: { firstChunk: number; chunkCount: number }): Statement {
  const range = window === undefined ? '' : ' AND chunk_index >= CAST(:first AS int) AND chunk_index < CAST(:end AS int)';
  return {
    sql: `SELECT chunk_index, status, generation FROM ${M}.chunk_state
           WHERE batch_id = :batch_id${range} AND (status <> ${sqlLiteral(ChunkStatus.PENDING)} OR generation <> 0) ORDER BY chunk_index`,
    parameters: {
      batch_id: batchId,
      ...(window === undefined ? {} : { first: String(window.firstChunk), end: String(window.firstChunk + window.chunkCount) }),
    },
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
  /** The table of the target schema staging is created LIKE. @default - the live table (with publishVia 'view': the version table the live view reads) */
  readonly stagingLike?: string;
  /**
   * A migration's: staging is created from this CREATE TABLE body
   * (spec migration.ddl, validated at synth time) instead of LIKE a table.
   */
  readonly stagingDdl?: string;
  readonly chunks: readonly Chunk[];
  /** A batch longer than one window (domain/plan/windows.ts): its windows are recorded instead of its chunks. */
  readonly windows?: readonly ChunkWindow[];
  /** A restatement's number (BatchRef.restatement), recorded for its publication's event. */
  readonly restatement?: number;
  /** What the batch is for (`batches.purpose`). @default 'publish' */
  readonly purpose?: BatchPurpose;
  readonly now: Date;
}

/**
 * `INSERT ... SELECT` of rows not yet there, in as few statements as fit
 * the SQL size limit (half of it: room for the rest of a batch). Rows are
 * SELECTs joined by UNION ALL: Redshift has no VALUES list in FROM. The
 * first row CASTs its text columns, which fixes the union's types.
 */
function insertMissing(table: string, columns: readonly string[], key: readonly string[], rows: readonly { first: string; other: string }[]): string[] {
  const head = `INSERT INTO ${M}.${table} (${columns.join(', ')})
     SELECT v.* FROM (`;
  const tail = `) AS v (${columns.join(', ')})
     WHERE NOT EXISTS (SELECT 1 FROM ${M}.${table} t WHERE ${key.map((k) => `t.${k} = v.${k}`).join(' AND ')})`;
  const separator = '\nUNION ALL ';
  const statements: string[] = [];
  let group: string[] = [];
  let size = 0;
  const flush = () => {
    if (group.length > 0) statements.push(head + group.join(separator) + tail);
    group = [];
    size = 0;
  };
  for (const row of rows) {
    let line = group.length === 0 ? row.first : row.other;
    if (group.length > 0 && head.length + tail.length + size + line.length > MAX_SQL_BYTES / 2) {
      flush();
      line = row.first;
    }
    group.push(line);
    size += line.length + separator.length;
  }
  flush();
  return statements;
}

/** The chunks' rows, PENDING, where missing. */
function chunkRows(batchId: string, chunks: readonly Chunk[]): string[] {
  const id = sqlLiteral(batchId);
  const PENDING = sqlLiteral(ChunkStatus.PENDING);
  return insertMissing(
    'chunks',
    ['batch_id', 'chunk_index', 'interval_start', 'interval_end', 'status', 'attempt'],
    ['batch_id', 'chunk_index'],
    chunks.map((c) => {
      const rest = `${c.index}, ${sqlLiteral(new Date(c.start))}, ${sqlLiteral(new Date(c.end))}`;
      return { first: `SELECT CAST(${id} AS varchar(32)), ${rest}, CAST(${PENDING} AS varchar(16)), 0`, other: `SELECT ${id}, ${rest}, ${PENDING}, 0` };
    }),
  );
}

/** The windows' rows, where missing. */
function windowRows(batchId: string, windows: readonly ChunkWindow[]): string[] {
  const id = sqlLiteral(batchId);
  return insertMissing(
    'batch_windows',
    ['batch_id', 'window_index', 'first_chunk', 'chunk_count', 'interval_start', 'interval_end', 'unit_counts'],
    ['batch_id', 'window_index'],
    windows.map((w) => {
      const rest = `${w.index}, ${w.firstChunk}, ${w.chunkCount}, ${sqlLiteral(new Date(w.start))}, ${sqlLiteral(new Date(w.end))}`;
      const units = w.unitCounts === undefined ? 'NULL' : sqlLiteral(w.unitCounts);
      return { first: `SELECT CAST(${id} AS varchar(32)), ${rest}, CAST(${units} AS varchar(65535))`, other: `SELECT ${id}, ${rest}, ${units}` };
    }),
  );
}

/** The pipeline's last published batch: its chunks and how long it ran (plan-duration.ts). */
export function previousLoad(pipeline: string): Statement {
  return {
    sql: `SELECT batch_id, chunk_count, started_at, finished_at FROM ${M}.batches
           WHERE pipeline = :pipeline AND status = ${sqlLiteral(BatchStatus.PUBLISHED)} AND finished_at IS NOT NULL
           ORDER BY finished_at DESC LIMIT 1`,
    parameters: { pipeline },
  };
}

/** How many of a batch's chunks are loaded (a resumed batch loads only the rest). */
export function loadedChunkCount(batchId: string): Statement {
  return {
    sql: `SELECT COUNT(*) AS loaded FROM ${M}.chunk_state WHERE batch_id = :batch_id AND status = ${sqlLiteral(ChunkStatus.DONE)}`,
    parameters: { batch_id: batchId },
  };
}

/** A batch's windows (none: it is loaded inline), in order. */
export function recordedWindows(batchId: string): Statement {
  return {
    sql: `SELECT window_index, first_chunk, chunk_count, interval_start, interval_end, unit_counts FROM ${M}.batch_windows WHERE batch_id = :batch_id ORDER BY window_index`,
    parameters: { batch_id: batchId },
  };
}

/** One window of a batch. */
export function recordedWindow(batchId: string, window: number): Statement {
  return {
    sql: `SELECT window_index, first_chunk, chunk_count, interval_start, interval_end, unit_counts FROM ${M}.batch_windows WHERE batch_id = :batch_id AND window_index = CAST(:window_index AS int)`,
    parameters: { batch_id: batchId, window_index: String(window) },
  };
}

/**
 * PlanWindow's one transaction: the window's chunk rows where missing,
 * under the chunks' lock (Redshift enforces no key, so a retried
 * PlanWindow must not insert beside one still committing).
 */
export function windowChunkRows(batchId: string, chunks: readonly Chunk[]): string[] {
  return [CHUNKS_LOCK, ...chunkRows(batchId, chunks)];
}

/**
 * One transaction under LOCK_MANIFEST that (re)starts a batch: staging created
 * LIKE live, the batch row inserted or moved back to RUNNING with the attempt
 * counted, the attempt recorded, chunk rows inserted where missing. Two at once,
 * or a retried Plan, leave one row per batch, attempt and chunk.
 */
export function startBatch(record: BatchRecord): string[] {
  const { pipeline, batchId, now } = record;
  const live = qualifiedName(pipeline.target.schema, record.stagingLike ?? pipeline.target.table);
  const staging = qualifiedName(pipeline.target.schema, record.stagingTable);
  const id = sqlLiteral(batchId);
  const RUNNING = sqlLiteral(BatchStatus.RUNNING);
  const PENDING = sqlLiteral(ChunkStatus.PENDING);
  // Only while this execution holds the pipeline's lease: a Plan of an execution stopped meanwhile,
  // whose lease a later run took over, writes no batch (docs/decisions/leases-of-ended-executions.md).
  const leased = record.executionId
    ? ` AND EXISTS (SELECT 1 FROM ${M}.pipeline_leases WHERE pipeline = ${sqlLiteral(pipeline.name)} AND execution_id = ${sqlLiteral(record.executionId)})`
    : '';
  const statements = [
    LOCK_MANIFEST,
    record.stagingDdl === undefined
      ? `CREATE TABLE IF NOT EXISTS ${staging} (LIKE ${live} INCLUDING DEFAULTS)`
      : `CREATE TABLE IF NOT EXISTS ${staging} ${record.stagingDdl}`,
    `INSERT INTO ${M}.batches (batch_id, pipeline, mode, interval_start, interval_end, spec_hash, code_version,
        execution_id, status, attempt, base_publication, staging_table, chunk_count, started_at, restatement, purpose)
     SELECT ${[
       id,
       sqlLiteral(pipeline.name),
       sqlLiteral(pipeline.publishMode),
       sqlLiteral(record.interval.from),
       sqlLiteral(record.interval.to),
       sqlLiteral(pipeline.specHash),
       sqlLiteral(record.codeVersion),
       sqlLiteral(record.executionId),
       sqlLiteral(BatchStatus.RUNNING),
       '1',
       sqlLiteral(record.basePublication),
       sqlLiteral(record.stagingTable),
       sqlLiteral(record.chunks.length),
       sqlLiteral(now),
       record.restatement === undefined ? 'NULL' : sqlLiteral(record.restatement),
       sqlLiteral(record.purpose ?? BatchPurpose.publish),
     ].join(', ')}
     WHERE NOT EXISTS (SELECT 1 FROM ${M}.batches WHERE batch_id = ${id})${leased}`,
    // Cleanup of a later run may have dropped this failed batch's staging
    // table: it was created empty again above, so every chunk reloads.
    `UPDATE ${M}.chunks SET status = ${PENDING}, rows_written = NULL, statement_id = NULL, attempt = attempt + 1
      WHERE batch_id = ${id}
        AND EXISTS (SELECT 1 FROM ${M}.batches WHERE batch_id = ${id} AND staging_dropped_at IS NOT NULL)`,
    `UPDATE ${M}.batches
        SET status = ${RUNNING}, attempt = attempt + 1, execution_id = ${sqlLiteral(record.executionId)},
            base_publication = ${sqlLiteral(record.basePublication)}, started_at = ${sqlLiteral(now)},
            finished_at = NULL, error = NULL, staging_dropped_at = NULL
      WHERE batch_id = ${id} AND status <> ${sqlLiteral(BatchStatus.PUBLISHED)}${
        record.executionId ? ` AND (execution_id IS NULL OR execution_id <> ${sqlLiteral(record.executionId)})${leased}` : ''
      }`,
    // Earlier attempts still RUNNING belong to executions that ended
    // without a trace (no RecordFailure, no CancelOrphans): abandoned.
    `UPDATE ${M}.batch_attempts SET status = ${sqlLiteral(AttemptStatus.ABANDONED)}, finished_at = ${sqlLiteral(now)}
      WHERE batch_id = ${id} AND status = ${sqlLiteral(AttemptStatus.RUNNING)}
        AND attempt < (SELECT attempt FROM ${M}.batches WHERE batch_id = ${id})`,
    `INSERT INTO ${M}.batch_attempts (batch_id, attempt, execution_id, status, started_at)
     SELECT b.batch_id, b.attempt, b.execution_id, ${sqlLiteral(AttemptStatus.RUNNING)}, ${sqlLiteral(now)} FROM ${M}.batches b
      WHERE b.batch_id = ${id} AND b.status = ${RUNNING}
        AND NOT EXISTS (SELECT 1 FROM ${M}.batch_attempts a WHERE a.batch_id = b.batch_id AND a.attempt = b.attempt)`,
  ];
  const windows = record.windows ?? [];
  // A batch in windows records its windows; each window's chunks are recorded when the window runs (windowChunkRows).
  if (windows.length > 0) statements.push(...windowRows(batchId, windows));
  else statements.push(...chunkRows(batchId, record.chunks));
  if (statements.length > MAX_BATCH_STATEMENTS) {
    const what = windows.length > 0 ? `${windows.length} windows` : `${record.chunks.length} chunks`;
    throw new ValidationError(`a batch of ${what} needs ${statements.length} statements, more than the Data API's ${MAX_BATCH_STATEMENTS}`);
  }
  return statements;
}

// The privilege checks run before anything is written. They read only the
// catalog (PG_NAMESPACE, PG_CLASS, PG_USER) and call Redshift's leader-node
// functions HAS_DATABASE_PRIVILEGE, HAS_SCHEMA_PRIVILEGE and
// HAS_TABLE_PRIVILEGE (https://docs.aws.amazon.com/redshift/latest/dg/r_HAS_TABLE_PRIVILEGE.html,
// whose example joins pg_tables and pg_user the same way), which PostgreSQL
// has under the same names. Redshift's HAS_DATABASE_PRIVILEGE and
// HAS_SCHEMA_PRIVILEGE return 'true' as text, PostgreSQL a boolean:
// readers accept both (isGranted).

/** The current user, whether it is a superuser, and CREATE on the current database. */
export function databasePrivileges(): Statement {
  return {
    sql: `SELECT current_user AS db_user,
                 (SELECT usesuper FROM pg_user WHERE usename = current_user) AS is_superuser,
                 HAS_DATABASE_PRIVILEGE(current_database(), 'CREATE') AS can_create`,
  };
}

/**
 * The live table, when its row-level security is on: SVV_RLS_RELATION is
 * visible to all users, its owner seeing its own tables
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RLS_RELATION.html).
 */
export function rowLevelSecurityOn(schema: string, table: string): Statement {
  return { sql: 'SELECT relname FROM svv_rls_relation WHERE relschema = :schema AND relname = :table AND is_rls_on', parameters: { schema, table } };
}

/**
 * A read only superusers and sys:secadmin may make (SVV_RLS_ATTACHED_POLICY,
 * https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_RLS_ATTACHED_POLICY.html):
 * refused, the user holds neither, so lacks the IGNORE RLS they carry
 * (https://docs.aws.amazon.com/redshift/latest/dg/t_rls_ownership.html).
 */
export function attachedPoliciesProbe(schema: string, table: string): Statement {
  return { sql: 'SELECT count(*) AS n FROM svv_rls_attached_policy WHERE relschema = :schema AND relname = :table', parameters: { schema, table } };
}

/** USAGE and CREATE of the current user on each schema that exists. */
export function schemaPrivileges(schemas: readonly string[]): Statement {
  const names = schemas.map((_, i) => `:schema_${i}`);
  return {
    sql: `SELECT nspname AS schema_name,
                 HAS_SCHEMA_PRIVILEGE(nspname, 'USAGE') AS can_use,
                 HAS_SCHEMA_PRIVILEGE(nspname, 'CREATE') AS can_create
            FROM pg_namespace WHERE nspname IN (${names.join(', ')})`,
    parameters: Object.fromEntries(schemas.map((s, i) => [`schema_${i}`, s])),
  };
}

/**
 * Owner and SELECT of the current user on each table or view that exists.
 * Run only once USAGE on their schemas is known: without it, naming a table
 * of the schema is an error rather than false.
 */
export function relationPrivileges(relations: readonly { schema: string; table: string }[]): Statement {
  const match = relations.map((_, i) => `(n.nspname = :schema_${i} AND c.relname = :table_${i})`);
  return {
    sql: `SELECT n.nspname AS schema_name, c.relname AS table_name, u.usename AS owner,
                 HAS_TABLE_PRIVILEGE(QUOTE_IDENT(n.nspname) || '.' || QUOTE_IDENT(c.relname), 'SELECT') AS can_select
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_user u ON u.usesysid = c.relowner
           WHERE c.relkind IN ('r', 'v', 'm', 'p') AND (${match.join(' OR ')})`,
    parameters: Object.fromEntries(
      relations.flatMap((r, i) => [
        [`schema_${i}`, r.schema],
        [`table_${i}`, r.table],
      ]),
    ),
  };
}

/**
 * The grain unit a timestamp falls in, as a hash-join key: for days and months
 * the local calendar bucket in the pipeline's zone, for hours whole hours since
 * `:start` (unique across a DST change); no range join (docs/decisions/reconciling.md).
 * `AT TIME ZONE` as PostgreSQL's (https://docs.aws.amazon.com/redshift/latest/dg/r_AT_TIME_ZONE.html);
 * EXTRACT(EPOCH ...) is an integer there, numeric here, and FLOOR keys both alike
 * (docs/decisions/redshift-compatibility-of-the-sql.md).
 */
export function grainKey(pipeline: Pipeline, column: string): string {
  const { grain, timezone } = pipeline.chunk;
  if (grain === 'hour') {
    return `FLOOR((EXTRACT(EPOCH FROM ${column}) - EXTRACT(EPOCH FROM CAST(:start AS timestamp))) / 3600)`;
  }
  // In UTC the two conversions cancel out: the cheaper expression, same buckets.
  if (timezone === 'UTC') return `DATE_TRUNC(${sqlLiteral(grain)}, ${column})`;
  return `DATE_TRUNC(${sqlLiteral(grain)}, (${column} AT TIME ZONE 'UTC') AT TIME ZONE ${sqlLiteral(timezone)})`;
}

/**
 * The source's rows per grain unit of the interval, in one grouped count:
 * each group's earliest time names its unit (floored to the grain as the
 * chunk boundaries are, domain/plan/chunk-sizing.ts). Empty units have no row.
 */
export function sourceVolume(pipeline: Pipeline, interval: { from: Date; to: Date }): Statement {
  const t = `s.${quoteIdent(extractColumn(pipeline))}`;
  return {
    sql: `SELECT MIN(${t}) AS first_at, COUNT(*) AS n
            FROM (${pipeline.sourceSql}
) AS s
           WHERE ${t} >= :start AND ${t} < :end
           GROUP BY ${grainKey(pipeline, t)}`,
    parameters: { start: timestampParam(interval.from), end: timestampParam(interval.to) },
  };
}

/** The chunks a batch was planned with (none: a new batch), in order. */
export function recordedChunks(batchId: string): Statement {
  return {
    sql: `SELECT chunk_index, interval_start, interval_end FROM ${M}.chunks WHERE batch_id = :batch_id ORDER BY chunk_index`,
    parameters: { batch_id: batchId },
  };
}

/**
 * The sort-key columns of the tables the source reads: SVV_REDSHIFT_COLUMNS
 * is visible to every user and gives each column's position in its table's
 * sort key (0: not in it; negative: interleaved), https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_REDSHIFT_COLUMNS.html.
 * A table named without a schema matches in any schema.
 */
export function sourceSortKeys(tables: readonly { schema?: string; table: string }[]): Statement {
  const match = tables.map((t, i) => (t.schema === undefined ? `table_name = :table_${i}` : `(schema_name = :schema_${i} AND table_name = :table_${i})`));
  return {
    sql: `SELECT schema_name, table_name, column_name, sortkey
            FROM svv_redshift_columns
           WHERE database_name = current_database() AND sortkey <> 0 AND (${match.join(' OR ')})
           ORDER BY schema_name, table_name, ABS(sortkey)`,
    parameters: Object.fromEntries(
      tables.flatMap((t, i) => [
        [`table_${i}`, t.table] as [string, string],
        ...(t.schema === undefined ? [] : [[`schema_${i}`, t.schema] as [string, string]]),
      ]),
    ),
  };
}

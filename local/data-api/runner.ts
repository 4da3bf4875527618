// Runs statements on pooled PostgreSQL connections, one pool per database,
// database user and target kind (which decides the catalog: system-views.ts).
// The user is a cluster request's DbUser, else the endpoint's default user; a
// PASSWORD DISABLE user gets its password from the statement's session. As in
// the real API without a session, a statement (or batch) has a connection of its
// own and leaves nothing behind (an open transaction rolled back, session state
// discarded); with every connection busy, it waits in SUBMITTED. How a lost
// connection fails a statement: docs/decisions/local-engine.md
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { DATA_API_ROW_MAX_BYTES } from '../../domain/aws-limits.ts';
import { localUserPassword } from '../database-users.ts';
import { endPool, newClient, newPool, withClient } from '../pg-clients.ts';
import type { PgConnection } from '../postgres.ts';
import { DataApiError } from './errors.ts';
import { type ColumnSource, isKnownType } from './fields.ts';
import { installRedshiftFunctions } from './redshift-functions/functions.ts';
import type { Statement, StatementPart, StatementTarget, StoredResult } from './statement.ts';
import { installSystemViews, sessionSearchPath, type TargetKind } from './system-views.ts';

/**
 * Redshift's two isolation levels, both snapshot-based: a transaction's
 * snapshot is taken at its first statement. SNAPSHOT is the default of
 * Serverless workgroups and of clusters created since May 2024; SERIALIZABLE
 * also refuses read/write dependency cycles. Locally they are PostgreSQL's
 * REPEATABLE READ (snapshot isolation) and SERIALIZABLE.
 * https://docs.aws.amazon.com/redshift/latest/dg/c_serial_isolation.html
 */
export type Isolation = 'snapshot' | 'serializable';

export const ISOLATIONS: readonly Isolation[] = ['snapshot', 'serializable'];

const PG_ISOLATION: Record<Isolation, string> = { snapshot: 'repeatable\\ read', serializable: 'serializable' };

/** PostgreSQL's SQLSTATE for a serialization failure: Redshift's error 1023. */
const SERIALIZATION_FAILURE = '40001';

export interface StatementRunnerOptions {
  maxConnectionsPerDatabase: number;
  isolation: Isolation;
  /** A result over this many bytes fails its statement, as the Data API's does. */
  maxResultBytes: number;
  /** A result row over this many bytes fails its statement, as the Data API's does. @default DATA_API_ROW_MAX_BYTES */
  maxRowBytes?: number;
  /** The user of SecretArn and WorkgroupName requests. */
  defaultUser: string;
  log: (line: string) => void;
  /** Fault injection: see LocalDataApiOptions.statementError. */
  statementError?: StatementFault;
  /** See LocalDataApiOptions.flushStatistics. */
  flushStatistics?: boolean;
}

/**
 * Decides, per statement part about to run, whether it fails with a
 * database error instead of running: the message it fails with (e.g.
 * Redshift's `ERROR: 1023 DETAIL: Serializable isolation violation ...`),
 * or undefined to run it. The parts before it in a transaction batch have
 * run; the failure rolls back the whole transaction, as a database error
 * there does.
 */
export type StatementFault = (part: { sql: string; index: number; sqls: readonly string[]; name?: string }) => string | undefined;

interface PgError extends Error {
  code?: string;
  severity?: string;
  detail?: string;
}

/** The application_name of every session the endpoint opens. */
export const APPLICATION_NAME = 'local-data-api';

const QUERY_CANCELED = '57014';

/**
 * Makes the backend report its table statistics the next time it is idle
 * outside a transaction (pg_stat_force_next_flush, PostgreSQL 15+): before the
 * statement concludes, so a reader of pg_stat_user_tables who saw it end sees its reads.
 */
const FORCE_STATISTICS_FLUSH = 'SELECT pg_stat_force_next_flush()';
const NOT_QUERYABLE = /is not queryable/;
const CANCEL_RETRY_MS = 100;
const CANCEL_TIMEOUT_MS = 10_000;

// Node's socket errors in the words of libpq and of Redshift's drivers
// ("Connection refused"), which is what callers recognise as transient.
const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'Connection refused',
  ECONNRESET: 'Connection reset by peer',
  ETIMEDOUT: 'Connection timed out',
  EHOSTUNREACH: 'No route to host',
  ENETUNREACH: 'Network is unreachable',
  EPIPE: 'Broken pipe',
};

// Column facts RowDescription lacks: table, NOT NULL, default; and names of
// types not built in.
const CATALOG_SQL = `
SELECT 'column' AS kind, a.attrelid::int8 AS oid, a.attnum::int4 AS num, n.nspname AS schema_name, c.relname AS name,
       a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS column_default
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0
UNION ALL
SELECT 'type', t.oid::int8, 0, NULL, t.typname, NULL, NULL FROM pg_type t WHERE t.oid = ANY($2::oid[])`;

export class StatementRunner {
  private readonly pools = new Map<string, pg.Pool>();
  /** Databases whose system views are installed (or being installed) by this runner. */
  private readonly systemViews = new Map<string, Promise<void>>();
  /** Checked-out connections that were lost, with the error that said so. */
  private readonly lost = new WeakMap<pg.PoolClient, Error>();
  private queryIds = 0;
  /** Statement parts run (started on a connection), batches counted by their statements. */
  partsRun = 0;

  constructor(
    private readonly connection: PgConnection,
    private readonly options: StatementRunnerOptions,
  ) {}

  /** Runs to a terminal status; never rejects. */
  async run(statement: Statement): Promise<void> {
    try {
      await this.execute(statement);
    } catch (error) {
      if (!statement.isTerminal) statement.conclude(this.databaseMessage(error as PgError));
    } finally {
      statement.settle();
    }
  }

  /**
   * CancelStatement: a statement still waiting for a connection ends ABORTED
   * at once; a running one is interrupted (pg_cancel_backend) until it ends.
   */
  async cancel(statement: Statement): Promise<void> {
    statement.abortRequested = true;
    if (statement.status === 'SUBMITTED') {
      statement.conclude();
      return;
    }
    statement.cancelling ??= this.interrupt(statement);
    await statement.cancelling;
  }

  /**
   * Runs `work` on a connection of the request's user to `target.database`
   * from the pool statements use: the metadata operations (catalog.ts),
   * which answer synchronously. A database that cannot be reached, or does
   * not let the user in, is the Data API's DatabaseConnectionException.
   */
  async withSession<T>(target: StatementTarget, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool(target.database, this.userOf(target), kindOf(target)).connect();
    } catch (error) {
      throw new DataApiError('DatabaseConnectionException', this.databaseMessage(error as PgError));
    }
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      broken = this.lost.get(client) ?? (error as Error);
      if (this.lost.has(client)) throw new DataApiError('DatabaseConnectionException', this.databaseMessage(broken as PgError));
      throw error;
    } finally {
      broken ??= await reset(client);
      client.release(broken ?? false);
    }
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map(endPool));
  }

  /**
   * Interrupts until the statement ends. When the server cannot be reached
   * (restarting, down), the statement's own connection is lost as well and
   * it ends by itself; the cancel keeps trying until then, never longer
   * than CANCEL_TIMEOUT_MS, and never throws.
   */
  private async interrupt(statement: Statement): Promise<void> {
    const deadline = Date.now() + CANCEL_TIMEOUT_MS;
    let client: pg.Client | undefined;
    try {
      while (!statement.isTerminal && Date.now() < deadline) {
        try {
          if (!client) {
            client = newClient({ ...this.connection, database: statement.target.database, connectionTimeoutMillis: CANCEL_TIMEOUT_MS });
            await client.connect();
          }
          await client.query('SELECT pg_cancel_backend($1)', [statement.pid]);
        } catch (error) {
          this.options.log(`local data api: cancel of ${statement.id}: ${(error as Error).message}`);
          await client?.end().catch(() => undefined);
          client = undefined;
        }
        // Not `settled`: the connection goes back only after this cancel has returned.
        await Promise.race([statement.ended, sleep(CANCEL_RETRY_MS)]);
      }
    } finally {
      await client?.end().catch(() => undefined);
    }
  }

  private async execute(statement: Statement): Promise<void> {
    let client: pg.PoolClient;
    try {
      await this.ensureSystemViews(statement.target.database);
      client = await this.pool(statement.target.database, this.userOf(statement.target), kindOf(statement.target)).connect();
    } catch (error) {
      // As on Redshift, a missing database or refused connection is the statement's failure.
      if (!statement.isTerminal) {
        statement.parts[0]!.fail(this.databaseMessage(error as PgError));
        statement.conclude();
      }
      return;
    }
    let broken: Error | undefined;
    try {
      if (statement.abortRequested) return;
      statement.picked((client as unknown as { processID: number }).processID);
      if (statement.isBatch && statement.executionMode === 'TRANSACTION') {
        await this.runTransaction(client, statement);
      } else {
        for (const part of statement.parts) {
          await this.runPart(client, statement, part, false);
          // The rest of an AUTO_COMMIT batch never runs on a lost session (conclude() aborts it).
          if (this.lost.has(client)) break;
        }
        statement.conclude();
      }
    } catch (error) {
      broken = error as Error;
      // A lost session: what ended it is the statement's error (see runPart).
      throw this.lost.get(client) ?? error;
    } finally {
      await statement.cancelling;
      broken ??= this.lost.get(client) ?? (await reset(client));
      // An error discards the connection instead of returning it to the pool.
      client.release(broken ?? false);
    }
  }

  private async runTransaction(client: pg.PoolClient, statement: Statement): Promise<void> {
    try {
      await client.query('BEGIN');
    } catch (error) {
      // As for a part (runPart): a session lost before the batch began fails its first statement.
      const pgError = (this.lost.get(client) as PgError | undefined) ?? (error as PgError);
      statement.parts[0]!.fail(this.databaseMessage(pgError));
      if (endsSession(pgError)) this.lost.set(client, pgError);
      statement.conclude();
      return;
    }
    for (const part of statement.parts) {
      if (!(await this.runPart(client, statement, part, true))) {
        // A lost connection has rolled back already; reset() then discards it.
        await client.query('ROLLBACK').catch(() => undefined);
        statement.conclude();
        return;
      }
    }
    try {
      // The flag holds until the backend is next idle outside a transaction: right after this COMMIT.
      if (this.options.flushStatistics) await client.query(FORCE_STATISTICS_FLUSH);
      await client.query('COMMIT');
      statement.conclude();
    } catch (error) {
      statement.conclude(this.databaseMessage(error as PgError));
    }
  }

  /**
   * True when the part finished. Outside a transaction, a part with
   * statements to run after it (Redshift mode's key records) runs with them
   * in one, so they commit or roll back together.
   */
  private async runPart(client: pg.PoolClient, statement: Statement, part: StatementPart, inTransaction: boolean): Promise<boolean> {
    if (statement.abortRequested) return false;
    part.start(++this.queryIds);
    this.partsRun += 1;
    statement.started();
    const injected = this.options.statementError?.({
      sql: part.queryString,
      index: statement.parts.indexOf(part),
      sqls: statement.parts.map((p) => p.queryString),
      ...(statement.statementName !== undefined ? { name: statement.statementName } : {}),
    });
    if (injected !== undefined) {
      part.fail(injected);
      return false;
    }
    const wrap = !inTransaction && (part.sql.after !== undefined || part.sql.iamUser !== undefined);
    try {
      // The extended protocol runs exactly one statement, and rejects several
      // with "cannot insert multiple commands into a prepared statement", as
      // Redshift does.
      if (wrap) await client.query('BEGIN');
      const result = await client.query({
        text: part.sql.text,
        values: part.sql.values,
        rowMode: 'array',
        queryMode: 'extended',
      } as pg.QueryArrayConfig);
      for (const after of part.sql.after ?? []) await client.query(after.text, after.values);
      if (part.sql.iamUser !== undefined) await client.query(this.iamLogin(part.sql.iamUser));
      if (wrap) await client.query('COMMIT');
      if (!inTransaction && this.options.flushStatistics) await client.query(FORCE_STATISTICS_FLUSH);
      if (result.fields.length === 0) {
        part.finish(result.rowCount, undefined, 0);
        return true;
      }
      // Over the Data API's limits the statement fails, before any of its result can be read.
      const rows = result.rows as (string | null)[][];
      const { size, largestRow } = resultSize(rows);
      const maxRowBytes = this.options.maxRowBytes ?? DATA_API_ROW_MAX_BYTES;
      if (largestRow > maxRowBytes) {
        part.fail(`Packet for query is too large: a result row of ${largestRow} bytes; the Data API returns rows of at most ${maxRowBytes} bytes.`);
        return false;
      }
      if (size > this.options.maxResultBytes) {
        part.fail(`Database response exceeded size limit: a result of ${size} bytes; the Data API returns at most ${this.options.maxResultBytes} bytes.`);
        return false;
      }
      const stored: StoredResult = { columns: await describeColumns(client, result.fields), rows };
      part.finish(result.rowCount, stored, size);
      return true;
    } catch (error) {
      // A session the server ended between checkout and this query fails it with the client's
      // "not queryable"; the statement failed because of what ended the session, so that is reported.
      const pgError = (this.lost.get(client) as PgError | undefined) ?? (error as PgError);
      if (wrap) await client.query('ROLLBACK').catch(() => undefined);
      if (statement.abortRequested && pgError.code === QUERY_CANCELED) part.abort();
      else part.fail(this.databaseMessage(pgError));
      if (endsSession(pgError)) this.lost.set(client, pgError);
      return false;
    }
  }

  /**
   * The statement that lets the endpoint log on as a user whose password is
   * disabled: Redshift's IAM credentials (GetClusterCredentials, a
   * workgroup's IAM identity) are, locally, the password localUserPassword
   * derives, which no client outside the endpoint is told.
   */
  private iamLogin(user: string): string {
    return `ALTER ROLE "${user.replaceAll('"', '""')}" PASSWORD '${localUserPassword(this.connection, user).replaceAll("'", "''")}'`;
  }

  /** The database user a request runs as. */
  private userOf(target: StatementTarget): string {
    return target.clusterIdentifier !== undefined && target.dbUser !== undefined ? target.dbUser : this.options.defaultUser;
  }

  /** Installs the system views and Redshift's functions once per database; a failed attempt is tried again by the next statement. */
  private ensureSystemViews(database: string): Promise<void> {
    let installed = this.systemViews.get(database);
    if (!installed) {
      installed = withClient({ ...this.connection, database }, async (client) => {
        await installSystemViews(client);
        await installRedshiftFunctions(client);
        // Restricted to superusers by default; the endpoint's sessions run as the request's user.
        if (this.options.flushStatistics) await client.query('GRANT EXECUTE ON FUNCTION pg_stat_force_next_flush() TO PUBLIC');
      });
      installed.catch(() => this.systemViews.delete(database));
      this.systemViews.set(database, installed);
    }
    return installed;
  }

  private pool(database: string, user: string, kind: TargetKind): pg.Pool {
    const key = JSON.stringify([database, user, kind]);
    let pool = this.pools.get(key);
    if (!pool) {
      pool = newPool(
        {
          ...this.connection,
          user,
          password: localUserPassword(this.connection, user),
          database,
          max: this.options.maxConnectionsPerDatabase,
          idleTimeoutMillis: 30_000,
          application_name: APPLICATION_NAME,
          // Redshift's session defaults: UTC, ISO dates, the database's isolation
          // level; the system views of the target's kind (system-views.ts) after the user's schemas.
          options: `-c TimeZone=UTC -c DateStyle=ISO,MDY -c default_transaction_isolation=${PG_ISOLATION[this.options.isolation]} -c search_path=${sessionSearchPath(kind)}`,
          // Every value as PostgreSQL's text; fields.ts types them.
          types: { getTypeParser: () => (value: string) => value },
        },
        {
          onIdleLost: (error) => this.options.log(`local data api: idle connection to ${database} lost, dropped from the pool: ${error.message}`),
          onBusyLost: (client, error) => this.lost.set(client, error),
        },
      );
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** The database's message the way Redshift reports it: "ERROR: division by zero". */
  private databaseMessage(error: PgError): string {
    const socketError = error.code ? SOCKET_ERRORS[error.code] : undefined;
    // pg's word for a session lost before the query could be sent, when the
    // socket error that ended it reached no listener first.
    const unusable = !hasSqlState(error) && NOT_QUERYABLE.test(error.message) ? error.message : undefined;
    if (socketError ?? unusable) {
      return `FATAL: connection to server at "${this.connection.host}", port ${this.connection.port} failed: ${socketError ?? unusable}`;
    }
    if (error.code === SERIALIZATION_FAILURE) {
      // Redshift's words for a conflict between concurrent transactions, under
      // either isolation level; PostgreSQL's own reason follows in brackets.
      return `ERROR: 1023 DETAIL: Serializable isolation violation on table in Redshift (${error.message})`;
    }
    const severity = error.severity ?? (hasSqlState(error) ? 'ERROR' : 'FATAL');
    return `${severity}: ${error.message}${error.detail ? ` DETAIL: ${error.detail}` : ''}`;
  }
}

/** FATAL (the server ends the session) or no SQLSTATE at all (the client lost the socket). */
function endsSession(error: PgError): boolean {
  return error.severity === 'FATAL' || error.severity === 'PANIC' || !hasSqlState(error);
}

/** Errors from the server carry a SQLSTATE; the client's own (socket, protocol) do not. */
function hasSqlState(error: PgError): boolean {
  return error.code !== undefined && /^[0-9A-Z]{5}$/.test(error.code);
}

/** Leaves the connection as new; an error means it must not be reused. */
async function reset(client: pg.PoolClient): Promise<Error | undefined> {
  try {
    const status = (client as unknown as { getTransactionStatus(): string | null }).getTransactionStatus();
    if (status !== 'I') await client.query('ROLLBACK');
    await client.query('DISCARD ALL');
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

async function describeColumns(client: pg.PoolClient, fields: pg.FieldDef[]): Promise<ColumnSource[]> {
  const tableIds = [...new Set(fields.map((f) => f.tableID).filter((id) => id > 0))];
  const typeIds = [...new Set(fields.map((f) => f.dataTypeID).filter((oid) => !isKnownType(oid)))];
  const columns = new Map<string, { schemaName: string; tableName: string; notNull: boolean; columnDefault?: string }>();
  const typeNames = new Map<number, string>();
  if (tableIds.length > 0 || typeIds.length > 0) {
    const { rows } = await client.query(CATALOG_SQL, [tableIds, typeIds]);
    for (const r of rows as Record<string, string | null>[]) {
      if (r.kind === 'type') {
        typeNames.set(Number(r.oid), r.name!);
      } else {
        columns.set(`${r.oid}:${r.num}`, {
          schemaName: r.schema_name!,
          tableName: r.name!,
          notNull: r.not_null === 't',
          ...(r.column_default !== null && r.column_default !== undefined ? { columnDefault: r.column_default } : {}),
        });
      }
    }
  }
  return fields.map((f) => ({
    name: f.name,
    typeOid: f.dataTypeID,
    typeModifier: f.dataTypeModifier,
    typeName: typeNames.get(f.dataTypeID),
    table: f.tableID > 0 ? columns.get(`${f.tableID}:${f.columnID}`) : undefined,
  }));
}

/** The bytes of a result's values as the database returns them (text), in all and in its largest row. */
function resultSize(rows: (string | null)[][]): { size: number; largestRow: number } {
  let size = 0;
  let largestRow = 0;
  for (const row of rows) {
    let bytes = 0;
    for (const value of row) if (value !== null) bytes += Buffer.byteLength(value);
    size += bytes;
    largestRow = Math.max(largestRow, bytes);
  }
  return { size, largestRow };
}

/** A request naming a cluster is served as a provisioned cluster; one naming a workgroup, as Serverless. */
export function kindOf(target: StatementTarget): TargetKind {
  return target.clusterIdentifier !== undefined ? 'cluster' : 'workgroup';
}

// A local Redshift Data API endpoint backed by PostgreSQL; the real
// @aws-sdk/client-redshift-data works against it with only `endpoint` changed
// (local/aws-clients.ts: `localRedshiftDataClient(api.endpoint)`). Wire: AWS
// JSON 1.1 (`X-Amz-Target: RedshiftData.<Operation>`), timestamps as epoch
// seconds, errors as `{"__type", "message"}` with HTTP 400/500 and
// `x-amzn-ErrorType`. Requests are not authenticated.
import { DATA_API_RESULT_MAX_BYTES, DATA_API_ROW_MAX_BYTES } from '../../domain/aws-limits.ts';
import { AwsJsonRequestError, startAwsJsonServer } from '../aws-json-server.ts';
import type { PgConnection } from '../postgres.ts';
import { DataApiError } from './errors.ts';
import type { InformationalConstraint } from './informational-keys.ts';
import { InformationalConstraints } from './redshift-mode.ts';
import { type Isolation, type StatementFault, StatementRunner } from './runner.ts';
import { type EnvironmentalFault, RedshiftDataService } from './service.ts';
import { StatementStore } from './statement-store.ts';

export interface LocalDataApi {
  /** e.g. http://127.0.0.1:41234 */
  endpoint: string;
  /** Stops accepting requests, cancels running statements, closes the connection pools. */
  close(): Promise<void>;
  /** Statements submitted so far (ExecuteStatement and BatchExecuteStatement calls that were accepted). */
  statements(): number;
  /** SQL statements run so far: each of a batch's counts, and a statement that failed once started. */
  statementsRun(): number;
  /**
   * Every request answered so far, in order: the operation and the name of
   * the statement it submitted or addressed (ListStatements: the name
   * prefix it asked for), for counting requests per statement.
   */
  requests(): readonly DataApiRequest[];
  /**
   * PRIMARY KEY, UNIQUE and FOREIGN KEY constraints that committed statements
   * declared in `database`, which Redshift mode records instead of enforcing
   * (kept in this endpoint's memory; empty with the mode off).
   */
  informationalConstraints(database: string): InformationalConstraint[];
}

/** One request the endpoint answered. */
export interface DataApiRequest {
  readonly operation: string;
  readonly statementName?: string;
  /** The request's WaitTimeSeconds, when it had one. */
  readonly waitTimeSeconds?: number;
}

export interface LocalDataApiOptions {
  /** The server the statements run on; the request's `Database` picks the database. */
  postgres: PgConnection;
  /** @default 0 - a random free port */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default - no logging */
  log?: (line: string) => void;
  /** Active (SUBMITTED, PICKED, STARTED) statements before ActiveStatementsExceededException. @default 200 */
  maxActiveStatements?: number;
  /** PostgreSQL connections per database; further statements wait in SUBMITTED. @default 32 */
  maxConnectionsPerDatabase?: number;
  /** Records per GetStatementResult page. @default 1000 */
  resultPageRows?: number;
  /** How long statements and their results are kept after they end. @default 86400 (24 h, as the real API) */
  resultRetentionSeconds?: number;
  /** A result larger than this fails the statement. @default DATA_API_RESULT_MAX_BYTES (500 MB, as the real API) */
  maxResultBytes?: number;
  /** A result row larger than this fails the statement. @default DATA_API_ROW_MAX_BYTES (64 KB, as the real API) */
  maxRowBytes?: number;
  /**
   * Fault injection for the Data API's environmental errors
   * (ExecuteStatementException, BatchExecuteStatementException): the call
   * fails with the statement's id while the statement runs ('accepted') or
   * has failed ('failed'). @default - none
   */
  environmentalError?: EnvironmentalFault;
  /**
   * Fault injection for database errors: a statement part the function
   * names fails with its message in place of running, after the parts
   * before it in its transaction ran (runner.ts StatementFault). For
   * errors the local engine cannot provoke, such as Redshift's rename
   * conflict beside a concurrent VACUUM. @default - none
   */
  statementError?: StatementFault;
  /** The database's isolation level (Redshift sets it per database). @default 'snapshot' (Redshift's default since May 2024) */
  isolation?: Isolation;
  /**
   * The database user of SecretArn and WorkgroupName requests (a cluster
   * request with DbUser runs as that user). A role other than the
   * superuser must exist, with the password localUserPassword gives it
   * (local/database-users.ts).
   * @default - the `postgres` connection's user
   */
  defaultUser?: string;
  /**
   * Fail statements the way Redshift would (redshift-mode.ts): PostgreSQL-only
   * constructs refused, TRUNCATE and VACUUM refused inside multi-statement
   * transactions, key constraints recorded, not enforced. Off runs plain
   * PostgreSQL, for telling whether a refusal comes from the gate or from
   * the database.
   * @default true
   */
  redshiftMode?: boolean;
  /**
   * Each statement's reads reach PostgreSQL's statistics (pg_stat_user_tables)
   * before it concludes, at the cost of one more round trip per statement, for
   * attributing the engine's work to the steps that caused it (the bench).
   * @default false - PostgreSQL reports at most once a second per session
   */
  flushStatistics?: boolean;
}

const CONTENT_TYPE = 'application/x-amz-json-1.1';
const TARGET_PREFIX = 'RedshiftData.';

export async function startLocalDataApi(opts: LocalDataApiOptions): Promise<LocalDataApi> {
  const log = opts.log ?? (() => undefined);
  const store = new StatementStore({
    maxActiveStatements: opts.maxActiveStatements ?? 200,
    retentionMs: (opts.resultRetentionSeconds ?? 86_400) * 1000,
    clientTokenMs: 10 * 60_000,
  });
  const runner = new StatementRunner(opts.postgres, {
    maxConnectionsPerDatabase: opts.maxConnectionsPerDatabase ?? 32,
    isolation: opts.isolation ?? 'snapshot',
    maxResultBytes: opts.maxResultBytes ?? DATA_API_RESULT_MAX_BYTES,
    maxRowBytes: opts.maxRowBytes ?? DATA_API_ROW_MAX_BYTES,
    defaultUser: opts.defaultUser ?? opts.postgres.user,
    log,
    ...(opts.statementError ? { statementError: opts.statementError } : {}),
    ...(opts.flushStatistics ? { flushStatistics: true } : {}),
  });
  const constraints = new InformationalConstraints();
  const service = new RedshiftDataService(store, runner, {
    resultPageRows: opts.resultPageRows ?? 1000,
    environmentalError: opts.environmentalError,
    ...(opts.redshiftMode === false ? {} : { constraints }),
  });

  const requests: DataApiRequest[] = [];
  const server = await startAwsJsonServer({
    contentType: CONTENT_TYPE,
    targetPrefix: TARGET_PREFIX,
    operations: service.operations,
    onRequest: (operation, input) =>
      requests.push({ operation, ...namedIn(store, input), ...(typeof input.WaitTimeSeconds === 'number' ? { waitTimeSeconds: input.WaitTimeSeconds } : {}) }),
    errorOf: (error) => {
      const apiError =
        error instanceof DataApiError ? error : error instanceof AwsJsonRequestError ? new DataApiError(error.shape, error.message) : internal(error, log);
      return { status: apiError.httpStatus, shape: apiError.shape, message: apiError.message, members: apiError.members };
    },
    // Date#toJSON runs before a replacer sees the value: look at the holder's own property.
    serialize: (body) =>
      JSON.stringify(body, function (this: Record<string, unknown>, key: string, value: unknown) {
        const raw = this[key];
        return raw instanceof Date ? raw.getTime() / 1000 : value;
      }),
    ...(opts.host ? { host: opts.host } : {}),
    ...(opts.port ? { port: opts.port } : {}),
  });
  const endpoint = server.endpoint;
  log(`local data api: listening on ${endpoint}`);

  return {
    endpoint,
    statements: () => store.submittedCount,
    statementsRun: () => runner.partsRun,
    requests: () => [...requests],
    informationalConstraints: (database) => constraints.list(database),
    close: async () => {
      await server.close();
      const running = store.all().filter((s) => !s.isTerminal);
      await Promise.all(running.map((s) => runner.cancel(s)));
      await Promise.all(running.map((s) => s.settled));
      store.close();
      await runner.close();
    },
  };
}

/** The statement name a request carries or addresses by Id. */
function namedIn(store: StatementStore, input: Record<string, unknown>): { statementName?: string } {
  if (typeof input.StatementName === 'string') return { statementName: input.StatementName };
  if (typeof input.Id !== 'string') return {};
  try {
    const name = store.get(input.Id).statement.statementName;
    return name === undefined ? {} : { statementName: name };
  } catch {
    return {};
  }
}

function internal(error: unknown, log: (line: string) => void): DataApiError {
  log(`local data api: internal error: ${(error as Error)?.stack ?? String(error)}`);
  return new DataApiError('InternalServerException', (error as Error)?.message ?? String(error));
}

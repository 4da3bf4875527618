import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchExecuteStatementCommand,
  CancelStatementCommand,
  type ColumnMetadata,
  DescribeStatementCommand,
  type DescribeStatementCommandOutput,
  ExecuteStatementCommand,
  type Field,
  GetStatementResultCommand,
  ListStatementsCommand,
  RedshiftDataClient,
} from '@aws-sdk/client-redshift-data';
import { StatementStillRunningError, TransientWarehouseError, ValidationError, WarehouseError } from '../../domain/errors.ts';
import { redactRowValues } from '../../domain/redact.ts';
import type { Statement } from '../../domain/sql/statement.ts';
import { dataApiSettingsFromEnv, type WarehouseTarget, warehouseTargetFromEnv } from '../../domain/warehouse-target.ts';
import { tracer } from './powertools.ts';

/** The target as the Data API's request fields. */
function targetFields(target: WarehouseTarget) {
  return {
    Database: target.database,
    ...(target.clusterIdentifier ? { ClusterIdentifier: target.clusterIdentifier } : {}),
    ...(target.secretArn ? { SecretArn: target.secretArn } : {}),
    ...(target.dbUser ? { DbUser: target.dbUser } : {}),
    ...(target.workgroupName ? { WorkgroupName: target.workgroupName } : {}),
  };
}

/** A ClientToken (at most 64 characters) that only this request, with this key, produces. */
function requestToken(request: object, key: string): string {
  return `ap-${createHash('sha256')
    .update(JSON.stringify([request, key]))
    .digest('hex')
    .slice(0, 48)}`;
}

/** A column of a statement's result: its name and the type name the Data API reports (`int4`, `varchar`, `numeric`...). */
export interface ResultColumn {
  readonly name: string;
  readonly typeName: string;
}

/**
 * Waiting for a statement: long polls when `longPollSeconds` is set (the
 * Data API answers DescribeStatement as soon as the statement ends, or after
 * WaitTimeSeconds), otherwise adaptive polling: fast first (most statements
 * are short), backing off by `factor` to a cap, and never sleeping longer
 * than max(100 ms, 10% of the time waited so far), so an end is noticed
 * within max(100 ms, 10% of the statement's duration).
 */
export interface PollOptions {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly factor: number;
  /**
   * WaitTimeSeconds of each DescribeStatement (1 to 30, the service model's
   * maximum); 0 or absent polls with sleeps instead, and so does a long poll the
   * service refuses (ActiveWaitingRequestsExceededException).
   * Why: docs/decisions/failure-handling.md ("Long polling")
   * https://docs.aws.amazon.com/botocore/latest/reference/services/redshift-data/client/exceptions/ActiveWaitingRequestsExceededException.html
   */
  readonly longPollSeconds?: number;
  /** Give up waiting (the statement keeps running) after this long. */
  readonly timeoutMs: number;
  /** Waits between two polls. @default - a timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The clock (epoch ms) the timeout and the deadline are measured on. @default Date.now */
  readonly now?: () => number;
}

export const DEFAULT_POLL: PollOptions = { initialDelayMs: 20, maxDelayMs: 2_000, factor: 1.5, timeoutMs: 12 * 60_000, longPollSeconds: 20 };

/** The longest sleep between two polls after `elapsedMs` of waiting: completion is noticed within max(100 ms, 10%). */
function pollDelayCap(elapsedMs: number): number {
  return Math.max(100, elapsedMs / 10);
}

/** A statement as ListStatements lists it. */
export interface ListedStatement {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly createdAt?: Date;
  readonly updatedAt?: Date;
}

export type Row = Record<string, string | number | boolean | Uint8Array | null>;

export interface StatementOutcome {
  readonly id: string;
  /** Rows affected (DML) or returned (SELECT); -1 when the statement reports none. */
  readonly resultRows: number;
  readonly hasResultSet: boolean;
  readonly durationMs: number;
  readonly subStatements: readonly { id: string; resultRows: number; hasResultSet: boolean }[];
  readonly polls: number;
}

/**
 * Database messages that mean "try again": serialization conflicts (in
 * Redshift's words: error 1023, under either isolation level), lock
 * waits, lost or refused connections, a server starting, stopping or
 * recovering, and two sessions running the same idempotent DDL at once (the
 * manifest's CREATE ... IF NOT EXISTS / CREATE OR REPLACE race in the
 * catalog: a retry finds the object there).
 */
const TRANSIENT_SQL_ERROR =
  /serializable isolation violation|ERROR:\s*1023\b|deadlock detected|lock timeout|canceling statement due to lock|terminating connection|connection (?:reset|refused|terminated|timed out)|connection to server at "[^"]*", port \d+ failed|too many clients|the database system is (?:starting up|shutting down|in recovery mode|not yet accepting connections)|tuple concurrently updated|duplicate key value violates unique constraint "pg_|conflict with concurrent transaction|server closed the connection unexpectedly|SSL SYSCALL error/i;

/**
 * The Data API's "environmental error while running" a submitted statement:
 * it carries the statement's id, and the SDK's standard retry may already
 * have submitted it again.
 */
const ENVIRONMENTAL_ERRORS: ReadonlySet<string> = new Set(['ExecuteStatementException', 'BatchExecuteStatementException']);

/** Data API errors that mean "busy or briefly unavailable" (the SDK already retried the 5xx ones). */
const TRANSIENT_API_ERRORS = new Set([
  ...ENVIRONMENTAL_ERRORS,
  'ActiveStatementsExceededException',
  'ActiveSessionsExceededException',
  'InternalServerException',
  'DatabaseConnectionException',
  'ThrottlingException',
  'TooManyRequestsException',
  'ServiceUnavailableException',
  'TimeoutError',
]);

const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

/** DescribeStatement's statuses of a statement that has not ended yet. */
export const STILL_RUNNING: ReadonlySet<string> = new Set(['SUBMITTED', 'PICKED', 'STARTED']);

/** Maps any error from the SDK into the tool's transient/permanent classes. */
export function classifyApiError(error: unknown, what: string): Error {
  if (error instanceof TransientWarehouseError || error instanceof WarehouseError || error instanceof ValidationError) return error;
  const e = (error ?? {}) as { name?: string; code?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (code && NETWORK_ERROR_CODES.has(code)) {
    return new TransientWarehouseError(`warehouse unreachable while trying to ${what} (${code}): ${redactRowValues(e.message ?? '')}`.trim(), { cause: error });
  }
  if (e.name && TRANSIENT_API_ERRORS.has(e.name)) {
    return new TransientWarehouseError(`Data API is busy or unavailable while trying to ${what}: ${e.name}: ${redactRowValues(e.message ?? '')}`, {
      cause: error,
    });
  }
  return new WarehouseError(`Data API refused to ${what}: ${e.name ?? 'Error'}: ${redactRowValues(e.message ?? String(error))}`, { cause: error });
}

/** A statement's error as the step's: its wording kept, the row values the database quoted redacted (domain/redact.ts). */
export function classifySqlError(message: string, statementName: string): Error {
  const redacted = redactRowValues(message);
  if (TRANSIENT_SQL_ERROR.test(message)) {
    return new TransientWarehouseError(`${statementName}: ${redacted}`);
  }
  return new WarehouseError(`${statementName} failed: ${redacted}`);
}

function decodeField(field: Field): Row[string] {
  if (field.isNull) return null;
  if (field.longValue !== undefined) return field.longValue;
  if (field.doubleValue !== undefined) return field.doubleValue;
  if (field.booleanValue !== undefined) return field.booleanValue;
  if (field.stringValue !== undefined) return field.stringValue;
  if (field.blobValue !== undefined) return field.blobValue;
  return null;
}

/**
 * The warehouse as the handlers see it: every statement goes through the
 * Redshift Data API. Submit returns at once; wait polls DescribeStatement.
 */
export class Warehouse {
  constructor(
    private readonly client: RedshiftDataClient,
    private readonly target: WarehouseTarget,
    private readonly poll: PollOptions = DEFAULT_POLL,
    /** Epoch ms after which no wait goes on (the invocation is about to end). */
    private readonly deadline: number = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * The same warehouse, waiting no longer than `deadline` (epoch ms): a wait
   * that would outlast the Lambda invocation ends with a
   * TransientWarehouseError instead, which Step Functions retries and the
   * retry re-attaches to the statement.
   */
  until(deadline: number): Warehouse {
    return new Warehouse(this.client, this.target, this.poll, deadline);
  }

  /**
   * Submits one statement with `:name` parameters; returns its id without
   * waiting. A statement with a `lock` runs after it, in one transaction
   * (BatchExecuteStatement with the same parameters).
   */
  async submit(statement: Statement, name: string): Promise<string> {
    const parameters = Object.entries(statement.parameters ?? {}).map(([n, value]) => ({ name: n, value }));
    const common = {
      ...targetFields(this.target),
      StatementName: name.slice(0, 500),
      ...(parameters.length > 0 ? { Parameters: parameters } : {}),
    };
    try {
      const out = statement.lock
        ? await this.client.send(new BatchExecuteStatementCommand({ ...common, Sqls: [statement.lock, statement.sql] }))
        : await this.client.send(new ExecuteStatementCommand({ ...common, Sql: statement.sql }));
      return out.Id!;
    } catch (error) {
      return this.reattachOrThrow(error, name);
    }
  }

  /**
   * Submits statements that run in order as one transaction, with one set
   * of `:name` parameters for all of them (BatchExecuteStatement's
   * `Parameters`, in the service model the SDK is built from).
   */
  async submitBatch(sqls: readonly string[], name: string, parameters: Readonly<Record<string, string>> = {}): Promise<string> {
    const list = Object.entries(parameters).map(([n, value]) => ({ name: n, value }));
    try {
      const out = await this.client.send(
        new BatchExecuteStatementCommand({
          ...targetFields(this.target),
          Sqls: [...sqls],
          StatementName: name.slice(0, 500),
          ...(list.length > 0 ? { Parameters: list } : {}),
        }),
      );
      return out.Id!;
    } catch (error) {
      return this.reattachOrThrow(error, name);
    }
  }

  /**
   * Submits statements as one transaction, as submitBatch does, with a
   * ClientToken made of the request itself (target, statements, parameters,
   * name) and `key`: the same request sent again while the Data API keeps the
   * token answers the statement the first one created, whatever its status,
   * instead of running it again. `earlier` says the statement is older than
   * this request (an earlier attempt's).
   * https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_BatchExecuteStatement.html
   */
  async submitBatchOnce(
    sqls: readonly string[],
    name: string,
    parameters: Readonly<Record<string, string>> = {},
    key = '',
  ): Promise<{ id: string; earlier: boolean }> {
    const list = Object.entries(parameters).map(([n, value]) => ({ name: n, value }));
    const request = {
      ...targetFields(this.target),
      Sqls: [...sqls],
      StatementName: name.slice(0, 500),
      ...(list.length > 0 ? { Parameters: list } : {}),
    };
    const sent = Date.now();
    try {
      const out = await this.client.send(new BatchExecuteStatementCommand({ ...request, ClientToken: requestToken(request, key) }));
      return { id: out.Id!, earlier: out.CreatedAt !== undefined && out.CreatedAt.getTime() < sent };
    } catch (error) {
      return { id: await this.reattachOrThrow(error, name), earlier: false };
    }
  }

  /**
   * After an environmental error of a submit, the statement it names may run
   * all the same: then its id is the submit's answer (waiting for it is
   * re-attaching, never running the statement twice). Otherwise, and for
   * every other error, the classified error is thrown: an environmental
   * error is transient, so a retry submits the statement again.
   */
  private async reattachOrThrow(error: unknown, name: string): Promise<string> {
    const { name: errorName, StatementId: id } = (error ?? {}) as { name?: string; StatementId?: string };
    if (errorName && ENVIRONMENTAL_ERRORS.has(errorName) && id) {
      const earlier = await this.status(id, name);
      if (earlier && earlier.status !== 'FAILED' && earlier.status !== 'ABORTED') return id;
    }
    throw classifyApiError(error, `submit ${name}`);
  }

  /** Waits for a statement to finish; FAILED and ABORTED become classified errors. */
  async wait(id: string, name: string): Promise<StatementOutcome> {
    const now = this.poll.now ?? Date.now;
    const started = now();
    let delay = this.poll.initialDelayMs;
    let polls = 0;
    for (;;) {
      let described: DescribeStatementCommandOutput;
      const waitSeconds = this.longPollSeconds(now() - started);
      const asked = now();
      let waited = waitSeconds > 0;
      try {
        described = await this.client.send(new DescribeStatementCommand({ Id: id, ...(waitSeconds > 0 ? { WaitTimeSeconds: waitSeconds } : {}) }));
      } catch (error) {
        if ((error as { name?: string }).name !== 'ActiveWaitingRequestsExceededException') throw classifyApiError(error, `describe ${name} (${id})`);
        described = { Id: id, Status: 'SUBMITTED', $metadata: {} };
        waited = false;
      }
      polls += 1;
      switch (described.Status) {
        case 'FINISHED':
          return {
            id,
            resultRows: described.ResultRows ?? -1,
            hasResultSet: described.HasResultSet ?? false,
            durationMs: Math.round((described.Duration ?? 0) / 1e6),
            subStatements: (described.SubStatements ?? []).map((s) => ({
              id: s.Id!,
              resultRows: s.ResultRows ?? -1,
              hasResultSet: s.HasResultSet ?? false,
            })),
            polls,
          };
        case 'FAILED': {
          const failedSub = described.SubStatements?.find((s) => s.Status === 'FAILED');
          const message = described.Error ?? failedSub?.Error ?? 'statement failed without a message';
          throw classifySqlError(message, name);
        }
        case 'ABORTED':
          throw new WarehouseError(`${name} (${id}) was cancelled`);
        default:
          break;
      }
      // A long poll that waited its time polls again at once; one the
      // service answered early (or refused) sleeps like a plain poll.
      const pause = waited && now() - asked >= (waitSeconds * 1000) / 2 ? 0 : Math.min(delay, pollDelayCap(now() - started));
      if (now() - started + pause > this.poll.timeoutMs || now() + pause > this.deadline) {
        throw new StatementStillRunningError(`${name} (${id}) still ${described.Status} after ${Math.round((now() - started) / 1000)} s`, id);
      }
      if (pause > 0) {
        await (this.poll.sleep ?? sleep)(pause);
        delay = Math.min(this.poll.maxDelayMs, delay * this.poll.factor);
      }
    }
  }

  /**
   * WaitTimeSeconds for the next DescribeStatement: the configured long
   * poll, shortened so the answer comes before the wait's time-out and the
   * invocation's deadline; 0 (a plain poll) when long polling is off or
   * less than a second is left.
   */
  private longPollSeconds(elapsedMs: number): number {
    const configured = this.poll.longPollSeconds ?? 0;
    if (configured <= 0) return 0;
    const now = (this.poll.now ?? Date.now)();
    const leftMs = Math.min(this.poll.timeoutMs - elapsedMs, this.deadline - now);
    return Math.max(0, Math.min(configured, 30, Math.floor(leftMs / 1000)));
  }

  /**
   * Statements of this role named exactly `name`, newest first, whatever
   * their status (ListStatements shows only FINISHED ones unless asked for
   * ALL). StatementName filters by prefix, case-sensitively; the exact
   * match is kept here. RoleLevel: every statement of the caller's IAM
   * role, not only this session's, so another invocation's statement is
   * found. https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_ListStatements.html
   */
  async statementsNamed(name: string): Promise<ListedStatement[]> {
    const statementName = name.slice(0, 500);
    const found: ListedStatement[] = [];
    let nextToken: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListStatementsCommand({ StatementName: statementName, Status: 'ALL', RoleLevel: true, MaxResults: 100, NextToken: nextToken }),
        );
      } catch (error) {
        throw classifyApiError(error, `list the statements named ${statementName}`);
      }
      for (const s of page.Statements ?? []) {
        if (s.StatementName !== statementName || !s.Id) continue;
        found.push({ id: s.Id, name: s.StatementName, status: s.Status ?? 'UNKNOWN', createdAt: s.CreatedAt, updatedAt: s.UpdatedAt });
      }
      nextToken = page.NextToken;
    } while (nextToken);
    return found.sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0));
  }

  /** Statements of this role whose names start with `prefix` and that still run (SUBMITTED, PICKED, STARTED). */
  async runningStatements(prefix: string): Promise<ListedStatement[]> {
    const found: ListedStatement[] = [];
    for (const status of STILL_RUNNING) {
      let nextToken: string | undefined;
      do {
        let page;
        try {
          page = await this.client.send(
            new ListStatementsCommand({ StatementName: prefix, Status: status as 'STARTED', RoleLevel: true, MaxResults: 100, NextToken: nextToken }),
          );
        } catch (error) {
          throw classifyApiError(error, `list the running statements named ${prefix}...`);
        }
        for (const s of page.Statements ?? []) {
          if (!s.Id || !s.StatementName?.startsWith(prefix) || found.some((f) => f.id === s.Id)) continue;
          found.push({ id: s.Id, name: s.StatementName, status: s.Status ?? status, createdAt: s.CreatedAt, updatedAt: s.UpdatedAt });
        }
        nextToken = page.NextToken;
      } while (nextToken);
    }
    return found;
  }

  /**
   * The status of a statement submitted earlier (maybe by another
   * invocation); undefined when the Data API no longer knows it (results
   * are kept 24 hours).
   */
  async status(id: string, name: string, waitSeconds = 0): Promise<{ status: string; resultRows: number } | undefined> {
    try {
      const described = await this.client.send(new DescribeStatementCommand({ Id: id, ...(waitSeconds > 0 ? { WaitTimeSeconds: waitSeconds } : {}) }));
      return { status: described.Status ?? 'UNKNOWN', resultRows: described.ResultRows ?? -1 };
    } catch (error) {
      if ((error as { name?: string }).name === 'ResourceNotFoundException') return undefined;
      throw classifyApiError(error, `describe ${name} (${id})`);
    }
  }

  /**
   * Cancels a statement this role submitted and waits, at most `timeoutMs` (nor
   * past the deadline), until it no longer runs. Returns its status then: ABORTED,
   * FINISHED or FAILED if it ended first (CancelStatement's ValidationException for
   * an ended one is answered by its status), a running status if it outlasted the
   * wait; undefined when the Data API no longer knows it.
   * https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_CancelStatement.html
   */
  async cancel(id: string, name: string, timeoutMs: number): Promise<string | undefined> {
    const now = this.poll.now ?? Date.now;
    const until = Math.min(now() + timeoutMs, this.deadline);
    try {
      await this.client.send(new CancelStatementCommand({ Id: id }));
    } catch (error) {
      const errorName = (error as { name?: string }).name;
      if (errorName === 'ResourceNotFoundException') return undefined;
      if (errorName !== 'ValidationException') throw classifyApiError(error, `cancel ${name} (${id})`);
    }
    const started = now();
    let delay = this.poll.initialDelayMs;
    for (;;) {
      // A long poll when on, no longer than the cancel may wait.
      const waitSeconds = Math.max(0, Math.min(this.poll.longPollSeconds ?? 0, 30, Math.floor((until - now()) / 1000)));
      const asked = now();
      const described = await this.status(id, name, waitSeconds).catch((error: unknown) => {
        if ((error as Error).cause && ((error as Error).cause as { name?: string }).name === 'ActiveWaitingRequestsExceededException')
          return { status: 'STARTED', resultRows: -1 };
        throw error;
      });
      const pause = waitSeconds > 0 && now() - asked >= (waitSeconds * 1000) / 2 ? 0 : Math.min(delay, pollDelayCap(now() - started));
      if (!described || !STILL_RUNNING.has(described.status) || now() + pause > until) return described?.status;
      if (pause > 0) {
        await (this.poll.sleep ?? sleep)(pause);
        delay = Math.min(this.poll.maxDelayMs, delay * this.poll.factor);
      }
    }
  }

  async execute(statement: Statement, name: string): Promise<StatementOutcome> {
    return this.wait(await this.submit(statement, name), name);
  }

  async batch(sqls: readonly string[], name: string, parameters: Readonly<Record<string, string>> = {}): Promise<StatementOutcome> {
    return this.wait(await this.submitBatch(sqls, name, parameters), name);
  }

  /** Runs a SELECT and returns every row (all pages) as objects keyed by column name. */
  async query(statement: Statement, name: string): Promise<Row[]> {
    const outcome = await this.execute(statement, name);
    return (await this.results(outcome.id, name)).rows;
  }

  /** Columns of a statement's result, with the type names of its ColumnMetadata (works for `LIMIT 0`). */
  async columns(statement: Statement, name: string): Promise<ResultColumn[]> {
    const outcome = await this.execute(statement, name);
    return (await this.results(outcome.id, name)).types;
  }

  private async results(id: string, name: string): Promise<{ columns: string[]; types: ResultColumn[]; rows: Row[] }> {
    const rows: Row[] = [];
    let columns: string[] = [];
    let types: ResultColumn[] = [];
    let nextToken: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new GetStatementResultCommand({ Id: id, NextToken: nextToken }));
      } catch (error) {
        throw classifyApiError(error, `read results of ${name} (${id})`);
      }
      if (page.ColumnMetadata) {
        types = page.ColumnMetadata.map((c: ColumnMetadata) => ({ name: c.name ?? c.label ?? '', typeName: c.typeName ?? '' }));
        columns = types.map((c) => c.name);
      }
      for (const record of page.Records ?? []) {
        const row: Row = {};
        record.forEach((field, i) => {
          row[columns[i] ?? `column${i}`] = decodeField(field);
        });
        rows.push(row);
      }
      nextToken = page.NextToken;
    } while (nextToken);
    return { columns, types, rows };
  }
}

let cached: { key: string; warehouse: Warehouse } | undefined;

/**
 * The handlers' warehouse, built from the environment the stack set
 * (domain/warehouse-target.ts). Locally REDSHIFT_DATA_ENDPOINT points the
 * real SDK client at the local Data API; on AWS it is unset.
 */
export function warehouseFromEnv(env: NodeJS.ProcessEnv = process.env): Warehouse {
  const target = warehouseTargetFromEnv(env);
  const { endpoint, pollMaxDelayMs: maxDelay = DEFAULT_POLL.maxDelayMs, longPollSeconds = DEFAULT_POLL.longPollSeconds } = dataApiSettingsFromEnv(env);
  const key = JSON.stringify({ target, endpoint, maxDelay, longPollSeconds });
  if (cached?.key !== key) {
    // Traced: on AWS each Data API call is an X-Ray subsegment (a no-op locally).
    const client = tracer.captureAWSv3Client(new RedshiftDataClient({ ...(endpoint ? { endpoint } : {}), maxAttempts: 3 }));
    cached = { key, warehouse: new Warehouse(client, target, { ...DEFAULT_POLL, maxDelayMs: maxDelay, longPollSeconds }) };
  }
  return cached.warehouse;
}

/** Time kept back from the end of an invocation: enough to report and return. */
export const INVOCATION_MARGIN_MS = 30_000;

/** The handlers' warehouse for one invocation: waits end before the Lambda does. */
export function warehouseFor(context: { getRemainingTimeInMillis?: () => number } | undefined, env: NodeJS.ProcessEnv = process.env): Warehouse {
  const remaining = context?.getRemainingTimeInMillis?.();
  const warehouse = warehouseFromEnv(env);
  return remaining === undefined ? warehouse : warehouse.until(Date.now() + Math.max(1_000, remaining - INVOCATION_MARGIN_MS));
}

/**
 * Runs `step` again after a TransientWarehouseError, a few times with a
 * short backoff, inside this invocation. For bookkeeping that must not be
 * left to a Step Functions retry (which would start the whole step over).
 */
export async function retryTransient<T>(step: () => Promise<T>, attempts = 5, baseDelayMs = 50): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (!(error instanceof TransientWarehouseError) || attempt >= attempts) throw error;
      await sleep(baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2));
    }
  }
}

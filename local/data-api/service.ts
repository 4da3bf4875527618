// The Data API operations: request validation, and responses in the shapes of
// the redshift-data model (timestamps as Date; server.ts writes epoch seconds).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { AwsJsonCaller } from '../aws-json-server.ts';
import { describeColumns, listDatabases, listSchemas, listTables, type PageRequest } from './catalog.ts';
import { DataApiError, validation } from './errors.ts';
import { columnMetadata, encodeRecord, encodingsOf } from './fields.ts';
import { checkAllReferenced, type SqlParameter, type TranslatedSql, translate, validateParameters } from './params.ts';
import { type GatedSql, gate, type InformationalConstraints, recordKeyStatements, withDynamicParameters } from './redshift-mode.ts';
import type { StatementRunner } from './runner.ts';
import { type ExecutionMode, Statement, StatementPart, type StatementStatus, type StatementTarget } from './statement.ts';
import type { StatementStore } from './statement-store.ts';

export interface RedshiftDataServiceOptions {
  /** Records per GetStatementResult page. */
  resultPageRows: number;
  /** Fault injection: see LocalDataApiOptions.environmentalError. */
  environmentalError?: EnvironmentalFault;
  /** Redshift mode (redshift-mode.ts): where key constraints are recorded; undefined turns the mode off. */
  constraints?: InformationalConstraints;
}

/**
 * Decides, per submitted statement, whether the call answers the Data API's
 * "environmental error" (ExecuteStatementException or
 * BatchExecuteStatementException, HTTP 500, with the StatementId) instead of
 * its Id: 'accepted' when the statement was accepted and runs all the same,
 * 'failed' when it ended FAILED without running; undefined for no fault.
 */
export type EnvironmentalFault = (statement: { sqls: readonly string[]; name?: string }) => 'accepted' | 'failed' | undefined;

type Input = Record<string, unknown>;
type Output = Record<string, unknown>;

const MAX_SQL_BYTES = 100 * 1024;
const MAX_BATCH_SQLS = 40;
const MAX_WAIT_SECONDS = 30;
/** The metadata operations' MaxResults: 0 to 1000 (PageSize in the API model); 0 or none returns the most a page holds. */
const MAX_CATALOG_PAGE = 1000;
const STATUSES = ['SUBMITTED', 'PICKED', 'STARTED', 'FINISHED', 'ABORTED', 'FAILED'];

export class RedshiftDataService {
  constructor(
    private readonly store: StatementStore,
    private readonly runner: StatementRunner,
    private readonly options: RedshiftDataServiceOptions,
  ) {}

  readonly operations: Record<string, (input: Input, caller: AwsJsonCaller) => Promise<Output>> = {
    ExecuteStatement: (input, caller) => this.executeStatement(input, caller),
    BatchExecuteStatement: (input, caller) => this.batchExecuteStatement(input, caller),
    DescribeStatement: (input) => this.describeStatement(input),
    GetStatementResult: (input) => this.getStatementResult(input),
    CancelStatement: (input) => this.cancelStatement(input),
    ListStatements: (input, caller) => this.listStatements(input, caller),
    ListDatabases: (input) => this.listDatabases(input),
    ListSchemas: (input) => this.listSchemas(input),
    ListTables: (input) => this.listTables(input),
    DescribeTable: (input) => this.describeTable(input),
  };

  async executeStatement(input: Input, caller: AwsJsonCaller = {}): Promise<Output> {
    const sql = requireSql(input.Sql, 'sql');
    const parameters = validateParameters(input.Parameters);
    checkAllReferenced([sql], parameters);
    const id = randomUUID();
    const [gated] = this.prepare([sql], parameters, false);
    const part = new StatementPart(id, sql, gated!.sql);
    return this.submit(input, caller, { id, isBatch: false, parameters, executionMode: 'AUTO_COMMIT', parts: [part] }, [gated!]);
  }

  async batchExecuteStatement(input: Input, caller: AwsJsonCaller = {}): Promise<Output> {
    const sqls = input.Sqls;
    if (!Array.isArray(sqls) || sqls.length < 1 || sqls.length > MAX_BATCH_SQLS) {
      throw validation(`1 validation error detected: Value at 'sqls' failed to satisfy constraint: Member must have length between 1 and ${MAX_BATCH_SQLS}`);
    }
    sqls.forEach((sql) => requireSql(sql, 'sqls.member'));
    const parameters = validateParameters(input.Parameters);
    checkAllReferenced(sqls as string[], parameters);
    const mode = input.ExecutionMode ?? 'TRANSACTION';
    if (mode !== 'TRANSACTION' && mode !== 'AUTO_COMMIT') {
      throw validation(
        `1 validation error detected: Value '${String(mode)}' at 'executionMode' failed to satisfy constraint: Member must satisfy enum value set: [TRANSACTION, AUTO_COMMIT]`,
      );
    }
    const id = randomUUID();
    const gated = this.prepare(sqls as string[], parameters, mode === 'TRANSACTION' && sqls.length > 1);
    const parts = (sqls as string[]).map((sql, i) => new StatementPart(`${id}:${i + 1}`, sql, gated[i]!.sql));
    return this.submit(input, caller, { id, isBatch: true, parameters, executionMode: mode, parts }, gated);
  }

  async describeStatement(input: Input): Promise<Output> {
    const { statement, part } = this.store.get(input.Id);
    await waitFor(statement, input.WaitTimeSeconds);
    return part ? { ...targetOf(statement), ...describePart(part), Id: part.id } : describeStatement(statement);
  }

  async getStatementResult(input: Input): Promise<Output> {
    const { statement, part: addressed } = this.store.get(input.Id);
    await waitFor(statement, input.WaitTimeSeconds);
    if (!addressed && statement.isBatch) {
      throw validation('Query does not have result. Use the identifier of a sub-statement (<Id>:<n>) to fetch results of a batch.');
    }
    const part = addressed ?? statement.parts[0]!;
    if (part.status !== 'FINISHED') {
      throw validation(statement.isTerminal ? `Query does not have result. Status: ${part.status}.` : `Query has not finished. Status: ${part.status}.`);
    }
    if (!part.hasResultSet || !part.result) throw validation('Query does not have result');
    const { columns, rows } = part.result;
    const offset = decodeToken(input.NextToken);
    const end = Math.min(offset + this.options.resultPageRows, rows.length);
    const encodings = encodingsOf(columns);
    const records = [];
    for (let i = offset; i < end; i++) records.push(encodeRecord(rows[i]!, encodings));
    return {
      Records: records,
      ColumnMetadata: columns.map(columnMetadata),
      TotalNumRows: rows.length,
      ...(end < rows.length ? { NextToken: encodeToken(end) } : {}),
    };
  }

  async cancelStatement(input: Input): Promise<Output> {
    const { statement, part } = this.store.get(input.Id);
    if (part) throw validation('Cancel the batch by its Id, not a sub-statement.');
    if (statement.isTerminal) {
      throw validation(`Could not cancel a query that is already in ${statement.status} state.`);
    }
    await this.runner.cancel(statement);
    return { Status: true };
  }

  /**
   * RoleLevel (default true) lists the statements of every session of the
   * caller's IAM role; false only those of the caller's current session.
   * Locally the session is the access key id the request is signed with,
   * and every session is of one role: the endpoint knows no IAM
   * (docs/decisions/role-level-statements.md).
   * https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_ListStatements.html
   */
  async listStatements(input: Input, caller: AwsJsonCaller = {}): Promise<Output> {
    if (input.RoleLevel !== undefined && input.RoleLevel !== null && typeof input.RoleLevel !== 'boolean') {
      throw validation("1 validation error detected: Value at 'roleLevel' failed to satisfy constraint: Member must be a boolean");
    }
    const status = input.Status as string | undefined;
    if (status !== undefined && status !== 'ALL' && !STATUSES.includes(status)) {
      throw validation(
        `1 validation error detected: Value '${status}' at 'status' failed to satisfy constraint: Member must satisfy enum value set: [${[...STATUSES, 'ALL'].join(', ')}]`,
      );
    }
    const max = input.MaxResults === undefined || input.MaxResults === 0 ? 100 : Number(input.MaxResults);
    if (!Number.isInteger(max) || max < 0 || max > 100) throw validation('MaxResults must be between 0 and 100.');
    // "By default, only finished statements are shown."
    // https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_ListStatements.html
    const all = this.store.list({
      status: status === 'ALL' ? undefined : ((status ?? 'FINISHED') as StatementStatus),
      statementNamePrefix: optionalString(input.StatementName, 'statementName'),
      database: optionalString(input.Database, 'database'),
      clusterIdentifier: optionalString(input.ClusterIdentifier, 'clusterIdentifier'),
      workgroupName: optionalString(input.WorkgroupName, 'workgroupName'),
      ...(input.RoleLevel === false ? { session: caller.accessKeyId ?? '' } : {}),
    });
    const offset = decodeToken(input.NextToken);
    const page = all.slice(offset, offset + max);
    return {
      Statements: page.map(statementData),
      ...(offset + max < all.length ? { NextToken: encodeToken(offset + max) } : {}),
    };
  }

  async listDatabases(input: Input): Promise<Output> {
    const target = validateTarget(input);
    const page = catalogPage(input);
    const { items, more } = await this.runner.withSession(target, (db) => listDatabases(db, page));
    return { Databases: items, ...nextPage(page, more) };
  }

  async listSchemas(input: Input): Promise<Output> {
    const schema = optionalString(input.SchemaPattern, 'schemaPattern');
    const page = catalogPage(input);
    const { items, more } = await this.onCatalog(input, (db) => listSchemas(db, schema, page));
    return { Schemas: items, ...nextPage(page, more) };
  }

  async listTables(input: Input): Promise<Output> {
    const patterns = { schema: optionalString(input.SchemaPattern, 'schemaPattern'), table: optionalString(input.TablePattern, 'tablePattern') };
    const page = catalogPage(input);
    const { items, more } = await this.onCatalog(input, (db) => listTables(db, patterns, page));
    return { Tables: items, ...nextPage(page, more) };
  }

  /** Pages through columns, not tables: "A token is returned to page through the column list." */
  async describeTable(input: Input): Promise<Output> {
    const names = { schema: optionalString(input.Schema, 'schema'), table: optionalString(input.Table, 'table') };
    const page = catalogPage(input);
    const { items, more } = await this.onCatalog(input, (db) => describeColumns(db, names, page));
    return { ...(names.table !== undefined ? { TableName: names.table } : {}), ColumnList: items, ...nextPage(page, more) };
  }

  /**
   * Reads the catalog of the request's Database. With a ConnectedDatabase,
   * the user connects there (it must let the user in) while the catalog
   * read is Database's: PostgreSQL has no catalog of another database, so
   * the read runs on a connection to Database, as the same user.
   */
  private async onCatalog<T>(input: Input, read: (db: pg.ClientBase) => Promise<T>): Promise<T> {
    const target = validateTarget(input);
    const connected = optionalString(input.ConnectedDatabase, 'connectedDatabase');
    if (connected !== undefined && connected !== target.database) await this.runner.withSession({ ...target, database: connected }, async () => undefined);
    return this.runner.withSession(target, read);
  }

  /** Translated texts, gated when Redshift mode is on. */
  private prepare(sqls: string[], parameters: SqlParameter[], inTransaction: boolean): (GatedSql & { sql: TranslatedSql })[] {
    const translated = sqls.map((sql) => translate(sql, parameters));
    const gated: GatedSql[] = this.options.constraints
      ? gate(
          translated.map((t) => t.text),
          inTransaction,
        )
      : translated.map((t) => ({ text: t.text, constraints: [] }));
    return gated.map((g, i) => {
      const dynamic =
        this.options.constraints && g.refusal === undefined ? withDynamicParameters(g.text, translated[i]!.values) : { values: translated[i]!.values };
      return {
        ...g,
        ...(dynamic.refusal !== undefined ? { refusal: dynamic.refusal } : {}),
        sql: {
          text: g.text,
          values: [...dynamic.values],
          ...(g.constraints.length > 0 || g.dropped || g.tableAttributes ? { after: recordKeyStatements(g) } : {}),
          ...(g.iamUser !== undefined ? { iamUser: g.iamUser } : {}),
        },
      };
    });
  }

  private async submit(
    input: Input,
    caller: AwsJsonCaller,
    spec: { id: string; isBatch: boolean; parameters: SqlParameter[]; executionMode: ExecutionMode; parts: StatementPart[] },
    gated: GatedSql[],
  ): Promise<Output> {
    const target = validateTarget(input);
    const statementName = optionalString(input.StatementName, 'statementName');
    if (statementName !== undefined && statementName.length > 500) throw validation('StatementName must be at most 500 characters.');
    if (input.ResultFormat !== undefined && input.ResultFormat !== 'JSON') {
      throw validation('The local Data API supports ResultFormat JSON only.');
    }
    if (input.SessionId !== undefined || input.SessionKeepAliveSeconds !== undefined) {
      throw validation('The local Data API does not support sessions (SessionId, SessionKeepAliveSeconds).');
    }
    const clientToken = optionalString(input.ClientToken, 'clientToken');
    const fingerprint = JSON.stringify({ ...input, ClientToken: undefined, WaitTimeSeconds: undefined });
    const earlier = this.store.byClientToken(clientToken, fingerprint);
    if (earlier) return executeOutput(earlier);

    const statement = new Statement({
      ...spec,
      target,
      statementName,
      withEvent: input.WithEvent === true,
      session: caller.accessKeyId ?? '',
    });
    this.store.add(statement, clientToken, fingerprint);
    const refused = gated.findIndex((g) => g.refusal !== undefined);
    const fault = refused >= 0 ? undefined : this.options.environmentalError?.({ sqls: spec.parts.map((p) => p.queryString), name: statementName });
    if (refused >= 0) {
      // Refused before any part runs, as Redshift fails the statement (and a batch as a whole).
      statement.parts[refused]!.fail(gated[refused]!.refusal!);
      statement.conclude();
      statement.settle();
    } else if (fault === 'failed') {
      statement.conclude('ERROR: the statement could not be run: environmental error (local fault injection)');
      statement.settle();
    } else {
      void this.runner.run(statement);
      void statement.ended.then(() => this.recordConstraints(statement, gated));
    }
    if (fault) {
      throw new DataApiError(
        spec.isBatch ? 'BatchExecuteStatementException' : 'ExecuteStatementException',
        'The SQL statement encountered an environmental error while running.',
        {
          StatementId: statement.id,
        },
      );
    }
    await waitFor(statement, input.WaitTimeSeconds);
    return executeOutput(statement);
  }

  /** Key constraints of the parts that committed. */
  private recordConstraints(statement: Statement, gated: GatedSql[]): void {
    const atomic = statement.isBatch && statement.executionMode === 'TRANSACTION';
    if (atomic && statement.status !== 'FINISHED') return;
    statement.parts.forEach((part, i) => {
      if (part.status === 'FINISHED')
        this.options.constraints?.record(statement.target.database, [...gated[i]!.constraints, ...(gated[i]!.packedConstraints ?? [])]);
    });
  }
}

function requireSql(sql: unknown, member: string): string {
  if (typeof sql !== 'string' || sql.length === 0) {
    throw validation(
      `1 validation error detected: Value at '${member}' failed to satisfy constraint: Member must not be null and must have length greater than or equal to 1`,
    );
  }
  if (Buffer.byteLength(sql) > MAX_SQL_BYTES) {
    throw validation(`The SQL statement is ${Buffer.byteLength(sql)} bytes; the maximum is ${MAX_SQL_BYTES} bytes (100 KB).`);
  }
  return sql;
}

function optionalString(value: unknown, member: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw validation(`1 validation error detected: Value at '${member}' must be a string`);
  return value;
}

/** A cluster (temporary credentials as DbUser or IAM identity, or a secret) or a serverless workgroup. */
function validateTarget(input: Input): StatementTarget {
  const database = optionalString(input.Database, 'database');
  const clusterIdentifier = optionalString(input.ClusterIdentifier, 'clusterIdentifier');
  const workgroupName = optionalString(input.WorkgroupName, 'workgroupName');
  const dbUser = optionalString(input.DbUser, 'dbUser');
  const secretArn = optionalString(input.SecretArn, 'secretArn');
  if (!database) throw validation('Database is required.');
  if (!clusterIdentifier && !workgroupName) {
    throw validation('Either ClusterIdentifier (with DbUser, SecretArn or an IAM identity) or WorkgroupName is required.');
  }
  if (clusterIdentifier && workgroupName) throw validation('Specify either ClusterIdentifier or WorkgroupName, not both.');
  if (dbUser && secretArn) throw validation('Specify either DbUser or SecretArn, not both.');
  if (dbUser && workgroupName) throw validation('DbUser is not supported for a serverless workgroup; use SecretArn or an IAM identity.');
  return { database, clusterIdentifier, workgroupName, dbUser, secretArn };
}

/**
 * Waits until the statement has ended and given its connection back (a
 * caller that sees it ended may count on the connection being idle), or
 * until `seconds` have passed.
 */
async function waitFor(statement: Statement, seconds: unknown): Promise<void> {
  if (seconds === undefined || seconds === null) return;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS) {
    throw validation(`WaitTimeSeconds must be between 0 and ${MAX_WAIT_SECONDS}.`);
  }
  if (seconds === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([statement.settled, new Promise((resolve) => (timer = setTimeout(resolve, seconds * 1000)))]);
  clearTimeout(timer);
}

function targetOf(statement: Statement): Output {
  const t = statement.target;
  return {
    Database: t.database,
    ...(t.clusterIdentifier !== undefined ? { ClusterIdentifier: t.clusterIdentifier } : {}),
    ...(t.workgroupName !== undefined ? { WorkgroupName: t.workgroupName } : {}),
    ...(t.dbUser !== undefined ? { DbUser: t.dbUser } : {}),
    ...(t.secretArn !== undefined ? { SecretArn: t.secretArn } : {}),
  };
}

function executeOutput(statement: Statement): Output {
  return { Id: statement.id, CreatedAt: statement.createdAt, ...targetOf(statement) };
}

function describePart(part: StatementPart): Output {
  return {
    Id: part.id,
    Status: part.status,
    CreatedAt: part.createdAt,
    UpdatedAt: part.updatedAt,
    Duration: part.durationNs,
    QueryString: part.queryString,
    HasResultSet: part.hasResultSet,
    ResultRows: part.resultRows,
    ResultSize: part.resultSize,
    RedshiftQueryId: part.queryId,
    ...(part.error !== undefined ? { Error: part.error } : {}),
  };
}

function describeStatement(statement: Statement): Output {
  const common = {
    ...targetOf(statement),
    Id: statement.id,
    Status: statement.status,
    CreatedAt: statement.createdAt,
    UpdatedAt: statement.updatedAt,
    Duration: statement.durationNs,
    RedshiftPid: statement.pid ?? 0,
    ResultFormat: 'JSON',
    ...(statement.error !== undefined ? { Error: statement.error } : {}),
    ...(statement.parameters.length > 0 ? { QueryParameters: statement.parameters } : {}),
  };
  if (!statement.isBatch) {
    const part = statement.parts[0]!;
    return {
      ...common,
      QueryString: part.queryString,
      HasResultSet: part.hasResultSet,
      ResultRows: part.resultRows,
      ResultSize: part.resultSize,
      RedshiftQueryId: part.queryId,
    };
  }
  // A batch reports totals over its sub-statements, as the real API does.
  const counted = statement.parts.filter((p) => p.resultRows >= 0);
  return {
    ...common,
    HasResultSet: statement.parts.some((p) => p.hasResultSet),
    ResultRows: counted.length > 0 ? counted.reduce((n, p) => n + p.resultRows, 0) : -1,
    ResultSize: statement.parts.reduce((n, p) => n + Math.max(p.resultSize, 0), 0),
    RedshiftQueryId: 0,
    SubStatements: statement.parts.map(describePart),
  };
}

function statementData(statement: Statement): Output {
  return {
    Id: statement.id,
    Status: statement.status,
    CreatedAt: statement.createdAt,
    UpdatedAt: statement.updatedAt,
    IsBatchStatement: statement.isBatch,
    ResultFormat: 'JSON',
    ...(statement.isBatch ? { QueryStrings: statement.parts.map((p) => p.queryString) } : { QueryString: statement.parts[0]!.queryString }),
    ...(statement.statementName !== undefined ? { StatementName: statement.statementName } : {}),
    ...(statement.target.secretArn !== undefined ? { SecretArn: statement.target.secretArn } : {}),
    ...(statement.parameters.length > 0 ? { QueryParameters: statement.parameters } : {}),
  };
}

/** MaxResults and NextToken of a metadata operation. */
function catalogPage(input: Input): PageRequest {
  const max = input.MaxResults;
  if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isInteger(max))) {
    throw validation("1 validation error detected: Value at 'maxResults' failed to satisfy constraint: Member must be an integer");
  }
  if (typeof max === 'number' && (max < 0 || max > MAX_CATALOG_PAGE)) {
    throw validation(
      `1 validation error detected: Value '${max}' at 'maxResults' failed to satisfy constraint: Member must have value ${max < 0 ? 'greater than or equal to 0' : `less than or equal to ${MAX_CATALOG_PAGE}`}`,
    );
  }
  return { offset: decodeToken(input.NextToken), limit: typeof max === 'number' && max > 0 ? max : MAX_CATALOG_PAGE };
}

function nextPage(page: PageRequest, more: boolean): Output {
  return more ? { NextToken: encodeToken(page.offset + page.limit) } : {};
}

function encodeToken(offset: number): string {
  return Buffer.from(JSON.stringify({ offset })).toString('base64url');
}

function decodeToken(token: unknown): number {
  if (token === undefined || token === null || token === '') return 0;
  try {
    const { offset } = JSON.parse(Buffer.from(String(token), 'base64url').toString()) as { offset: unknown };
    if (Number.isInteger(offset) && (offset as number) >= 0) return offset as number;
  } catch {
    // fall through
  }
  throw validation('Invalid NextToken.');
}

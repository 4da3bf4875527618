// One submitted ExecuteStatement / BatchExecuteStatement and its lifecycle.
// A single statement is a statement with one part; a batch has one part per
// SQL, each addressable as `<Id>:<n>`.
import type { ColumnSource } from './fields.ts';
import type { SqlParameter, TranslatedSql } from './params.ts';

export type StatementStatus = 'SUBMITTED' | 'PICKED' | 'STARTED' | 'FINISHED' | 'ABORTED' | 'FAILED';
export type ExecutionMode = 'TRANSACTION' | 'AUTO_COMMIT';

const TERMINAL: ReadonlySet<StatementStatus> = new Set(['FINISHED', 'ABORTED', 'FAILED']);

export function isTerminal(status: StatementStatus): boolean {
  return TERMINAL.has(status);
}

export interface StatementTarget {
  database: string;
  clusterIdentifier?: string;
  workgroupName?: string;
  dbUser?: string;
  secretArn?: string;
}

export interface StoredResult {
  columns: ColumnSource[];
  rows: (string | null)[][];
}

export class StatementPart {
  status: StatementStatus = 'SUBMITTED';
  readonly createdAt = new Date();
  updatedAt = new Date();
  durationNs = -1;
  resultRows = -1;
  resultSize = -1;
  hasResultSet = false;
  queryId = -1;
  error?: string;
  result?: StoredResult;
  private startedNs?: bigint;

  constructor(
    readonly id: string,
    readonly queryString: string,
    readonly sql: TranslatedSql,
  ) {}

  start(queryId: number): void {
    this.queryId = queryId;
    this.startedNs = process.hrtime.bigint();
    this.set('STARTED');
  }

  finish(rowCount: number | null, result: StoredResult | undefined, resultSize: number): void {
    this.resultRows = rowCount ?? -1;
    this.result = result;
    this.hasResultSet = result !== undefined;
    this.resultSize = result ? resultSize : -1;
    this.end('FINISHED');
  }

  fail(message: string): void {
    this.error = message;
    this.end('FAILED');
  }

  abort(): void {
    if (!isTerminal(this.status)) this.end('ABORTED');
  }

  /** Drops result rows (expiry), keeping the metadata. */
  dropResult(): void {
    this.result = undefined;
  }

  private end(status: StatementStatus): void {
    if (this.startedNs !== undefined) this.durationNs = Number(process.hrtime.bigint() - this.startedNs);
    this.set(status);
  }

  private set(status: StatementStatus): void {
    this.status = status;
    this.updatedAt = new Date();
  }
}

export interface StatementProps {
  id: string;
  isBatch: boolean;
  target: StatementTarget;
  statementName?: string;
  parameters: SqlParameter[];
  executionMode: ExecutionMode;
  withEvent: boolean;
  /** The caller's IAM session: the access key id of the request's signature. @default '' - unsigned */
  session?: string;
  parts: StatementPart[];
}

export class Statement {
  readonly id: string;
  readonly isBatch: boolean;
  readonly target: StatementTarget;
  readonly statementName?: string;
  readonly parameters: SqlParameter[];
  readonly executionMode: ExecutionMode;
  readonly withEvent: boolean;
  readonly session: string;
  readonly parts: StatementPart[];
  readonly createdAt = new Date();
  updatedAt = new Date();
  status: StatementStatus = 'SUBMITTED';
  error?: string;
  /** Backend pid of the connection running it. */
  pid?: number;
  abortRequested = false;
  /** A CancelStatement in progress: the runner keeps the connection until it is done. */
  cancelling?: Promise<void>;
  /** Resolves once the statement is terminal (its connection may still be in use). */
  readonly ended: Promise<void>;
  /** Resolves once the statement is terminal and its connection released. */
  readonly settled: Promise<void>;
  private readonly startedNs = process.hrtime.bigint();
  private endedNs?: bigint;
  private resolveEnded!: () => void;
  private resolveSettled!: () => void;

  constructor(props: StatementProps) {
    this.id = props.id;
    this.isBatch = props.isBatch;
    this.target = props.target;
    this.statementName = props.statementName;
    this.parameters = props.parameters;
    this.executionMode = props.executionMode;
    this.withEvent = props.withEvent;
    this.session = props.session ?? '';
    this.parts = props.parts;
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.settled = new Promise((resolve) => (this.resolveSettled = resolve));
  }

  get isTerminal(): boolean {
    return isTerminal(this.status);
  }

  get durationNs(): number {
    if (this.parts.length === 1) return this.parts[0]!.durationNs;
    return this.endedNs === undefined ? -1 : Number(this.endedNs - this.startedNs);
  }

  picked(pid: number): void {
    this.pid = pid;
    this.set('PICKED');
  }

  started(): void {
    if (this.status === 'PICKED') this.set('STARTED');
  }

  /** Ends the statement: its status follows from its parts unless a failure of its own is given. */
  conclude(failure?: string): void {
    for (const part of this.parts) part.abort();
    const failed = this.parts.find((p) => p.status === 'FAILED');
    if (failure !== undefined) {
      this.error = failure;
      this.end('FAILED');
    } else if (failed) {
      this.error = failed.error;
      this.end('FAILED');
    } else if (this.parts.some((p) => p.status === 'ABORTED')) {
      this.end('ABORTED');
    } else {
      this.end('FINISHED');
    }
  }

  settle(): void {
    this.resolveSettled();
  }

  private end(status: StatementStatus): void {
    this.endedNs = process.hrtime.bigint();
    this.set(status);
    this.resolveEnded();
  }

  private set(status: StatementStatus): void {
    this.status = status;
    this.updatedAt = new Date();
  }
}

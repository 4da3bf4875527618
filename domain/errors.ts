import { clipJsonUtf8 } from './text.ts';

/**
 * An error's message as it leaves a step: at most 32 KB of UTF-8 once
 * JSON-encoded, as it travels in Lambda's Cause. The Catch puts it into the
 * state (Step Functions refuses a state over 256 KB, terminally) and the
 * alert quotes it (SNS refuses 256 KB).
 */
export const MAX_ERROR_MESSAGE_BYTES = 32 * 1024;

/** An error message cut so that its JSON encoding fits MAX_ERROR_MESSAGE_BYTES, saying how long it was. */
export function boundedErrorMessage(message: string): string {
  return clipJsonUtf8(message, MAX_ERROR_MESSAGE_BYTES);
}

/**
 * One base error; each subclass sets `name` to a fixed string, which is what
 * a Step Functions Retry or Catch matches (`ErrorEquals`). The names are
 * literals, not `constructor.name`, because a bundler may rename classes.
 */
export class AtomicPublishError extends Error {
  override name = 'AtomicPublishError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Bad input or a bad pipeline spec: never retried, nothing was written. */
export class ValidationError extends AtomicPublishError {
  override name = 'ValidationError';
}

/** The warehouse is busy or briefly unreachable: retry with backoff. */
export class TransientWarehouseError extends AtomicPublishError {
  override name = 'TransientWarehouseError';
}

/**
 * A wait for a statement ran out (its poll time-out, or the invocation's
 * deadline) while the statement still runs in the warehouse. Transient
 * for every step (a retry re-attaches); LoadChunk instead ends with
 * LoadStillRunningError, and the workflow waits for the load without limit.
 */
export class StatementStillRunningError extends TransientWarehouseError {
  constructor(
    message: string,
    /** The Data API statement that still runs. */
    readonly statementId: string,
  ) {
    super(message);
  }
}

/**
 * LoadChunk's invocation ends while its chunk's load still runs in the
 * warehouse. Not transient and not a failure: the chunk's iteration catches
 * it (lib/publish-workflow.ts chunkLoad), waits briefly and invokes
 * LoadChunk again, which re-attaches to the load by its statement name. A
 * Catch has no attempt budget, so a load of any length is waited for.
 */
export class LoadStillRunningError extends AtomicPublishError {
  override name = 'LoadStillRunningError';
}

/** The warehouse rejected the SQL (syntax, missing table, bad data): retrying will not help. */
export class WarehouseError extends AtomicPublishError {
  override name = 'WarehouseError';
}

/** A reconciliation check failed: the batch must not be published. */
export class CheckFailedError extends AtomicPublishError {
  override name = 'CheckFailedError';
}

/** Another batch published this pipeline after this batch was planned. */
export class PublishConflictError extends AtomicPublishError {
  override name = 'PublishConflictError';
}

/**
 * Another execution, still running, held the pipeline's lease for all of
 * the wait Plan allows (LEASE_WAIT_SECONDS) while this run carried a
 * different batch: nothing was written; the page says who holds the lease.
 */
export class PipelineBusyError extends AtomicPublishError {
  override name = 'PipelineBusyError';
}

/** The pipeline spec deployed now differs from the one frozen when the batch was planned. */
export class SpecChangedError extends AtomicPublishError {
  override name = 'SpecChangedError';
}

/** Error names the state machine retries with backoff and full jitter. */
export const TRANSIENT_ERROR_NAMES = ['TransientWarehouseError'] as const;

/** Lambda service errors worth retrying (FACTS.md: AWS's list plus TooManyRequests). */
export const LAMBDA_SERVICE_ERROR_NAMES = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
  'Lambda.TooManyRequestsException',
] as const;

/**
 * The database user lacks a privilege the pipeline needs (the setup SQL
 * grants it): found by Plan before anything is written; never retried.
 */
export class MissingPrivilegeError extends AtomicPublishError {
  override name = 'MissingPrivilegeError';
}

/**
 * A view on the live table cannot be re-pointed at the new table (it reads
 * a column the new table lacks, or the handlers' user does not own it):
 * the publish is refused before the swap, naming the view; never retried.
 */
export class DependentViewError extends AtomicPublishError {
  override name = 'DependentViewError';
}

/**
 * Someone else changed the live table (its columns, or rows it was not
 * told to expect) since the batch was planned: the swap refused, nothing
 * was published. Not retried: the same batch would be refused again
 * until someone decides; a re-run's fresh Plan takes the table as it is
 * then as its base.
 */
export class OutOfBandChangeError extends AtomicPublishError {
  override name = 'OutOfBandChangeError';
}

/**
 * The source's newest chunk changed between Reconcile's check and the
 * publish transaction, which re-checks it (domain/publish/sql/swap.ts
 * sourceRecheck): nothing was published, the chunk is marked STALE. Not
 * retried: a re-run reloads the chunk.
 */
export class SourceChangedError extends AtomicPublishError {
  override name = 'SourceChangedError';
}

/**
 * The warehouse's circuit breaker is open (domain/neighbour/neighbour.ts): Plan ended
 * the execution at once instead of letting it retry against a warehouse
 * that keeps failing. Never retried; not counted as a failure of the warehouse.
 */
export class CircuitOpenError extends AtomicPublishError {
  override name = 'CircuitOpenError';
}

/** Redshift's and PostgreSQL's words for a statement the user may not run. */
export const PERMISSION_DENIED = /permission denied|must be superuser|sys:secadmin|not authorized/i;

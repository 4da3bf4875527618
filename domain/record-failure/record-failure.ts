/**
 * The alert an on-call engineer reads when a run fails: what failed, what
 * readers see now, what to do. Built from the execution state the Catch
 * left and from what the manifest says after the failure was recorded.
 * Whatever the state holds (a megabyte-long error, a huge input), the alert
 * stays far below SNS's 256 KB.
 */
import { SNS_MESSAGE_MAX_BYTES, SNS_SUBJECT_MAX_CHARACTERS } from '../aws-limits.ts';
import { type BatchRef, BatchStatus } from '../batch.ts';
import { boundedErrorMessage } from '../errors.ts';
import type { RollbackTarget } from '../rollback/rollback.ts';
import { MANIFEST_SCHEMA } from '../sql/statement.ts';
import { clip, clipUtf8 } from '../text.ts';

/** The execution state as the Catch left it: `error` from Step Functions, results of earlier steps. */
export interface FailedState {
  /** Plan's result, once Plan succeeded. */
  readonly plan?: { readonly batch?: BatchRef };
  /** Publish's result, once Publish succeeded. */
  readonly publish?: { readonly publication?: number };
  readonly error?: { readonly Error?: string; readonly Cause?: string };
}

export interface RecordFailureEvent {
  readonly state: FailedState;
  /** The execution input as given (`$$.Execution.Input`, possibly not even an object); it never rides in the state. */
  readonly input?: unknown;
  readonly executionId: string;
  readonly executionStartedAt: string;
}

/** The batch's statements still running when the run stopped, by chunk index. */
export interface OrphanedStatements {
  /** Chunks whose INSERT was cancelled (it ended ABORTED); marked CANCELLED in the manifest. */
  readonly cancelled: readonly number[];
  /** Chunks whose INSERT could not be cancelled or still ran when the wait ended. */
  readonly stillRunning: readonly number[];
}

/** What the manifest says after the failure was recorded (read back, not assumed). */
export interface FailureFacts {
  /** The batch row was moved to FAILED. */
  readonly recorded: boolean;
  /** Why the manifest could not be read or written. */
  readonly recordError?: string;
  /** The batch's status now (PUBLISHED if a publish committed despite the error). */
  readonly batchStatus?: string;
  /** The publication this batch made, if it did. */
  readonly ownPublication?: number;
  /** The pipeline's latest publication now (0: none). */
  readonly latestPublication?: number;
  /** What cancelling the batch's running statements did; undefined when it could not be tried. */
  readonly orphans?: OrphanedStatements;
  /** Why the running statements could not be looked up. */
  readonly orphanError?: string;
  /** The pipeline's latest publication by the manifest: what its live table shows. */
  readonly livePublication?: LivePublication;
  /** Whether the catalog has the live table (undefined: not looked up). */
  readonly liveTablePresent?: boolean;
  /** The batch this execution created, found in the manifest when the state lost Plan's result. */
  readonly executionBatch?: { readonly batchId: string; readonly status: string };
  /** The warehouse's circuit breaker after this failure was counted (functions/commons/breaker.ts); undefined without a breaker. */
  readonly breaker?: { readonly state?: string; readonly failures?: number; readonly openedAt?: string; readonly error?: string };
}

/** A publication as the manifest records it. */
export interface LivePublication {
  readonly seq: number;
  readonly batchId: string;
  readonly publishedAt: string;
}

export interface FailureReport {
  /** SNS subject: printable ASCII, at most SNS_SUBJECT_MAX_CHARACTERS. */
  readonly subject: string;
  /** At most MAX_ALERT_MESSAGE_BYTES of UTF-8. */
  readonly message: string;
  readonly pipeline?: string;
  readonly batchId?: string;
  readonly errorName: string;
  readonly recorded: boolean;
  /** Statements of the batch this failure cancelled. */
  readonly cancelledStatements: number;
}

/** An alert's message: a quarter of what SNS takes (256 KB), so it also fits a state payload beside the state. */
export const MAX_ALERT_MESSAGE_BYTES = SNS_MESSAGE_MAX_BYTES / 4;
/** Why the manifest could not be written, in an alert. */
const MAX_RECORD_ERROR_BYTES = 4 * 1024;
/** Pipeline names from the input, error names: far longer than any real one. */
const MAX_NAME_CHARS = 128;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The error's name and message. Lambda puts `{"errorType","errorMessage","trace"}`
 * in Cause; other failures put plain text. Both come back whole (the
 * manifest bounds what it stores; the alert bounds what it shows).
 */
export function describeError(error: unknown): { name: string; message: string } {
  const fields = isObject(error) ? error : {};
  const name = typeof fields.Error === 'string' && fields.Error !== '' ? fields.Error : 'UnknownError';
  const cause = typeof fields.Cause === 'string' ? fields.Cause : '';
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown };
    if (isObject(parsed) && typeof parsed.errorMessage === 'string') return { name, message: parsed.errorMessage };
  } catch {
    // plain text cause
  }
  return { name, message: cause || name };
}

function inputPipeline(input: unknown): string | undefined {
  const name = isObject(input) ? input.pipeline : undefined;
  return typeof name === 'string' && name !== '' ? name.slice(0, MAX_NAME_CHARS) : undefined;
}

/** SNS subjects: printable ASCII, no line breaks, less than 100 characters. */
export function subjectLine(text: string): string {
  const ascii = text.replace(/[^\x20-\x7e]/g, '?');
  return ascii.length <= SNS_SUBJECT_MAX_CHARACTERS ? ascii : `${ascii.slice(0, SNS_SUBJECT_MAX_CHARACTERS - 3)}...`;
}

/**
 * Someone else changed the live table since Plan (domain/live-watch/out-of-band.ts).
 * Not in NO_RERUN: a re-run's fresh Plan takes the changed table as its
 * base, so it can publish, once someone has decided about the change.
 */
const OUT_OF_BAND_ERROR = 'OutOfBandChangeError';

/** Errors after which re-running the same batch cannot help. */
const NO_RERUN = new Set(['PublishConflictError', 'SpecChangedError']);

/** What the manifest says about the batch and the pipeline, from the rows RecordFailure read back. */
export function failureFacts(
  recorded: boolean,
  batch: { readonly status?: unknown; readonly seq?: unknown } | undefined,
  latest: { readonly seq?: unknown; readonly batch_id?: unknown; readonly published_at?: unknown } | undefined,
): FailureFacts {
  return {
    recorded,
    ...(batch ? { batchStatus: String(batch.status) } : {}),
    ...(batch?.seq != null ? { ownPublication: Number(batch.seq) } : {}),
    latestPublication: Number(latest?.seq ?? 0),
    ...(latest?.seq != null && latest.batch_id != null
      ? { livePublication: { seq: Number(latest.seq), batchId: String(latest.batch_id), publishedAt: String(latest.published_at) } }
      : {}),
  };
}

/** A publication in words, with its batch and time when the manifest gave them. */
function publicationText(seq: number | undefined, facts: FailureFacts): string {
  const live = facts.livePublication;
  if (live && (seq === undefined || seq === live.seq)) return `publication ${live.seq} (batch ${live.batchId}, published at ${live.publishedAt} UTC)`;
  if (seq === undefined) return 'an unknown publication (the manifest could not be read)';
  return seq > 0 ? `publication ${seq}` : 'the version before atomic-publish';
}

/**
 * What to do next, by what failed: the advice for an error a re-run alone
 * cannot fix names the fix first. `input` is the execution input that
 * resumes the batch.
 */
function nextStep(name: string, pipeline: string, input: string | undefined): string {
  const rerun = input ? `, then start an execution with input ${input}` : ', then start the run again';
  switch (name) {
    case 'ValidationError':
      return 'correct the execution input (the error says what is wrong) and start a new execution; nothing was written.';
    case 'MissingPrivilegeError':
      return `have a superuser run the setup SQL the error names (npm run setup-sql -- --pipeline ${pipeline})${rerun}.`;
    case 'CheckFailedError':
      return `fix the source rows the check names (${MANIFEST_SCHEMA}.check_results holds them)${rerun}; only the chunks that differ reload.`;
    case 'SourceChangedError':
      return `the source changed after Reconcile checked it (the error names the chunk, now marked STALE)${rerun}; only that chunk reloads.`;
    case 'DependentViewError':
      return `change the view the error names (or give the functions' user its ownership)${rerun}.`;
    case 'TransientWarehouseError':
      return `the warehouse kept failing after every retry (a lock held, snapshots not ending, unreachable: the error says which); once that has ended, ${rerun.slice(7)}.`;
    case 'SpecChangedError':
      return 'start a new run: the pipeline spec changed, so it plans a new batch.';
    case 'CircuitOpenError':
      return 'nothing to do for this execution: the warehouse kept failing, so runs end at once until the next probe (the error says when); find out why the warehouse fails (its events, its queues, a resume or maintenance), and the first run after the cool-down closes the breaker when it succeeds.';
    case 'States.ExceedToleratedFailureThreshold':
      return `a window of the batch's chunks failed: the failed child execution of this execution's LoadWindows Map Run (Step Functions console: the execution, then the Map Run) names the error; fix that cause${rerun}: the chunks already loaded are kept.`;
    case 'States.Timeout':
    case 'Sandbox.Timedout':
      return `a step outran its time limit; look at what it was waiting for (its log), then${rerun.slice(6)}: a statement it left running is waited for, not run again.`;
    default:
      return `fix the cause the error names${rerun}.`;
  }
}

/** The batch Plan created, if the run got that far. */
export function failedBatch(state: unknown): BatchRef | undefined {
  const plan = isObject(state) ? state.plan : undefined;
  return isObject(plan) && isObject(plan.batch) ? (plan.batch as unknown as BatchRef) : undefined;
}

/** A list of chunk indexes, bounded (a batch may have a thousand chunks). */
function chunkList(chunks: readonly number[]): string {
  const shown = chunks.slice(0, 20).join(', ');
  return chunks.length > 20 ? `${shown} and ${chunks.length - 20} more` : shown;
}

/** What became of the statements the batch still ran when the run failed. */
function statementsLine(facts: FailureFacts): string {
  if (!facts.orphans) {
    return `could not look for statements left running (${clipUtf8(facts.orphanError ?? 'not tried', MAX_RECORD_ERROR_BYTES)}); see the Data API's ListStatements.`;
  }
  const { cancelled, stillRunning } = facts.orphans;
  if (cancelled.length === 0 && stillRunning.length === 0) return 'no statement of this batch was left running.';
  const parts: string[] = [];
  if (cancelled.length > 0) {
    parts.push(
      `cancelled ${cancelled.length} still-running statement(s) of this batch (the INSERTs of chunk(s) ${chunkList(cancelled)}; a re-run reloads them)`,
    );
  }
  if (stillRunning.length > 0) {
    parts.push(`${stillRunning.length} could not be cancelled and may still run (chunk(s) ${chunkList(stillRunning)}; a re-run waits for them)`);
  }
  return `${parts.join('; ')}.`;
}

/** The rollback a failed execution ran (Plan's `rollback`), if it was one. */
function failedRollback(state: FailedState): RollbackTarget | undefined {
  const plan: unknown = state.plan;
  return isObject(plan) && isObject(plan.rollback) ? (plan.rollback as unknown as RollbackTarget) : undefined;
}

/**
 * A failed rollback's lines: whether it swapped (the batch it put back is
 * PUBLISHED either way, so the batch's status cannot say), what readers
 * see, and the input to try again. Returns the re-run advice.
 */
function describeFailedRollback(
  lines: string[],
  batch: BatchRef,
  rollback: RollbackTarget,
  state: FailedState,
  facts: FailureFacts,
  errorName: string,
): string | undefined {
  lines.push(`Rollback:   to batch ${rollback.batchId} (from batch ${rollback.fromBatchId}, publication ${rollback.rolledBackSeq})`);
  const latest = facts.latestPublication;
  if (errorName === 'PublishConflictError') {
    lines.push(`Live table: ${batch.liveTable} shows publication ${latest ?? '?'}, published since the rollback was planned; the rollback changed nothing.`);
    return `if the rollback is still wanted, start an execution with input ${JSON.stringify({ pipeline: batch.pipeline, rollback: { to: rollback.batchId } })}: Plan resolves it against what is live now.`;
  }
  if (isObject(state.publish) || (latest !== undefined && latest > rollback.rolledBackSeq)) {
    lines.push(
      `Live table: ${batch.liveTable} shows publication ${latest ?? '?'}; see atomic_publish.publications (rollback_of) for whether it is this rollback; a step after the swap failed.`,
    );
    return undefined;
  }
  lines.push(
    `Live table: ${batch.liveTable} untouched; readers still see publication ${latest ?? rollback.rolledBackSeq} (batch ${rollback.fromBatchId}); the rollback changed nothing.`,
  );
  return `start an execution with input ${JSON.stringify({ pipeline: batch.pipeline, rollback: { to: rollback.batchId } })} once the cause is fixed.`;
}

/** The warehouse's circuit breaker after this failure, in words. */
function breakerLine(breaker: NonNullable<FailureFacts['breaker']>): string {
  if (breaker.error) return `could not count this failure (${clipUtf8(breaker.error, MAX_RECORD_ERROR_BYTES)})`;
  const since = breaker.openedAt ? ` since ${breaker.openedAt}` : '';
  if (breaker.state === 'open')
    return `OPEN${since} after ${breaker.failures ?? '?'} consecutive transient failure(s): new runs end at once in Plan until its cool-down has passed.`;
  if (breaker.state === 'half_open') return `half-open: another execution runs as its probe.`;
  return `closed; ${breaker.failures ?? 0} consecutive transient failure(s) counted.`;
}

/** The alert an on-call engineer reads: what failed, what readers see now, what to do. */
export function failureReport(event: RecordFailureEvent, facts: FailureFacts): FailureReport {
  const state: FailedState = isObject(event?.state) ? event.state : {};
  const batch = failedBatch(state);
  const pipeline = batch?.pipeline ?? inputPipeline(event?.input);
  const described = describeError(state.error);
  const name = clip(described.name, MAX_NAME_CHARS);
  const lines = [`atomic-publish: pipeline ${pipeline ?? '(unknown)'} failed`, ''];
  lines.push(`Error:      ${name}: ${boundedErrorMessage(described.message)}`);
  let rerun: string | undefined;
  let next: string;
  const pipelineName = pipeline ?? '(unknown)';
  const rollback = failedRollback(state);
  if (batch && rollback) {
    rerun = describeFailedRollback(lines, batch, rollback, state, facts, name);
    next =
      rerun ?? 'nothing to roll back again: the swap committed and a step after it failed; see atomic_publish.publications (rollback_of) for what is live.';
  } else if (!batch) {
    const latest = facts.livePublication?.seq ?? facts.latestPublication;
    const seen = latest === undefined ? '' : ` Readers see ${publicationText(latest, facts)}.`;
    lines.push(`Live table: untouched; the run stopped in Plan, before loading anything.${seen}`);
    if (facts.executionBatch) {
      lines.push(`Batch:      ${facts.executionBatch.batchId}, created by this execution in Plan (its result was lost); now ${facts.executionBatch.status}`);
    }
    const input = isObject(event?.input) && typeof event.input.pipeline === 'string' ? clip(JSON.stringify(event.input)) : undefined;
    next = nextStep(name, pipelineName, name === 'ValidationError' ? undefined : input);
  } else {
    lines.push(`Batch:      ${batch.batchId}, interval ${batch.from} to ${batch.to}`);
    const publication = isObject(state.publish) ? state.publish.publication : undefined;
    const published = publication ?? (facts.batchStatus === BatchStatus.PUBLISHED ? facts.ownPublication : undefined);
    const latest = facts.latestPublication;
    // A restatement resumes only with restate (functions/plan/index.ts nextRestatement).
    const input = JSON.stringify({ pipeline: batch.pipeline, ...(batch.restatement !== undefined ? { from: batch.from, restate: true } : {}), to: batch.to });
    if (published !== undefined || facts.batchStatus === BatchStatus.PUBLISHED) {
      lines.push(
        `Live table: ${batch.liveTable} was published by this batch (publication ${published ?? '?'}${facts.livePublication?.seq === published ? `, published at ${facts.livePublication!.publishedAt} UTC` : ''}); a step after publishing failed.`,
      );
      next = `nothing to publish again: readers see this batch. The run's Published metric may be missing (the freshness alarm does not need it: the monitor reads the publication from the manifest); old versions and staging tables are dropped by the next successful run's Cleanup. A run with input ${input} ends at NothingToPublish.`;
    } else if ((latest !== undefined && latest > batch.basePublication) || name === 'PublishConflictError') {
      lines.push(
        `Live table: ${batch.liveTable} shows ${latest === undefined ? 'publication ?' : publicationText(latest, facts)}, published by another batch; this batch was not published and is superseded.`,
      );
      next = `no re-run of this batch: another batch published after it was planned. For the newest data start an execution with input ${JSON.stringify({ pipeline: batch.pipeline })}.`;
    } else {
      const seen = publicationText(latest ?? batch.basePublication, facts);
      lines.push(
        name === OUT_OF_BAND_ERROR
          ? `Live table: ${batch.liveTable} untouched by this batch; readers still see ${seen} with the out-of-band change in it (see the error).`
          : `Live table: ${batch.liveTable} untouched; readers still see ${seen}.`,
      );
      lines.push(`Staging:    ${batch.stagingTable} is kept for diagnosis until the next successful run.`);
      next = nextStep(name, batch.pipeline, input);
      if (name === OUT_OF_BAND_ERROR) {
        rerun =
          `once someone has decided about the change (into the source, or the writer declared expected with outOfBand.expectedWriters), ` +
          `start an execution with input ${JSON.stringify({ pipeline: batch.pipeline, to: batch.to })}: its fresh Plan takes the live table as it is then ` +
          `as its base and publishes what the source holds; rows only the live table has stay in the retained old version.`;
        next = `decide about the out-of-band change the error names, then ${rerun.slice(rerun.indexOf('start an execution'))}`;
      } else if (name === 'SpecChangedError') {
        rerun = 'start a new run: the pipeline spec changed, so it plans a new batch.';
      } else if (!NO_RERUN.has(name)) {
        rerun = `start an execution with input ${input}; it resumes this batch, skipping the chunks already loaded and reloading those that failed or no longer match the source.`;
      }
    }
  }
  if (facts.liveTablePresent === false) {
    lines.push(
      `Catalog:    the live table ${batch?.liveTable ?? ''} is NOT in the catalog: readers get "relation does not exist". Restore it from the latest ${MANIFEST_SCHEMA}.publications row's old_version_table.`,
    );
  }
  const recordError = facts.recordError ? clipUtf8(facts.recordError, MAX_RECORD_ERROR_BYTES) : undefined;
  const manifest = facts.recorded
    ? `batch and attempt marked FAILED in ${MANIFEST_SCHEMA}.batches / batch_attempts`
    : facts.batchStatus === BatchStatus.PUBLISHED
      ? 'the batch is PUBLISHED and was left as it is'
      : `not updated${recordError ? ` (${recordError})` : batch ? '' : ' (no batch was created)'}`;
  lines.push(`Manifest:   ${manifest}`);
  if (facts.breaker) lines.push(`Breaker:    ${breakerLine(facts.breaker)}`);
  if (batch) lines.push(`Statements: ${statementsLine(facts)}`);
  lines.push(`Execution:  ${clip(String(event?.executionId))} (started ${clip(String(event?.executionStartedAt))})`);
  lines.push(`Next:       ${next}`);
  if (rerun) lines.push(`Re-run:     ${rerun}`);
  return {
    subject: subjectLine(
      name === 'CircuitOpenError'
        ? `atomic-publish: ${pipeline ?? 'run'} not run (circuit breaker open)`
        : `atomic-publish: ${pipeline ?? 'run'} failed (${name})`,
    ),
    // The parts are bounded; this bounds their sum, whatever a later line adds.
    message: clipUtf8(lines.join('\n'), MAX_ALERT_MESSAGE_BYTES),
    ...(pipeline ? { pipeline } : {}),
    ...(batch ? { batchId: batch.batchId } : {}),
    errorName: name,
    recorded: facts.recorded,
    cancelledStatements: facts.orphans?.cancelled.length ?? 0,
  };
}

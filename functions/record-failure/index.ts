import type { Context } from 'aws-lambda';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { BatchRef } from '../../domain/batch.ts';
import { latestPublication } from '../../domain/sql/plan.ts';
import { batchState } from '../../domain/sql/publish.ts';
import { markBatchFailed } from '../../domain/sql/record-failure.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import type { PlanResult } from '../plan/index.ts';
import type { PublishResult } from '../publish/index.ts';

/** The execution state as the Catch left it: the execution input, `error` from Step Functions, results of earlier steps. */
export interface FailedState {
  /** The execution input as given (possibly not even an object). */
  readonly input?: unknown;
  readonly plan?: PlanResult;
  readonly publish?: PublishResult;
  readonly error?: { Error?: string; Cause?: string };
}

export interface RecordFailureEvent {
  readonly state: FailedState;
  readonly executionId: string;
  readonly executionStartedAt: string;
}

export interface FailureReport {
  readonly subject: string;
  readonly message: string;
  readonly pipeline?: string;
  readonly batchId?: string;
  readonly errorName: string;
  readonly recorded: boolean;
}

/** Lambda puts `{"errorType","errorMessage","trace"}` in Cause; other failures put plain text. */
export function describeError(error: FailedState['error']): { name: string; message: string } {
  const name = error?.Error ?? 'UnknownError';
  const cause = error?.Cause ?? '';
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: string; errorType?: string };
    if (parsed && typeof parsed.errorMessage === 'string') return { name, message: parsed.errorMessage };
  } catch {
    // plain text cause
  }
  return { name, message: cause || name };
}

function inputPipeline(input: unknown): string | undefined {
  const name = typeof input === 'object' && input !== null ? (input as { pipeline?: unknown }).pipeline : undefined;
  return typeof name === 'string' && name !== '' ? name.slice(0, 128) : undefined;
}

/** SNS subjects: ASCII, no line breaks, at most 100 characters. */
function subjectLine(text: string): string {
  const ascii = text.replace(/[^\x20-\x7e]/g, '?');
  return ascii.length <= 100 ? ascii : `${ascii.slice(0, 97)}...`;
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
}

/** Errors after which re-running the same batch cannot help. */
const NO_RERUN = new Set(['PublishConflictError', 'SpecChangedError']);

/** The alert an on-call engineer reads: what failed, what readers see now, what to do. */
export function failureReport(event: RecordFailureEvent, facts: FailureFacts): FailureReport {
  const { state } = event;
  const batch: BatchRef | undefined = state.plan?.batch;
  const pipeline = batch?.pipeline ?? inputPipeline(state.input);
  const { name, message } = describeError(state.error);
  const lines = [`atomic-publish: pipeline ${pipeline ?? '(unknown)'} failed`, ''];
  lines.push(`Error:      ${name}: ${message}`);
  let rerun: string | undefined;
  if (!batch) {
    lines.push('Live table: untouched; the run stopped in Plan, before loading anything.');
  } else {
    lines.push(`Batch:      ${batch.batchId}, interval ${batch.from} to ${batch.to}`);
    const published = state.publish?.publication ?? (facts.batchStatus === 'PUBLISHED' ? facts.ownPublication : undefined);
    const latest = facts.latestPublication;
    if (published !== undefined || facts.batchStatus === 'PUBLISHED') {
      lines.push(`Live table: ${batch.liveTable} was published by this batch (publication ${published ?? '?'}); a step after publishing failed.`);
    } else if ((latest !== undefined && latest > batch.basePublication) || name === 'PublishConflictError') {
      lines.push(
        `Live table: ${batch.liveTable} shows publication ${latest ?? '?'}, published by another batch; this batch was not published and is superseded.`,
      );
    } else {
      const seen = (latest ?? batch.basePublication) > 0 ? `publication ${latest ?? batch.basePublication}` : 'the version before atomic-publish';
      lines.push(`Live table: ${batch.liveTable} untouched; readers still see ${seen}.`);
      lines.push(`Staging:    ${batch.stagingTable} is kept for diagnosis until the next successful run.`);
      if (name === 'SpecChangedError') {
        rerun = 'start a new run: the pipeline spec changed, so it plans a new batch.';
      } else if (!NO_RERUN.has(name)) {
        rerun = `start an execution with input ${JSON.stringify({ pipeline: batch.pipeline, to: batch.to })}; it resumes this batch, skipping the chunks already loaded and reloading those that failed or no longer match the source.`;
      }
    }
  }
  const manifest = facts.recorded
    ? 'batch and attempt marked FAILED in atomic_publish.batches / batch_attempts'
    : facts.batchStatus === 'PUBLISHED'
      ? 'the batch is PUBLISHED and was left as it is'
      : `not updated${facts.recordError ? ` (${facts.recordError})` : batch ? '' : ' (no batch was created)'}`;
  lines.push(`Manifest:   ${manifest}`);
  lines.push(`Execution:  ${event.executionId} (started ${event.executionStartedAt})`);
  if (rerun) lines.push(`Re-run:     ${rerun}`);
  return {
    subject: subjectLine(`atomic-publish: ${pipeline ?? 'run'} failed (${name})`),
    message: lines.join('\n'),
    ...(pipeline ? { pipeline } : {}),
    ...(batch ? { batchId: batch.batchId } : {}),
    errorName: name,
    recorded: facts.recorded,
  };
}

/**
 * Marks the batch and its attempt FAILED with the error (never a published
 * batch), reads back what the manifest now says, and builds the alert from
 * that. A manifest that cannot be written or read is reported in the
 * alert, not thrown: the page must go out either way.
 */
export async function recordFailure(event: RecordFailureEvent, warehouse: () => Warehouse = () => warehouseFromEnv()): Promise<FailureReport> {
  const batch = event.state?.plan?.batch;
  const { name, message } = describeError(event.state?.error);
  let facts: FailureFacts = { recorded: false };
  if (batch) {
    const statementName = `atomic-publish:${batch.pipeline}:record-failure:${batch.batchId}`;
    try {
      const target = warehouse();
      let recorded = false;
      if (!event.state.publish) {
        const [attempt, batchRow] = markBatchFailed(batch.batchId, `${name}: ${message}`, new Date());
        await target.execute(attempt!, statementName);
        recorded = (await target.execute(batchRow!, statementName)).resultRows > 0;
      }
      const [now] = await target.query(batchState(batch.batchId), statementName);
      const [latest] = await target.query(latestPublication(batch.pipeline), statementName);
      facts = {
        recorded,
        ...(now ? { batchStatus: String(now.status) } : {}),
        ...(now?.seq != null ? { ownPublication: Number(now.seq) } : {}),
        latestPublication: Number(latest?.seq ?? 0),
      };
    } catch (error) {
      facts = { recorded: false, recordError: (error as Error).message };
      logger.error('could not record the failure in the manifest', { batchId: batch.batchId, error: error as Error });
    }
  }
  const report = failureReport(event, facts);
  if (report.pipeline) metrics.addDimension('Pipeline', report.pipeline);
  metrics.addMetric('BatchFailed', MetricUnit.Count, 1);
  logger.error('run failed', { pipeline: report.pipeline, batchId: report.batchId, errorName: name, error: message });
  return report;
}

export const handler = middy((event: RecordFailureEvent, context: Context) => recordFailure(event, () => warehouseFor(context)))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics));

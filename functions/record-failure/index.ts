import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { BatchRef } from '../../domain/sql.ts';
import { markBatchFailed } from '../../domain/sql.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { type Warehouse, warehouseFromEnv } from '../commons/warehouse.ts';
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

/** The alert an on-call engineer reads: what failed, what readers see now, how to re-run. */
export function failureReport(event: RecordFailureEvent, recorded: boolean, recordError?: string): FailureReport {
  const { state } = event;
  const batch: BatchRef | undefined = state.plan?.batch;
  const pipeline = batch?.pipeline ?? inputPipeline(state.input);
  const { name, message } = describeError(state.error);
  const lines = [`atomic-publish: pipeline ${pipeline ?? '(unknown)'} failed`, ''];
  lines.push(`Error:      ${name}: ${message}`);
  if (batch) {
    lines.push(`Batch:      ${batch.batchId}, interval ${batch.from} to ${batch.to}`);
    if (state.publish) {
      lines.push(`Live table: published (publication ${state.publish.publication}); a step after publishing failed.`);
    } else {
      lines.push(
        `Live table: ${batch.liveTable} untouched; readers still see ${batch.basePublication > 0 ? `publication ${batch.basePublication}` : 'the version before atomic-publish'}.`,
      );
      lines.push(`Staging:    ${batch.stagingTable} is kept for diagnosis until the next successful run.`);
    }
  } else {
    lines.push('Live table: untouched; the run stopped before a batch was created and nothing was written.');
  }
  lines.push(`Manifest:   ${recorded ? 'batch marked FAILED in atomic_publish.batches' : `not updated${recordError ? ` (${recordError})` : ''}`}`);
  lines.push(`Execution:  ${event.executionId} (started ${event.executionStartedAt})`);
  if (batch && !state.publish) {
    lines.push(
      `Re-run:     start an execution with input ${JSON.stringify({ pipeline: batch.pipeline, to: batch.to })}; it resumes this batch, skipping the chunks already loaded and reloading those that failed or no longer match the source.`,
    );
  }
  return {
    subject: subjectLine(`atomic-publish: ${pipeline ?? 'run'} failed (${name})`),
    message: lines.join('\n'),
    ...(pipeline ? { pipeline } : {}),
    ...(batch ? { batchId: batch.batchId } : {}),
    errorName: name,
    recorded,
  };
}

/**
 * Marks the batch FAILED with the error (never a published one) and builds
 * the alert. A manifest that cannot be written is reported in the alert,
 * not thrown: the page must go out either way.
 */
export async function recordFailure(event: RecordFailureEvent, warehouse?: Warehouse): Promise<FailureReport> {
  const batch = event.state?.plan?.batch;
  const { name, message } = describeError(event.state?.error);
  let recorded = false;
  let recordError: string | undefined;
  if (batch && !event.state.publish) {
    try {
      const target = warehouse ?? warehouseFromEnv();
      for (const statement of markBatchFailed(batch.batchId, `${name}: ${message}`, new Date())) {
        await target.execute(statement, `atomic-publish:${batch.pipeline}:record-failure:${batch.batchId}`);
      }
      recorded = true;
    } catch (error) {
      recordError = (error as Error).message;
      logger.error('could not mark the batch failed', { batchId: batch.batchId, error: error as Error });
    }
  }
  const report = failureReport(event, recorded, recordError);
  if (report.pipeline) metrics.addDimension('Pipeline', report.pipeline);
  metrics.addMetric('BatchFailed', MetricUnit.Count, 1);
  logger.error('run failed', { pipeline: report.pipeline, batchId: report.batchId, errorName: name, error: message });
  return report;
}

export const handler = middy((event: RecordFailureEvent) => recordFailure(event))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics));

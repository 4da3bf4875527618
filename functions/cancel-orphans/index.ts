import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { type ExecutionStatusChange, stoppedError } from '../../domain/cancel-orphans/cancel-orphans.ts';
import { DimensionName, MetricName } from '../../domain/names.ts';
import type { OrphanedStatements } from '../../domain/record-failure/record-failure.ts';
import { type StoppedBatch as ClearedBatch, clearEndedExecution } from '../commons/ended-execution.ts';
import { stepHandler } from '../commons/handler.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

/** What became of one batch of a stopped execution. */
export type StoppedBatch = Omit<ClearedBatch, 'pipeline'>;

export interface CancelOrphansResult {
  readonly executionArn: string;
  readonly status: string;
  /** The batch whose current attempt the execution ran; undefined when it stopped before Plan recorded one. */
  readonly batchId?: string;
  readonly statements?: OrphanedStatements;
  /** The batch was RUNNING or CHECKED and is FAILED now. */
  readonly markedFailed: boolean;
  /** The execution held its pipeline's lease, released now. */
  readonly leaseReleased: boolean;
  /** A publish group's execution: its other members' batches, each handled as `batchId` is. */
  readonly otherBatches?: readonly StoppedBatch[];
}

/**
 * After an execution was aborted or timed out, nothing of it runs any
 * more except what it submitted to the warehouse: cancel the statements
 * its batch still runs, then mark the batch and its attempt FAILED (if the
 * execution's attempt is still the batch's current one, and the batch is
 * still RUNNING or CHECKED), so a re-run resumes it; then release its lease.
 */
export async function cancelExecutionOrphans(event: ExecutionStatusChange, warehouse: Warehouse = warehouseFromEnv()): Promise<CancelOrphansResult> {
  const { executionArn, status } = event.detail;
  const error = stoppedError(status);
  const name = `atomic-publish:cancel-orphans:${executionArn.slice(-200)}`;
  // Counted per pipeline before anything else can fail: the pipeline's execution-stopped alarm reads it.
  const { batches, leaseReleased } = await clearEndedExecution(warehouse, executionArn, error, name, (pipelines) =>
    countStopped(pipelines.length > 0 ? pipelines : inputPipelines(event), status),
  );
  const [first, ...others] = batches;
  if (!first) {
    logger.info('the execution recorded no batch; nothing to cancel', { executionArn, status });
    return { executionArn, status, markedFailed: false, leaseReleased };
  }
  return {
    executionArn,
    status,
    batchId: first.batchId,
    statements: first.statements,
    markedFailed: first.markedFailed,
    leaseReleased,
    ...(others.length > 0 ? { otherBatches: others.map(({ batchId, statements, markedFailed }) => ({ batchId, statements, markedFailed })) } : {}),
  };
}

/**
 * ExecutionStopped=1 for each pipeline the execution ran (a publish group's
 * members each), one EMF record per pipeline (Powertools singleMetric
 * writes at once, with the service dimension): the execution-stopped alarm
 * of each pipeline pages (lib/publish-monitoring.ts).
 */
function countStopped(pipelines: readonly string[], status: string): void {
  for (const pipeline of new Set(pipelines)) {
    const single = metrics.singleMetric();
    single.addDimension(DimensionName.Pipeline, pipeline);
    single.addMetric(MetricName.ExecutionStopped, MetricUnit.Count, 1);
  }
  if (pipelines.length === 0) logger.warn('stopped execution of no known pipeline: not counted per pipeline', { status });
}

/** The pipeline of an execution stopped before Plan recorded a batch: from the input the event carries, when it names one. */
function inputPipelines(event: ExecutionStatusChange): string[] {
  try {
    const input = JSON.parse(event.detail.input ?? 'null') as { pipeline?: unknown } | null;
    return typeof input?.pipeline === 'string' && input.pipeline.length <= 128 ? [input.pipeline] : [];
  } catch {
    return [];
  }
}

export const handler = stepHandler((event: ExecutionStatusChange, context: Context) => cancelExecutionOrphans(event, warehouseFor(context)));

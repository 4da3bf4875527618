import type { Context } from 'aws-lambda';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { DimensionName, MetricName } from '../../domain/names.ts';
import { BatchStatus } from '../../domain/batch.ts';
import type { OrphanedStatements } from '../../domain/record-failure.ts';
import { type ExecutionStatusChange, stoppedError } from '../../domain/cancel-orphans.ts';
import { batchOfExecution, markExecutionStopped } from '../../domain/sql/cancel-orphans.ts';
import { installedManifestVersion } from '../../domain/sql/manifest.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { cancelOrphans } from '../commons/orphans.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { type Row, type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

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

/** What became of one batch of a stopped execution. */
export interface StoppedBatch {
  readonly batchId: string;
  readonly statements: OrphanedStatements;
  readonly markedFailed: boolean;
}

/**
 * After an execution was aborted or timed out, nothing of it runs any
 * more except what it submitted to the warehouse: cancel the statements
 * its batch still runs, then mark the batch and its attempt FAILED (if the
 * execution's attempt is still the batch's current one, and the batch is
 * still RUNNING or CHECKED), so a re-run resumes it.
 */
export async function cancelExecutionOrphans(event: ExecutionStatusChange, warehouse: Warehouse = warehouseFromEnv()): Promise<CancelOrphansResult> {
  const { executionArn, status } = event.detail;
  const error = stoppedError(status);
  const name = `atomic-publish:cancel-orphans:${executionArn.slice(-200)}`;
  // An execution stopped before the first Plan ever installed the manifest left nothing behind.
  const [manifest] = await warehouse.query(installedManifestVersion()[0]!, name);
  // One batch; a publish group's execution has one per member.
  const [batch, ...others] = Number(manifest?.present) > 0 ? await warehouse.query(batchOfExecution(executionArn), name) : [];
  // The execution ended: once its statements are cancelled, its pipeline
  // lease is released, so the next run need not wait for it to expire.
  const release = () => (Number(manifest?.present) > 0 ? releaseExecutionLease(warehouse, executionArn, name) : Promise.resolve(false));
  // Counted per pipeline before anything else can fail: the pipeline's execution-stopped alarm reads it.
  countStopped(batch ? [batch, ...others].map((row) => String(row.pipeline)) : inputPipelines(event), status);
  if (!batch) {
    const leaseReleased = await release();
    logger.info('the execution recorded no batch; nothing to cancel', { executionArn, status });
    return { executionArn, status, markedFailed: false, leaseReleased };
  }
  const stop = async (row: Row): Promise<StoppedBatch> => {
    const batchId = String(row.batch_id);
    const statements = await cancelOrphans(warehouse, { batchId, pipeline: String(row.pipeline) }, `${name}:${batchId}`);
    let markedFailed = false;
    if (row.status === BatchStatus.RUNNING || row.status === BatchStatus.CHECKED) {
      const [attempt, batchRow] = markExecutionStopped(batchId, executionArn, error, new Date());
      await warehouse.execute(attempt!, `${name}:mark-failed`);
      markedFailed = (await warehouse.execute(batchRow!, `${name}:mark-failed`)).resultRows > 0;
    }
    logger.warn('execution stopped; its statements cancelled', { executionArn, status, batchId, ...statements, markedFailed });
    return { batchId, statements, markedFailed };
  };
  const first = await stop(batch);
  const otherBatches: StoppedBatch[] = [];
  for (const row of others) otherBatches.push(await stop(row));
  const leaseReleased = await release();
  return { executionArn, status, ...first, leaseReleased, ...(otherBatches.length > 0 ? { otherBatches } : {}) };
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

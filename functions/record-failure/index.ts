import type { Context } from 'aws-lambda';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  describeError,
  failedBatch,
  type FailureFacts,
  failureFacts,
  type FailureReport,
  failureReport,
  type RecordFailureEvent,
} from '../../domain/record-failure.ts';
import { boundedErrorMessage } from '../../domain/errors.ts';
import { DimensionName, MetricName } from '../../domain/names.ts';
import { latestPublication } from '../../domain/sql/plan.ts';
import { batchState } from '../../domain/sql/publish.ts';
import { markBatchFailed } from '../../domain/sql/record-failure.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { cancelOrphans } from '../commons/orphans.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { stepHandler } from '../commons/handler.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';

/**
 * Cancels the statements the batch still runs (chunk INSERTs of other
 * iterations of a failed Map), marks the batch and its attempt FAILED with
 * the error (never a published batch), reads back what the manifest now says, and builds the alert from
 * that. A manifest that cannot be written or read is reported in the
 * alert, not thrown: the page must go out either way.
 */
export async function recordFailure(event: RecordFailureEvent, warehouse: () => Warehouse = () => warehouseFromEnv()): Promise<FailureReport> {
  const batch = failedBatch(event.state);
  const { name, message } = describeError(event.state?.error);
  let facts: FailureFacts = { recorded: false };
  if (batch) {
    const statementName = `atomic-publish:${batch.pipeline}:record-failure:${batch.batchId}`;
    let orphans: Pick<FailureFacts, 'orphans' | 'orphanError'> = { orphanError: 'the warehouse was not reached' };
    try {
      const target = warehouse();
      // First, so the page can say what became of them; a failure here never stops the page.
      orphans = await cancelOrphans(target, batch.batchId, statementName).then(
        (found) => ({ orphans: found }),
        (error: unknown) => ({ orphanError: (error as Error).message }),
      );
      let recorded = false;
      if (!event.state.publish) {
        const [attempt, batchRow] = markBatchFailed(batch.batchId, `${name}: ${message}`, new Date());
        await target.execute(attempt!, statementName);
        recorded = (await target.execute(batchRow!, statementName)).resultRows > 0;
      }
      const [now] = await target.query(batchState(batch.batchId), statementName);
      const [latest] = await target.query(latestPublication(batch.pipeline), statementName);
      facts = { ...failureFacts(recorded, now, latest), ...orphans };
    } catch (error) {
      facts = { recorded: false, recordError: (error as Error).message, ...orphans };
      logger.error('could not record the failure in the manifest', { batchId: batch.batchId, error: error as Error });
    }
  }
  // The execution ends here: release its pipeline lease (Plan may have
  // taken it before failing, even without a batch to report).
  try {
    if (event.executionId) await releaseExecutionLease(warehouse(), event.executionId, `atomic-publish:${batch?.pipeline ?? 'unknown'}:record-failure:lease`);
  } catch (error) {
    logger.error('could not release the pipeline lease; it expires at the state machine timeout', { executionId: event.executionId, error: error as Error });
  }
  const report = failureReport(event, facts);
  if (report.pipeline) metrics.addDimension(DimensionName.Pipeline, report.pipeline);
  metrics.addMetric(MetricName.BatchFailed, MetricUnit.Count, 1);
  logger.error('run failed', { pipeline: report.pipeline, batchId: report.batchId, errorName: report.errorName, error: boundedErrorMessage(message) });
  return report;
}

export const handler = stepHandler((event: RecordFailureEvent, context: Context) => recordFailure(event, () => warehouseFor(context)), { metrics: true });

import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { batchOfExecution, markExecutionStopped } from '../../domain/cancel-orphans/sql/cancel-orphans.ts';
import { boundedErrorMessage } from '../../domain/errors.ts';
import { installedManifestVersion } from '../../domain/manifest/sql/manifest.ts';
import { DimensionName, MetricName } from '../../domain/names.ts';
import { batchState } from '../../domain/publish/sql/swap.ts';
import { failureClass } from '../../domain/record-failure/failure-class.ts';
import {
  describeError,
  type FailureFacts,
  type FailureReport,
  failedBatch,
  failureFacts,
  failureReport,
  type RecordFailureEvent,
} from '../../domain/record-failure/record-failure.ts';
import { failedGroup } from '../../domain/record-failure/record-failure-group.ts';
import { livePublication, liveTablePresent, markBatchFailed } from '../../domain/record-failure/sql/record-failure.ts';
import { breakerFailure } from '../commons/breaker.ts';
import { stepHandler } from '../commons/handler.ts';
import { releaseExecutionLease } from '../commons/lease.ts';
import { cancelOrphans } from '../commons/orphans.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import { recordGroupFailure } from './group.ts';

/**
 * Cancels the statements the batch still runs (chunk INSERTs of other
 * iterations of a failed Map), marks the batch and its attempt FAILED with
 * the error (never a published batch), reads back what the manifest now says, and builds the alert from
 * that. A manifest that cannot be written or read is reported in the
 * alert, not thrown: the page must go out either way.
 */
export async function recordFailure(event: RecordFailureEvent, warehouse: () => Warehouse = () => warehouseFromEnv()): Promise<FailureReport> {
  const described = describeError(event.state?.error);
  // The warehouse's circuit breaker counts the failure (functions/commons/breaker.ts); never throws.
  const breaker = await breakerFailure(warehouse, event.executionId, described.name, `${described.name}: ${described.message}`);
  const group = failedGroup(event);
  if (group) return counted(await recordGroupFailure(event, group, warehouse), described.message, event);
  const batch = failedBatch(event.state);
  const { name, message } = described;
  let facts: FailureFacts = { recorded: false };
  if (batch) {
    const statementName = `atomic-publish:${batch.pipeline}:record-failure:${batch.batchId}`;
    let orphans: Pick<FailureFacts, 'orphans' | 'orphanError'> = { orphanError: 'the warehouse was not reached' };
    try {
      const target = warehouse();
      // First, so the page can say what became of them; a failure here never stops the page.
      orphans = await cancelOrphans(target, batch, statementName).then(
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
      const [latest] = await target.query(livePublication(batch.pipeline), statementName);
      const [schema, table] = batch.liveTable.split('.');
      const [present] = await target.query(liveTablePresent(schema!, table!), statementName);
      facts = { ...failureFacts(recorded, now, latest), liveTablePresent: Number(present?.present) > 0, ...orphans };
    } catch (error) {
      facts = { recorded: false, recordError: (error as Error).message, ...orphans };
      logger.error('could not record the failure in the manifest', { batchId: batch.batchId, error: error as Error });
    }
  }
  if (!batch && event.executionId) facts = await beforeBatch(event, `${name}: ${message}`, warehouse);
  // The execution ends here: release its pipeline lease (Plan may have
  // taken it before failing, even without a batch to report).
  try {
    if (event.executionId) await releaseExecutionLease(warehouse(), event.executionId, `atomic-publish:${batch?.pipeline ?? 'unknown'}:record-failure:lease`);
  } catch (error) {
    logger.error('could not release the pipeline lease; it expires at the state machine timeout', { executionId: event.executionId, error: error as Error });
  }
  return counted(failureReport(event, breaker ? { ...facts, breaker } : facts), message, event);
}

/**
 * The failure counted (BatchFailed, and its class for the pipeline's
 * alarms: domain/record-failure/failure-class.ts) and logged; the report is the step's answer.
 */
function counted(report: FailureReport, message: string, event: RecordFailureEvent): FailureReport {
  if (report.pipeline) metrics.addDimension(DimensionName.Pipeline, report.pipeline);
  metrics.addMetric(MetricName.BatchFailed, MetricUnit.Count, 1);
  const state = (typeof event.state === 'object' && event.state !== null ? event.state : {}) as Record<string, unknown>;
  const cls = failureClass({ errorName: report.errorName, reconciled: state.reconcile !== undefined, published: state.publish !== undefined });
  if (cls) metrics.addMetric(cls, MetricUnit.Count, 1);
  logger.error('run failed', { pipeline: report.pipeline, batchId: report.batchId, errorName: report.errorName, error: boundedErrorMessage(message) });
  return report;
}

/**
 * The state holds no batch: the run failed in Plan, or Plan's result was
 * lost (it timed out after its last statement). The manifest says which:
 * a batch whose current attempt this execution ran is marked FAILED, as
 * CancelOrphans does; and it says what the pipeline's live table shows.
 */
async function beforeBatch(event: RecordFailureEvent, error: string, warehouse: () => Warehouse): Promise<FailureFacts> {
  const input = event.input as { pipeline?: unknown } | undefined;
  const pipeline = typeof input?.pipeline === 'string' ? input.pipeline : undefined;
  const statementName = `atomic-publish:${pipeline ?? 'unknown'}:record-failure:plan`;
  try {
    const target = warehouse();
    const [manifest] = await target.query(installedManifestVersion()[0]!, statementName);
    if (!(Number(manifest?.present) > 0)) return { recorded: false };
    let recorded = false;
    let executionBatch: FailureFacts['executionBatch'];
    const [found] = await target.query(batchOfExecution(event.executionId), statementName);
    if (found) {
      const batchId = String(found.batch_id);
      await cancelOrphans(target, { batchId, pipeline: String(found.pipeline) }, statementName).catch(() => undefined);
      const [attempt, batchRow] = markExecutionStopped(batchId, event.executionId, error, new Date());
      await target.execute(attempt!, statementName);
      recorded = (await target.execute(batchRow!, statementName)).resultRows > 0;
      const [now] = await target.query(batchState(batchId), statementName);
      executionBatch = { batchId, status: String(now?.status ?? found.status) };
    }
    const facts: FailureFacts = pipeline ? failureFacts(recorded, undefined, (await target.query(livePublication(pipeline), statementName))[0]) : { recorded };
    return { ...facts, ...(executionBatch ? { executionBatch } : {}) };
  } catch (error) {
    logger.warn('could not read the manifest for a failure before the batch', { error: error as Error });
    return { recorded: false, recordError: (error as Error).message };
  }
}

export const handler = stepHandler((event: RecordFailureEvent, context: Context) => recordFailure(event, () => warehouseFor(context)), { metrics: true });

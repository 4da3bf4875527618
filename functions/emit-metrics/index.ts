import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import type { BatchRef } from '../../domain/batch.ts';
import { type EmittedMetrics, publishMetrics } from '../../domain/emit-metrics/emit-metrics.ts';
import { latestEventTime } from '../../domain/emit-metrics/sql/emit-metrics.ts';
import { DimensionName, MetricName } from '../../domain/names.ts';
import { breakerSuccess } from '../commons/breaker.ts';
import { announcePublication, redeliverUnsent } from '../commons/event-delivery.ts';
import { stepHandler } from '../commons/handler.ts';
import { frozenPipeline } from '../commons/pipeline.ts';
import { logger, metrics } from '../commons/powertools.ts';
import { publicationEventSender, type SendPublicationEvent } from '../commons/publication-event-sender.ts';
import { type Warehouse, warehouseFor, warehouseFromEnv } from '../commons/warehouse.ts';
import type { PublishResult } from '../publish/result.ts';

export interface EmitMetricsEvent {
  readonly batch: BatchRef;
  readonly publish: PublishResult;
  readonly executionStartedAt: string;
}

/**
 * The run's metrics (Published, RowsPublished, RunDurationSeconds, DataLagSeconds:
 * docs/reference/metrics.md) and the publication event, built from the publication's
 * row and marked sent there. This step runs only after Publish, Rollback or
 * PublishGroup answered with a committed publication, so no event announces a publish
 * that did not happen; a retry sends the same id. docs/decisions/publication-events-and-the-schedules-dead-letters.md
 */
export async function emitMetrics(
  event: EmitMetricsEvent,
  warehouse: Warehouse = warehouseFromEnv(),
  send: SendPublicationEvent = publicationEventSender(),
): Promise<EmittedMetrics> {
  const pipeline = frozenPipeline(event.batch);
  const [latest] = await warehouse.query(latestEventTime(pipeline), `atomic-publish:${pipeline.name}:emit-metrics:lag:${event.batch.batchId}`);
  const values = publishMetrics({
    rowsPublished: event.publish.rowsPublished,
    publishedAt: event.publish.publishedAt,
    executionStartedAt: event.executionStartedAt,
    latestEventTime: latest?.latest == null ? undefined : String(latest.latest),
    now: new Date(),
  });
  // The event first: a refused one fails the step before any metric is
  // added, so its retry does not count the publish twice. Then the
  // pipeline's older events never sent (functions/commons/event-delivery.ts).
  await announcePublication(warehouse, pipeline.name, event.publish.publication, send);
  await redeliverUnsent(warehouse, pipeline.name, send, { now: new Date(), belowSeq: event.publish.publication });
  metrics.addDimension(DimensionName.Pipeline, pipeline.name);
  metrics.addMetric(MetricName.Published, MetricUnit.Count, values.Published);
  metrics.addMetric(MetricName.RowsPublished, MetricUnit.Count, values.RowsPublished);
  metrics.addMetric(MetricName.RunDurationSeconds, MetricUnit.Seconds, values.RunDurationSeconds);
  if (values.DataLagSeconds >= 0) metrics.addMetric(MetricName.DataLagSeconds, MetricUnit.Seconds, values.DataLagSeconds);
  logger.info('metrics emitted', { batchId: event.batch.batchId, ...values });
  // The run published: the warehouse answers, so its circuit breaker closes.
  await breakerSuccess(warehouse);
  return values;
}

export const handler = stepHandler((event: EmitMetricsEvent, context: Context) => emitMetrics(event, warehouseFor(context)), { metrics: true });

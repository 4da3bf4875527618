import { CloudWatchClient, type MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import type { Context } from 'aws-lambda';
import { latestEventTime } from '../../domain/emit-metrics/sql/emit-metrics.ts';
import { optionalEnv } from '../../domain/env.ts';
import { FreshnessMonitorError, type FreshnessValue, freshnessValues, inRequests } from '../../domain/freshness-monitor/freshness.ts';
import { livePublishedAt } from '../../domain/freshness-monitor/sql/freshness-monitor.ts';
import { isLiveWatchEvent } from '../../domain/live-watch/live-watch.ts';
import { DimensionName, METRICS_NAMESPACE } from '../../domain/names.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { pipelines as registry } from '../../pipelines/index.ts';
import { EventRedeliveryError, type EventRedeliveryOptions, redeliverEvents } from '../commons/event-delivery.ts';
import { stepHandler } from '../commons/handler.ts';
import { logger, tracer } from '../commons/powertools.ts';
import { publicationEventSender } from '../commons/publication-event-sender.ts';
import { type Warehouse, warehouseFor } from '../commons/warehouse.ts';
import { FreshnessMonitorEnv } from './env.ts';
import { type LiveWatchReport, watchLive } from './live-watch.ts';

export interface FreshnessMonitorOptions {
  readonly warehouse: Warehouse;
  readonly cloudWatch: CloudWatchClient;
  /** The clock the ages are measured against, and the metrics' timestamp. */
  readonly now: Date;
  /** @default every pipeline of pipelines/index.ts */
  readonly pipelines?: readonly Pipeline[];
  /** Redelivers the publication events never sent (../commons/event-delivery.ts). @default - none redelivered */
  readonly events?: EventRedeliveryOptions;
}

export interface FreshnessReport {
  /** The values written, by pipeline (a pipeline never published or with an empty table has fewer). */
  readonly measured: Record<string, FreshnessValue[]>;
  /** The eventIds of the publication events redelivered, oldest first in each pipeline. */
  readonly redelivered?: string[];
}

async function measure(pipeline: Pipeline, warehouse: Warehouse, now: Date): Promise<FreshnessValue[]> {
  const name = (what: string) => `atomic-publish:${pipeline.name}:freshness-monitor:${what}`;
  const [published] = await warehouse.query(livePublishedAt(pipeline.name), name('published'));
  const [latest] = await warehouse.query(latestEventTime(pipeline), name('lag'));
  return freshnessValues({
    publishedAt: published?.published_at == null ? undefined : String(published.published_at),
    latestEventTime: latest?.latest == null ? undefined : String(latest.latest),
    now,
  });
}

/**
 * Measures every pipeline's freshness, one after the other, into CloudWatch
 * (namespace AtomicPublish, dimension Pipeline); one it cannot measure is logged
 * and skipped, and once the others are written the invocation fails with
 * FreshnessMonitorError. Then, with `events`, it puts the publication events a
 * failed run never sent (../commons/event-delivery.ts), failing with
 * EventRedeliveryError on one it cannot put. docs/decisions/freshness-monitor-and-its-alarm.md
 */
export async function monitorFreshness(options: FreshnessMonitorOptions): Promise<FreshnessReport> {
  const measured: Record<string, FreshnessValue[]> = {};
  const failures: { pipeline: string; error: string }[] = [];
  const data: MetricDatum[] = [];
  for (const pipeline of options.pipelines ?? registry) {
    try {
      const values = await measure(pipeline, options.warehouse, options.now);
      measured[pipeline.name] = values;
      for (const value of values) {
        data.push({
          MetricName: value.name,
          Dimensions: [{ Name: DimensionName.Pipeline, Value: pipeline.name }],
          Timestamp: options.now,
          Value: value.seconds,
          Unit: 'Seconds',
        });
      }
      logger.info('freshness measured', { pipeline: pipeline.name, ...Object.fromEntries(values.map((v) => [v.name, v.seconds])) });
    } catch (error) {
      const message = (error as Error)?.message ?? String(error);
      failures.push({ pipeline: pipeline.name, error: `${(error as Error)?.name ?? 'Error'}: ${message}` });
      logger.error('freshness not measured', { pipeline: pipeline.name, error: error as Error });
    }
  }
  for (const request of inRequests(data)) {
    await options.cloudWatch.send(new PutMetricDataCommand({ Namespace: METRICS_NAMESPACE, MetricData: request }));
  }
  // After the metrics, so a failed redelivery never keeps them from being written.
  const events = options.events ? await redeliverEvents(options.pipelines ?? registry, options.warehouse, options.now, options.events) : undefined;
  if (failures.length > 0) throw new FreshnessMonitorError(failures);
  if (events && events.failures.length > 0) throw new EventRedeliveryError(events.failures);
  return { measured, ...(events ? { redelivered: events.redelivered } : {}) };
}

let cached: { endpoint: string | undefined; client: CloudWatchClient } | undefined;

function cloudWatch(endpoint: string | undefined): CloudWatchClient {
  if (cached === undefined || cached.endpoint !== endpoint)
    cached = { endpoint, client: tracer.captureAWSv3Client(new CloudWatchClient({ ...(endpoint ? { endpoint } : {}), maxAttempts: 5 })) };
  return cached.client;
}

export const handler = stepHandler((event: unknown, context: Context): Promise<FreshnessReport | LiveWatchReport> => {
  const options = {
    warehouse: warehouseFor(context),
    cloudWatch: cloudWatch(optionalEnv(FreshnessMonitorEnv.CLOUDWATCH_ENDPOINT, process.env)),
    now: new Date(),
  };
  // The live watch's schedule (its own, slower rate) passes LIVE_WATCH_EVENT.
  return isLiveWatchEvent(event) ? watchLive(options) : monitorFreshness({ ...options, events: { send: publicationEventSender() } });
});

/**
 * Every CloudWatch metric of a pipeline, defined once for its alarms
 * (publish-monitoring.ts) and its dashboard (dashboard.ts): the namespace
 * and the dimensions its writer gives it, so an alarm and a graph of one
 * metric cannot disagree. The freshness monitor and the live watch put
 * theirs with the pipeline alone; the handlers' EMF metrics carry the
 * service too (domain/names.ts).
 */
import type { Duration } from 'aws-cdk-lib';
import { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { DimensionName, METRICS_NAMESPACE, MetricName, SERVICE_NAME } from '../domain/names.ts';

/** The metrics written by the freshness monitor and the live watch (PutMetricData, dimension Pipeline). */
const MONITORED: ReadonlySet<MetricName> = new Set([MetricName.PublishAgeSeconds, MetricName.LiveDataLagSeconds, MetricName.LiveDrift]);

export interface PipelineMetricOptions {
  readonly statistic: string;
  readonly period: Duration;
  /** @default - the metric's name */
  readonly label?: string;
}

/** Pipeline `pipeline`'s metric `metricName`, with the dimensions its writer gives it. */
export function pipelineMetric(pipeline: string, metricName: MetricName, options: PipelineMetricOptions): Metric {
  const dimensionsMap: Record<string, string> = MONITORED.has(metricName)
    ? { [DimensionName.Pipeline]: pipeline }
    : { [DimensionName.Service]: SERVICE_NAME, [DimensionName.Pipeline]: pipeline };
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap,
    statistic: options.statistic,
    period: options.period,
    ...(options.label === undefined ? {} : { label: options.label }),
  });
}

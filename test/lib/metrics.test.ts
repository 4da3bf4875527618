// lib/metrics.ts: each metric with the dimensions its writer gives it.
import { Duration } from 'aws-cdk-lib';
import { Stats } from 'aws-cdk-lib/aws-cloudwatch';
import { describe, expect, it } from 'vitest';
import { METRICS_NAMESPACE, MetricName, SERVICE_NAME } from '../../domain/names.ts';
import { pipelineMetric } from '../../lib/metrics.ts';

describe('pipelineMetric', () => {
  it("gives the freshness monitor's and the live watch's metrics the pipeline alone, the handlers' the service too", () => {
    const period = Duration.minutes(5);
    for (const name of [MetricName.PublishAgeSeconds, MetricName.LiveDataLagSeconds, MetricName.LiveDrift]) {
      expect(pipelineMetric('orders', name, { statistic: Stats.MAXIMUM, period }).dimensions).toEqual({ Pipeline: 'orders' });
    }
    const failed = pipelineMetric('orders', MetricName.PublishFailed, { statistic: Stats.SUM, period, label: 'publish failed' });
    expect(failed.dimensions).toEqual({ service: SERVICE_NAME, Pipeline: 'orders' });
    expect([failed.namespace, failed.metricName, failed.statistic, failed.period.toMinutes(), failed.label]).toEqual([
      METRICS_NAMESPACE,
      'PublishFailed',
      'Sum',
      5,
      'publish failed',
    ]);
  });
});

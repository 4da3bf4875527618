/**
 * Names the infrastructure and the handlers must agree on. The functions get
 * the namespace and service as POWERTOOLS_METRICS_NAMESPACE /
 * POWERTOOLS_SERVICE_NAME; the handlers emit the metrics by these names and
 * the alarms read them by the same ones.
 */

/** CloudWatch namespace of the handlers' metrics (Powertools, Embedded Metric Format). */
export const METRICS_NAMESPACE = 'AtomicPublish';

/** Powertools service name: the value of the `service` dimension of every metric. */
export const SERVICE_NAME = 'atomic-publish';

/** Metric names. EmitMetrics emits the first four after a publish, RecordFailure BatchFailed; the freshness alarm reads Published. */
export const MetricName = {
  Published: 'Published',
  RowsPublished: 'RowsPublished',
  RunDurationSeconds: 'RunDurationSeconds',
  DataLagSeconds: 'DataLagSeconds',
  BatchFailed: 'BatchFailed',
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

/** Dimensions of every metric: the service (Powertools adds it under this name) and the pipeline. */
export const DimensionName = {
  Service: 'service',
  Pipeline: 'Pipeline',
} as const;

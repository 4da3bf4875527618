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

/**
 * Metric names. EmitMetrics emits the first four after a publish (Powertools,
 * dimensions service and Pipeline), RecordFailure BatchFailed. The freshness
 * monitor writes the last two (PutMetricData, dimension Pipeline only) on
 * its schedule, publish or not; the freshness alarm reads PublishAgeSeconds.
 */
export const MetricName = {
  Published: 'Published',
  RowsPublished: 'RowsPublished',
  RunDurationSeconds: 'RunDurationSeconds',
  DataLagSeconds: 'DataLagSeconds',
  BatchFailed: 'BatchFailed',
  /** Now minus when the live data was published (the newest publication not rolled back, a rollback not counted): the freshness alarm's metric. */
  PublishAgeSeconds: 'PublishAgeSeconds',
  /** Now minus the newest event time in the live table. */
  LiveDataLagSeconds: 'LiveDataLagSeconds',
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

/** Dimensions of every metric: the service (Powertools adds it under this name) and the pipeline. */
export const DimensionName = {
  Service: 'service',
  Pipeline: 'Pipeline',
} as const;
